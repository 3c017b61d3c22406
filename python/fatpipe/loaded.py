"""A study read back from its directory: what ``StudyStore.load()`` (and so
``fatpipe.load()`` and ``fatpipe.run()``) returns.

Tables are pandas DataFrames with the columns docs/results.md describes:
``runs`` (one row per run × flow group) and ``rpcs`` are read at once;
``series`` (per-interval samples, the large one), ``path_series`` (the
bottleneck per interval), ``transfers`` (the data sets' completion times)
and ``events`` (the CCAs' state changes) are read
on first use, and
:meth:`LoadedStudy.read_series` reads only some columns or one run.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from .results import StudyStore
    from .spec import Spec


@dataclass(repr=False)
class LoadedStudy:
    store: StudyStore
    runs: pd.DataFrame
    rpcs: pd.DataFrame
    spec_text: str  # study.toml as run ("" if the directory has none)
    manifest: dict[str, Any] = field(default_factory=dict)  # manifest.json ({} if none)

    @property
    def root(self) -> Path:
        return self.store.root

    @cached_property
    def series(self) -> pd.DataFrame:
        """Every per-interval sample of every run (empty if none were kept)."""
        return self.store.series_table()

    def run_facts(self, run_id: str) -> dict[str, Any]:
        """What the backend recorded about one run beyond the tables (the
        emulator's counters, the hosts' clock offsets, …)."""
        return self.store.run_facts(run_id)

    def read_series(self, columns: list[str] | None = None, run_id: str | None = None) -> pd.DataFrame:
        """Some columns of the series, or one run's samples, without reading the rest."""
        if columns is None and run_id is None:
            return self.series
        return self.store.series_table(columns=columns, run_id=run_id)

    @cached_property
    def path_series(self) -> pd.DataFrame:
        """The bottleneck's queue and counters per sampling interval of every
        run (empty for studies written before the table, and for backends
        that cannot observe their bottleneck)."""
        return self.store.path_series_table()

    def captures(self, run_id: str) -> list[Path]:
        """The pcap files of run `run_id` (docs/captures.md), if it captured."""
        return sorted((self.root / "work" / run_id).glob("capture-*.pcap"))

    @cached_property
    def transfers(self) -> pd.DataFrame:
        """The data sets of transfer flows that completed, one row each with
        its completion time (empty for studies without transfers)."""
        return self.store.transfers_table()

    @cached_property
    def events(self) -> pd.DataFrame:
        """The CCAs' state changes of every run (empty for studies written
        before the table, and for runs whose CCA or backend records none)."""
        return self.store.events_table()

    @property
    def imported(self) -> dict[str, Any] | None:
        """The manifest's mark of a study whose runs were imported (tool,
        command, files; results.imported_mark), None for a study fatpipe ran."""
        from .results import imported_mark
        return imported_mark(self.manifest)

    @cached_property
    def spec(self) -> Spec | None:
        """The validated spec as run (an imported study's names its tool as
        the backend); None when study.toml is missing or no longer validates
        (the tables stay readable)."""
        from .spec import SpecError, validate
        tool = self.imported["tool"] if self.imported else None
        try:
            return validate(self._spec_raw, str(self.root / "study.toml"), tool) if self._spec_raw else None
        except SpecError:
            return None

    def run_plan(self, run_id: str):
        """The RunPlan of run `run_id` as the spec gives it (its backend is
        the run id's prefix), or None without a valid spec or such a run."""
        from .study import plan_runs
        if self.spec is None or run_id not in set(self.runs["run_id"]):
            return None
        try:
            plans = plan_runs(self.spec, self._spec_raw, backends=[run_id.split("-", 1)[0]])
        except Exception:  # noqa: BLE001 - a spec this fatpipe no longer plans: no plan, tables still readable
            return None
        return next((p for p in plans if p.run_id == run_id), None)

    @cached_property
    def _spec_raw(self) -> dict[str, Any]:
        try:
            return tomllib.loads(self.spec_text)
        except tomllib.TOMLDecodeError:
            return {}

    @property
    def name(self) -> str:
        """The study's name (study.name), else the directory's."""
        return self._spec_raw.get("study", {}).get("name") or self.root.name

    @property
    def description(self) -> str:
        return self._spec_raw.get("study", {}).get("description", "")

    def __repr__(self) -> str:
        n_runs = self.runs["run_id"].nunique() if "run_id" in self.runs.columns else 0
        return (f"<LoadedStudy {self.name!r} at {str(self.root)!r}: {n_runs} runs, "
                f"{len(self.runs)} runs rows, {len(self.rpcs)} RPCs>")
