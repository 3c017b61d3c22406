"""A reader of the pcap files fatpipe writes (docs/captures.md): classic
pcap (microsecond or nanosecond timestamps, either byte order) of raw IPv4
(the simulator), Ethernet (tcpdump on a veth) or Linux cooked capture v1
and v2 (tcpdump -i any), TCP over IPv4 only. Enough for the report's
time-sequence graph; tests read the same files with dpkt.

The pcap format: pcap-savefile(5); the link types: tcpdump.org's
LINKTYPE_RAW (101), LINKTYPE_ETHERNET (1), LINKTYPE_LINUX_SLL (113),
LINKTYPE_LINUX_SLL2 (276).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Bytes before the IP header, per link type (the EtherType is checked for
# Ethernet and SLL: the last 2 bytes of the link header).
LINK_HEADER_BYTES = {101: 0, 1: 14, 113: 16, 276: 20}
ETHERTYPE_IPV4 = 0x0800
TH_SYN, TH_ACK = 0x02, 0x10
TCP_OPT_SACK = 5


@dataclass(frozen=True)
class TcpPacket:
    t_s: float
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    ack: int
    flags: int
    payload_bytes: int
    sack: tuple[tuple[int, int], ...]  # SACK blocks (left, right)


def _magic(head: bytes) -> tuple[str, float]:
    for order in ("<", ">"):
        (magic,) = struct.unpack(order + "I", head[:4])
        if magic == 0xA1B2C3D4:
            return order, 1e-6
        if magic == 0xA1B23C4D:
            return order, 1e-9
    raise ValueError("not a pcap file (pcapng is not read here)")


def packets(path: str | Path) -> Iterator[TcpPacket]:
    """The TCP/IPv4 packets of a pcap file, in file order."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise ValueError(f"{path}: shorter than a pcap header")
        order, unit = _magic(head)
        (link,) = struct.unpack(order + "I", head[20:24])
        skip = LINK_HEADER_BYTES.get(link & 0xFFFF)
        if skip is None:
            raise ValueError(f"{path}: link type {link} is not one fatpipe writes")
        record = struct.Struct(order + "IIII")
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                return
            sec, frac, incl, _orig = record.unpack(rh)
            buf = f.read(incl)
            if skip and (len(buf) < skip or buf[skip - 2:skip] != ETHERTYPE_IPV4.to_bytes(2, "big")):
                continue
            p = _tcp(buf[skip:], sec + frac * unit)
            if p is not None:
                yield p


def _tcp(ip: bytes, t_s: float) -> TcpPacket | None:
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
        return None
    ihl = (ip[0] & 0x0F) * 4
    total = int.from_bytes(ip[2:4], "big")
    tcp = ip[ihl:]
    if len(tcp) < 20:
        return None
    sport, dport, seq, ack = struct.unpack(">HHII", tcp[:12])
    off = (tcp[12] >> 4) * 4
    sack = []
    opts, k = tcp[20:off], 0
    while k < len(opts):
        kind = opts[k]
        if kind == 0:
            break
        if kind == 1:
            k += 1
            continue
        if k + 1 >= len(opts):
            break
        size = opts[k + 1]
        if kind == TCP_OPT_SACK:
            body = opts[k + 2:k + size]
            sack += [struct.unpack(">II", body[j:j + 8]) for j in range(0, len(body) - 7, 8)]
        k += max(size, 2)
    src = ".".join(str(b) for b in ip[12:16])
    dst = ".".join(str(b) for b in ip[16:20])
    return TcpPacket(t_s, (src, sport), (dst, dport), seq, ack, tcp[13], total - ihl - off, tuple(sack))
