"""Test helper: a pcap file read back with dpkt (any link type fatpipe
writes: raw IP from the simulator, Ethernet from tcpdump on a veth), as
the TCP segments of each direction, and the sender's retransmissions."""

from __future__ import annotations

from dataclasses import dataclass

import dpkt


@dataclass(frozen=True)
class Segment:
    t_s: float
    src: tuple[bytes, int]
    dst: tuple[bytes, int]
    seq: int
    ack: int
    flags: int
    payload_bytes: int
    window: int
    options: tuple


def segments(path) -> list[Segment]:
    """Every TCP packet of a pcap file, in file order (IPv4 only)."""
    out = []
    with open(path, "rb") as fh:
        reader = dpkt.pcap.Reader(fh)
        link = reader.datalink()
        for ts, buf in reader:
            ip = dpkt.ethernet.Ethernet(buf).data if link == dpkt.pcap.DLT_EN10MB else dpkt.ip.IP(buf)
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            out.append(Segment(float(ts), (ip.src, tcp.sport), (ip.dst, tcp.dport), tcp.seq, tcp.ack, tcp.flags,
                               ip.len - ip.hl * 4 - tcp.off * 4, tcp.win, tuple(dpkt.tcp.parse_opts(tcp.opts))))
    return out


def data_flows(segs: list[Segment]) -> dict[tuple, list[Segment]]:
    """The segments carrying data, per direction (source, destination)."""
    flows: dict[tuple, list[Segment]] = {}
    for s in segs:
        if s.payload_bytes > 0 and not s.flags & dpkt.tcp.TH_SYN:
            flows.setdefault((s.src, s.dst), []).append(s)
    return flows


def retransmissions(flow: list[Segment]) -> int:
    """Data segments that start below the highest sequence sent before
    them (mod 2^32): the sender's retransmissions, as tcptrace counts them."""
    high, n = None, 0
    for s in flow:
        end = (s.seq + s.payload_bytes) % 2**32
        if high is not None and ((s.seq - high) % 2**32) >= 2**31:
            n += 1
        if high is None or ((end - high) % 2**32) < 2**31:
            high = end
    return n
