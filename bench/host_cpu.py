"""What one segment costs this machine's CPU on the kernel backend, and
where the kernel backend becomes CPU-bound (prints figures, not a test):
the measurement behind the host CPU cost model (docs/host-model.md).
Needs root.

    sudo PYTHONPATH=python:bench python3 bench/host_cpu.py [--quick] [--reps 3]
        [--points calib|predict|all] [--seconds 8] [--warmup 2] [--calib-rates 300,600]
        [--calib-rates-gro 1000,3000] [--predict-rate 40] [--idle-seconds 3] [--wait-idle 30]
        [--out /tmp/host_cpu.json]
    PYTHONPATH=python:bench python3 bench/host_cpu.py --tables-from A.json B.json [--unshared-only]

On the kernel backend the senders, the receiver and the emulated path
(veth, the NFQUEUE delay line linkem) all run on this machine's cores, so
the machine's busy CPU over a run's measured interval (the run's facts
`cpu`, /proc/stat read after the warm-up and at the end) is what carrying
its segments costs, end to end. Everything else the machine runs counts
too: the idle machine is measured before and after the runs and for 1 s
before each run (waiting up to --wait-idle seconds for other work to
end); the smallest of these readings is the baseline subtracted. A
point whose run still followed other work, or during which other
processes (user space, outside this script's tree) used CPU, is marked
†. Measure on an otherwise idle machine.

1. Calibration points, not CPU-bound: CUBIC, 1 and 4 streams, 10 ms,
   buffer 1 BDP, no loss, MTU 1500 and 9000, receiver GRO off (every
   segment through the delay line; 300 and 600 Mbit/s, --calib-rates) and
   on (linkem's unit mode; 1 and 3 Gbit/s, --calib-rates-gro: at 300 and
   600 Mbit/s a GRO receiver's machine is ~0.15 cores busy at either rate,
   its per-segment cost lost in the tick resolution). Per run: busy cores (all cores) less the idle
   baseline, divided by the data segments carried per second
   (tcpi_data_segs_out of every stream: the series' segs_out) -> busy µs
   per segment; the delay line's own CPU per segment (getrusage over the
   measured part); the softirq share of the busy time; the data segments
   per ACK over the run (ACKs counted by the delay line: delayed,
   stretched and GRO-merged ACKs change what a segment costs). Per GRO
   mode two least-squares fits: µs per segment = a + b · MSS (MTU 1500
   and 9000 give the per-segment and per-byte parts), and busy cores =
   c + S · (a + b · MSS) with S segments per second, whose c is CPU spent
   whatever the rate (the two calibration rates separate it); each with
   its residuals.
2. Prediction points, CPU-bound: path rate 40 Gbit/s (--predict-rate),
   10 ms, 1 BDP, 1, 2 and 4 CUBIC streams, MTU 1500 and 9000, GRO off and
   on. The kernel backend's check refuses more than 10 Gbit/s, a ceiling
   meant to keep the CPU from passing as the link; here the CPU is what is
   measured, so the script calls run() itself: with a GRO receiver the
   senders keep TSO and 10 Gbit/s does not saturate a 2-core VM. Per run:
   goodput, busy cores (busiest core, all cores), softirq cores, packets
   lost outside the path (host_drops: ACKs a full veth ring dropped;
   overflows: the delay line's sockets), the delay line's lateness p99 (an
   emulated path that falls behind is a CPU limit too), segments per ACK,
   the busy µs per segment at saturation, and what a pure CPU model predicts from each
   fit: every core of the machine usable (less c for the second fit),
   divided by the cost of a segment, times the MSS; measured / predicted.

--quick: one repetition of 4 s runs, 1 stream at the calibration points
and 2 at the prediction points (development). Raw figures as JSON: --out;
--tables-from A.json B.json [--unshared-only] prints their runs' tables
together (without the runs marked †) and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fatpipe.backends.kernel import KernelBackend
from fatpipe.goodput import measurement_window
from fatpipe.linuxpath.procstat import core_fractions
from kernel_common import goodput_bps, plan

RTT_S = 0.010
CC = "cubic"
PROC_STAT = Path("/proc/stat")
# Above the kernel backend's ceiling (KernelBackend.check refuses more than
# 10 Gbit/s; this script calls run() itself): with a GRO receiver the
# senders keep TSO, and 10 Gbit/s need not saturate the machine.
DEFAULT_PREDICT_RATE_BPS = 40e9
# The idle look before each run, and the busy cores above the baseline
# that mark a run as following other work.
PRE_RUN_IDLE_S = 1.0
NOISY_CORES = 0.1
# Other processes' cores during a run that mark it, and how often they are
# read (a process that exits loses at most this much of its time).
OTHER_CORES = 0.05
OTHER_SAMPLE_S = 0.5
PF_KTHREAD = 0x00200000  # include/linux/sched.h: a kernel thread


@dataclass(frozen=True)
class Point:
    kind: str  # "calib" or "predict"
    rate_bps: float
    streams: int
    mtu: int
    gro: bool

    @property
    def label(self) -> str:
        return (f"{self.kind} {self.rate_bps / 1e9:g}G x{self.streams} mtu{self.mtu} "
                f"gro-{'on' if self.gro else 'off'}")


def points(which: str, quick: bool, calib_rates_bps: dict[bool, list[float]], predict_rate_bps: float) -> list[Point]:
    """The grid: calibration (not CPU-bound) and prediction (CPU-bound) points."""
    mtus, gros = (1500, 9000), (False, True)
    calib_streams, predict_streams = ((1,), (2,)) if quick else ((1, 4), (1, 2, 4))
    calib = [Point("calib", r, s, m, g) for g in gros for m in mtus for s in calib_streams for r in calib_rates_bps[g]]
    predict = [Point("predict", predict_rate_bps, s, m, g) for g in gros for m in mtus for s in predict_streams]
    return {"calib": calib, "predict": predict, "all": calib + predict}[which]


def machine_cores(before: str, after: str) -> tuple[float, float]:
    """(busy cores, softirq cores) summed over the machine's cores between
    two /proc/stat texts (1.0 = one core busy all the time)."""
    cores = core_fractions(before, after)
    return sum(c["busy_frac"] for c in cores.values()), sum(c["softirq_frac"] for c in cores.values())


def idle_baseline(seconds: float) -> dict:
    """The idle machine's busy and softirq cores over `seconds`."""
    before = PROC_STAT.read_text()
    time.sleep(seconds)
    busy, softirq = machine_cores(before, PROC_STAT.read_text())
    return {"seconds": seconds, "busy_cores": busy, "softirq_cores": softirq,
            "loadavg": Path("/proc/loadavg").read_text().split()[:3]}


def segment_rate(series: dict, warmup_s: float) -> float:
    """Data segments sent per second over the measurement window (every
    stream's tcpi_data_segs_out, retransmissions included), summed."""
    group = np.asarray(series["flow_group"])
    stream = np.asarray(series["stream"])
    t = np.asarray(series["t_s"], dtype=float)
    segs = np.asarray(series["segs_out"], dtype=float)
    total = 0.0
    for g, s in sorted(set(zip(group.tolist(), stream.tolist(), strict=True))):
        mask = (group == g) & (stream == s)
        order = np.argsort(t[mask], kind="stable")
        ts, ss = t[mask][order], segs[mask][order]
        window = measurement_window(ts, warmup_s)
        if window and ts[window[1]] > ts[window[0]]:
            total += (ss[window[1]] - ss[window[0]]) / (ts[window[1]] - ts[window[0]])
    return total


def total_segments(series: dict) -> int:
    """Data segments sent over the whole run (every stream's last segs_out)."""
    last: dict[tuple[int, int], tuple[float, int]] = {}
    for g, s, t, n in zip(series["flow_group"], series["stream"], series["t_s"], series["segs_out"], strict=True):
        if (g, s) not in last or t > last[(g, s)][0]:
            last[(g, s)] = (t, n)
    return sum(n for _, n in last.values())


def other_processes_ticks() -> dict[tuple[int, int], int]:
    """CPU ticks (user + system) of every user-space process that is not
    this one or its descendant, by (pid, start time): the machine's other
    work. Kernel threads (PF_KTHREAD) are left out: softirq, NAPI and
    ksoftirqd work is the run's own. Reaped children's ticks (cutime) are
    left out too: a parent reaping a child adds the child's whole life."""
    procs: dict[int, tuple[int, int, int, int]] = {}  # pid -> ppid, flags, start, ticks
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited meanwhile
        # Fields after the command (proc(5), from 3 = state): ppid 4, flags 9,
        # utime 14, stime 15, starttime 22.
        procs[int(d.name)] = (int(f[1]), int(f[6]), int(f[19]), int(f[11]) + int(f[12]))
    mine = {os.getpid()}
    grew = True
    while grew:
        more = {pid for pid, (ppid, *_) in procs.items() if ppid in mine} - mine
        mine |= more
        grew = bool(more)
    return {(pid, start): ticks for pid, (_, flags, start, ticks) in procs.items()
            if pid not in mine and not flags & PF_KTHREAD}


class OtherProcesses:
    """The machine's other processes' CPU while it runs (a context manager):
    /proc read every OTHER_SAMPLE_S on a thread, so a process that exits
    loses at most that much of its time; `cores` once done."""

    def __enter__(self) -> OtherProcesses:
        self.first = other_processes_ticks()
        self.last = dict(self.first)
        self.started = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.stop.wait(OTHER_SAMPLE_S):
            self.last.update(other_processes_ticks())

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.last.update(other_processes_ticks())
        ticks = sum(t - self.first.get(key, 0) for key, t in self.last.items())
        self.cores = max(0, ticks) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - self.started)


def wait_idle(max_wait_s: float) -> float:
    """Busy cores of the machine over PRE_RUN_IDLE_S, looked at again and
    again while above NOISY_CORES, for up to `max_wait_s`: the last look."""
    deadline = time.monotonic() + max_wait_s
    busy = idle_baseline(PRE_RUN_IDLE_S)["busy_cores"]
    while busy > NOISY_CORES and time.monotonic() < deadline:
        busy = idle_baseline(PRE_RUN_IDLE_S)["busy_cores"]
    return busy


def measure(be: KernelBackend, point: Point, seconds: float, warmup_s: float, rep: int, work: Path,
            max_wait_s: float = 0.0) -> dict:
    """One kernel run of `point` and its CPU figures (see the module doc),
    after a short look at the idle machine (`pre_idle_cores`: other work
    on the machine shows there; wait_idle waits up to `max_wait_s` for it
    to end)."""
    p = plan(point.rate_bps, RTT_S, 0.0, CC, point.streams, mtu=point.mtu, duration_s=seconds,
             warmup_s=warmup_s, seed=1 + rep, gro=point.gro)
    pre_idle = wait_idle(max_wait_s)
    with OtherProcesses() as others:
        out = be.run(p, work / f"{point.kind}-{point.rate_bps:g}-{point.streams}-{point.mtu}-{int(point.gro)}-{rep}")
    machine = next(iter(out.facts["cpu"]["machines"].values()))
    if "error" in machine:
        raise RuntimeError(f"{point.label}: no CPU figures: {machine['error']}")
    cores = machine["cores"].values()
    lk = out.facts.get("linkem") or {}
    return {**asdict(point), "rep": rep, "seconds": seconds, "warmup_s": warmup_s, "pre_idle_cores": pre_idle,
            "other_processes_cores": others.cores,
            "goodput_bps": goodput_bps(out, warmup_s), "segments_per_s": segment_rate(out.series, warmup_s),
            "mss_bytes": min(s["snd_mss_bytes"] for s in out.facts["streams_read_back"]),
            "busy_cores": sum(c["busy_frac"] for c in cores), "busy_max_core_frac": machine["busy_max_core_frac"],
            "softirq_cores": sum(c["softirq_frac"] for c in cores), "cpu_bound": out.facts["cpu"]["cpu_bound"],
            "linkem_cores": lk.get("cpu_cores"), "late_p99_s": out.path.late_p99_s,
            "late_max_s": out.path.late_max_s, "emulator_late": out.facts.get("emulator_late"),
            "host_drops": out.path.host_drops, "overflows": int(lk.get("overflows") or 0),
            "queue_drops": out.path.queue_drops,
            # Over the whole run (linkem's counters): packets through the
            # delay line, the receiver's ACKs among them, TSO units and
            # their segments (unit mode).
            "linkem_packets": lk.get("packets"), "ack_packets": lk.get("ack_packets"),
            "units": lk.get("units"), "unit_segments": lk.get("unit_segments"),
            # Data segments per ACK the receiver sent, over the whole run:
            # batching (delayed, stretched, GRO-merged ACKs) changes it.
            "segments_per_ack": total_segments(out.series) / lk["ack_packets"] if lk.get("ack_packets") else None}


def us_per_segment(run: dict, idle_cores: float, cores_key: str = "busy_cores") -> float | None:
    """Core-µs per data segment of `run`'s CPU figure `cores_key`, less the
    idle machine's share for the machine's busy cores."""
    cores = run.get(cores_key)
    if cores is None or not run["segments_per_s"]:
        return None
    if cores_key == "busy_cores":
        cores -= idle_cores
    return cores / run["segments_per_s"] * 1e6


def fit_cost(runs: list[dict], idle_cores: float) -> dict | None:
    """Least-squares busy µs per segment = a + b · MSS over `runs` (b = 0
    when they share one MSS), with each run's residual; None without runs."""
    if not runs:
        return None
    mss = np.array([r["mss_bytes"] for r in runs], dtype=float)
    cost = np.array([us_per_segment(r, idle_cores) for r in runs], dtype=float)
    if len(set(mss.tolist())) >= 2:
        b, a = np.polyfit(mss, cost, 1)
    else:
        a, b = float(cost.mean()), 0.0
    return {"runs": len(runs), "mss_bytes": sorted(set(mss.tolist())), "a_us": float(a), "b_us_per_byte": float(b),
            "residuals_us": [float(v - (a + b * m)) for m, v in zip(mss, cost, strict=True)]}


def fit(calib: list[dict], idle_cores: float) -> dict[bool, dict]:
    """Per GRO mode, two least-squares fits over the calibration runs:

    * per segment (`a_us`, `b_us_per_byte`): busy µs per segment =
      a + b · MSS, everything the machine did charged to the segments;
    * with a fixed part (`fixed_cores`, `fixed_a_us`, `fixed_b_us_per_byte`):
      busy cores = c + S · (a + b · MSS), S segments per second, c the CPU
      the run costs whatever its rate (timers, polling, the delay line's
      wake-ups while packets are sparse). Needs two rates, two MSS and
      more than three runs.

    Each with its residuals (measured − fit: µs per segment; cores)."""
    out: dict[bool, dict] = {}
    for gro in (False, True):
        runs = [r for r in calib if r["gro"] == gro]
        if not runs:
            continue
        f = fit_cost(runs, idle_cores)
        mss = np.array([r["mss_bytes"] for r in runs], dtype=float)
        rate = np.array([r["segments_per_s"] for r in runs], dtype=float)
        cores = np.array([r["busy_cores"] - idle_cores for r in runs], dtype=float)
        x = np.column_stack([np.ones_like(rate), rate * 1e-6, rate * mss * 1e-6])
        if len(runs) > 3 and np.linalg.matrix_rank(x) == 3:  # more runs than parameters
            (c, fa, fb), *_ = np.linalg.lstsq(x, cores, rcond=None)
            f |= {"fixed_cores": float(c), "fixed_a_us": float(fa), "fixed_b_us_per_byte": float(fb),
                  "fixed_residuals_cores": [float(v) for v in cores - x @ np.array([c, fa, fb])]}
        out[gro] = f
    return out


def predicted_bps(f: dict, mss_bytes: int, cores: float, fixed: bool = False) -> float | None:
    """Goodput a pure CPU model gives with `cores` usable: segments per
    second the cores can carry, times the MSS; None where the fit has no
    such figure (no fixed part, or a cost or usable CPU at or below 0)."""
    if fixed:
        if "fixed_cores" not in f:
            return None
        cost_us, cores = f["fixed_a_us"] + f["fixed_b_us_per_byte"] * mss_bytes, cores - f["fixed_cores"]
    else:
        cost_us = f["a_us"] + f["b_us_per_byte"] * mss_bytes
    if cost_us <= 0 or cores <= 0:
        return None
    return cores / (cost_us * 1e-6) * mss_bytes * 8


def _span(values: list[float | None], fmt: str, scale: float = 1.0) -> str:
    """mean, and (min–max) when there is more than one value."""
    vs = [v * scale for v in values if v is not None]
    if not vs:
        return "–"
    text = format(statistics.fmean(vs), fmt)
    if len(vs) > 1:
        text += f" ({format(min(vs), fmt)}–{format(max(vs), fmt)})"
    return text


def _groups(runs: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in runs:
        out.setdefault((r["gro"], r["mtu"], r["rate_bps"], r["streams"]), []).append(r)
    return out


def _noisy(rs: list[dict], idle_cores: float) -> str:
    """A mark for points where the machine was busy with other work just
    before or during one of their runs."""
    return " †" if any(shared(r, idle_cores) for r in rs) else ""


def calib_table(calib: list[dict], idle_cores: float, fits: dict[bool, dict]) -> list[str]:
    lines = ["| GRO | MTU | rate | streams | goodput Gbit/s | segments/s | busy cores | softirq share | "
             "segments/ACK | busy µs/segment | linkem µs/segment | per-segment fit: µs, residual | "
             "fixed-part fit: cores, residual |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (gro, mtu, rate, streams), rs in sorted(_groups(calib).items()):
        f, mss = fits[gro], rs[0]["mss_bytes"]
        model_us = f["a_us"] + f["b_us_per_byte"] * mss
        cost = [us_per_segment(r, idle_cores) for r in rs]
        if "fixed_cores" in f:
            model = [f["fixed_cores"] + r["segments_per_s"] * 1e-6 * (f["fixed_a_us"] + f["fixed_b_us_per_byte"] * mss)
                     for r in rs]
            fixed = f"{statistics.fmean(model):.2f}, " + _span(
                [r["busy_cores"] - idle_cores - m for r, m in zip(rs, model, strict=True)], "+.2f")
        else:
            fixed = "–"
        lines.append(
            f"| {'on' if gro else 'off'} | {mtu} | {rate / 1e6:g} M | {streams}{_noisy(rs, idle_cores)} | "
            f"{_span([r['goodput_bps'] for r in rs], '.3f', 1e-9)} | "
            f"{_span([r['segments_per_s'] for r in rs], ',.0f')} | {_span([r['busy_cores'] for r in rs], '.2f')} | "
            f"{_span([r['softirq_cores'] / r['busy_cores'] for r in rs], '.0%')} | "
            f"{_span([r['segments_per_ack'] for r in rs], '.1f')} | {_span(cost, '.2f')} | "
            f"{_span([us_per_segment(r, idle_cores, 'linkem_cores') for r in rs], '.2f')} | "
            f"{model_us:.2f}, {_span([c - model_us for c in cost], '+.2f')} | {fixed} |")
    return lines


def fit_lines(fits: dict[bool, dict]) -> list[str]:
    lines = []
    for gro, f in fits.items():
        mode = "GRO on (unit mode)" if gro else "GRO off (per segment)"
        lines.append(f"* {mode}, per segment: busy µs per segment = {f['a_us']:.3f} + "
                     f"{f['b_us_per_byte'] * 1e3:.4f} ns × MSS bytes ({f['runs']} runs, MSS "
                     f"{', '.join(f'{m:g}' for m in f['mss_bytes'])}); residuals µs: "
                     + " ".join(f"{v:+.2f}" for v in f["residuals_us"]))
        if "fixed_cores" in f:
            lines.append(f"* {mode}, with a fixed part: busy cores = {f['fixed_cores']:.3f} + segments/s × "
                         f"({f['fixed_a_us']:.3f} + {f['fixed_b_us_per_byte'] * 1e3:.4f} ns × MSS bytes) µs; "
                         "residuals cores: " + " ".join(f"{v:+.3f}" for v in f["fixed_residuals_cores"]))
        else:
            lines.append(f"* {mode}, with a fixed part: needs two rates, two MTUs and more than three runs")
    return lines


def predict_table(predict: list[dict], idle_cores: float) -> list[str]:
    lines = ["| GRO | MTU | rate | streams | goodput Gbit/s | busiest core | busy cores | softirq cores | "
             "linkem cores | host drops | overflows | lateness p99 ms | segments/ACK | busy µs/segment |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (gro, mtu, rate, streams), rs in sorted(_groups(predict).items()):
        lines.append(
            f"| {'on' if gro else 'off'} | {mtu} | {rate / 1e9:g} G | {streams}{_noisy(rs, idle_cores)} | "
            f"{_span([r['goodput_bps'] for r in rs], '.2f', 1e-9)} | "
            f"{_span([r['busy_max_core_frac'] for r in rs], '.2f')} | {_span([r['busy_cores'] for r in rs], '.2f')} | "
            f"{_span([r['softirq_cores'] for r in rs], '.2f')} | {_span([r['linkem_cores'] for r in rs], '.2f')} | "
            f"{_span([r['host_drops'] for r in rs], ',.0f')} | "
            f"{_span([r['overflows'] for r in rs], ',.0f')} | {_span([r['late_p99_s'] for r in rs], '.2f', 1e3)} | "
            f"{_span([r['segments_per_ack'] for r in rs], '.1f')} | "
            f"{_span([us_per_segment(r, idle_cores) for r in rs], '.2f')} |")
    return lines


def prediction_table(predict: list[dict], idle_cores: float, fits: dict[bool, dict], cores: float) -> list[str]:
    """Measured goodput against the three predictions: the calibration's
    per-segment fit, its fit with a fixed part, and a per-segment fit over
    the other CPU-bound runs of the same GRO mode with other stream counts
    (saturation's own cost, cross-checked on streams)."""
    lines = ["| GRO | MTU | streams | goodput Gbit/s | per-segment fit: predicted, measured/predicted | "
             "fixed-part fit: predicted, measured/predicted | "
             "saturated runs, other stream counts: predicted, measured/predicted |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for (gro, mtu, _rate, streams), rs in sorted(_groups(predict).items()):
        f, mss = fits.get(gro), rs[0]["mss_bytes"]
        others = fit_cost([r for r in predict if r["gro"] == gro and r["streams"] != streams], idle_cores)
        preds = [predicted_bps(f, mss, cores) if f else None, predicted_bps(f, mss, cores, fixed=True) if f else None,
                 predicted_bps(others, mss, cores) if others else None]
        cells = [f"{p / 1e9:.2f}, {_span([r['goodput_bps'] / p for r in rs], '.2f')}" if p else "–" for p in preds]
        lines.append(f"| {'on' if gro else 'off'} | {mtu} | {streams}{_noisy(rs, idle_cores)} | "
                     f"{_span([r['goodput_bps'] for r in rs], '.2f', 1e-9)} | {' | '.join(cells)} |")
    return lines


def shared(run: dict, idle_cores: float) -> bool:
    """Whether other work shared the machine just before or during `run`."""
    return run["pre_idle_cores"] - idle_cores > NOISY_CORES or run["other_processes_cores"] > OTHER_CORES


def report(runs: list[dict], idle_cores: float, ncpu: int, what: str) -> dict[bool, dict]:
    """Prints the markdown tables of `runs`; returns the calibration fits."""
    calib = [r for r in runs if r["kind"] == "calib"]
    predict = [r for r in runs if r["kind"] == "predict"]
    fits = fit(calib, idle_cores)
    print(f"\n## {CC}, {RTT_S * 1e3:g} ms, buffer 1 BDP, no loss, {what}; {ncpu} cores, Linux "
          f"{platform.release()}; mean (min–max) over repetitions; † other work busy > {NOISY_CORES:g} cores "
          f"just before a run, or other processes > {OTHER_CORES:g} cores during it")
    if calib:
        print("\n### Calibration (not CPU-bound): busy µs per segment = (busy cores − idle) / segments per s\n")
        print("\n".join(calib_table(calib, idle_cores, fits)))
        print()
        print("\n".join(fit_lines(fits)))
    if predict:
        print("\n### CPU-bound runs\n")
        print("\n".join(predict_table(predict, idle_cores)))
        print(f"\n### Measured against predicted: {ncpu} cores / µs per segment × MSS × 8 "
              "(fixed-part fit: cores less its fixed cores)\n")
        if not fits:
            print("(no calibration runs in this invocation: --points all or calib gives the first two)\n")
        print("\n".join(prediction_table(predict, idle_cores, fits, ncpu)))
    return fits


def run_line(point: Point, rep: int, r: dict) -> str:
    linkem = r["linkem_cores"] if r["linkem_cores"] is not None else float("nan")
    return (f"  {point.label} rep {rep}: idle before {r['pre_idle_cores']:.2f} cores, other processes during "
            f"{r['other_processes_cores']:.2f}; goodput "
            f"{r['goodput_bps'] / 1e9:.3f} Gbit/s, {r['segments_per_s']:,.0f} segments/s (MSS {r['mss_bytes']}), "
            f"busy {r['busy_cores']:.2f} cores (max core {r['busy_max_core_frac']:.2f}, softirq "
            f"{r['softirq_cores']:.2f}), linkem {linkem:.2f}, lateness p99 {(r['late_p99_s'] or 0) * 1e3:.2f} ms, "
            f"host drops {r['host_drops']}, overflows {r['overflows']}")


def rates(text: str, unit_bps: float) -> list[float]:
    return [float(v) * unit_bps for v in text.split(",")]


def tables_from(paths: list[Path], unshared_only: bool) -> int:
    """The tables of earlier invocations' runs (their --out files) together."""
    results = [json.loads(p.read_text()) for p in paths]
    idle_cores = min(r["idle_cores"] for r in results)
    runs = [run for r in results for run in r["runs"]]
    kept = [r for r in runs if not (unshared_only and shared(r, idle_cores))]
    report(kept, idle_cores, results[0]["machine"]["cores"],
           f"{len(kept)} of {len(runs)} runs from {', '.join(str(p) for p in paths)}"
           + (" (runs marked † left out)" if unshared_only else ""))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="one short repetition, 1 stream (calibration) and 2 streams (prediction) only")
    ap.add_argument("--reps", type=int, default=None, help="repetitions of each point (default 3; --quick: 1)")
    ap.add_argument("--points", choices=("calib", "predict", "all"), default="all")
    ap.add_argument("--seconds", type=float, default=None, help="run length (default 8; --quick: 4)")
    ap.add_argument("--warmup", type=float, default=None, help="warm-up excluded (default 2; --quick: 1.5)")
    ap.add_argument("--calib-rates", default="300,600",
                    help="calibration path rates without GRO, Mbit/s (default %(default)s)")
    ap.add_argument("--calib-rates-gro", default="1000,3000",
                    help="calibration path rates with a GRO receiver, Mbit/s (default %(default)s)")
    ap.add_argument("--predict-rate", type=float, default=DEFAULT_PREDICT_RATE_BPS / 1e9,
                    help="prediction path rate, Gbit/s (default %(default)g: see the module doc)")
    ap.add_argument("--idle-seconds", type=float, default=3.0, help="idle baseline before and after the runs")
    ap.add_argument("--wait-idle", type=float, default=30.0,
                    help=f"before each run, wait up to this many seconds while other work keeps more than "
                         f"{NOISY_CORES:g} cores busy (default %(default)g)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/host_cpu.json"))
    ap.add_argument("--tables-from", type=Path, nargs="+", metavar="JSON",
                    help="run nothing: print the tables of the runs in these --out files, together")
    ap.add_argument("--unshared-only", action="store_true",
                    help="with --tables-from: leave out the runs marked † (other work on the machine)")
    args = ap.parse_args()
    if args.tables_from:
        return tables_from(args.tables_from, args.unshared_only)
    reps = args.reps or (1 if args.quick else 3)
    seconds = args.seconds or (4.0 if args.quick else 8.0)
    warmup_s = args.warmup if args.warmup is not None else (1.5 if args.quick else 2.0)
    if seconds <= warmup_s:
        ap.error(f"--seconds {seconds:g} must exceed the warm-up ({warmup_s:g} s)")
    ncpu = os.cpu_count() or 1
    calib_rates = {False: rates(args.calib_rates, 1e6), True: rates(args.calib_rates_gro, 1e6)}
    grid = points(args.points, args.quick, calib_rates, args.predict_rate * 1e9)
    started = time.monotonic()
    be = KernelBackend()
    work = Path(tempfile.mkdtemp(prefix="fp-host-cpu-"))
    idle_before = idle_baseline(args.idle_seconds)
    print(f"== idle machine before: {idle_before['busy_cores']:.3f} busy cores "
          f"({idle_before['softirq_cores']:.3f} softirq) over {args.idle_seconds:g} s, "
          f"load average {' '.join(idle_before['loadavg'])}", flush=True)
    if idle_before["busy_cores"] > NOISY_CORES:
        print(f"WARNING: the machine is not idle ({idle_before['busy_cores']:.2f} cores busy): its other work "
              "counts in every figure below", flush=True)
    runs = []
    for rep in range(reps):
        for point in grid:
            runs.append(measure(be, point, seconds, warmup_s, rep, work, args.wait_idle))
            print(run_line(point, rep, runs[-1]), flush=True)
    idle_after = idle_baseline(args.idle_seconds)
    # The smallest idle reading (before, after, and before each run): other
    # work that came and went is marked († per run), not subtracted from
    # every run.
    idle_cores = min([idle_before["busy_cores"], idle_after["busy_cores"], *(r["pre_idle_cores"] for r in runs)])
    print(f"== idle machine after: {idle_after['busy_cores']:.3f} busy cores; baseline used: {idle_cores:.3f} "
          "cores (the smallest idle reading, before and after the runs and before each run)")
    fits = report(runs, idle_cores, ncpu, f"{seconds:g} s runs after {warmup_s:g} s, {reps} repetition(s)")
    elapsed = time.monotonic() - started
    print(f"\n{len(runs)} runs in {elapsed:.0f} s")
    result = {"machine": {"cores": ncpu, "kernel": platform.release()}, "cc": CC, "rtt_s": RTT_S,
              "seconds": seconds, "warmup_s": warmup_s, "reps": reps,
              "idle_before": idle_before, "idle_after": idle_after, "idle_cores": idle_cores,
              "fits": {("gro" if g else "per_segment"): f for g, f in fits.items()}, "runs": runs,
              "elapsed_s": elapsed}
    args.out.write_text(json.dumps(result, indent=1))
    print(f"raw figures: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
