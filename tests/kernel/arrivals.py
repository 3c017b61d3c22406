"""When a sender's data packets reach the router, and how that compares with
their pacing times (the kernel qdisc test's instrument).

Run by path inside the router namespace (standard library only):
``python3 arrivals.py IFACE SRC_ADDR OUT_JSON`` records, for every IPv4 TCP
packet with payload from SRC_ADDR received on IFACE, the kernel's receive
timestamp (SO_TIMESTAMPNS, ns) and the IP length (a GSO packet counts
whole), until SIGTERM; then writes ``[[t_ns, ip_bytes], ...]`` to OUT_JSON.
The host side imports ``bytes_ahead_share``."""

from __future__ import annotations

import bisect
import json
import select
import signal
import socket
import struct
import sys

ETH_P_IP = 0x0800
SO_TIMESTAMPNS = 35
SO_RCVBUFFORCE = 33
ETH_HEADER_BYTES = 14


def _record(ifname: str, src: str, out: str) -> None:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((ifname, ETH_P_IP))
    want_src = socket.inet_aton(src)
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    rec: list[tuple[int, int]] = []
    print("ready", flush=True)
    while not stopped:
        if not select.select([s], [], [], 0.1)[0]:
            continue
        data, anc, _, addr = s.recvmsg(128, 64)
        ip = data[ETH_HEADER_BYTES:]
        if addr[2] == socket.PACKET_OUTGOING or len(ip) < 40 or ip[9] != socket.IPPROTO_TCP or ip[12:16] != want_src:
            continue
        ip_bytes = struct.unpack("!H", ip[2:4])[0]
        ihl = (ip[0] & 15) * 4
        if ip_bytes - ihl - (ip[ihl + 12] >> 4) * 4 <= 0:
            continue  # no payload: not data
        for level, kind, value in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                rec.append((sec * 10**9 + nsec, ip_bytes))
    with open(out, "w") as f:
        json.dump(rec, f)


def bytes_ahead_share(arrivals: list[tuple[int, int]], t_s: list[float], pacing_rate_bps: list[float],
                      t0_ns: int) -> tuple[float, int]:
    """(share of the data bytes that arrived less than half their pacing
    time after the packet before them, packets compared). A packet's pacing
    time is the one before it on the wire (its bytes + Ethernet header) at
    the pacing rate TCP_INFO reported around then (`t_s`, `pacing_rate_bps`
    sampled on the run's clock, which starts at `t0_ns`), the larger of the
    two samples around it, so a rate rising between samples (slow start)
    does not count a paced packet as early. Linux lets a packet go at most
    half its time early (tcp_update_skb_after_send(): len_ns -= min(len_ns /
    2, credit)), so a paced sender's share is small and an unpaced one's,
    whose ACK-clocked bursts arrive back to back, large."""
    ahead = total = compared = 0
    for (t1, b1), (t2, b2) in zip(arrivals, arrivals[1:], strict=False):
        t = (t2 - t0_ns) / 1e9
        i = bisect.bisect_right(t_s, t)
        rate = max(pacing_rate_bps[max(0, i - 1)], pacing_rate_bps[min(i, len(t_s) - 1)])
        if rate <= 0:
            continue
        compared += 1
        total += b2
        if (t2 - t1) / 1e9 < 0.5 * (b1 + ETH_HEADER_BYTES) * 8 / rate:
            ahead += b2
    return (ahead / total if total else 0.0), compared


if __name__ == "__main__":
    _record(sys.argv[1], sys.argv[2], sys.argv[3])
