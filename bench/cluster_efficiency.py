#!/usr/bin/env python3
"""Parallel efficiency of `--cluster local:N` against the serial path, and
the per-run overhead the cluster engine adds.

    python3 bench/cluster_efficiency.py [--study studies/crichigno-mss-streams.toml]
        [--workers 2] [--repetitions N] [--overhead-runs 128] [--skip-efficiency]

1. Efficiency: the whole study (default study A, 640 runs of 70 s) once
   serially (`jobs=1`, this process) and once on a local Dask cluster of
   --workers processes. Efficiency = serial time / (workers x cluster time),
   for the runs alone (from the first submitted run to the last recorded)
   and including the cluster's start and shutdown. --repetitions N keeps
   the whole grid but runs N repetitions of each point (the study's own
   count by default).
2. Overhead: the same grid with 0.2 s runs (--overhead-runs of them, so the
   simulation is small beside the engine's costs), serially and on a
   one-worker cluster: (cluster time - serial time) / runs is what the
   engine adds per run (submission, scheduling, moving the tables, the
   worker's scratch directory), the store's writes being the same on both.

Goals (issue P2.1): efficiency >= 90 % with 2 workers on a 2-core machine,
overhead <= 5 ms per run. Prints figures and asserts nothing; on a shared
machine the figures include whatever else runs.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from fatpipe.study import run_study  # noqa: E402 - after the path above


class Timed:
    """An emit that timestamps the line that starts the runs."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.runs_start = None

    def __call__(self, line: str) -> None:
        if self.runs_start is None and line.startswith("fatpipe ") and " runs -> " in line:
            self.runs_start = time.monotonic()


def timed_study(study: Path, out: Path, **kw) -> tuple[float, float, int]:
    """(whole wall time, runs-only wall time, runs) of one run_study."""
    emit = Timed()
    result = run_study(study, out=out, emit=emit, force=True, **kw)
    end = time.monotonic()
    return end - emit.t0, end - (emit.runs_start or emit.t0), result.progress.done


def variant(study: Path, tmp: Path, duration: str, repetitions: int | None) -> Path:
    text = study.read_text()
    text = re.sub(r'^duration = ".*"', f'duration = "{duration}"', text, count=1, flags=re.M)
    text = re.sub(r'^warmup = ".*"', 'warmup = "0s"', text, count=1, flags=re.M)
    if repetitions is not None:
        text = re.sub(r"^repetitions = \d+", f"repetitions = {repetitions}", text, count=1, flags=re.M)
    path = tmp / f"{study.stem}-{duration}.toml"
    path.write_text(text)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(ROOT / "studies" / "crichigno-mss-streams.toml"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--overhead-runs", type=int, default=128,
                    help="runs of the overhead grid (rounded to whole repetitions of its 64 points)")
    ap.add_argument("--repetitions", type=int, help="repetitions per grid point (default: the study's)")
    ap.add_argument("--skip-efficiency", action="store_true", help="only the per-run overhead")
    args = ap.parse_args()
    study = Path(args.study)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="fatpipe-cluster-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if not args.skip_efficiency:
            if args.repetitions:
                text = re.sub(r"^repetitions = \d+", f"repetitions = {args.repetitions}", study.read_text(),
                              count=1, flags=re.M)
                study = tmp / study.name
                study.write_text(text)
            s_all, s_runs, n = timed_study(study, tmp / "serial", jobs=1)
            c_all, c_runs, n_c = timed_study(study, tmp / "cluster", cluster=f"local:{args.workers}")
            print(f"study {study.name}: {n} runs serially in {s_runs:.1f} s (whole command {s_all:.1f} s); "
                  f"{n_c} runs on local:{args.workers} in {c_runs:.1f} s (with cluster start/stop {c_all:.1f} s)")
            print(f"parallel efficiency, runs only: {s_runs / (args.workers * c_runs):.1%}; "
                  f"whole command: {s_all / (args.workers * c_all):.1%}  (goal >= 90 %)")
        points = 64  # study A's grid; other studies: runs are rounded to whole repetitions
        small = variant(study, tmp, "0.2s", max(1, args.overhead_runs // points))
        _s_all, s_runs, n = timed_study(small, tmp / "small-serial", jobs=1)
        _c_all, c_runs, _ = timed_study(small, tmp / "small-cluster", cluster="local:1")
        per_run_ms = (c_runs - s_runs) / n * 1e3
        print(f"overhead: {n} runs of 0.2 s serially in {s_runs:.2f} s, on local:1 in {c_runs:.2f} s: "
              f"{per_run_ms:.1f} ms per run added by the engine  (goal <= 5 ms)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
