"""An application-limited bulk sender on the kernel backend: the traffic
engine's writer (linuxpath/engine.py AppWriter) writes every 1 ms tick the
bytes the rate in force owes, pauses and changes rate at the scheduled
times, and real Linux TCP carries it. Each phase's goodput is held to the
write rate within what the tick and the samples' timing allow. Real kernel
runs (root)."""

import os
from dataclasses import replace

import numpy as np
import pytest
from plans import bulk_plan

from fatpipe.backends.base import AppLimit, AppStep
from fatpipe.backends.kernel import KernelBackend

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 100e6, 0.020
TICK_S = 1e-3
# How late a Python thread (the writer, or the sampler) may run on a busy
# machine: the writer catches up the ticks it was late for, so the bytes
# written by a sample's time lag the rate by at most this.
LATE_S = 0.020


def test_the_kernel_sender_writes_at_the_rate_in_force_and_pauses(tmp_path):
    # 20 Mbit/s; nothing from 3 to 4.5 s; 40 Mbit/s from 4.5 s.
    app = AppLimit(rate_bps=20e6, tick_s=TICK_S,
                   steps=(AppStep(at_s=3.0, pause_s=1.5), AppStep(at_s=4.5, rate_bps=40e6)))
    base = bulk_plan("app", cc="cubic", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, duration_s=7.0, warmup_s=0.5)
    plan = replace(base, sample_interval_s=0.25, flows=(replace(base.flows[0], app=app),))
    out = KernelBackend().run(plan, tmp_path / plan.run_id)
    t = np.asarray(out.series["t_s"], dtype=float)
    acked = np.asarray(out.series["delivered_bytes"], dtype=float)
    sent = np.asarray(out.series["segs_out"], dtype=float)

    def sample(t_s: float) -> int:
        return int(np.argmin(abs(t - t_s)))

    # Bytes acknowledged between two samples are the writes of as long a
    # window one path delay earlier, give or take at each edge one tick's
    # write, a delayed ACK held until the next tick's segment, and the
    # threads' lateness; the path (100 Mbit/s) never limits the writes.
    seen = []
    for t0, t1, rate in ((1.0, 3.0, 20e6), (5.5, 7.0, 40e6)):
        i0, i1 = sample(t0), sample(t1)
        got = acked[i1] - acked[i0]
        want = rate / 8 * (t[i1] - t[i0])
        margin = rate / 8 * 2 * (2 * TICK_S + LATE_S) + 1448
        seen.append(f"{t[i0]:.3f}-{t[i1]:.3f} s: {got:.0f} bytes acknowledged, {want:.0f} ± {margin:.0f} written")
        assert abs(got - want) <= margin, seen
    # The pause: once what was written before 3 s is acknowledged (an RTT
    # plus Linux's 40 ms delayed-ACK timer, well before the 3.25 s sample),
    # nothing is sent or acknowledged until the writes resume at 4.5 s.
    i0, i1 = sample(3.25), sample(4.25)
    seen.append(f"pause {t[i0]:.3f}-{t[i1]:.3f} s: {sent[i1] - sent[i0]:.0f} segments sent, "
                f"{acked[i1] - acked[i0]:.0f} bytes acknowledged")
    assert sent[i1] == sent[i0] and acked[i1] == acked[i0], seen
