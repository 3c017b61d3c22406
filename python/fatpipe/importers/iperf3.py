"""`iperf3 -J` output → fatpipe's series columns (pure; schema.SERIES_COLUMNS).

What iperf3 reports, per interval and per stream, on the side that ran the
client (normally the sender): ``bytes`` (written by the sender, or read by
the receiver with ``-R``), ``retransmits``, ``snd_cwnd`` (bytes: tcpi_snd_cwnd
× tcpi_snd_mss) and ``rtt`` (µs: tcpi_rtt, the smoothed RTT). How each
series column is filled:

* ``t_s`` — the end of each interval, counted from the first (omitted
  intervals included: ``-O N`` becomes the study's warm-up);
* ``delivered_bytes`` — cumulative interval ``bytes``. On the sender this is
  what the application wrote; over a run it differs from what was delivered
  by at most the socket buffer's contents (``end.sum_received`` is kept in
  the run's facts to compare);
* ``cwnd_segments`` — ``snd_cwnd`` ÷ MSS; ``srtt_s`` — ``rtt``;
* ``min_rtt_s`` — the smallest ``rtt`` so far (iperf3 reports no interval
  minimum), or the stream's ``end`` ``min_rtt`` when that is smaller;
* ``retrans_segments`` — cumulative ``retransmits``; ``segs_out`` — segments
  of the bytes so far plus the retransmissions (an estimate: iperf3 reports
  no segment count);
* not reported by iperf3: pacing and delivery rate (NaN), inflight, the
  host-limit times (0), ``ca_state`` and ``cc_mode`` (""), the ``cc_*``
  variables (null).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from ..schema import SERIES_COLUMNS, no_cc_vars
from ..wire import TIMESTAMP_OPTION_BYTES


class Iperf3FormatError(ValueError):
    """Not `iperf3 -J` output fatpipe can import; the message names the file and what is wrong."""


@dataclass
class Iperf3Run:
    """One `iperf3 -J` result, as fatpipe reads it."""

    cc: str  # the sender's CCA (end.sender_tcp_congestion)
    streams: int
    mss_bytes: int  # segment payload (fatpipe's mss_bytes column)
    duration_s: float  # omitted seconds plus the test's own
    omit_s: float
    interval_s: float
    reverse: bool  # -R: the client received, its intervals have no cwnd/rtt
    series: dict[str, list] = field(default_factory=dict)  # schema.SERIES_COLUMNS, flow group 0
    facts: dict[str, Any] = field(default_factory=dict)


def _need(doc: dict, path: str, source: str) -> Any:
    cur: Any = doc
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            raise Iperf3FormatError(f"{source}: missing {path} (is it `iperf3 -J` output of a TCP test?)")
        cur = cur[key]
    return cur


def segment_payload_bytes(start: dict) -> int:
    """The payload per segment: ``tcp_mss_default`` is TCP_MAXSEG read after
    connecting (Linux's mss_cache, timestamps already taken off); ``tcp_mss``
    is the value ``-M`` set, from which Linux takes the 12-byte timestamp
    option (tcp_mtu_to_mss)."""
    if start.get("tcp_mss_default"):
        return int(start["tcp_mss_default"])
    if start.get("tcp_mss"):
        return int(start["tcp_mss"]) - TIMESTAMP_OPTION_BYTES
    raise Iperf3FormatError("start has neither tcp_mss_default nor tcp_mss")


def parse(text: str, source: str = "iperf3 output") -> Iperf3Run:
    """One `iperf3 -J` client output → an Iperf3Run (pure)."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise Iperf3FormatError(f"{source}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise Iperf3FormatError(f"{source}: not an iperf3 -J object")
    if doc.get("error"):
        raise Iperf3FormatError(f"{source}: iperf3 reported an error: {doc['error']}")
    start = _need(doc, "start", source)
    test = _need(doc, "start.test_start", source)
    if str(test.get("protocol", "TCP")).upper() != "TCP":
        raise Iperf3FormatError(f"{source}: protocol {test.get('protocol')!r}; only TCP tests can be imported")
    intervals = _need(doc, "intervals", source)
    if not intervals:
        raise Iperf3FormatError(f"{source}: no intervals")
    end = _need(doc, "end", source)
    cc = end.get("sender_tcp_congestion") or start.get("tcp_congestion")
    if not cc:
        raise Iperf3FormatError(f"{source}: no end.sender_tcp_congestion (iperf3 3.1 or newer reports it)")
    try:
        mss = segment_payload_bytes(start)
    except Iperf3FormatError as e:
        raise Iperf3FormatError(f"{source}: {e}") from None
    sockets = [s["socket"] for s in intervals[0].get("streams", [])]
    if not sockets:
        raise Iperf3FormatError(f"{source}: intervals[0] has no streams")
    index = {sock: i for i, sock in enumerate(sockets)}
    end_min_rtt_s = {index[s["sender"]["socket"]]: s["sender"]["min_rtt"] / 1e6
                     for s in end.get("streams", []) if s.get("sender", {}).get("min_rtt")
                     and s["sender"].get("socket") in index}
    series: dict[str, list] = {k: [] for k in SERIES_COLUMNS}
    state = {i: {"t": 0.0, "bytes": 0, "retrans": 0, "segs": 0, "min_rtt": math.inf} for i in index.values()}
    for n, iv in enumerate(intervals):
        for st in iv.get("streams", []):
            i = index.get(st.get("socket"))
            if i is None:
                raise Iperf3FormatError(f"{source}: intervals[{n}] names socket {st.get('socket')}, "
                                        f"not one of the streams {sockets}")
            s = state[i]
            s["t"] += float(st["seconds"])
            s["bytes"] += int(st["bytes"])
            s["retrans"] += int(st.get("retransmits", 0) or 0)
            s["segs"] += math.ceil(int(st["bytes"]) / mss)
            rtt_s = float(st.get("rtt", 0) or 0) / 1e6
            if rtt_s > 0:
                s["min_rtt"] = min(s["min_rtt"], rtt_s)
            min_rtt = min(s["min_rtt"], end_min_rtt_s.get(i, math.inf))
            row = {"flow_group": 0, "stream": i, "t_s": round(s["t"], 9), "delivered_bytes": s["bytes"],
                   "cwnd_segments": int(st.get("snd_cwnd", 0) or 0) // mss, "srtt_s": rtt_s,
                   "min_rtt_s": min_rtt if math.isfinite(min_rtt) else 0.0,
                   "retrans_segments": s["retrans"], "segs_out": s["segs"] + s["retrans"],
                   "pacing_rate_bps": math.nan, "delivery_rate_bps": math.nan, "inflight_segments": 0,
                   "ca_state": "", "cc_mode": "", "rwnd_limited_s": 0.0, "sndbuf_limited_s": 0.0,
                   "busy_s": s["t"], **no_cc_vars()}
            for k in SERIES_COLUMNS:
                series[k].append(row[k])
    omit_s = float(test.get("omit", 0) or 0)
    # The nominal interval (-i, at least 0.1 s) and duration: measured ones
    # differ by timer jitter (1.00024 s; 1.0006 s on a busy host), which
    # must not split runs of one setting: the median of the intervals (the
    # last may be cut short), to 10 ms.
    measured = [float(iv["streams"][0]["seconds"]) for iv in intervals[:-1] or intervals]
    interval_s = round(statistics.median(measured), 2) or 1.0
    duration_s = round(max(st["t"] for st in state.values()) / interval_s) * interval_s
    sent = end.get("sum_sent", {})
    received = end.get("sum_received", {})
    facts = {
        "iperf3_version": start.get("version", ""),
        "iperf3_time": start.get("timestamp", {}).get("time", ""),
        "iperf3_remote": (start.get("connected") or [{}])[0].get("remote_host", ""),
        "iperf3_sent_bytes": int(sent.get("bytes", 0)),
        "iperf3_received_bytes": int(received.get("bytes", 0)),
        "iperf3_received_bps": float(received.get("bits_per_second", 0.0)),
        "iperf3_retransmits": int(sent.get("retransmits", 0) or 0),
        "receiver_tcp_congestion": end.get("receiver_tcp_congestion", ""),
    }
    return Iperf3Run(cc=cc, streams=len(sockets), mss_bytes=mss, duration_s=duration_s, omit_s=omit_s,
                     interval_s=interval_s, reverse=bool(test.get("reverse")), series=series, facts=facts)
