"""`fatpipe advise`: plan, run and rank a sim sweep for the user's path.

Stages (each an ordinary study under the advice's directory, stages.py):

1. **coarse** — every CCA × streams 1, 4, 16, … up to --max-streams ×
   every MTU, buffers raised for the path; one run each.
2. **refine** — the best COARSE_KEEP candidates and their neighbours
   (half/twice the streams, the other MTUs, the hosts' own buffers);
   REFINE_REPS runs each (new seeds).
3. **reps** — while the candidates that could still be the best have
   fewer than MIN_TOP_REPS runs (a few runs miss the rare slow run that
   skews goodput) or an interval wider than TARGET_HALF_WIDTH of their
   mean, EXTRA_REPS more runs of them (new seeds), as the budget allows.
4. **margin** — the recommendation and the best others (MARGIN_KEEP in
   all) at the loss × MARGIN_FACTORS (from
   MARGIN_FLOOR when the path is lossless), MARGIN_REPS runs each.
5. **competing** — with --competing, the same candidates beside one
   stream of that CCA from another sender, COMPETING_REPS runs.

Every stage shares one timing (plan.timing, squeezed until the coarse
stage fits its share of the budget), so runs of one candidate pool.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import findings as fnd
from . import plan as pl
from .rank import candidate_stats, contenders, half_width, ranked, recommended_index
from .request import AdviseRequest
from .stages import Budget, StageRunner, default_jobs

COARSE_SHARE = 0.35  # of the budget
COARSE_KEEP = 3
REFINE_REPS = 3
TARGET_HALF_WIDTH = 0.03
MIN_TOP_REPS = 8
EXTRA_REPS = 3
MAX_REP_ROUNDS = 2
CONTENDERS = 4
MARGIN_KEEP = 3
MARGIN_FACTORS = (4.0, 16.0, 64.0)
MARGIN_FLOOR = 1e-6
MARGIN_LOSSLESS = (1e-5, 1e-4, 1e-3, 1e-2)
MARGIN_REPS = 2
COMPETING_REPS = 3
MIN_SQUEEZE = 0.2


@dataclass
class Advice:
    """What an advice found: the ranked table and the words around it."""

    request: AdviseRequest
    table: pd.DataFrame
    recommendation: str
    buffers: dict
    jumbo: str
    assumptions: list[str]
    timing: pl.Timing
    wall_s: float
    stage_times: dict[str, float]
    root: Path
    measured: list[str] = field(default_factory=list)  # --testbed: what was measured
    baseline: str = ""  # today's setup against the recommendation

    def frame(self) -> pd.DataFrame:
        """The table as fatpipe.advise() returns it (words in .attrs)."""
        df = self.table.drop(columns=["candidate"], errors="ignore").reset_index(drop=True)
        df.attrs.update({"recommendation": self.recommendation, "buffers": self.buffers["lines"],
                         "jumbo": self.jumbo, "baseline": self.baseline, "assumptions": self.assumptions,
                         "wall_s": self.wall_s,
                         "directory": str(self.root), "measured": self.measured,
                         "window_bound": self.buffers["window_bound"],
                         "rmem_needed_bytes": self.buffers["rmem_needed_bytes"],
                         "wmem_needed_bytes": self.buffers["wmem_needed_bytes"]})
        return df


def default_root() -> Path:
    return Path("results") / f"advise-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def _core_s(req: AdviseRequest, cands: list[pl.Candidate], t: pl.Timing, reps: int,
            losses: tuple[float, ...] | None = None, competing_bps: float = 0.0) -> float:
    losses = losses or (None,)
    return reps * sum(pl.run_wall_s(req, c, t, loss, competing_bps) for c in cands for loss in losses)


def _fit_timing(req: AdviseRequest, cands: list[pl.Candidate], budget: Budget) -> pl.Timing:
    """The longest timing whose coarse stage fits COARSE_SHARE of the budget."""
    squeeze = 1.0
    t = pl.timing(req)
    while squeeze > MIN_SQUEEZE:
        t = pl.timing(req, squeeze)
        if budget.predict_s(_core_s(req, cands, t, 1), len(cands)) <= COARSE_SHARE * budget.total_s:
            break
        squeeze *= 0.8
    return t


def _affordable(req, budget: Budget, cands: list[pl.Candidate], t, reps, share: float,
                **kw) -> list[pl.Candidate]:
    """The first candidates whose runs fit `share` of the budget left (at least one)."""
    while len(cands) > 1 and budget.predict_s(_core_s(req, cands, t, reps, **kw), len(cands) * reps) \
            > share * budget.left_s:
        cands = cands[:-1]
    return cands


def _losses(req: AdviseRequest) -> tuple[float, ...]:
    if req.loss <= 0:
        return MARGIN_LOSSLESS
    return tuple(min(0.5, max(req.loss, MARGIN_FLOOR) * f) for f in MARGIN_FACTORS)


def run_advice(req: AdviseRequest, out: str | Path | None = None, jobs: int | None = None,
               emit: Callable[[str], None] = print, measured: list[str] | None = None) -> Advice:
    """Plan and run the stages for `req` into `out`, rank, and explain."""
    root = Path(out) if out else default_root()
    budget = Budget(req.budget, jobs or default_jobs())
    runner = StageRunner(req, root, budget, emit)
    t0 = time.monotonic()
    coarse = pl.coarse_candidates(req)
    t = _fit_timing(req, coarse, budget)
    emit(f"advise: {req.describe()}; runs of {t.duration_s:g} s ({t.warmup_s:g} s warm-up), "
         f"budget {req.budget:g} s on {budget.jobs} cores")
    runner.run("coarse", pl.stage_raw(req, "coarse", coarse, t, 1, seed=1), _core_s(req, coarse, t, 1), len(coarse))
    base = lambda: pd.concat(runner.runs, ignore_index=True)  # noqa: E731 - the runs at the request's loss

    stats = candidate_stats(base(), req)
    best = list(stats["candidate"][:COARSE_KEEP]) if not stats.empty else []
    refine: list[pl.Candidate] = []
    for c in best + [n for b in best for n in pl.neighbours(req, b)]:
        if c not in refine:
            refine.append(c)
    refine = _affordable(req, budget, refine, t, REFINE_REPS, 0.45)
    runner.run("refine", pl.stage_raw(req, "refine", refine, t, REFINE_REPS, seed=2),
               _core_s(req, refine, t, REFINE_REPS), len(refine) * REFINE_REPS)

    for round_ in range(MAX_REP_ROUNDS):
        stats = candidate_stats(base(), req)
        rows = [stats[stats["candidate"] == c].iloc[0] for c in contenders(stats, CONTENDERS)]
        wide = [r["candidate"] for r in rows
                if r["n"] < MIN_TOP_REPS or half_width(r) > TARGET_HALF_WIDTH * r["goodput_bps"]]
        wide = _affordable(req, budget, wide, t, EXTRA_REPS, 0.3) if wide else []
        cost = _core_s(req, wide, t, EXTRA_REPS)
        if not wide or budget.predict_s(cost, len(wide) * EXTRA_REPS) > 0.3 * budget.left_s:
            break
        name = f"reps{round_ + 1}"
        runner.run(name, pl.stage_raw(req, name, wide, t, EXTRA_REPS, seed=3 + round_), cost,
                   len(wide) * EXTRA_REPS)

    base_runs = base()
    stats = candidate_stats(base_runs, req)
    # The recommendation first (its margin and harm are what the advice states), then the best others.
    chosen = stats["candidate"][recommended_index(stats, req)] if not stats.empty else None
    top = ([chosen] if chosen else []) + [c for c in stats["candidate"] if c != chosen][:MARGIN_KEEP - 1]
    losses = _losses(req)
    top_m = _affordable(req, budget, top, t, MARGIN_REPS, 0.6, losses=losses)
    margin = runner.run("margin", pl.stage_raw(req, "margin", top_m, t, MARGIN_REPS, seed=10, losses=list(losses)),
                        _core_s(req, top_m, t, MARGIN_REPS, losses), len(top_m) * len(losses) * MARGIN_REPS)
    comp = None
    if req.competing:
        top_c = _affordable(req, budget, top, t, COMPETING_REPS, 0.9, competing_bps=req.rate)
        comp = runner.run("competing", pl.stage_raw(req, "competing", top_c, t, COMPETING_REPS, seed=20,
                                                    competing=req.competing),
                          _core_s(req, top_c, t, COMPETING_REPS, competing_bps=req.rate),
                          len(top_c) * COMPETING_REPS)
    table = ranked(base_runs, req, margin, comp)
    wall = time.monotonic() - t0
    advice = Advice(req, table, fnd.recommendation(table, req), fnd.buffer_findings(table, req),
                    fnd.jumbo_finding(table, req), fnd.assumptions(req, t), t, wall, dict(budget.stage_times),
                    root, list(measured or []), fnd.baseline_finding(table, req))
    return advice
