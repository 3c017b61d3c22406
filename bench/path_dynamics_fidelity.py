"""Paths that move, kernel against simulator (prints figures, not a test):
the measurement behind docs/fidelity.md, "Paths that move". Needs root.

    sudo PYTHONPATH=python:tests/kernel python3 bench/path_dynamics_fidelity.py [--seeds 3] [--seconds 8] \\
        [--rate-mbit 50] [--rtt-ms 20] [--only SUBSTRING] [--markdown]

Each feature of docs/path-dynamics.md at one setting, with CUBIC and BBR
(v1), on the kernel backend (real Linux TCP through fatpipe-linkem, which
applies the simulator's own dynamics code) and on the simulator, one run per
seed on each: for one seed both meet the same losses, jitter draws and
policer. Per point: sim/kernel ratios of goodput after the warm-up (paired
by seed, 95 % interval), of the median queueing delay (smoothed RTT over
the run after the warm-up minus the base propagation RTT in effect) and of
the retransmitted share of segments; and the kernel runs flagged
emulator_late."""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import numpy as np
from plans import bulk_plan

from fatpipe.backends.base import (
    Aggregation,
    AppLimit,
    AppStep,
    CrossFlow,
    FlowPlan,
    GilbertElliott,
    Jitter,
    PathDrop,
    PathDynamics,
    PathStep,
    Policer,
    Reorder,
    RunPlan,
)
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.compare import paired_ratio_ci
from fatpipe.goodput import total_goodput_bps
from fatpipe.pathspec import staircase
from fatpipe.pathtrace import read_trace
from fatpipe.schema import emulator_late

# The bundled synthetic trace (scripts/synthetic_trace.py), 12 Mbit/s on average.
TRACE = Path(__file__).resolve().parent.parent / "studies" / "traces" / "synthetic-wandering-12mbit.trace"
CROSS_FRACTION = 0.4  # cross traffic's rate as a share of the link's

WARMUP_S = 1.0


def features(rate_bps: float, seconds: float) -> dict[str, tuple[PathDynamics, float]]:
    """Feature name -> (its dynamics, the path's base loss)."""
    third = round(seconds / 3, 3)
    return {
        "rate step /5 then back": (PathDynamics(schedule=(PathStep(at_s=third, rate_bps=rate_bps / 5),
                                                         PathStep(at_s=2 * third, rate_bps=rate_bps))), 0.0),
        "RTT step x4": (PathDynamics(schedule=(PathStep(at_s=third, rtt_s=None),)), 0.0),  # rtt set per run
        "loss step 0 -> 1e-3": (PathDynamics(schedule=(PathStep(at_s=third, loss=1e-3),)), 0.0),
        "Gilbert-Elliott 2e-3, r 0.25": (PathDynamics(gilbert_elliott=GilbertElliott(r=0.25, bad_loss=1.0)), 2e-3),
        "policer rate/5, 30 KB": (PathDynamics(policer=Policer(rate_bps=rate_bps / 5, burst_bytes=30_000)), 0.0),
        "jitter 2 ms uniform": (PathDynamics(jitter=Jitter(deviation_s=0.002)), 0.0),
        "jitter 2 ms, reordering": (PathDynamics(jitter=Jitter(deviation_s=0.002, reorder=True)), 0.0),
        "ACK aggregation 4 ms": (PathDynamics(aggregation=Aggregation(direction="ack", interval_s=0.004)), 0.0),
        "cross traffic 0.4 x rate, constant": (PathDynamics(), 0.0),
        "cross traffic 0.4 x rate, on/off 100 ms": (PathDynamics(), 0.0),
        "trace: synthetic wandering 12 Mbit/s": (PathDynamics(trace=read_trace(str(TRACE))), 0.0),
        "drops: 10 packets at T/3": (PathDynamics(drops=(PathDrop(at_s=third, count=10),)), 0.0),
        "reorder knob 1 %": (PathDynamics(reorder=Reorder(probability=0.01)), 0.0),
        "rate ramp /5 over T/3": (PathDynamics(schedule=ramp(rate_bps, third)), 0.0),
        "app-limited 0.4 x rate, 1 s pause at T/3": (PathDynamics(), 0.0),  # the flow's app (app_limit)
    }


def ramp(rate_bps: float, third: float) -> tuple[PathStep, ...]:
    """The rate falling linearly to a fifth from T/3 over T/3, as
    path.schedule's `ramp` plans it."""
    return tuple(staircase(third, third, {"rate_bps": rate_bps}, {"rate_bps": rate_bps / 5}))


def app_limit(name: str, rate_bps: float, seconds: float) -> AppLimit | None:
    """The application limit of a feature that has one: 0.4 of the link's
    rate per stream, paused for 1 s at a third of the run."""
    if not name.startswith("app-limited"):
        return None
    return AppLimit(rate_bps=0.4 * rate_bps, tick_s=1e-3, steps=(AppStep(at_s=round(seconds / 3, 3), pause_s=1.0),))


def cross_flow(name: str, rate_bps: float) -> FlowPlan | None:
    """The cross-traffic group of a feature that has one."""
    if not name.startswith("cross traffic"):
        return None
    pattern = {"pattern": "on_off", "on_s": 0.1, "off_s": 0.1} if "on/off" in name else {}
    # On/off sources send at twice the share while on, so the mean is the share.
    rate = CROSS_FRACTION * rate_bps * (2 if pattern else 1)
    return FlowPlan(group=1, kind="cross", cc="", streams=1, mss_bytes=0, sender="",
                    cross=CrossFlow(rate_bps=rate, **pattern))


def plan_for(name: str, dyn: PathDynamics, loss: float, cc: str, seed: int, backend: str, rate_bps: float,
             rtt_s: float, seconds: float) -> RunPlan:
    if name.startswith("RTT step"):
        dyn = PathDynamics(schedule=(dataclasses.replace(dyn.schedule[0], rtt_s=4 * rtt_s),))
    if dyn.trace is not None:
        rate_bps = 12e6  # the buffer's BDP at the trace's mean rate
    base = bulk_plan(f"{backend}-{cc}-{seed}", cc=cc, streams=1, rate_bps=rate_bps, rtt_s=rtt_s, loss=loss,
                     duration_s=seconds, warmup_s=WARMUP_S, seed=seed, backend=backend)
    cross = cross_flow(name, rate_bps)
    tcp = dataclasses.replace(base.flows[0], app=app_limit(name, rate_bps, seconds))
    flows = (tcp, *base.flows[1:]) + ((cross,) if cross else ())
    return dataclasses.replace(base, dynamics=dyn, sample_interval_s=0.1, flows=flows)


def tcp_goodput_bps(out) -> float:
    """Goodput after the warm-up of flow group 0 (the TCP flow, not the cross traffic)."""
    keep = [i for i, g in enumerate(out.series["flow_group"]) if g == 0]
    return total_goodput_bps({k: [v[i] for i in keep] for k, v in out.series.items()}, WARMUP_S)


def queue_delay_s(out, dyn: PathDynamics, rtt_s: float) -> float:
    """Median over samples after the warm-up of srtt minus the base RTT in effect (the TCP flow)."""
    tcp = np.asarray(out.series["flow_group"]) == 0
    t = np.asarray(out.series["t_s"], dtype=float)[tcp]
    srtt = np.asarray(out.series["srtt_s"], dtype=float)[tcp]
    base = np.full_like(t, rtt_s)
    for step in dyn.schedule:
        if step.rtt_s is not None:
            base[t >= step.at_s] = step.rtt_s
    keep = t >= WARMUP_S
    return float(np.median(srtt[keep] - base[keep]))


def retrans_share(out) -> float:
    tcp = np.asarray(out.series["flow_group"]) == 0
    r = np.asarray(out.series["retrans_segments"], dtype=float)[tcp]
    s = np.asarray(out.series["segs_out"], dtype=float)[tcp]
    return float(r[-1] / s[-1]) if len(s) and s[-1] > 0 else 0.0


def ratio_text(k: list[float], s: list[float]) -> str:
    ratio, lo, hi = paired_ratio_ci(np.array(k), np.array(s))
    if not np.isfinite(ratio):
        return "-"
    flag = " !" if (hi < 0.85 or lo > 1.15) else (" ?" if not 0.85 <= ratio <= 1.15 else "")
    return f"{ratio:.2f} [{lo:.2f}-{hi:.2f}]{flag}" if np.isfinite(lo) else f"{ratio:.2f}{flag}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--rate-mbit", type=float, default=50.0)
    ap.add_argument("--rtt-ms", type=float, default=20.0)
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--only", help="only the features whose name contains this")
    a = ap.parse_args()
    rate_bps, rtt_s = a.rate_mbit * 1e6, a.rtt_ms / 1e3
    kernel, sim = KernelBackend(), SimBackend()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (dyn, loss) in features(rate_bps, a.seconds).items():
            if a.only and a.only not in name:
                continue
            for cc in ("cubic", "bbr"):
                got = {"kernel": [], "sim": []}
                late = 0
                for seed in range(1, a.seeds + 1):
                    for backend, runner in (("kernel", kernel), ("sim", sim)):
                        plan = plan_for(name, dyn, loss, cc, seed, backend, rate_bps, rtt_s, a.seconds)
                        out = runner.run(plan, Path(tmp) / f"{len(rows)}-{backend}-{cc}-{seed}")
                        late += backend == "kernel" and emulator_late(out.path.late_p99_s, rtt_s)
                        got[backend].append((tcp_goodput_bps(out),
                                             queue_delay_s(out, plan.dynamics, rtt_s), retrans_share(out)))
                k, s = np.array(got["kernel"]), np.array(got["sim"])
                rows.append((name, cc, k[:, 0].mean() / 1e6, s[:, 0].mean() / 1e6, ratio_text(k[:, 0], s[:, 0]),
                             np.median(k[:, 1]) * 1e3, np.median(s[:, 1]) * 1e3, k[:, 2].mean() * 100,
                             s[:, 2].mean() * 100, late))
                print(*rows[-1][:5], flush=True)
    head = ("feature", "cc", "kernel Mbit/s", "sim Mbit/s", "sim/kernel goodput", "kernel queue ms", "sim queue ms",
            "kernel retrans %", "sim retrans %", "late runs")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.1f} | {r[4]} | {r[5]:.1f} | {r[6]:.1f} | {r[7]:.2f} | "
                  f"{r[8]:.2f} | {r[9]} |")
    else:
        for r in rows:
            print(*r)


if __name__ == "__main__":
    main()
