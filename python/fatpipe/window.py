"""The window a path needs and the socket buffers that allow it: defined
once here (the spec's "Nbdp" buffers, `fatpipe advise` and its tests use
these functions and nothing else).

* **BDP** = rate_bps × rtt_s / 8 bytes (the bottleneck's bit rate, as
  path.rate is written).
* **Goodput ceiling** of a full link = rate × payload / frame bytes
  (:func:`fatpipe.wire.goodput_ceiling_bps`).
* **Window needed** to keep the link full: the payload in flight over one
  round trip, RTT plus the time a full bottleneck buffer adds (a loss-based
  CCA fills it before it backs off) = ceiling × (rtt_s + buffer·8/rate) / 8,
  shared by the transfer's streams.
* **Receive buffer** (net.ipv4.tcp_rmem[2]) for a window W: 2·W. Linux
  advertises half of the receive buffer as window (tcp_adv_win_scale = 1,
  tcp_win_from_space(); the simulator's receiver does the same,
  crates/sim/src/tcp/receiver.rs).
* **Send buffer** (net.ipv4.tcp_wmem[2]) for a window W: 2·W. The sender
  keeps unacknowledged plus unsent bytes within it (sk_sndbuf): W while the
  window is open, and in fast recovery the SACKed data beyond the hole
  stays queued until the retransmission is acknowledged, so the sequence
  space held grows to about (1 + β)·W (RFC 5681 3.2; Linux's
  tcp_sndbuf_expand() provisions 2·cwnd for this: "Cubic needs 1.7
  factor, rounded to 2"). The window a send buffer of S bytes allows
  outside recovery is S: the simulator counts payload bytes
  (crates/sim/src/tcp/sender.rs, wmem_segs), as Linux nearly does with
  TSO/GSO (sk_wmem_queued charges skb truesize: payload + about 1 KiB per
  64 KiB skb); without TSO/GSO (one skb per MSS) Linux charges up to ~3×
  the payload and the real window is smaller (not simulated).
* A recommended sysctl value is rounded up to a whole MiB.
"""

from __future__ import annotations

import math

from .wire import goodput_ceiling_bps

RMEM_PER_WINDOW = 2  # tcp_adv_win_scale = 1: the window is half the receive buffer
WMEM_PER_WINDOW = 2  # window + what fast recovery adds (tcp_sndbuf_expand's factor 2)
MIB = 1 << 20


def bdp_bytes(rate_bps: float, rtt_s: float) -> float:
    """The bandwidth-delay product in bytes."""
    return rate_bps * rtt_s / 8


def window_needed_bytes(rate_bps: float, rtt_s: float, mss_bytes: int, mtu_bytes: int,
                        buffer_bytes: float = 0.0, streams: int = 1) -> float:
    """Payload bytes each of `streams` streams must have in flight to keep
    the link full with its bottleneck buffer of `buffer_bytes` full."""
    ceiling = goodput_ceiling_bps(rate_bps, mss_bytes, mtu_bytes)
    round_trip_s = rtt_s + buffer_bytes * 8 / rate_bps
    return ceiling * round_trip_s / 8 / max(1, streams)


def rmem_for_window(window_bytes: float) -> float:
    """tcp_rmem[2] that lets the receiver advertise `window_bytes`."""
    return RMEM_PER_WINDOW * window_bytes


def wmem_for_window(window_bytes: float) -> float:
    """tcp_wmem[2] that lets the sender keep `window_bytes` in flight."""
    return WMEM_PER_WINDOW * window_bytes


def window_of_rmem(rmem_bytes: float) -> float:
    """The largest window a receive buffer of `rmem_bytes` advertises."""
    return rmem_bytes / RMEM_PER_WINDOW


def window_of_wmem(wmem_bytes: float) -> float:
    """The largest window a send buffer of `wmem_bytes` keeps in flight
    outside recovery (payload bytes, as the simulator counts them)."""
    return float(wmem_bytes)


def whole_mib(size_bytes: float) -> int:
    """`size_bytes` rounded up to a whole MiB (how a sysctl is recommended)."""
    return max(1, math.ceil(size_bytes / MIB)) * MIB
