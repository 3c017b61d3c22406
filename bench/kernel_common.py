"""Helpers shared by the kernel benchmark scripts (not tests)."""

from __future__ import annotations

import math

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.goodput import total_goodput_bps


def plan(rate_bps: float, rtt_s: float, loss: float, cc: str, streams: int, mtu: int = 1500,
         duration_s: float = 10.0, warmup_s: float = 2.0, buffer_bdp: float = 1.0, seed: int = 1,
         mem_bytes: int = 256 << 20, gro: bool = False) -> RunPlan:
    host = HostLimits(rmem_max_bytes=mem_bytes, wmem_max_bytes=mem_bytes)
    receiver = HostLimits(rmem_max_bytes=mem_bytes, wmem_max_bytes=mem_bytes, gro=gro)
    return RunPlan(run_id=f"{cc}-{streams}-{loss}", backend="kernel", rep=0, seed=seed, duration_s=duration_s,
                   warmup_s=warmup_s, sample_interval_s=0.1, rate_bps=rate_bps, rtt_s=rtt_s, loss=loss,
                   corruption=0.0, buffer_bytes=int(buffer_bdp * rate_bps * rtt_s / 8), mtu_bytes=mtu,
                   senders={"s1": host}, receiver=receiver,
                   flows=(FlowPlan(group=0, kind="bulk", cc=cc, streams=streams, mss_bytes=mtu - 40, sender="s1"),))


def goodput_bps(outcome, warmup_s: float) -> float:
    return total_goodput_bps(outcome.series, warmup_s) or 0.0


def mathis_bps(mss_bytes: int, rtt_s: float, p: float) -> float:
    """Mathis et al. 1997: 1.22 · MSS / (RTT · √p)."""
    return 1.22 * mss_bytes * 8 / (rtt_s * math.sqrt(p))
