"""A per-stream pacing cap (a flow's pacing_rate, or its host's
stream_rate_cap; the lower of the two: SO_MAX_PACING_RATE on Linux, the
sender's max pacing rate in the simulator) holds each stream at its rate on
both backends, and the kernel run proves it ran with it:
each sampled socket reads back its tcpi_max_pacing_rate, the options its
handshake settled, and a rate the socket did not take would fail the run
(readback.pacing_mismatches; tests/test_host_measure.py fakes that
failure). Root: network namespaces."""

import os
from pathlib import Path

import pytest

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.goodput import total_goodput_bps

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

CAP_BPS, STREAMS, RATE_BPS = 20e6, 2, 100e6
WARMUP_S = 1.0


def plan(backend: str, flow_pacing_bps: float | None = None) -> RunPlan:
    sender = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20, stream_rate_cap_bps=CAP_BPS)
    receiver = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
    return RunPlan(run_id=f"pace-{backend}", backend=backend, rep=0, seed=3, duration_s=4.0, warmup_s=WARMUP_S,
                   sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=0.020, loss=0.0, corruption=0.0,
                   buffer_bytes=int(RATE_BPS * 0.020 / 8), mtu_bytes=1500, senders={"s1": sender},
                   receiver=receiver,
                   flows=(FlowPlan(group=0, kind="bulk", cc="cubic", streams=STREAMS, mss_bytes=1448,
                                   sender="s1", pacing_rate_bps=flow_pacing_bps),))


# The host's cap alone; a flow's lower pacing_rate under it.
@pytest.mark.parametrize("flow_pacing_bps, per_stream_bps", [(None, CAP_BPS), (15e6, 15e6)])
def test_paced_streams_run_at_their_rate_on_both_backends_and_the_kernel_reads_it_back(
        tmp_path: Path, flow_pacing_bps, per_stream_bps):
    seen = {}
    for name, backend in (("sim", SimBackend()), ("kernel", KernelBackend())):
        p = plan(name, flow_pacing_bps)
        backend.check([p])
        out = backend.run(p, tmp_path / name)
        seen[name] = total_goodput_bps(out.series, WARMUP_S)
        if name == "kernel":
            streams = out.facts["streams_read_back"]
            assert [s["max_pacing_rate_bps"] for s in streams] == [per_stream_bps] * STREAMS, streams
            assert all(s["sack"] and s["timestamps"] for s in streams), streams  # Linux's defaults
    print(f"goodput: sim {seen['sim'] / 1e6:.2f}, kernel {seen['kernel'] / 1e6:.2f} Mbit/s "
          f"(asked {STREAMS} x {per_stream_bps / 1e6:.0f})")
    # Linux paces the payload (tcp_update_skb_after_send() times the
    # unheadered skb's length at sk_pacing_rate), the simulator too; after
    # the 1 s warm-up (slow start to 20 Mbit/s takes ~0.1 s at 20 ms) the
    # streams hold their rate. Above it by at most 2 % (the samples' clock):
    # the cap holds. The simulator's timers are exact, so it holds the rate
    # within those 2 % from below as well. Linux's pacing timer (an hrtimer
    # served in softirq) can fire late, and tcp_update_skb_after_send()
    # gives back at most half of an skb's interval of that lateness
    # (len_ns -= min(len_ns / 2, credit)); the rest is rate lost, with no
    # retransmission. On this 2-core VM that took 0.1-1.4 % in 25 runs and
    # 2.2 % once in CI, so the kernel's floor is 10 % below: still far from
    # the errors this guards against (a cap in bytes read as bits is 8x
    # off, a flow's cap shared by its streams 2x, no cap at all 50 Mbit/s
    # a stream).
    asked = STREAMS * per_stream_bps
    for name, goodput in seen.items():
        floor = 0.98 if name == "sim" else 0.90
        assert floor * asked <= goodput <= 1.02 * asked, (name, goodput, asked)
