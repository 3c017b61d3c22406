"""The time-sequence graph of one TCP connection from a capture (Stevens's,
as tcptrace draws it): each data segment as a stroke from its first to its
last byte at the time it was seen, retransmissions (a segment starting
below the highest byte seen before it) apart, and the cumulative ACK and
the highest SACKed byte of the other direction. Sequence numbers are
relative to the connection's first byte (its SYN's sequence + 1).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..pcapread import TH_SYN, TcpPacket

HALF_SPACE = 2**31  # sequence comparisons modulo 2^32 (RFC 793 §3.3)


def _rel(x: int, base: int) -> int:
    return (x - base) % 2**32


def time_sequence(packets: Iterable[TcpPacket], t0_s: float = 0.0) -> dict[str, pd.DataFrame] | None:
    """The first connection that carries data in `packets`: ``data`` (t_s,
    start, end in bytes, retrans) and ``acks`` (t_s, ack, sack_high) with
    times from `t0_s`; None when no packet carries data."""
    pkts = list(packets)
    isn: dict[tuple, int] = {}
    for p in pkts:
        if p.flags & TH_SYN:
            isn.setdefault((p.src, p.dst), p.seq + 1)
    first = next((p for p in pkts if p.payload_bytes > 0 and not p.flags & TH_SYN), None)
    if first is None:
        return None
    fwd = (first.src, first.dst)
    base = isn.get(fwd, first.seq)
    rows, acks, high = [], [], None
    for p in pkts:
        if (p.src, p.dst) == fwd and p.payload_bytes > 0 and not p.flags & TH_SYN:
            start = _rel(p.seq, base)
            retrans = high is not None and start < high
            rows.append((p.t_s - t0_s, start, start + p.payload_bytes, retrans))
            high = start + p.payload_bytes if high is None else max(high, start + p.payload_bytes)
        elif (p.dst, p.src) == fwd and not p.flags & TH_SYN:
            ack = _rel(p.ack, base)
            if ack >= HALF_SPACE:  # before the first byte (the handshake's ACK)
                continue
            sack = max((_rel(r, base) for _, r in p.sack if _rel(r, base) < HALF_SPACE), default=np.nan)
            acks.append((p.t_s - t0_s, ack, sack))
    return {"data": pd.DataFrame(rows, columns=["t_s", "start", "end", "retrans"]),
            "acks": pd.DataFrame(acks, columns=["t_s", "ack", "sack_high"]),
            "connection": pd.DataFrame([{"src": f"{fwd[0][0]}:{fwd[0][1]}", "dst": f"{fwd[1][0]}:{fwd[1][1]}"}])}
