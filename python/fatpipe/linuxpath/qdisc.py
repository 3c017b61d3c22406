"""`tc` argument lists of the path's qdiscs (pure, tested)."""

from __future__ import annotations

from ..wire import frame_bytes


def tbf_burst_bytes(rate_bps: float, mtu_bytes: int) -> int:
    """tbf bucket: 1 ms at the rate, at least 4 frames (tbf needs burst ≥
    the largest packet, and at high rates a timer tick's worth)."""
    return int(max(rate_bps / 8 * 1e-3, 4 * frame_bytes(mtu_bytes)))


def tbf_args(ifname: str, rate_bps: float, burst_bytes: int, limit_bytes: int) -> list[str]:
    """`tc` arguments of the bottleneck (pure, tested)."""
    return ["tc", "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "tbf",
            "rate", f"{int(rate_bps)}bit", "burst", str(burst_bytes), "limit", str(limit_bytes)]


def netem_args(ifname: str, delay_s: float, loss: float, parent: str | None = None) -> list[str]:
    """`tc` arguments of a netem delay (and loss) stage (pure, tested):
    the root qdisc of `ifname`, or the child of `parent` (below a tbf)."""
    where = ["parent", parent, "handle", "10:"] if parent else ["root"]
    return ["tc", "qdisc", "replace", "dev", ifname, *where, "netem", "limit", "1000000",
            "delay", f"{delay_s * 1e3:.6f}ms", "loss", f"{loss * 100:.9f}%"]
