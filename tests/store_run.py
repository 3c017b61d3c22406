"""Runs a study given as TOML text into a StudyStore the way `fatpipe run`
does, without the CLI (for tests that look inside the store)."""

from __future__ import annotations

from pathlib import Path

from fatpipe import spec as spec_mod
from fatpipe import study as study_mod
from fatpipe.results import StudyStore


def run_spec_text(root: Path, spec_text: str):
    """The study `spec_text` run into the store at `root` (its spec file
    beside it), consolidated: (store, plans)."""
    p = root.parent / "s.toml"
    p.write_text(spec_text)
    spec, raw = spec_mod.load(p)
    plans = study_mod.plan_runs(spec, raw)
    store = StudyStore(root)
    store.prepare(spec_text)
    study_mod.run_plans(plans, store, jobs=1, emit=lambda _line: None)
    store.consolidate()
    return store, plans
