"""Pure parsers of Linux ``struct tcp_info`` and the CCA's ``tcp_cc_info``
(include/uapi/linux/tcp.h, inet_diag.h), mapped onto the series columns."""

from __future__ import annotations

import struct

from ..schema import no_cc_vars

# Field names in order, with struct codes (little/native endian, x86-64 and
# arm64 lay it out identically: no implicit padding up to tcpi_snd_wnd).
_FIELDS: list[tuple[str, str]] = [
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"),
    ("backoff", "B"), ("options", "B"), ("wscale", "B"), ("app_limited_flags", "B"),
    ("rto_us", "I"), ("ato_us", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent_ms", "I"), ("last_ack_sent_ms", "I"), ("last_data_recv_ms", "I"), ("last_ack_recv_ms", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt_us", "I"), ("rttvar_us", "I"), ("snd_ssthresh", "I"),
    ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"),
    ("rcv_rtt_us", "I"), ("rcv_space", "I"),
    ("total_retrans", "I"),
    ("pacing_rate_Bps", "Q"), ("max_pacing_rate_Bps", "Q"), ("bytes_acked", "Q"), ("bytes_received", "Q"),
    ("segs_out", "I"), ("segs_in", "I"),
    ("notsent_bytes", "I"), ("min_rtt_us", "I"), ("data_segs_in", "I"), ("data_segs_out", "I"),
    ("delivery_rate_Bps", "Q"),
    ("busy_time_us", "Q"), ("rwnd_limited_us", "Q"), ("sndbuf_limited_us", "Q"),
    ("delivered", "I"), ("delivered_ce", "I"),
    ("bytes_sent", "Q"), ("bytes_retrans", "Q"),
    ("dsack_dups", "I"), ("reord_seen", "I"),
    ("rcv_ooopack", "I"), ("snd_wnd", "I"),
]

# The prefix every kernel since 4.19 returns (through tcpi_sndbuf_limited).
MIN_BYTES = struct.calcsize("<" + "".join(c for n, c in _FIELDS[: _FIELDS.index(("sndbuf_limited_us", "Q")) + 1]))

# tcpi_options bits (include/uapi/linux/tcp.h): timestamps, SACK, window
# scaling and ECN were negotiated at connection setup.
TCPI_OPT_TIMESTAMPS = 1
TCPI_OPT_SACK = 2
TCPI_OPT_WSCALE = 4
TCPI_OPT_ECN = 8

CA_STATES = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}  # enum tcp_ca_state

# BBR v1's gains in units of BBR_UNIT = 256 (net/ipv4/tcp_bbr.c), as
# bbr_get_info() reports them in struct tcp_bbr_info (bbr_pacing_gain,
# bbr_cwnd_gain; `ss -i` prints them divided by 256):
BBR_HIGH_GAIN = 256 * 2885 // 1000 + 1  # 739: STARTUP pacing and cwnd, DRAIN cwnd
BBR_DRAIN_GAIN = 256 * 1000 // 2885  # 88: DRAIN pacing
BBR_CWND_GAIN = 256 * 2  # 512: PROBE_BW cwnd
BBR_PROBE_BW_PACING_GAINS = (256 * 5 // 4, 256 * 3 // 4, 256)  # bbr_pacing_gain[] cycle (and lt_bw's 1.0)
BBR_UNIT = 256  # PROBE_RTT: pacing and cwnd gain 1.0 (bbr_update_gains)
_BBR_INFO = struct.Struct("<5I")  # bbr_bw_lo, bbr_bw_hi, bbr_min_rtt, bbr_pacing_gain, bbr_cwnd_gain


def bbr_mode(pacing_gain: int, cwnd_gain: int) -> str:
    """BBR v1's mode from the gains bbr_update_gains() set for it, or "" when
    the pair is not one of v1's (another BBR version)."""
    if pacing_gain == BBR_HIGH_GAIN and cwnd_gain == BBR_HIGH_GAIN:
        return "startup"
    if pacing_gain == BBR_DRAIN_GAIN and cwnd_gain == BBR_HIGH_GAIN:
        return "drain"
    if pacing_gain == BBR_UNIT and cwnd_gain == BBR_UNIT:
        return "probe_rtt"
    if cwnd_gain == BBR_CWND_GAIN and pacing_gain in BBR_PROBE_BW_PACING_GAINS:
        return "probe_bw"
    return ""


def cc_mode(cc: str, cc_info: bytes) -> str:
    """The series' cc_mode from getsockopt(TCP_CC_INFO) of a `cc` socket: BBR's
    mode where its gains tell it; "" for CCAs whose info carries no mode."""
    if cc == "bbr" and len(cc_info) >= _BBR_INFO.size:
        *_, pacing_gain, cwnd_gain = _BBR_INFO.unpack_from(cc_info)
        return bbr_mode(pacing_gain, cwnd_gain)
    return ""


def cc_vars(cc: str, cc_info: bytes) -> dict[str, object]:
    """The series' cc_* columns (schema.CC_VAR_COLUMNS) from
    getsockopt(TCP_CC_INFO) of a `cc` socket. BBR v1's struct tcp_bbr_info
    (bbr_get_info()) gives bbr_bw() in bytes/s as two 32-bit halves
    (bbr_bw_lo, bbr_bw_hi: max_bw, or lt_bw while v1 believes it is
    policed), bbr_min_rtt (µs) and the two gains (1/256); the state is
    inferred from the gains (:func:`bbr_mode`). Every other column, and
    every column of another CCA, is null."""
    out: dict[str, object] = no_cc_vars()
    if cc == "bbr" and len(cc_info) >= _BBR_INFO.size:
        bw_lo, bw_hi, min_rtt_us, pacing_gain, cwnd_gain = _BBR_INFO.unpack_from(cc_info)
        out["cc_state"] = bbr_mode(pacing_gain, cwnd_gain) or None
        out["cc_max_bw_bps"] = ((bw_hi << 32) | bw_lo) * 8.0
        out["cc_min_rtt_s"] = None if min_rtt_us == 0xFFFFFFFF else min_rtt_us * 1e-6
        out["cc_pacing_gain"] = pacing_gain / BBR_UNIT
        out["cc_cwnd_gain"] = cwnd_gain / BBR_UNIT
    return out


def parse(raw: bytes) -> dict[str, int]:
    """Decode as many fields as `raw` holds (at least MIN_BYTES)."""
    if len(raw) < MIN_BYTES:
        raise ValueError(f"tcp_info too short: {len(raw)} bytes, need {MIN_BYTES}")
    out: dict[str, int] = {}
    offset = 0
    for name, code in _FIELDS:
        size = struct.calcsize("<" + code)
        if offset + size > len(raw):
            break
        (out[name],) = struct.unpack_from("<" + code, raw, offset)
        offset += size
    return out


def inflight_segments(info: dict[str, int]) -> int:
    """tcp_packets_in_flight(): unacked − (sacked + lost) + retrans."""
    return max(0, info["unacked"] - info["sacked"] - info["lost"] + info["retrans"])


def series_row(info: dict[str, int]) -> dict[str, object]:
    """Map parsed tcp_info onto SERIES_COLUMNS (without group/stream/t_s and
    cc_mode, which comes from TCP_CC_INFO: :func:`cc_mode`)."""
    return {
        "delivered_bytes": info["bytes_acked"],
        "cwnd_segments": info["snd_cwnd"],
        "srtt_s": info["rtt_us"] * 1e-6,
        "min_rtt_s": info["min_rtt_us"] * 1e-6,
        "retrans_segments": info["total_retrans"],
        "segs_out": info["data_segs_out"],
        "pacing_rate_bps": info["pacing_rate_Bps"] * 8.0,
        "delivery_rate_bps": info["delivery_rate_Bps"] * 8.0,
        "inflight_segments": inflight_segments(info),
        "ca_state": CA_STATES.get(info["ca_state"], str(info["ca_state"])),
        "rwnd_limited_s": info["rwnd_limited_us"] * 1e-6,
        "sndbuf_limited_s": info["sndbuf_limited_us"] * 1e-6,
        "busy_s": info["busy_time_us"] * 1e-6,
    }
