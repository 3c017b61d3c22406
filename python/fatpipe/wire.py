"""What a segment costs on the wire, defined once for Python (the Rust
definition is crates/sim/src/wire.rs; tests/test_schema.py checks they agree).

* The IP packet of a segment is its MSS payload plus the 40-byte TCP/IP
  header, plus the 12-byte timestamp option when that fits the MTU (Linux's
  MSS is MTU - 52 with timestamps: tcp_mtu_to_mss() less the option).
* A bottleneck charges the 14-byte Ethernet header on top, as tbf and netem
  count skb->len on a veth.
* Random loss and per-bit corruption combine into one per-packet loss
  probability; corruption hits the (MSS + 40)·8 bits of a packet.
"""

from __future__ import annotations

import numpy as np

TCP_IP_HEADER_BYTES = 40  # 20-byte IPv4 + 20-byte TCP header, no options
TIMESTAMP_OPTION_BYTES = 12  # the TCP timestamp option as Linux sends it
TCP_IP_TS_HEADER_BYTES = TCP_IP_HEADER_BYTES + TIMESTAMP_OPTION_BYTES
ETH_HEADER_BYTES = 14  # what a bottleneck charges per packet beyond the IP length


def mss_with_timestamps(mtu_bytes: int) -> int:
    """Segment payload Linux uses on an `mtu_bytes` path (timestamps on)."""
    return mtu_bytes - TCP_IP_TS_HEADER_BYTES


def tcp_maxseg(mss_bytes: int) -> int:
    """The TCP_MAXSEG value that gives segments of `mss_bytes` payload: the
    MSS option also covers the timestamp option (tcp_mtu_to_mss)."""
    return int(mss_bytes) + TIMESTAMP_OPTION_BYTES


def linux_segment_payload(mss_bytes: int, mtu_bytes: int) -> int:
    """The payload of a full segment Linux sends with TCP_MAXSEG =
    tcp_maxseg(`mss_bytes`) on an `mtu_bytes` path, timestamps on: the MSS
    is clamped to tcp_mtu_to_mss() (MTU - 40) before the option's 12 bytes
    come off (tcp_sync_mss), so at most MTU - 52. (The simulator sends
    such segments without timestamps instead: ip_packet_bytes.)"""
    return min(int(mss_bytes), mss_with_timestamps(mtu_bytes))


def frame_bytes(ip_len: int) -> int:
    """Bytes a bottleneck charges for an IP packet of `ip_len` bytes."""
    return ip_len + ETH_HEADER_BYTES


def ip_packet_bytes(mss_bytes: int, mtu_bytes: int) -> int:
    """IP length of a full segment: payload + 52 bytes with the timestamp
    option when that fits the MTU, else + 40 (crates/sim/src/wire.rs)."""
    with_ts = int(mss_bytes) + TCP_IP_TS_HEADER_BYTES
    return with_ts if with_ts <= mtu_bytes else int(mss_bytes) + TCP_IP_HEADER_BYTES


def goodput_ceiling_bps(rate_bps: float, mss_bytes: int, mtu_bytes: int) -> float:
    """The most goodput a link of `rate_bps` carries in full segments of
    `mss_bytes` payload (the bottleneck charges frame_bytes per packet):
    1448/1514 of the rate at MTU 1500."""
    return rate_bps * mss_bytes / frame_bytes(ip_packet_bytes(mss_bytes, mtu_bytes))


def packet_loss_probability(loss, corruption, mss_bytes):
    """Loss per data packet of `mss_bytes` payload from random loss and per-bit
    corruption: 1 - (1 - loss)·(1 - p_bit)^((mss + 40)·8). Accepts scalars or
    numpy arrays (and returns the same)."""
    bits = (np.asarray(mss_bytes, dtype=float) + TCP_IP_HEADER_BYTES) * 8
    p_corrupt = 1.0 - np.power(1.0 - np.asarray(corruption, dtype=float), bits)
    p = 1.0 - (1.0 - np.asarray(loss, dtype=float)) * (1.0 - p_corrupt)
    return float(p) if np.ndim(p) == 0 else p
