"""Cross traffic and a Mahimahi delivery trace on the kernel backend: real
Linux TCP through fatpipe-linkem, whose data queue offers the simulator's
own cross sources (crates/sim/src/path/cross.rs, same seed) to its
bottleneck and serves it from the trace (trace.rs). Checked against the
physics of the path and the simulator's run of the same plan. Real kernel
runs (root); rates the delay line holds on a small machine."""

import os
from dataclasses import replace

import pytest
from plans import bulk_plan

from fatpipe.backends.base import CrossFlow, FlowPlan, PathDynamics, RunPlan, Trace
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.linkem import find_linkem
from fatpipe.summary import summarize

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 50e6, 0.020
# Goodput per bit of frames: 1448 payload bytes in a 1514-byte frame (TCP
# timestamps on, as Linux negotiates them); a cross packet of 1500 IP bytes
# in the same frame.
PAYLOAD = 1448 / 1514
CROSS_IP = 1500 / 1514


@pytest.fixture(autouse=True)
def _linkem():
    if find_linkem() is None:
        pytest.skip("fatpipe-linkem is not built (cargo build --release -p fatpipe-linkem)")


def goodputs(plan: RunPlan, tmp_path, backend) -> dict[int, float]:
    out = backend.run(plan, tmp_path / f"{plan.run_id}-{backend.name}")
    if backend.name == "kernel":
        assert out.path.emulator == "linkem-nfqueue", out.path
    return {r["flow_group"]: r["goodput_bps"] for r in summarize(plan, out)}


def test_constant_cross_traffic_takes_its_rate_from_the_tcp_flow(tmp_path):
    # 50 Mbit/s, 20 ms, a 1-BDP buffer; 20 Mbit/s of constant cross
    # traffic in 1500-byte packets beside one CUBIC flow. The TCP flow gets
    # what is left, 30 Mbit/s of frames, less CUBIC's sawtooth below a
    # 1-BDP buffer (the buffer refills in each cycle, so the link stays
    # nearly busy); the cross group sends 20 Mbit/s of frames and loses
    # only the packets that meet the full buffer when CUBIC overshoots.
    base = bulk_plan("cross", cc="cubic", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, duration_s=10.0, warmup_s=2.0,
                     seed=7)
    cross = FlowPlan(group=1, kind="cross", cc="", streams=1, mss_bytes=0, sender="",
                     cross=CrossFlow(rate_bps=20e6, packet_bytes=1500))
    plan = replace(base, flows=(*base.flows, cross), dynamics=PathDynamics(), sample_interval_s=0.1)
    kernel = goodputs(plan, tmp_path, KernelBackend())
    sim = goodputs(replace(plan, backend="sim"), tmp_path, SimBackend())
    seen = (f"kernel: TCP {kernel[0] / 1e6:.2f}, cross {kernel[1] / 1e6:.2f} Mbit/s; simulator: TCP "
            f"{sim[0] / 1e6:.2f}, cross {sim[1] / 1e6:.2f}; the link less the cross frames carries "
            f"{30e6 * PAYLOAD / 1e6:.2f} of TCP payload, the cross source {20e6 * CROSS_IP / 1e6:.2f} of IP bytes")
    print(seen)
    assert 0.85 * 30e6 * PAYLOAD < kernel[0] < 1.03 * 30e6 * PAYLOAD, seen
    assert 0.95 * 20e6 * CROSS_IP < kernel[1] <= 1.001 * 20e6 * CROSS_IP, seen
    # Together they fill the link, as in the simulator.
    assert kernel[0] / PAYLOAD + kernel[1] / CROSS_IP > 0.9 * RATE_BPS, seen
    assert kernel[1] == pytest.approx(sim[1], rel=0.03), seen


def test_a_trace_of_n_opportunities_per_ms_serves_n_times_1504_bytes_per_ms(tmp_path):
    # Three delivery opportunities every millisecond (mahimahi's 1504 bytes
    # each): 36.1 Mbit/s of IP packets, of which a 1500-byte packet carries
    # 1448 bytes of payload. path.rate (the buffer's BDP) is set near it,
    # and far from it the bottleneck would show: 100 Mbit/s.
    n = 3
    trace_ip_bps = n * 1504 * 8 * 1000
    plan = replace(bulk_plan("trace", cc="cubic", streams=1, rate_bps=trace_ip_bps, rtt_s=RTT_S, duration_s=8.0,
                             warmup_s=2.0, seed=7),
                   dynamics=PathDynamics(trace=Trace(ms_gaps=(1,), counts=(n,))), sample_interval_s=0.1)
    plan = replace(plan, rate_bps=100e6)
    kernel = goodputs(plan, tmp_path, KernelBackend())
    sim = goodputs(replace(plan, backend="sim"), tmp_path, SimBackend())
    expected = trace_ip_bps * 1448 / 1500
    seen = (f"goodput {kernel[0] / 1e6:.2f} Mbit/s (simulator {sim[0] / 1e6:.2f}); the trace's payload rate "
            f"{expected / 1e6:.2f}")
    print(seen)
    assert 0.85 * expected < kernel[0] < 1.02 * expected, seen
    assert kernel[0] == pytest.approx(sim[0], rel=0.05), seen


def test_on_off_cross_traffic_sends_the_simulators_packets_for_the_seed(tmp_path):
    # Four heavy-tailed on/off sources (10 Mbit/s while on, on 20 ms and
    # off 60 ms on average, shape 1.5) beside CUBIC on 50 Mbit/s: linkem
    # draws the simulator's streams for the seed, so the cross group sends
    # the same packets on both backends and, on a link it rarely fills,
    # delivers nearly the same bytes (only the few tail drops differ, as
    # they depend on the TCP flow). Another seed's sources send another
    # amount (shown for scale: with shape 1.5 the on periods' variance is
    # infinite, and 8 s of them vary by tens of percents between seeds).
    base = bulk_plan("onoff", cc="cubic", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, duration_s=8.0, warmup_s=2.0,
                     seed=11)
    cross = FlowPlan(group=1, kind="cross", cc="", streams=4, mss_bytes=0, sender="",
                     cross=CrossFlow(rate_bps=10e6, pattern="on_off", on_s=0.02, off_s=0.06, shape=1.5))
    plan = replace(base, flows=(*base.flows, cross), dynamics=PathDynamics(), sample_interval_s=0.1)
    kernel = goodputs(plan, tmp_path, KernelBackend())
    sim = goodputs(replace(plan, backend="sim"), tmp_path, SimBackend())
    other = goodputs(replace(plan, backend="sim", seed=12, run_id="onoff-other"), tmp_path, SimBackend())
    seen = (f"cross: kernel {kernel[1] / 1e6:.3f} Mbit/s, simulator {sim[1] / 1e6:.3f} (seed 12: "
            f"{other[1] / 1e6:.3f}); TCP: kernel {kernel[0] / 1e6:.2f}, simulator {sim[0] / 1e6:.2f}")
    print(seen)
    assert kernel[1] == pytest.approx(sim[1], rel=0.01), seen
