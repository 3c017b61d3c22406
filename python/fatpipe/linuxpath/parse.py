"""Pure parsers of external tools' output (tested on captured output)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

_SENT_RE = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+) requeues (\d+)\)")
_QDISC_RE = re.compile(r"^qdisc (\S+) (\S+)")
# fq_codel's extended statistics (tc/q_fq_codel.c fq_codel_print_xstats): packets marked CE.
_ECN_MARK_RE = re.compile(r"\becn_mark (\d+)")


@dataclass(frozen=True)
class QdiscStats:
    kind: str  # "tbf", "netem", ...
    handle: str
    sent_bytes: int
    sent_packets: int
    dropped: int
    overlimits: int
    ecn_marks: int = 0  # packets the qdisc marked CE (fq_codel's ecn_mark; 0 for qdiscs that do not mark)


def tc_qdisc_stats(text: str) -> list[QdiscStats]:
    """Parse `tc -s qdisc show dev X`: one QdiscStats per qdisc, in order."""
    out: list[QdiscStats] = []
    kind = handle = None
    for line in text.splitlines():
        m = _QDISC_RE.match(line)
        if m:
            kind, handle = m.group(1), m.group(2)
            continue
        s = _SENT_RE.search(line)
        if s and kind is not None:
            out.append(QdiscStats(kind, handle, int(s.group(1)), int(s.group(2)), int(s.group(3)), int(s.group(4))))
            kind = None
            continue
        e = _ECN_MARK_RE.search(line)
        if e and out:  # the xstats lines follow their qdisc's Sent line
            out[-1] = replace(out[-1], ecn_marks=int(e.group(1)))
    return out


def ip_netns_list(text: str) -> list[str]:
    """Parse `ip netns list` ("name" or "name (id: 3)" per line)."""
    return [line.split()[0] for line in text.splitlines() if line.strip()]


def ip_netns_pids(text: str) -> list[int]:
    """Parse `ip netns pids NAME`: one pid per line."""
    return [int(tok) for tok in text.split() if tok.isdigit()]


@dataclass(frozen=True)
class NfqueueStats:
    queue: int
    queue_total: int  # packets waiting for a verdict now
    queue_dropped: int  # dropped because the queue was at maxlen
    user_dropped: int  # dropped because the netlink socket was full


def nfnetlink_queue(text: str) -> list[NfqueueStats]:
    """Parse /proc/net/netfilter/nfnetlink_queue (queue_number peer_portid
    queue_total copy_mode copy_range queue_dropped user_dropped id_sequence 1)."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 7 and all(x.isdigit() for x in f[:7]):
            out.append(NfqueueStats(int(f[0]), int(f[2]), int(f[5]), int(f[6])))
    return out


@dataclass(frozen=True)
class Iperf3Result:
    goodput_bps: float  # receiver-side bits per second over the whole test
    sent_bps: float
    retransmits: int
    streams: int
    congestion: str | None


def iperf3_json(text: str) -> Iperf3Result:
    """Parse `iperf3 -J` client output (end.sum_received / sum_sent)."""
    doc = json.loads(text)
    if "error" in doc:
        raise ValueError(f"iperf3 error: {doc['error']}")
    end = doc["end"]
    return Iperf3Result(
        goodput_bps=float(end["sum_received"]["bits_per_second"]),
        sent_bps=float(end["sum_sent"]["bits_per_second"]),
        retransmits=int(end["sum_sent"].get("retransmits", 0)),
        streams=len(end.get("streams", [])),
        congestion=end.get("sender_tcp_congestion"),
    )


def iperf3_intervals_bps(text: str) -> list[float]:
    """Per-interval receiver-side bits per second of `iperf3 -J` output
    (client side: the sum over streams of each interval)."""
    doc = json.loads(text)
    return [float(iv["sum"]["bits_per_second"]) for iv in doc.get("intervals", [])]


_PING_RTT_RE = re.compile(r"rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")


def ping_rtt_s(text: str) -> tuple[float, float, float] | None:
    """(min, avg, max) RTT in seconds from `ping -q` output, None if absent."""
    m = _PING_RTT_RE.search(text)
    if not m:
        return None
    return float(m.group(1)) / 1e3, float(m.group(2)) / 1e3, float(m.group(3)) / 1e3


def available_ccas(text: str) -> list[str]:
    """Parse /proc/sys/net/ipv4/tcp_available_congestion_control."""
    return text.split()
