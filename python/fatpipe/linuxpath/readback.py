"""What the end hosts really ran, read back from their sockets and
interfaces (pure): per stream the CCA (getsockopt TCP_CONGESTION), the MSS
in use (tcpi_snd_mss) and ECN, from the engine's TCP_INFO samples
(sampling.py) and its SO_MAX_PACING_RATE (tcpi_max_pacing_rate);
per interface its offloads (``ethtool -k``); and the check
that fails a run whose sockets run another CCA than the one the backend
asked the engine for."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass

from . import tcpinfo
from .sampling import UNCAPPED_PACING_BYTES_PER_S

# Names a socket may report instead of the CCA asked for, because that CCA
# itself switched to them; accepted only where the switch's condition held.
# DCTCP without ECN (TCP_ECN_OK not set on the connection) falls back to
# Reno: the kernel's dctcp_init() installs its private "dctcp-reno" ops,
# fatpipe's BPF port (bpf/cca/dctcp.bpf.c) sets "reno" with
# bpf_setsockopt(TCP_CONGESTION).
NO_ECN_FALLBACKS: dict[str, tuple[str, ...]] = {"dctcp": ("dctcp-reno", "reno")}

# ethtool -k's names of the offloads fatpipe records, by their short names
# (ethtool(8) -K): TSO, GSO, GRO and LRO decide what size of packet the
# path and TCP see.
OFFLOADS = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
            "gro": "generic-receive-offload", "lro": "large-receive-offload"}


@dataclass(frozen=True)
class StreamReadback:
    """One sampled stream as its socket reported itself."""

    flow_group: int
    stream: int
    ccas: tuple[str, ...]  # TCP_CONGESTION over its samples, in order of first appearance
    snd_mss_bytes: int  # tcpi_snd_mss of its last sample (Linux mss_cache)
    ecn: bool  # ECN negotiated (TCPI_OPT_ECN) in its last sample
    # tcpi_max_pacing_rate of its last sample in bit/s; None when it is ~0
    # (SO_MAX_PACING_RATE never set). A set value means sk_setsockopt()
    # moved the socket to SK_PACING_NEEDED: TCP paces it itself.
    max_pacing_rate_bps: float | None = None
    # What the handshake settled (tcpi_options, tcpi_snd_wscale): recorded
    # so a run states what it ran with.
    sack: bool = False
    timestamps: bool = False
    snd_wscale: int = 0
    # Its last sample's tcpi_total_retrans (segments retransmitted) and
    # tcpi_dsack_dups (segments the receiver reported received twice with a
    # DSACK: tcp_check_dsack(), Linux >= 4.19; None on an older kernel): a
    # retransmission the path did not cause is a DSACKed one.
    total_retrans: int = 0
    dsack_dups: int | None = None

    def facts(self) -> dict:
        out = asdict(self)
        out["ccas"] = list(self.ccas)
        return out


def streams_read_back(text: str, group: int) -> list[StreamReadback]:
    """Per stream of flow group `group`, what its samples (JSON lines of
    sampling.py) read back, in stream order."""
    ccas: dict[int, list[str]] = {}
    last: dict[int, dict[str, int]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        stream = int(rec["stream"])
        names = ccas.setdefault(stream, [])
        if rec.get("cc") and rec["cc"] not in names:
            names.append(rec["cc"])
        last[stream] = tcpinfo.parse(base64.b64decode(rec["tcp_info"]))
    return [StreamReadback(group, s, tuple(ccas[s]), last[s]["snd_mss"],
                           bool(last[s]["options"] & tcpinfo.TCPI_OPT_ECN), max_pacing_rate_bps(last[s]),
                           sack=bool(last[s]["options"] & tcpinfo.TCPI_OPT_SACK),
                           timestamps=bool(last[s]["options"] & tcpinfo.TCPI_OPT_TIMESTAMPS),
                           snd_wscale=last[s]["wscale"] & 0x0F, total_retrans=last[s]["total_retrans"],
                           dsack_dups=last[s].get("dsack_dups"))
            for s in sorted(last)]


# tcp_get_info() reports an unset sk_max_pacing_rate (~0UL) as ~0ULL.
UNSET_MAX_PACING_RATE = 2**64 - 1


def max_pacing_rate_bps(info: dict) -> float | None:
    """tcpi_max_pacing_rate of a parsed TCP_INFO in bit/s, None when unset."""
    rate = info.get("max_pacing_rate_Bps", UNSET_MAX_PACING_RATE)
    return None if rate == UNSET_MAX_PACING_RATE else rate * 8.0


def cca_mismatches(streams: list[StreamReadback], asked: dict[int, str]) -> list[str]:
    """One line per stream whose socket reported a CCA other than the one
    asked for its flow group (`asked`: flow group -> the name the backend
    gave the engine), or a fallback whose condition did not hold."""
    out = []
    for s in streams:
        want = asked[s.flow_group]
        for name in s.ccas:
            if name == want or (name in NO_ECN_FALLBACKS.get(want, ()) and not s.ecn):
                continue
            why = " although ECN was negotiated" if name in NO_ECN_FALLBACKS.get(want, ()) else ""
            out.append(f"flow group {s.flow_group}, stream {s.stream}: asked for CCA {want!r}, "
                       f"its socket reports {name!r} (TCP_CONGESTION){why}")
    return out


class CcaMismatch(RuntimeError):
    """A stream ran another CCA (or pacing) than the one asked for: the run
    is not the experiment the spec describes."""


def pacing_mismatches(streams: list[StreamReadback], asked: dict[int, int | None]) -> list[str]:
    """One line per stream whose SO_MAX_PACING_RATE, read back as
    tcpi_max_pacing_rate, is not what its engine set (`asked`: flow group
    -> sampling.max_pacing_rate_bytes_per_s of its sockets, None for none).
    A rate below 2**31 bytes/s must come back exactly; the uncapped value
    of an internally paced socket must come back as some rate (a kernel
    that reads 32 bits of it keeps the low half, still a rate)."""
    out = []
    for s in streams:
        want = asked.get(s.flow_group)
        got = None if s.max_pacing_rate_bps is None else int(s.max_pacing_rate_bps) // 8
        if want == UNCAPPED_PACING_BYTES_PER_S:
            ok = got is not None
        else:
            ok = got == want
        if not ok:
            out.append(f"flow group {s.flow_group}, stream {s.stream}: SO_MAX_PACING_RATE asked "
                       f"{'paced, uncapped' if want == UNCAPPED_PACING_BYTES_PER_S else _show_rate(want)}, "
                       f"its socket reports {_show_rate(got)} (tcpi_max_pacing_rate)")
    return out


def _show_rate(bytes_per_s: int | None) -> str:
    return "not set" if bytes_per_s is None else f"{bytes_per_s * 8 / 1e6:.3f} Mbit/s ({bytes_per_s} B/s)"



def mss_mismatches(streams: list[StreamReadback], asked: dict[int, int]) -> list[str]:
    """One line per stream whose MSS in use (tcpi_snd_mss, Linux's
    mss_cache: payload bytes per segment once the options are taken off)
    is not its flow group's (`asked`: flow group -> the plan's mss_bytes,
    which the engine asks for as TCP_MAXSEG = mss_bytes + the timestamp
    option): a smaller path MTU, or timestamps not negotiated, changes the
    segments the spec describes."""
    return [f"flow group {s.flow_group}, stream {s.stream}: MSS asked {asked[s.flow_group]} payload bytes, "
            f"its socket sends {s.snd_mss_bytes} (tcpi_snd_mss)"
            for s in streams if s.flow_group in asked and s.snd_mss_bytes != asked[s.flow_group]]


def ecn_mismatches(streams: list[StreamReadback], asked: dict[int, bool | None]) -> list[str]:
    """One line per stream whose ECN (TCPI_OPT_ECN) is not what its flow
    group's hosts settle (`asked`: flow group -> ecn.negotiates_ecn, None:
    not known, not checked)."""
    return [f"flow group {s.flow_group}, stream {s.stream}: ECN should {'' if asked[s.flow_group] else 'not '}"
            f"have been negotiated (net.ipv4.tcp_ecn of both ends, the CCA), its socket reports it "
            f"{'on' if s.ecn else 'off'} (TCPI_OPT_ECN)"
            for s in streams if asked.get(s.flow_group) is not None and s.ecn != asked[s.flow_group]]


# The largest window scale (RFC 7323 §2.3; TCP_MAX_WSCALE).
MAX_WSCALE = 14


def wscale_mismatches(streams: list[StreamReadback], window_bytes: int) -> list[str]:
    """One line per stream whose window scale (tcpi_snd_wscale, the
    receiver's) cannot advertise `window_bytes` (the window the receiver's
    buffer gives, rmem_max / 2 at tcp_adv_win_scale = 1): the receiver's
    buffers were not what the spec asked for."""
    need = 0
    while (0xFFFF << need) < window_bytes and need < MAX_WSCALE:
        need += 1
    return [f"flow group {s.flow_group}, stream {s.stream}: the receiver's window scale is {s.snd_wscale} "
            f"(tcpi_snd_wscale), at most {0xFFFF << s.snd_wscale} bytes of window; its buffer asks "
            f"{window_bytes} bytes (scale {need})"
            for s in streams if s.snd_wscale < need]


def check_ccas(streams: list[StreamReadback], asked: dict[int, str],
               pacing: dict[int, int | None] | None = None, mss: dict[int, int] | None = None,
               window_bytes: int | None = None, ecn: dict[int, bool | None] | None = None) -> None:
    """Raise CcaMismatch naming every stream whose CCA differs
    (cca_mismatches) or, given them, whose max pacing rate
    (pacing_mismatches), MSS (mss_mismatches), window scale
    (wscale_mismatches) or ECN (ecn_mismatches) does."""
    for what, problems in (
        ("CCA", cca_mismatches(streams, asked)),
        ("pacing", pacing_mismatches(streams, pacing) if pacing is not None else []),
        ("MSS", mss_mismatches(streams, mss) if mss is not None else []),
        ("window scale", wscale_mismatches(streams, window_bytes) if window_bytes is not None else []),
        ("ECN", ecn_mismatches(streams, ecn) if ecn is not None else []),
    ):
        if problems:
            raise CcaMismatch(f"the {what} read back differs from the one asked for: " + "; ".join(problems))


def parse_offloads(text: str) -> dict[str, bool]:
    """``ethtool -k IFACE`` output → {tso, gso, gro, lro: on?} for those it
    lists (a "[fixed]" setting is reported as it is)."""
    by_name = {long: short for short, long in OFFLOADS.items()}
    out = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        if sep and name in by_name:
            out[by_name[name]] = value.split()[0] == "on" if value.split() else False
    return {k: out[k] for k in OFFLOADS if k in out}
