"""hosts.<name>.qdisc = "fq" on the kernel backend against the simulator
(prints figures, not a test): the measurement behind docs/host-model.md,
"qdisc". Needs root.

    sudo PYTHONPATH=python:tests/kernel python3 bench/qdisc_pacing.py [--rate-mbit 500] [--rtt-ms 30] \\
        [--buffer-bdp 0.1] [--seconds 3] [--reps 3]

One CUBIC stream without and with qdisc = "fq", on the kernel backend (its
sender's data packets recorded as they reach the router,
tests/kernel/arrivals.py) and on the simulator. Per run: bottleneck drops,
the largest cwnd of the first second (slow start and its exit), goodput,
and (kernel) the share of bytes that arrived less than half their pacing
time after the packet before them (arrivals.bytes_ahead_share)."""

from __future__ import annotations

import argparse
import dataclasses
import tempfile

from arrivals import bytes_ahead_share
from plans import bulk_plan
from test_kernel_sender_qdisc import CapturingPath

import fatpipe.backends.kernel as kernel_backend
from fatpipe.backends.sim import SimBackend
from fatpipe.goodput import total_goodput_bps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate-mbit", type=float, default=500.0)
    ap.add_argument("--rtt-ms", type=float, default=30.0)
    ap.add_argument("--buffer-bdp", type=float, default=0.1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    rate_bps, rtt_s = a.rate_mbit * 1e6, a.rtt_ms / 1e3
    kernel_backend.EmulatedPath = CapturingPath  # records the arrivals at the router
    print("backend  qdisc  rep  drops  ss_cwnd  goodput_Mbit/s  bytes_ahead")
    for name, backend, reps in (("sim", SimBackend(), 1), ("kernel", kernel_backend.KernelBackend(), a.reps)):
        for rep in range(reps):
            for qdisc in (None, "fq"):
                plan = bulk_plan(f"q{qdisc}{rep}", cc="cubic", streams=1, rate_bps=rate_bps, rtt_s=rtt_s,
                                 duration_s=a.seconds, warmup_s=0.0, seed=3 + rep, backend=name)
                plan = dataclasses.replace(
                    plan, senders={"s1": dataclasses.replace(plan.senders["s1"], qdisc=qdisc)},
                    buffer_bytes=int(rate_bps * rtt_s / 8 * a.buffer_bdp), sample_interval_s=0.05)
                backend.check([plan])
                out = backend.run(plan, tempfile.mkdtemp(prefix="qdisc-pacing-"))
                s = out.series
                ss_cwnd = max(c for c, t in zip(s["cwnd_segments"], s["t_s"], strict=True) if t <= 1.0)
                ahead = ""
                if name == "kernel":
                    arrivals = CapturingPath.recorded.pop()
                    t0_ns = arrivals[0][0] - int(out.facts["stream_first_send_s"]["0"][0] * 1e9)
                    ahead = f"{bytes_ahead_share(arrivals, s['t_s'], s['pacing_rate_bps'], t0_ns)[0]:.3f}"
                goodput = (total_goodput_bps(s, 0.0) or 0.0) / 1e6
                print(f"{name:7}  {qdisc or '-':5}  {rep:3}  {out.path.queue_drops:5}  {ss_cwnd:7}  "
                      f"{goodput:14.0f}  {ahead}", flush=True)


if __name__ == "__main__":
    main()
