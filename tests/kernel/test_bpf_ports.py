"""fatpipe's BPF ports of the CCAs this kernel lacks (bpf/cca/, root): each
registers under its Linux name, a 3 s kernel run at 100 Mbit/s and 20 ms
with `cc = NAME` runs it (the socket's TCP_CONGESTION is NAME) at the
goodput its rule allows, and afterwards the kernel lists exactly what it
listed before (docs/bpf-ccas.md)."""

import dataclasses
from pathlib import Path

import pytest
from bpf_skip import bpf_ports_missing

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend, bpfcca
from fatpipe.backends.sim import SimBackend
from fatpipe.goodput import total_goodput_bps

RATE_BPS, RTT_S, MTU_BYTES = 100e6, 0.020, 1500
MSS_BYTES = 1448  # payload at MTU 1500 with timestamps (spec.mss_payload_bytes)
WARMUP_S, DURATION_S = 1.0, 3.0
GONE_DEADLINE_S = 10.0
# The bottleneck carries at most MSS/MTU of its rate as payload; 2 % for
# the sampling clock (samples every 0.1 s over a 2 s window).
CEILING_BPS = RATE_BPS * MSS_BYTES / MTU_BYTES * 1.02

# Each port's goodput floor as a share of the payload rate, from its rule,
# with a 1-BDP buffer and no random loss: after slow start's overshoot
# every loss-based port keeps cwnd >= BDP after a decrease as long as it
# cuts by at most half (cwnd at the loss is ~2 BDP: BDP in flight + BDP
# queued), so the link stays busy from the first recovery on; the floor
# leaves 10 % for that recovery falling into the window (the 1 s warm-up
# is ~50 RTTs, slow start ends in ~5).
FLOOR_SHARE = {
    "scalable": 0.90,  # cuts by 1/8
    "highspeed": 0.90,  # cuts by at most 1/2 (row 0 of RFC 3649's table)
    "bic": 0.90,  # cuts by 1 - 819/1024 = 20 % (half below low_window)
    "illinois": 0.90,  # cuts by 1/8 to 1/2 (beta() with the queueing delay)
    # cuts by at most half at a loss; its early decongestion removes at
    # most the queue it measures (min(queue, cwnd/2) once > 80 queued)
    "yeah": 0.90,
}
# Ports whose rule sets cwnd from an estimate that is not the BDP when the
# first loss comes: their floor is the simulator's goodput for the same
# plan (its Rust port of the same Linux file, crates/sim/src/cc/), less
# 15 %. Westwood+ sets ssthresh = cwnd = bandwidth estimate x min RTT at
# the loss that ends slow start (tcp_westwood_event), and its estimate is
# a two-stage 7/8 low-pass over >= 50 ms windows seeded in slow start, far
# below the link rate ~0.2 s in; then it grows by one segment per RTT
# (measured: kernel 66.5, simulator 63.6 Mbit/s). Vegas and NV are
# delay-based: they leave slow start when the queue they measure passes a
# few segments, at a cwnd set from the rate they measured, and the rate
# they then settle at depends on those RTT samples (measured: vegas 95.6 on
# both; nv kernel 84.8, simulator 87.3 Mbit/s).
SIM_FLOOR = {"westwood": 0.85, "vegas": 0.85, "nv": 0.85}


pytestmark = pytest.mark.skipif(bpf_ports_missing() is not None, reason=bpf_ports_missing() or "")


@pytest.fixture(scope="module")
def ports():
    _, built = bpfcca.loader()
    missing = (set(FLOOR_SHARE) | set(SIM_FLOOR)) - set(built)
    assert not missing, f"ports not built: {missing}"
    return built


def plan(cc: str) -> RunPlan:
    host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
    return RunPlan(run_id=f"port-{cc}", backend="kernel", rep=0, seed=3, duration_s=DURATION_S,
                   warmup_s=WARMUP_S, sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=0.0,
                   corruption=0.0, buffer_bytes=int(RATE_BPS * RTT_S / 8), mtu_bytes=MTU_BYTES,
                   senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="bulk", cc=cc, streams=1, mss_bytes=MSS_BYTES, sender="s1"),))


def test_each_port_registers_under_its_linux_name_with_the_source_hash(ports):
    for name in sorted(set(FLOOR_SHARE) | set(SIM_FLOOR)):
        assert ports[name].file == f"{name}.bpf.c"
        assert ports[name].source_sha256 == bpfcca.source_sha256(name)
        assert len(name) <= 15  # TCP_CA_NAME_MAX - 1


def test_the_kernels_own_cca_wins_over_a_port():
    kernel = ["reno", "cubic", "bic"]
    ports = {n: bpfcca.Port(n, f"{n}.bpf.c", "0" * 64) for n in ("bic", "westwood")}
    assert bpfcca.ports_to_load(["bic", "westwood", "cubic"], kernel, ports) == ["westwood"]


def floor_bps(cc: str, tmp_path: Path) -> float:
    if cc in SIM_FLOOR:
        sim = SimBackend().run(dataclasses.replace(plan(cc), backend="sim"), tmp_path)
        return SIM_FLOOR[cc] * total_goodput_bps(sim.series, WARMUP_S)
    return FLOOR_SHARE[cc] * RATE_BPS * MSS_BYTES / MTU_BYTES


@pytest.mark.usefixtures("ports")  # every port built before the runs
@pytest.mark.parametrize("cc", sorted(set(FLOOR_SHARE) | set(SIM_FLOOR)))
def test_a_kernel_run_uses_the_port_at_the_goodput_its_rule_allows_and_unregisters_it(cc, tmp_path):
    if cc in bpfcca.kernel_ccas():
        pytest.skip(f"this kernel has its own {cc}: the port is not used")
    before = bpfcca.kernel_ccas()
    backend = KernelBackend()
    backend.check([plan(cc)])
    out = backend.run(plan(cc), tmp_path)
    assert bpfcca.wait_until(lambda: bpfcca.kernel_ccas() == before, GONE_DEADLINE_S), bpfcca.kernel_ccas()
    assert out.facts["ccas_seen"] == {"0": [cc]}  # TCP_CONGESTION of the sampled socket
    assert out.facts["ccas"][cc] == {"source": "fatpipe-bpf", "file": f"bpf/cca/{cc}.bpf.c",
                                     "source_sha256": bpfcca.source_sha256(cc)}
    goodput = total_goodput_bps(out.series, WARMUP_S)
    floor = floor_bps(cc, tmp_path)
    print(f"{cc}: goodput {goodput / 1e6:.1f} Mbit/s (floor {floor / 1e6:.1f}, ceiling {CEILING_BPS / 1e6:.1f})")
    assert floor <= goodput <= CEILING_BPS, (cc, goodput)
