"""Paths that move on the kernel backend: real Linux TCP through
fatpipe-linkem, which applies the simulator's own path dynamics
(crates/linkem/src/moving.rs). Each feature is checked against the physics
of the path and, where the draws pair, against the simulator's run of the
same seed. Real kernel runs (root); rates the delay line holds on a small
machine (tens of Mbit/s)."""

import os
from dataclasses import replace

import numpy as np
import pytest
from plans import bulk_plan

from fatpipe.backends.base import Aggregation, GilbertElliott, Jitter, PathDynamics, PathStep, Policer, RunPlan
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.linkem import find_linkem

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 50e6, 0.020
# Goodput per bit on the wire: 1448 payload bytes in a 1514-byte frame
# (TCP timestamps on, as Linux negotiates them).
PAYLOAD = 1448 / 1514


@pytest.fixture(autouse=True)
def _linkem():
    if find_linkem() is None:
        pytest.skip("fatpipe-linkem is not built (cargo build --release -p fatpipe-linkem)")


def moving(run_id: str, dynamics: PathDynamics, *, cc: str = "cubic", duration_s: float = 6.0, loss: float = 0.0,
           seed: int = 5) -> RunPlan:
    base = bulk_plan(run_id, cc=cc, streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=loss, duration_s=duration_s,
                     warmup_s=1.0, seed=seed)
    return replace(base, dynamics=dynamics, sample_interval_s=0.25)


def run(plan: RunPlan, tmp_path, backend=None):
    out = (backend or KernelBackend()).run(plan, tmp_path / plan.run_id)
    if backend is None:
        assert out.path.emulator == "linkem-nfqueue", out.path
    return out


def goodput_bps(out, t0: float, t1: float) -> float:
    """Goodput of the run's one stream between the samples at t0 and t1."""
    t = np.asarray(out.series["t_s"], dtype=float)
    b = np.asarray(out.series["delivered_bytes"], dtype=float)
    i0, i1 = int(np.argmin(abs(t - t0))), int(np.argmin(abs(t - t1)))
    return (b[i1] - b[i0]) * 8 / (t[i1] - t[i0])


def test_a_rate_step_changes_the_kernel_paths_service_at_the_scheduled_instant(tmp_path):
    steps = PathDynamics(schedule=(PathStep(at_s=2.5, rate_bps=RATE_BPS / 5), PathStep(at_s=5.0, rate_bps=RATE_BPS)))
    out = run(moving("step", steps, duration_s=7.0), tmp_path)
    # Each phase is bounded by the link's payload rate, plus what a window
    # may count that crossed the link before it: bytes the receiver held
    # out of order (SACKed) at the window's start are counted when the
    # hole fills, and they are at most a window of data, the BDP plus the
    # buffer at the highest rate (2 x 125 KB here). A cwnd-limited CUBIC
    # keeps each phase near full.
    held_bits = 2 * RATE_BPS * RTT_S
    phases = [(1.5, 2.5, RATE_BPS), (3.5, 5.0, RATE_BPS / 5), (6.0, 7.0, RATE_BPS)]
    seen = [f"{t0}-{t1} s: {goodput_bps(out, t0, t1) / 1e6:.2f} Mbit/s of {r * PAYLOAD / 1e6:.2f}"
            for t0, t1, r in phases]
    for t0, t1, rate in phases:
        g = goodput_bps(out, t0, t1)
        assert 0.8 * rate * PAYLOAD < g < 1.01 * rate * PAYLOAD + held_bits / (t1 - t0), seen


def test_an_rtt_step_changes_the_rtt_linux_measures(tmp_path):
    out = run(moving("rtt", PathDynamics(schedule=(PathStep(at_s=3.0, rtt_s=0.080),)), duration_s=6.0), tmp_path)
    t = np.asarray(out.series["t_s"])
    srtt = np.asarray(out.series["srtt_s"])
    before, after = srtt[(t > 1.5) & (t <= 3.0)], srtt[t >= 5.0]
    seen = f"srtt before {np.round(before * 1e3, 1)} ms, after {np.round(after * 1e3, 1)} ms"
    # Before: 20 ms plus at most a buffer's worth (1 BDP: 20 ms) of queue.
    assert before.min() >= RTT_S * 0.98 and before.max() < 2 * RTT_S * 1.1, seen
    # After: at least the new propagation RTT.
    assert after.min() >= 0.080 * 0.98, seen


def test_a_loss_step_starts_losses_on_a_lossless_kernel_path_at_the_scheduled_instant(tmp_path):
    out = run(moving("loss-step", PathDynamics(schedule=(PathStep(at_s=3.0, loss=0.01),)), duration_s=6.0), tmp_path)
    t = np.asarray(out.series["t_s"])
    segs = np.asarray(out.series["segs_out"])
    # Segments sent from the step on (the last sample before it is at most
    # one sampling interval early) and the 1 % of them the path should lose,
    # within a 99.9 % binomial interval; nothing is lost at random before.
    after = float(segs[-1] - segs[t <= 3.0][-1])
    expected = 0.01 * after
    half = 3.29 * (expected * 0.99) ** 0.5
    seen = f"random drops {out.path.random_drops} of {out.path.packets} packets; {after:.0f} segments sent " \
           f"after the step, {expected:.1f} ± {half:.1f} expected"
    assert expected - half <= out.path.random_drops <= expected + half + 0.01 * 0.25 * segs[-1] / 6.0, seen


def test_a_policer_on_the_kernel_path_never_passes_more_than_its_profile(tmp_path):
    rate, burst = RATE_BPS / 5, 30_000
    out = run(moving("policer", PathDynamics(policer=Policer(rate_bps=rate, burst_bytes=burst))), tmp_path)
    total = goodput_bps(out, 0.0, 6.0)
    seen = f"goodput {total / 1e6:.2f} Mbit/s, policer drops {out.path.policer_drops}"
    assert out.path.policer_drops > 0, seen
    # Frames passed ≤ rate·t + burst over the run; goodput counts payload.
    assert total <= (rate * 6.0 + burst * 8) / 6.0 * PAYLOAD * 1.01, seen
    assert total > 0.3 * rate * PAYLOAD, seen


def test_gilbert_elliott_loss_on_the_kernel_path_is_the_simulators_for_one_seed(tmp_path):
    ge = PathDynamics(gilbert_elliott=GilbertElliott(r=0.25, bad_loss=1.0))
    plan = moving("ge", ge, loss=0.002)
    k = run(plan, tmp_path)
    s = run(replace(plan, backend="sim"), tmp_path, SimBackend())
    seen = f"kernel {k.path.random_drops}/{k.path.packets}, sim {s.path.random_drops}/{s.path.packets}"
    # The long-run mean within the chain's widened binomial interval (as
    # crates/sim's rule test): p = r·L/(1 − L), ρ = 1 − p − r.
    n, mean = k.path.packets, 0.002
    rho = 1 - 0.25 * mean / (1 - mean) - 0.25
    half = 3.29 * (n * mean * (1 - mean) * (1 + 2 * rho / (1 - rho))) ** 0.5
    assert abs(k.path.random_drops - mean * n) < half, seen
    # One seed, one chain: the two backends' drop counts stay close
    # (they draw the same chain; only how many packets each sent differs).
    assert abs(k.path.random_drops - s.path.random_drops) <= 0.25 * max(s.path.random_drops, 8), seen


def test_jitter_reorders_on_the_kernel_path_only_when_asked(tmp_path):
    for reorder in (False, True):
        j = PathDynamics(jitter=Jitter(deviation_s=0.002, reorder=reorder))
        out = run(moving(f"jitter-{reorder}", j, duration_s=4.0), tmp_path)
        seen = f"reorder={reorder}: {out.path.reordered} reordered, goodput {goodput_bps(out, 1.0, 4.0) / 1e6:.1f}"
        assert (out.path.reordered > 0) == reorder, seen
        assert goodput_bps(out, 1.0, 4.0) > 0.05 * RATE_BPS, seen


def test_ack_aggregation_on_the_kernel_path_keeps_bbr_at_the_link_rate(tmp_path):
    agg = PathDynamics(aggregation=Aggregation(direction="ack", interval_s=0.004))
    out = run(moving("agg", agg, cc="bbr"), tmp_path)
    g = goodput_bps(out, 2.0, 6.0)
    # BBR paces at its bandwidth estimate and caps inflight at 2 BDP plus
    # extra_acked: 4 ms bursts of ACKs (a fifth of the RTT) leave it near
    # the link rate.
    assert g > 0.8 * RATE_BPS * PAYLOAD, f"bbr under 4 ms ACK aggregation: {g / 1e6:.2f} Mbit/s"
