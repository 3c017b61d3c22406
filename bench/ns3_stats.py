"""Statistics and verdicts for bench/ns3_compare.py's multi-seed mode.

At loss 1e-5 a 10 s run at 1 Gbit/s sees only ~5-8 random losses, so one
run's goodput scatters by tens of percent from seed to seed. The two
simulators' seeds are unrelated, so runs are never paired by seed: each
side is summarised as a sample (mean, SD, standard error of the mean) and
the means are compared, with the uncertainty of their ratio.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

SPEEDUP_GOAL = 1000.0
GOODPUT_GOAL_PCT = 10.0

# Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom; the
# difference of the means is quoted as +- t * its standard error, with
# Welch's degrees of freedom (a handful of runs a side: t, not 2).
_T95 = (
    12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23,
    2.20, 2.18, 2.16, 2.14, 2.13, 2.12, 2.11, 2.10, 2.09, 2.09,
    2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04,
)  # fmt: skip


def t95(df: float) -> float:
    """Student's t 97.5 % quantile, df rounded down (conservative); 2.0 past 30."""
    if df >= len(_T95) + 1:
        return 2.0
    return _T95[max(int(df), 1) - 1]


@dataclasses.dataclass(frozen=True)
class Sample:
    """Mean, sample SD and standard error of the mean of some values."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return sum(self.values) / self.n if self.n else None

    @property
    def sd(self) -> float | None:
        if self.n < 2:
            return None
        m = self.mean
        return math.sqrt(sum((v - m) ** 2 for v in self.values) / (self.n - 1))

    @property
    def sem(self) -> float | None:
        return None if self.sd is None else self.sd / math.sqrt(self.n)

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "sd": self.sd, "sem": self.sem}


def sample_of(runs: Sequence[dict[str, Any]], key: str) -> Sample:
    """The values of `key` over the runs that finished without an error."""
    return Sample(tuple(r[key] for r in runs if "error" not in r and r.get(key) is not None))


@dataclasses.dataclass(frozen=True)
class Difference:
    """fatpipe's mean relative to ns-3's, in %, with a 95 % half-width.

    The standard error of the ratio of two independent means comes from the
    delta method: se(r) = r * sqrt((sem_a / a)^2 + (sem_b / b)^2); the
    half-width is t * se(r), t from Welch's degrees of freedom.
    """

    pct: float
    half_width_pct: float | None  # None with < 2 runs a side
    t: float | None = None
    df: float | None = None

    @property
    def low(self) -> float | None:
        return None if self.half_width_pct is None else self.pct - self.half_width_pct

    @property
    def high(self) -> float | None:
        return None if self.half_width_pct is None else self.pct + self.half_width_pct


def difference(fatpipe: Sample, ns3: Sample) -> Difference | None:
    if not fatpipe.n or not ns3.n or not ns3.mean:
        return None
    ratio = fatpipe.mean / ns3.mean
    pct = (ratio - 1) * 100
    if fatpipe.sem is None or ns3.sem is None or not fatpipe.mean:
        return Difference(pct=pct, half_width_pct=None)
    rel = (fatpipe.sem / fatpipe.mean, ns3.sem / ns3.mean)
    df = welch_df(rel, (fatpipe.n, ns3.n))
    t = t95(df)
    return Difference(pct=pct, half_width_pct=t * ratio * math.hypot(*rel) * 100, t=t, df=df)


def welch_df(sems: tuple[float, float], ns: tuple[int, int]) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two means."""
    num = (sems[0] ** 2 + sems[1] ** 2) ** 2
    den = sum(se**4 / (n - 1) for se, n in zip(sems, ns, strict=True))
    return num / den if den > 0 else float(sum(ns) - 2)


def goodput_verdict(diff: Difference | None, n_ns3: int, n_fp: int) -> str:
    """"within 10 %" judged on the means, and whether the finished runs
    (n_ns3, n_fp) resolve it."""
    if diff is None:
        return "unknown (no finished runs on one side)"
    goal = GOODPUT_GOAL_PCT
    head = ("MET" if abs(diff.pct) <= goal else "NOT MET") + f" on the means ({diff.pct:+.1f} %)"
    if diff.half_width_pct is None:
        return head + "; not resolvable: fewer than 2 finished runs on a side"
    runs = f"{n_ns3} ns-3 / {n_fp} fatpipe runs"
    inside = -goal <= diff.low and diff.high <= goal
    outside = diff.low > goal or diff.high < -goal
    band = f"95 % interval [{diff.low:+.1f}, {diff.high:+.1f}] %"
    if inside or outside:
        where = "inside" if inside else "outside"
        return f"{head}; resolved with {runs}: {band} lies {where} +-{goal:g} %"
    factor = runs_factor_to_resolve(diff)
    more = ""
    if factor:
        need = f"{math.ceil(factor * n_ns3)} ns-3 / {math.ceil(factor * n_fp)} fatpipe runs"
        more = f"; ~{need} would resolve it at this scatter"
    return f"{head}; NOT resolvable with {runs}: {band} straddles +-{goal:g} %{more}"


def runs_factor_to_resolve(diff: Difference) -> float | None:
    """How many times more runs a side the 95 % interval needs to clear the
    nearer goal edge, if the mean difference and the scatter stay as they
    are (half-width ~ 1/sqrt(n), t taken as fixed)."""
    margin = abs(abs(diff.pct) - GOODPUT_GOAL_PCT)
    if margin < 1e-9 or not diff.half_width_pct:
        return None
    return max((diff.half_width_pct / margin) ** 2, 1.0)


@dataclasses.dataclass(frozen=True)
class Speedup:
    """Mean ns-3 Simulator::Run wall time / mean fatpipe simulate() wall time.

    With timed-out ns-3 runs, their time in Simulator::Run up to the kill is
    counted, so the ratio is a lower bound."""

    ratio: float | None
    lower_bound: bool

    def verdict(self) -> str:
        if self.ratio is None:
            return "unknown"
        met = self.ratio >= SPEEDUP_GOAL
        if self.lower_bound:
            return "MET (lower bound: ns-3 timed out)" if met else "unknown (ns-3 timed out)"
        return "MET" if met else "NOT MET"

    def label(self) -> str:
        if self.ratio is None:
            return "n/a"
        return f"{'>= ' if self.lower_bound else ''}{self.ratio:.0f}x"


def run_walls(runs: Sequence[dict[str, Any]]) -> tuple[list[float], bool]:
    """Simulator::Run (or simulate()) wall time per run, the lower bound for
    a timed-out one, and whether any was a lower bound."""
    walls, bounded = [], False
    for r in runs:
        if "error" not in r and r.get("run_wall_s") is not None:
            walls.append(r["run_wall_s"])
        elif r.get("run_wall_lower_bound_s") is not None:
            walls.append(r["run_wall_lower_bound_s"])
            bounded = True
    return walls, bounded


def speedup(ns3_runs: Sequence[dict[str, Any]], fp_runs: Sequence[dict[str, Any]]) -> Speedup:
    walls, bounded = run_walls(ns3_runs)
    fp_wall = sample_of(fp_runs, "run_wall_s").mean
    if not walls or not fp_wall:
        return Speedup(None, False)
    return Speedup(sum(walls) / len(walls) / fp_wall, bounded)
