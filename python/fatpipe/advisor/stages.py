"""Running the stages of an advice as ordinary studies, within a budget.

Each stage is a study (plan.stage_raw) written as TOML into the advice's
directory and run by fatpipe.study.run_study into its own result
directory, so the store, the summary, the estimate and `--jobs` work as for
any study, and `fatpipe run`/`report` work on each stage afterwards.

The budget is the wall time the user allows. Predictions come from
plan.run_wall_s; after each stage the ratio of the measured wall time to
the predicted one calibrates the next predictions (the machine may be
slower or busier than the sim's documented packet rate).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..study import run_study
from . import plan as pl
from .request import AdviseRequest


@dataclass
class Budget:
    """Wall time allowed and spent, and how far predictions were off."""

    total_s: float
    jobs: int
    started: float = field(default_factory=time.monotonic)
    calibration: float = 1.0  # measured / predicted wall time so far
    stage_times: dict[str, float] = field(default_factory=dict)

    @property
    def spent_s(self) -> float:
        return time.monotonic() - self.started

    @property
    def left_s(self) -> float:
        return max(0.0, self.total_s - self.spent_s)

    def predict_s(self, run_costs_s: list[float]) -> float:
        """Wall time of runs predicted to take `run_costs_s` each on one
        core, on `jobs` cores: the longer of an even share and the longest
        run (a stage lasts at least its longest run)."""
        if not run_costs_s:
            return 0.0
        parallel = max(1, min(self.jobs, len(run_costs_s)))
        return self.calibration * max(sum(run_costs_s) / parallel, max(run_costs_s))

    def learn(self, name: str, run_costs_s: list[float], took_s: float) -> None:
        self.stage_times[name] = took_s
        predicted = self.predict_s(run_costs_s) / self.calibration
        if predicted > 0.5:  # too short a stage says little
            self.calibration = max(0.3, min(5.0, took_s / predicted))


@dataclass
class StageRunner:
    """Runs stages into `root` (one directory per stage) for one request."""

    req: AdviseRequest
    root: Path
    budget: Budget
    emit: Callable[[str], None] = print
    runs: list[pd.DataFrame] = field(default_factory=list)

    def run(self, name: str, raw: dict, run_costs_s: list[float]) -> pd.DataFrame:
        """Write the stage's spec, run it, return its runs table (with a
        `stage` column); `run_costs_s` are its runs' predicted one-core
        seconds; progress lines go to `emit` in short form."""
        self.root.mkdir(parents=True, exist_ok=True)
        study_file = self.root / f"{name}.toml"
        study_file.write_text(pl.toml_text(raw))
        guess = self.budget.predict_s(run_costs_s)
        self.emit(f"advise: {name}: {len(run_costs_s)} runs (about {guess:.0f} s)")
        t0 = time.monotonic()
        result = run_study(study_file, out=self.root / name, jobs=self.budget.jobs, emit=_quiet)
        took = time.monotonic() - t0
        self.budget.learn(name, run_costs_s, took)
        table = result.store.runs_table()
        failed = table[table["status"] != "ok"]
        if not failed.empty:
            reasons = "; ".join(sorted(set(failed["reason"].astype(str)))[:3])
            self.emit(f"advise: {name}: {failed['run_id'].nunique()} runs failed: {reasons}")
        self.emit(f"advise: {name}: done in {took:.1f} s")
        table = table.assign(stage=name)
        self.runs.append(table)
        return table


def _quiet(_line: str) -> None:
    """Stage progress is summarised per stage, not per run."""


def default_jobs() -> int:
    return os.cpu_count() or 1
