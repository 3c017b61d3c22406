"""The run plan most kernel tests use: one sender, one bulk flow group over
the emulated path, buffer 1 BDP, MTU 1500 (tests build their variants from it)."""

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan


def bulk_plan(run_id: str, *, cc: str, streams: int, rate_bps: float, rtt_s: float, loss: float = 0.0,
              duration_s: float, warmup_s: float, seed: int = 3, backend: str = "kernel", mss_bytes: int = 1448,
              mem_bytes: int = 16 << 20, receiver_gro: bool = False) -> RunPlan:
    host = HostLimits(rmem_max_bytes=mem_bytes, wmem_max_bytes=mem_bytes)
    receiver = HostLimits(rmem_max_bytes=mem_bytes, wmem_max_bytes=mem_bytes, gro=receiver_gro)
    return RunPlan(run_id=run_id, backend=backend, rep=0, seed=seed, duration_s=duration_s, warmup_s=warmup_s,
                   sample_interval_s=0.1, rate_bps=rate_bps, rtt_s=rtt_s, loss=loss, corruption=0.0,
                   buffer_bytes=int(rate_bps * rtt_s / 8), mtu_bytes=1500, senders={"s1": host}, receiver=receiver,
                   flows=(FlowPlan(group=0, kind="bulk", cc=cc, streams=streams, mss_bytes=mss_bytes, sender="s1"),))
