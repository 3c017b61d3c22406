"""`fatpipe advise --testbed FILE`: measure the real path from a sender to
the receiver with the hosts backend, then advise on what was measured.

Two probe studies run on the testbed (its first sender and its receiver; an
emulator host is left as the path's router and applies nothing, since the
path is what is measured):

* **rate probe** — bbr, RATE_PROBE_STREAMS streams, large buffers
  (PROBE_BUFFER_BYTES): BBR fills the bottleneck whatever its random loss.
  The bottleneck rate is the goodput over the full-segment goodput ceiling
  (fatpipe.wire.goodput_ceiling_bps, inverted), with the Student-t 95 %
  interval of the repetitions.
* **loss probe** — one cubic stream paced at LOSS_PROBE_FRACTION of the
  measured rate (SO_MAX_PACING_RATE through hosts.<sender>.stream_rate_cap),
  so the bottleneck queue stays empty and retransmitted segments count
  random loss (spurious retransmissions would count too: an upper
  estimate). Loss = retransmitted / delivered segments, with the Wilson
  95 % interval.
* **min RTT** — the smallest min_rtt_s (tcpi_min_rtt) of every probe run;
  its uncertainty is the spread of the runs' minima.
* **CPU** — the busiest core of the sender's and the receiver's machines
  during the rate probe (the runs' cpu_busy_max_core_frac, /proc/stat),
  and whether one was saturated (the `cpu_bound` flag): then the rate
  measured may be the hosts' limit rather than the path's, and the lines
  say so. Busy fractions are not per-packet costs: the probe gives no host
  model (docs/advise.md, "Hosts").
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from ..analysis.stats import mean_ci
from ..spec import load_testbed
from ..study import run_study
from ..testbed import EMULATOR_ROLE, RECEIVER_ROLE, Testbed
from ..units import format_rate, format_time
from ..wire import goodput_ceiling_bps, mss_with_timestamps
from .plan import toml_text

RATE_PROBE_STREAMS = 4
# Each probe run: DEFAULT_PROBE_DURATION_S long, the first PROBE_WARMUP_FRACTION
# of it a warm-up (2 s of the default 6: slow start from IW 10 reaches the
# BDP of 100 Gbit/s x 100 ms, 830k segments, in 17 doublings, 1.7 s),
# DEFAULT_PROBE_REPS times.
DEFAULT_PROBE_DURATION_S = 6.0
PROBE_WARMUP_FRACTION = 1 / 3
DEFAULT_PROBE_REPS = 3
MEASURED_PATH_FILE = "measured-path.json"
PROBE_BUFFER_BYTES = 128 << 20
LOSS_PROBE_FRACTION = 0.5
PROBE_MTU = 1500
Z95 = 1.959964


@dataclass(frozen=True)
class MeasuredPath:
    rate_bps: float
    rate_ci_bps: tuple[float, float]
    min_rtt_s: float
    rtt_spread_s: tuple[float, float]
    loss: float
    loss_ci: tuple[float, float]
    lost_segments: int
    segments: int
    sender: str
    busiest_core_frac: float | None = None  # the rate probe's busiest end-host core (None: not measured)
    cpu_bound: bool = False  # a core of the sender's or receiver's machine was saturated in the rate probe

    def cpu_line(self) -> str:
        if self.busiest_core_frac is None:
            return "  CPU: not measured (the hosts backend read no /proc/stat)"
        line = (f"  CPU: busiest core of the sender and the receiver {self.busiest_core_frac * 100:.0f} % busy "
                "during the rate probe")
        if self.cpu_bound:
            line += (" — saturated: the rate measured may be the hosts' limit rather than the path's "
                     "(give --host-profile for hosts like these)")
        return line

    def lines(self) -> list[str]:
        lo, hi = self.rate_ci_bps
        rate_ci = (f"95 % CI {format_rate(lo)}–{format_rate(hi)}" if math.isfinite(lo) and math.isfinite(hi)
                   else "one run, no interval")
        return [
            f"Measured path {self.sender} → receiver (hosts backend):",
            f"  bottleneck rate {format_rate(self.rate_bps)} ({rate_ci})",
            f"  min RTT {format_time(self.min_rtt_s)} (runs' minima {format_time(self.rtt_spread_s[0])}–"
            f"{format_time(self.rtt_spread_s[1])})",
            f"  loss {self.loss:.2g} ({self.lost_segments} retransmitted of {self.segments} segments at "
            f"{LOSS_PROBE_FRACTION:.0%} of the rate; 95 % CI {self.loss_ci[0]:.2g}–{self.loss_ci[1]:.2g})",
            self.cpu_line(),
        ]

    def request_keys(self) -> dict:
        return {"rate": self.rate_bps, "rtt": self.min_rtt_s, "loss": self.loss}


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


def probe_cpu(runs: pd.DataFrame) -> tuple[float | None, bool]:
    """(the busiest end-host core's busy fraction over `runs`, whether any
    run was flagged cpu_bound); (None, False) where nothing was measured."""
    busy = runs["cpu_busy_max_core_frac"].dropna() if "cpu_busy_max_core_frac" in runs else pd.Series(dtype=float)
    flags = runs["flags"].fillna("").astype(str) if "flags" in runs else pd.Series(dtype=str)
    bound = bool(flags.str.split(",").apply(lambda f: "cpu_bound" in f).any())
    return (float(busy.max()) if not busy.empty else None), bound


def probe_testbed(testbed: Testbed) -> tuple[Testbed, str]:
    """The testbed with only its first sender and the receiver (an emulator
    stays out: it applies nothing, the path is measured), and that sender's role."""
    senders = testbed.senders()
    if not senders:
        raise ValueError("the testbed has no sender")
    role = sorted(senders)[0]
    hosts = {n: h for n, h in testbed.hosts.items()
             if h.role in (role, RECEIVER_ROLE) and h.role != EMULATOR_ROLE}
    return testbed.model_copy(update={"hosts": hosts}), role


def _probe_raw(name: str, sender: str, cc: str, streams: int, duration_s: float, warmup_s: float, reps: int,
               cap_bps: float | None = None) -> dict:
    host = {"rmem_max": PROBE_BUFFER_BYTES, "wmem_max": PROBE_BUFFER_BYTES}
    if cap_bps:
        host["stream_rate_cap"] = float(cap_bps)
    return {"version": 1,
            "study": {"name": name, "backends": ["hosts"], "duration": duration_s, "warmup": warmup_s,
                      "interval": 0.1, "repetitions": reps, "seed": 1},
            "hosts": {"receiver": {"rmem_max": PROBE_BUFFER_BYTES}, sender: host},
            "flows": [{"cc": cc, "streams": streams, "sender": sender}], "sweep": {}}


def _run(raw: dict, out: Path, testbed: Testbed, emit: Callable[[str], None]) -> pd.DataFrame:
    out.mkdir(parents=True, exist_ok=True)
    study = out / f"{raw['study']['name']}.toml"
    study.write_text(toml_text(raw))
    emit(f"advise: measuring ({raw['study']['name']}, {raw['study']['repetitions']} runs of "
         f"{raw['study']['duration']:g} s)")
    result = run_study(study, out=out / raw["study"]["name"], jobs=1, emit=lambda _line: None, testbed=testbed)
    runs = result.store.runs_table()
    bad = runs[runs["status"] != "ok"]
    if not bad.empty:
        raise RuntimeError(f"probe {raw['study']['name']} failed: {bad['reason'].iloc[0]}")
    return runs


def probe_problem(duration_s: float, reps: int) -> str | None:
    """Why a probe of `reps` runs of `duration_s` cannot run, or None."""
    if not (math.isfinite(duration_s) and duration_s > 0):
        return f"probe duration {duration_s:g} s: give a positive time, e.g. 6s"
    if reps < 1:
        return f"probe repetitions {reps}: give at least 1 (2 or more give the rate an interval)"
    return None


def measure_path(testbed_file: str | Path | Testbed, out: Path, emit: Callable[[str], None] = print,
                 duration_s: float = DEFAULT_PROBE_DURATION_S, warmup_s: float | None = None,
                 reps: int = DEFAULT_PROBE_REPS) -> MeasuredPath:
    """Probe the testbed's path and return what was measured, also written
    to `out`/MEASURED_PATH_FILE (JSON). Without `warmup_s` the warm-up is
    PROBE_WARMUP_FRACTION of `duration_s`."""
    problem = probe_problem(duration_s, reps)
    if problem:
        raise ValueError(problem)
    if warmup_s is None:
        warmup_s = duration_s * PROBE_WARMUP_FRACTION
    testbed = testbed_file if isinstance(testbed_file, Testbed) else load_testbed(testbed_file)
    probe_bed, sender = probe_testbed(testbed)
    rate_runs = _run(_probe_raw("probe-rate", sender, "bbr", RATE_PROBE_STREAMS, duration_s, warmup_s, reps),
                     out, probe_bed, emit)
    mss = mss_with_timestamps(PROBE_MTU)
    per_bps = goodput_ceiling_bps(1.0, mss, PROBE_MTU)  # goodput per bit/s of link
    rate = mean_ci((rate_runs["goodput_bps"] / per_bps).tolist())
    loss_runs = _run(_probe_raw("probe-loss", sender, "cubic", 1, duration_s, warmup_s, reps,
                                cap_bps=LOSS_PROBE_FRACTION * rate["mean"]), out, probe_bed, emit)
    measured_s = duration_s - warmup_s
    segments = int(round(float((loss_runs["goodput_bps"] * measured_s / 8 / mss).sum())))
    lost = int(loss_runs["retrans_segments"].sum())
    minima = pd.concat([rate_runs["min_rtt_s"], loss_runs["min_rtt_s"]]).dropna()
    busiest, cpu_bound = probe_cpu(rate_runs)
    measured = MeasuredPath(
        rate_bps=rate["mean"], rate_ci_bps=(rate["ci_low"], rate["ci_high"]),
        min_rtt_s=float(minima.min()), rtt_spread_s=(float(minima.min()), float(minima.max())),
        loss=lost / segments if segments else 0.0, loss_ci=wilson_interval(lost, segments),
        lost_segments=lost, segments=segments, sender=sender, busiest_core_frac=busiest, cpu_bound=cpu_bound)
    record = {**asdict(measured), "probe": {"duration_s": duration_s, "warmup_s": warmup_s, "reps": reps}}
    # An interval of one run is infinite: JSON has no Infinity, so null.
    record["rate_ci_bps"] = [v if math.isfinite(v) else None for v in measured.rate_ci_bps]
    (out / MEASURED_PATH_FILE).write_text(json.dumps(record, indent=1) + "\n")
    return measured
