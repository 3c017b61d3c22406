"""The `rate_short` flag: a link that carried well below its rate while
nothing in the spec kept the flows from filling it (summary.rate_short)."""

import dataclasses

import pytest

from fake_backend import FakeBackend
from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.summary import summarize

# FakeBackend delivers 1 MB/s = 8 Mbit/s per stream (repetition 0).
STREAM_BPS = 8e6


def plan(rate_bps: float, loss: float = 0.0, kind: str = "bulk", streams: int = 1,
         cap_bps: float | None = None) -> RunPlan:
    host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20, stream_rate_cap_bps=cap_bps)
    flow = FlowPlan(group=0, kind=kind, cc="cubic", streams=streams, mss_bytes=1448, sender="s1")
    if kind == "rpc":
        flow = dataclasses.replace(flow, request_bytes=100, response_bytes=10000, concurrency=1)
    return RunPlan(run_id="r", backend="sim", rep=0, seed=1, duration_s=4.0, warmup_s=1.0, sample_interval_s=0.5,
                   rate_bps=rate_bps, rtt_s=0.02, loss=loss, corruption=0.0, buffer_bytes=250000, mtu_bytes=1500,
                   senders={"s1": host}, receiver=host, flows=(flow,))


def flags(p: RunPlan) -> list[str]:
    [row] = summarize(p, FakeBackend().run(p, None))
    return row["flags"].split(",") if row["flags"] else []


def test_a_link_carrying_under_half_its_rate_with_nothing_holding_the_flows_back_is_rate_short():
    got = flags(plan(rate_bps=100e6))
    assert "rate_short" in got, f"8 Mbit/s of goodput on a 100 Mbit/s lossless path: flags {got}"


def test_a_link_carrying_its_rate_is_not_rate_short():
    got = flags(plan(rate_bps=10e6))
    assert "rate_short" not in got, f"8 of 10 Mbit/s: flags {got}"


@pytest.mark.parametrize("why, p", [
    # Mathis: 1448 B / 20 ms × 1.22 / √0.01 ≈ 7 Mbit/s per stream < 100 Mbit/s.
    ("random loss bounds the flows below the rate", plan(rate_bps=100e6, loss=1e-2)),
    ("a host cap bounds the streams below the rate", plan(rate_bps=100e6, streams=2, cap_bps=10e6)),
    ("RPC traffic may leave the link idle", plan(rate_bps=100e6, kind="rpc")),
])
def test_a_link_left_idle_by_the_traffic_itself_is_not_rate_short(why, p):
    got = flags(p)
    assert "rate_short" not in got, f"{why}, yet flagged: {got}"


def test_a_path_that_moves_is_not_held_to_its_starting_rate_rtt_or_loss():
    from fatpipe.backends.base import Aggregation, GilbertElliott, PathDynamics, PathReport, PathStep
    from fatpipe.summary import path_flags

    stepped = dataclasses.replace(plan(rate_bps=100e6), dynamics=PathDynamics(
        schedule=(PathStep(at_s=1.0, rate_bps=1e6),)))
    assert "rate_short" not in flags(stepped), "the link ran at 1 Mbit/s from 1 s on"
    # 30 ms of min RTT on a 20 ms path whose ACKs wait for 12 ms release slots.
    slotted = dataclasses.replace(plan(rate_bps=10e6), dynamics=PathDynamics(
        aggregation=Aggregation(direction="ack", interval_s=0.012)))
    assert "rtt_inflated" not in path_flags(slotted, PathReport(emulator="sim", min_rtt_s=0.030))
    assert "rtt_inflated" in path_flags(plan(rate_bps=10e6), PathReport(emulator="sim", min_rtt_s=0.030))
    # Bursty loss of mean 1 % that measured 1.5 % over 10,000 packets.
    bursty = dataclasses.replace(plan(rate_bps=10e6, loss=0.01), dynamics=PathDynamics(
        gilbert_elliott=GilbertElliott(r=0.25, bad_loss=1.0)))
    seen = PathReport(emulator="sim", min_rtt_s=0.02, packets=10_000, random_drops=150)
    assert "loss_off" not in path_flags(bursty, seen)
    assert "loss_off" in path_flags(plan(rate_bps=10e6, loss=0.01), seen)
