"""One run, split in two: compute its tables (anywhere), then record them
(only in the process that holds the study's lock).

:func:`compute_run` is pure with respect to the store: it runs the plan's
backend in a scratch directory and returns a :class:`RunResult` (plain rows,
columns as lists, the backend's facts), which pickles, so a Dask worker on
another machine can compute it. :func:`record_run` writes a result through
the :class:`~fatpipe.results.StudyStore`, the single writer; the serial path
(``study.execute_one``) and the cluster path (``fatpipe.cluster``) both end
there, so their files are the same.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backends import get_backend
from .backends.base import Backend, RunOutcome, RunPlan
from .results import StudyStore
from .schema import cpu_columns, path_columns
from .summary import series_with_goodput, summarize


def identity_columns(plan: RunPlan) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": plan.run_id, "backend": plan.backend, "rep": plan.rep, "seed": plan.seed,
        "rate_bps": plan.rate_bps, "rtt_s": plan.rtt_s, "loss": plan.loss,
        "corruption": plan.corruption, "buffer_bytes": plan.buffer_bytes,
        "mtu_bytes": plan.mtu_bytes, "duration_s": plan.duration_s, "warmup_s": plan.warmup_s,
    }
    for key, value in plan.swept.items():
        out[key] = value
    return out


def failed_rows(plan: RunPlan, reason: str) -> list[dict[str, Any]]:
    base = identity_columns(plan)
    return [
        {**base, "status": "failed", "reason": reason, "flow_group": f.group, "kind": f.kind,
         "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes, "sender": f.sender}
        for f in plan.flows
    ]


@dataclass
class RunResult:
    """A run's tables as computed, not yet written. `summary` is the progress
    line's text (goodputs, or the reason's first line); `work_files` the
    backend's scratch files (relative path -> bytes) when the run was
    computed away from the study directory, else empty; `worker` who
    computed it (the cluster's identity check, fatpipe.cluster.identity)."""

    run_id: str
    status: str  # "ok" | "failed"
    rows: list[dict[str, Any]]
    summary: str
    reason: str = ""
    series: dict[str, list] | None = None
    rpcs: dict[str, list] | None = None
    transfers: dict[str, list] | None = None
    path_series: dict[str, list] | None = None
    events: dict[str, list] | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    work_files: dict[str, bytes] = field(default_factory=dict)
    worker: dict[str, str] = field(default_factory=dict)


def failed_result(plan: RunPlan, reason: str) -> RunResult:
    """The result of a run that failed with `reason` (recorded with it)."""
    return RunResult(plan.run_id, "failed", failed_rows(plan, reason), reason.splitlines()[0][:200] if reason else "",
                     reason=reason)


def compute_run(plan: RunPlan, workdir: Path, backend: Backend | None = None) -> RunResult:
    """Run one plan on its backend (`backend`, default the registry's for
    plan.backend) in `workdir` and summarise it. Any failure of the run
    becomes a failed result with its reason; Ctrl-C and SystemExit pass
    through."""
    backend = backend or get_backend(plan.backend)
    t0 = time.monotonic()
    try:
        outcome = backend.run(plan, workdir)
        rows = summarize(plan, outcome)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001 - any failure is recorded with its reason
        return failed_result(plan, f"{type(e).__name__}: {e}")
    return outcome_result(plan, outcome, time.monotonic() - t0, rows)


def outcome_result(plan: RunPlan, outcome: RunOutcome, wall_s: float,
                   rows: list[dict[str, Any]] | None = None) -> RunResult:
    """The result of a finished run from its outcome and summary rows
    (computed here when not given). Runs made elsewhere and imported
    (fatpipe.importers) become results through here too."""
    rows = summarize(plan, outcome) if rows is None else rows
    base = identity_columns(plan)
    path_cols = {**path_columns(outcome.path), **cpu_columns(outcome.cpu), "wall_s": wall_s}
    full_rows = [{**base, "status": "ok", "reason": "", **row, **path_cols} for row in rows]
    series = series_with_goodput(outcome)
    n = len(series["t_s"])
    series = {"run_id": [plan.run_id] * n, "backend": [plan.backend] * n, **series}
    rpcs = {"run_id": [plan.run_id] * len(outcome.rpcs["start_s"]), **outcome.rpcs}
    transfers = {"run_id": [plan.run_id] * len(outcome.transfers["start_s"]), **outcome.transfers}
    path_series = {"run_id": [plan.run_id] * len(outcome.path_series["t_s"]), **outcome.path_series}
    events = {"run_id": [plan.run_id] * len(outcome.events["t_s"]), **outcome.events}
    goodputs = " ".join(
        f"{r['cc'] or r['kind']}x{r['streams']}={(r['goodput_bps'] or 0) / 1e6:.1f}Mbit/s" for r in rows
    )
    return RunResult(plan.run_id, "ok", full_rows, goodputs, series=series, rpcs=rpcs, transfers=transfers,
                     path_series=path_series, events=events, facts=outcome.facts)


def record_run(store: StudyStore, result: RunResult) -> None:
    """Write a computed run through the store: its scratch files (if it was
    computed elsewhere), its tables, then its record (which marks it done)."""
    for name, data in sorted(result.work_files.items()):
        store.write_work_file(result.run_id, name, data)
    if result.status == "ok":
        store.write_run(result.run_id, "ok", result.rows, result.series, result.rpcs,
                        path_series=result.path_series, facts=result.facts, events=result.events,
                        transfers=result.transfers)
    else:
        store.write_run(result.run_id, result.status, result.rows, reason=result.reason)


def read_work_files(workdir: Path) -> dict[str, bytes]:
    """Every regular file under `workdir` (relative path -> bytes), symlinks
    not followed: what a run computed away from the study left behind."""
    out: dict[str, bytes] = {}
    for p in sorted(workdir.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[p.relative_to(workdir).as_posix()] = p.read_bytes()
    return out
