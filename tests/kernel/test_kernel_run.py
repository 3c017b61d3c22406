"""Real short kernel runs (root): goodput and RTT on a 100 Mbit/s, 20 ms path."""


import os as _os

import pytest
import pytest as _pytest

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend, doctor
from fatpipe.backends.kernel.cleanup import fatpipe_namespaces
from fatpipe.goodput import total_goodput_bps

needs_root = _pytest.mark.skipif(_os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 100e6, 0.020


def short_plan(streams: int, loss: float = 0.0, duration_s: float = 2.0) -> RunPlan:
    host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
    return RunPlan(run_id=f"t{streams}", backend="kernel", rep=0, seed=3, duration_s=duration_s, warmup_s=0.5,
                   sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=loss, corruption=0.0,
                   buffer_bytes=int(RATE_BPS * RTT_S / 8), mtu_bytes=1500, senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="bulk", cc="cubic", streams=streams, mss_bytes=1448, sender="s1"),))


@needs_root
@pytest.mark.parametrize("streams", [1, 2])
def test_short_cubic_run_fills_the_bottleneck_at_the_configured_rtt(tmp_path, streams):
    out = KernelBackend().run(short_plan(streams), tmp_path)
    # Goodput over the second half (slow start over), within 10 % of the rate.
    goodput = total_goodput_bps(out.series, 1.0)
    assert goodput == pytest.approx(RATE_BPS, rel=0.10)
    assert out.path.min_rtt_s == pytest.approx(RTT_S, abs=2e-3)
    assert out.path.emulator in ("netem", "linkem-nfqueue")
    assert set(out.series["stream"]) == set(range(streams))
    # Each stream's thread waits for the start itself and then sends: its
    # first send() is at or after the planned start, and later only by
    # a thread wake-up (scheduler latency: milliseconds, 250 ms allowed
    # for a loaded machine).
    first = out.facts["stream_first_send_s"]["0"]
    assert len(first) == streams and all(0.0 <= t < 0.25 for t in first), f"first sends after the start: {first}"
    assert not fatpipe_namespaces() or all(not n.startswith(f"fp-{__import__('os').getpid()}-")
                                           for n in fatpipe_namespaces())


@needs_root
def test_linkem_loss_rate_matches_configuration(tmp_path):
    """1 % loss: achieved within 4 binomial standard deviations (the
    deviation of a fair Bernoulli process over this many segments)."""
    p = 0.01
    out = KernelBackend().run(short_plan(4, loss=p, duration_s=4.0), tmp_path)
    n = out.path.packets
    assert n > 5000
    sigma = (p * (1 - p) / n) ** 0.5
    assert abs(out.path.loss_rate - p) < 4 * sigma


@needs_root
def test_doctor_reports_a_verdict():
    report = doctor()
    assert isinstance(report, list) and report.usable
    assert "usable" in report.verdict
