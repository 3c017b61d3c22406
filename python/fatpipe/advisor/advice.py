"""`fatpipe advise`: plan, run and rank a sim sweep for the user's path.

Stages (each an ordinary study under the advice's directory, stages.py):

1. **coarse** — every CCA × streams 1, 4, 16, … up to --max-streams ×
   every MTU, buffers raised for the path; one run each.
2. **refine** — COARSE_KEEP candidates (rank.stage_order on the coarse
   runs: those within 3 % of the best, one per CCA first) and their neighbours
   (half/twice the streams, the other MTUs, the hosts' own buffers);
   REFINE_REPS runs each (new seeds).
3. **reps** — while the candidates that could still be the best have
   fewer than MIN_TOP_REPS runs (a few runs miss the rare slow run that
   skews goodput) or an interval wider than TARGET_HALF_WIDTH of their
   mean, EXTRA_REPS more runs of them (new seeds), as the budget allows.
4. **margin** — up to MARGIN_KEEP candidates in rank.stage_order (the
   equal ones (rank.equal_set) first, one per CCA before a second) at the
   loss × MARGIN_FACTORS (from MARGIN_FLOOR; MARGIN_LOSSLESS when the
   path is lossless), MARGIN_REPS runs each.
5. **competing** — with --competing, up to COMPETING_KEEP candidates
   (the equal ones that passed the margin rule first, fewest streams
   first) beside one stream of that CCA from another sender,
   COMPETING_REPS runs.

Every stage shares one timing (plan.timing, squeezed until the coarse
stage fits its share of the budget), so runs of one candidate pool.

**Budget**: a stage after the coarse one runs only what its share of the
budget left predicts to fit (Budget.predict_s); refine and repetitions
leave a reserve for the full margin and competing stages (the
recommendation rule needs them). The refine stage falls
back to one more run of the best candidate; the margin stage to fewer
candidates, one run each, then the middle loss alone; the competing stage
to fewer candidates and runs. What does not fit is skipped and said so
(Advice.notes): the advice never keeps a stage's run "at least one" past
the budget.
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
from .rank import candidate_stats, contenders, half_width, ranked, stage_order
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
MARGIN_KEEP = 4
COMPETING_KEEP = 3
MARGIN_FACTORS = (4.0, 16.0, 64.0)
MARGIN_FLOOR = 1e-6
MARGIN_LOSSLESS = (1e-5, 1e-4, 1e-3, 1e-2)
MARGIN_REPS = 2
COMPETING_REPS = 3
MIN_SQUEEZE = 0.2
REFINE_SHARE, REPS_SHARE, MARGIN_SHARE, COMPETING_SHARE = 0.45, 0.3, 0.6, 0.9
MARGIN_SHARE_BEFORE_COMPETING = 0.45


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
    notes: list[str] = field(default_factory=list)  # stages reduced or skipped for the budget
    hosts: str = ""  # the CPU the recommendation needs, or that the hosts were taken as infinitely fast

    def frame(self) -> pd.DataFrame:
        """The table as fatpipe.advise() returns it (words in .attrs)."""
        df = self.table.drop(columns=["candidate"], errors="ignore").reset_index(drop=True)
        df.attrs["why"] = {k: (v.label() if isinstance(v, pl.Candidate) else v)
                           for k, v in self.table.attrs.get("why", {}).items()}
        df.attrs.update({"recommendation": self.recommendation, "buffers": self.buffers["lines"],
                         "jumbo": self.jumbo, "baseline": self.baseline, "assumptions": self.assumptions,
                         "hosts": self.hosts,
                         "wall_s": self.wall_s, "notes": self.notes,
                         "directory": str(self.root), "measured": self.measured,
                         "window_bound": self.buffers["window_bound"],
                         "rmem_needed_bytes": self.buffers["rmem_needed_bytes"],
                         "wmem_needed_bytes": self.buffers["wmem_needed_bytes"]})
        return df


def default_root() -> Path:
    return Path("results") / f"advise-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def _run_costs(req: AdviseRequest, cands: list[pl.Candidate], t: pl.Timing, reps: int,
               losses: tuple[float, ...] | None = None, competing_bps: float = 0.0) -> list[float]:
    """Predicted one-core seconds of every run of a stage."""
    return [pl.run_wall_s(req, c, t, loss, competing_bps) for c in cands for loss in (losses or (None,))
            for _ in range(reps)]


def _fit_timing(req: AdviseRequest, cands: list[pl.Candidate], budget: Budget) -> pl.Timing:
    """The longest timing whose coarse stage fits COARSE_SHARE of the budget."""
    squeeze = 1.0
    t = pl.timing(req)
    while squeeze > MIN_SQUEEZE:
        t = pl.timing(req, squeeze)
        if budget.predict_s(_run_costs(req, cands, t, 1)) <= COARSE_SHARE * budget.total_s:
            break
        squeeze *= 0.8
    return t


def _affordable(req, budget: Budget, cands: list[pl.Candidate], t, reps, share: float,
                reserve_s: float = 0.0, **kw) -> list[pl.Candidate]:
    """The first candidates whose runs fit `share` of the budget left
    beyond `reserve_s` (possibly none)."""
    room = share * max(0.0, budget.left_s - reserve_s)
    while cands and budget.predict_s(_run_costs(req, cands, t, reps, **kw)) > room:
        cands = cands[:-1]
    return cands


def _reserve_s(req: AdviseRequest, budget: Budget, runs: pd.DataFrame, t: pl.Timing) -> float:
    """Predicted wall time of the full margin and competing stages for the
    candidates ranked so far: refine and repetitions leave it free, as the
    recommendation rule needs those stages."""
    stats = candidate_stats(runs, req)
    if stats.empty:
        return 0.0
    order = stage_order(stats, req)
    out = budget.predict_s(_run_costs(req, order[:MARGIN_KEEP], t, MARGIN_REPS, _losses(req)))
    if req.competing:
        out += budget.predict_s(_run_costs(req, order[:COMPETING_KEEP], t, COMPETING_REPS, competing_bps=req.rate))
    return out


def _losses(req: AdviseRequest) -> tuple[float, ...]:
    if req.loss <= 0:
        return MARGIN_LOSSLESS
    return tuple(min(0.5, max(req.loss, MARGIN_FLOOR) * f) for f in MARGIN_FACTORS)


def plan_margin(req: AdviseRequest, budget: Budget, order: list[pl.Candidate], t: pl.Timing,
                share: float) -> tuple[list[pl.Candidate], int, tuple[float, ...]]:
    """(candidates, runs each, losses) of the margin stage that fit `share`
    of the budget left: MARGIN_KEEP candidates × every loss × MARGIN_REPS,
    else fewer candidates, then one run each, then the middle loss alone;
    ([], 0, ()) when not even one run of the first candidate fits."""
    full = _losses(req)
    for reps, losses in ((MARGIN_REPS, full), (1, full), (1, (full[len(full) // 2],))):
        cands = _affordable(req, budget, order[:MARGIN_KEEP], t, reps, share, losses=losses)
        if cands:
            return cands, reps, losses
    return [], 0, ()


def plan_competing(req: AdviseRequest, budget: Budget, order: list[pl.Candidate], t: pl.Timing,
                   share: float) -> tuple[list[pl.Candidate], int]:
    """(candidates, runs each) of the competing stage that fit `share` of
    the budget left ([], 0 when none)."""
    for reps in range(COMPETING_REPS, 0, -1):
        cands = _affordable(req, budget, order[:COMPETING_KEEP], t, reps, share, competing_bps=req.rate)
        if cands:
            return cands, reps
    return [], 0


def _left_note(budget: Budget, what: str, order_len: int, kept: int, detail: str = "") -> str | None:
    if kept == order_len and not detail:
        return None
    left = f"the {budget.left_s:.0f} s of the budget left"
    if kept == 0:
        return f"{what} skipped: not even one run fitted {left}."
    return f"{what} reduced to fit {left}: {kept} of {order_len} candidates{detail}."


def run_advice(req: AdviseRequest, out: str | Path | None = None, jobs: int | None = None,
               emit: Callable[[str], None] = print, measured: list[str] | None = None) -> Advice:
    """Plan and run the stages for `req` into `out`, rank, and explain."""
    root = Path(out) if out else default_root()
    budget = Budget(req.budget, jobs or default_jobs())
    runner = StageRunner(req, root, budget, emit)
    notes: list[str] = []

    def note(text: str | None) -> None:
        if text:
            notes.append(text)
            emit(f"advise: {text}")

    t0 = time.monotonic()
    coarse = pl.coarse_candidates(req)
    t = _fit_timing(req, coarse, budget)
    emit(f"advise: {req.describe()}; runs of {t.duration_s:g} s ({t.warmup_s:g} s warm-up), "
         f"budget {req.budget:g} s on {budget.jobs} cores")
    runner.run("coarse", pl.stage_raw(req, "coarse", coarse, t, 1, seed=1), _run_costs(req, coarse, t, 1))
    base = lambda: pd.concat(runner.runs, ignore_index=True)  # noqa: E731 - the runs at the request's loss

    stats = candidate_stats(base(), req)
    best = stage_order(stats, req, fewest_streams_first=bool(req.competing), min_runs=1)[:COARSE_KEEP] \
        if not stats.empty else []
    refine: list[pl.Candidate] = []
    for c in best + [n for b in best for n in pl.neighbours(req, b)]:
        if c not in refine:
            refine.append(c)
    refine = pl.prune_dominated(req, refine, keep=best[0] if best else None)
    wanted = len(refine)
    reserve = _reserve_s(req, budget, base(), t)
    refine, refine_reps = _affordable(req, budget, refine, t, REFINE_REPS, REFINE_SHARE, reserve), REFINE_REPS
    if not refine and best:  # one more run of the best: two runs, an interval
        refine, refine_reps = _affordable(req, budget, best[:1], t, 1, REFINE_SHARE), 1
    note(_left_note(budget, "Refine stage", wanted, len(refine),
                    "" if refine_reps == REFINE_REPS else ", one run each"))
    if refine:
        runner.run("refine", pl.stage_raw(req, "refine", refine, t, refine_reps, seed=2),
                   _run_costs(req, refine, t, refine_reps))

    for round_ in range(MAX_REP_ROUNDS):
        stats = candidate_stats(base(), req)
        rows = [stats[stats["candidate"] == c].iloc[0] for c in contenders(stats, CONTENDERS)]
        wide = [r["candidate"] for r in rows
                if r["n"] < MIN_TOP_REPS or half_width(r) > TARGET_HALF_WIDTH * r["goodput_bps"]]
        reserve = _reserve_s(req, budget, base(), t)
        wide = _affordable(req, budget, wide, t, EXTRA_REPS, REPS_SHARE, reserve) if wide else []
        if not wide:
            break
        name = f"reps{round_ + 1}"
        runner.run(name, pl.stage_raw(req, name, wide, t, EXTRA_REPS, seed=3 + round_),
                   _run_costs(req, wide, t, EXTRA_REPS))

    base_runs = base()
    stats = candidate_stats(base_runs, req)
    order = stage_order(stats, req) if not stats.empty else []
    share = MARGIN_SHARE_BEFORE_COMPETING if req.competing else MARGIN_SHARE
    top_m, reps_m, losses = plan_margin(req, budget, order, t, share)
    detail = ("" if reps_m == MARGIN_REPS else ", one run each") + \
        ("" if len(losses) == len(_losses(req)) else f", at loss {losses[0]:g} only" if losses else "")
    note(_left_note(budget, "Loss-margin stage", min(MARGIN_KEEP, len(order)), len(top_m), detail))
    margin = None
    if top_m:
        margin = runner.run("margin", pl.stage_raw(req, "margin", top_m, t, reps_m, seed=10, losses=list(losses)),
                            _run_costs(req, top_m, t, reps_m, losses))
    comp = None
    if req.competing:
        table = ranked(base_runs, req, margin)
        order_c = stage_order(table, req, fewest_streams_first=True, robust_first=True) if not table.empty else []
        top_c, reps_c = plan_competing(req, budget, order_c, t, COMPETING_SHARE)
        note(_left_note(budget, "Competing stage", min(COMPETING_KEEP, len(order_c)), len(top_c),
                        "" if reps_c in (0, COMPETING_REPS) else f", {reps_c} runs each"))
        if top_c:
            comp = runner.run("competing", pl.stage_raw(req, "competing", top_c, t, reps_c, seed=20,
                                                        competing=req.competing),
                              _run_costs(req, top_c, t, reps_c, competing_bps=req.rate))
    table = ranked(base_runs, req, margin, comp)
    wall = time.monotonic() - t0
    advice = Advice(req, table, fnd.recommendation(table, req), fnd.buffer_findings(table, req),
                    fnd.jumbo_finding(table, req), fnd.assumptions(req, t), t, wall, dict(budget.stage_times),
                    root, list(measured or []), fnd.baseline_finding(table, req), notes,
                    fnd.host_finding(table, req))
    return advice
