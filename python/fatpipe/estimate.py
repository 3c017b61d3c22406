"""What a study will cost, estimated from its plans before anything runs,
and the limits a study must stay within unless forced (``--force``,
``fatpipe.run(..., force=True)``).

The formulas, written down here only (docs/architecture.md points here):

* **packets** of a run = rate_bps × duration_s / (8 × wire_bytes), with
  wire_bytes = mtu_bytes + ETH_HEADER_BYTES (tbf and the simulator's
  bottleneck count the Ethernet header): the data packets of a bottleneck
  kept busy for the whole run, an upper bound for bulk flows. The
  simulator's event count runs at about 1.3–1.5 × this.
* **series rows** of a run = Σ streams × ⌊duration_s / interval_s⌋ (one
  sample per stream per interval).
* **RPC rows** of a run = Σ over RPC flows of the fewer of the arrivals
  (open loop: rate_per_s × streams × duration_s) and the responses the
  bottleneck can carry (rate_bps × duration_s / (8 × response_bytes)).
* **bytes written** = (series rows × SERIES_ROW_BYTES + RPC rows ×
  RPC_ROW_BYTES) × 2: every value counted as 8 uncompressed bytes (Parquet
  with zstd writes less), twice because each run's files stay beside the
  consolidated tables.
* **memory** = the larger of (runs at once × the biggest run's series rows
  × SERIES_COLUMN_COUNT × PY_VALUE_BYTES: a run's series travels as Python
  lists, ~32 bytes per value) and (all series rows × SERIES_ROW_BYTES × 2:
  consolidation concatenates every run's series in Arrow, then writes it).
* **wall time** of a run = the backend's ``estimated_wall_s(plan, packets)``
  where it makes a guess (the sim: packets / its documented packets per
  second), else duration_s (``None``, Backend's default: a backend that runs
  in real time); a backend's runs are divided by the runs it allows at once.

Limits (refused unless forced): a run of more than MAX_SERIES_ROWS_PER_RUN
series rows; bytes written above DISK_HEADROOM of the free space where the
study directory is (or would be) created; memory above MEMORY_HEADROOM of the
memory available (``MemAvailable`` of /proc/meminfo).
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .backends import get_backend
from .backends.base import RunPlan
from .schema import RPC_COLUMNS, SERIES_COLUMNS
from .wire import ETH_HEADER_BYTES

# One value in the stored tables, uncompressed.
VALUE_BYTES = 8
# One value of a series column while it is a Python list (the int or float
# object and its list slot).
PY_VALUE_BYTES = 32
# Stored series columns: run_id, backend, the series columns, goodput_bps.
SERIES_COLUMN_COUNT = len(SERIES_COLUMNS) + 3
SERIES_ROW_BYTES = SERIES_COLUMN_COUNT * VALUE_BYTES
RPC_ROW_BYTES = (len(RPC_COLUMNS) + 1) * VALUE_BYTES

MAX_SERIES_ROWS_PER_RUN = 10_000_000
DISK_HEADROOM = 0.9
MEMORY_HEADROOM = 0.8


@dataclass(frozen=True)
class RunCost:
    run_id: str
    backend: str
    packets: float
    series_rows: int
    rpc_rows: float
    wall_s: float

    @property
    def bytes_written(self) -> float:
        return 2 * (self.series_rows * SERIES_ROW_BYTES + self.rpc_rows * RPC_ROW_BYTES)


# A run on the real path (no path.rate) is estimated as if the path ran at
# this rate: an upper bound on its packets and RPC rows.
UNKNOWN_RATE_BPS = 100e9


def run_cost(plan: RunPlan) -> RunCost:
    """One run's cost by the formulas of the module doc (wall_s as if it ran alone)."""
    rate_bps = plan.rate_bps if plan.rate_bps is not None else UNKNOWN_RATE_BPS
    packets = rate_bps * plan.duration_s / (8 * (plan.mtu_bytes + ETH_HEADER_BYTES))
    intervals = math.floor(plan.duration_s / plan.sample_interval_s) if plan.sample_interval_s > 0 else 0
    # A transfer group opens its streams once per data set.
    series_rows = sum(f.streams * (len(f.transfer.starts_s) if f.transfer else 1) for f in plan.flows) * intervals
    rpc_rows = 0.0
    for f in plan.flows:
        if f.kind != "rpc":
            continue
        carried = rate_bps * plan.duration_s / (8 * max(1, f.response_bytes or 1))
        arrivals = f.rate_per_s * f.streams * plan.duration_s if f.rate_per_s else math.inf
        rpc_rows += min(carried, arrivals)
    guess_s = get_backend(plan.backend).estimated_wall_s(plan, packets)
    wall_s = plan.duration_s if guess_s is None else guess_s
    return RunCost(plan.run_id, plan.backend, packets, series_rows, rpc_rows, wall_s)


@dataclass(frozen=True)
class StudyCost:
    runs: list[RunCost]
    runs_at_once: dict[str, int]  # backend -> runs it allows at once

    @property
    def packets(self) -> float:
        return sum(r.packets for r in self.runs)

    @property
    def series_rows(self) -> int:
        return sum(r.series_rows for r in self.runs)

    @property
    def bytes_written(self) -> float:
        return sum(r.bytes_written for r in self.runs)

    @property
    def wall_s(self) -> float:
        return sum(r.wall_s / self.runs_at_once.get(r.backend, 1) for r in self.runs)

    @property
    def memory_bytes(self) -> float:
        per_run = max((r.series_rows for r in self.runs), default=0) * SERIES_COLUMN_COUNT * PY_VALUE_BYTES
        at_once = max(self.runs_at_once.values(), default=1)
        return max(at_once * per_run, 2 * self.series_rows * SERIES_ROW_BYTES)

    def lines(self) -> list[str]:
        """The estimate as `fatpipe run` and `fatpipe check` print it."""
        return [f"estimate: {len(self.runs)} runs, {_count(self.packets)} packets on the bottleneck, "
                f"{_count(self.series_rows)} series rows, {_size(self.bytes_written)} written, "
                f"{_size(self.memory_bytes)} memory at peak, wall time {_duration(self.wall_s)}"]


def study_cost(plans: Sequence[RunPlan], jobs: int) -> StudyCost:
    at_once = {name: max(1, get_backend(name).max_parallel_runs(max(1, jobs)))
               for name in sorted({p.backend for p in plans})}
    return StudyCost([run_cost(p) for p in plans], at_once)


def free_disk_bytes(out: Path) -> float:
    """Free bytes on the file system where `out` is or would be created."""
    p = Path(os.path.abspath(out))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return float(shutil.disk_usage(p).free)
    except OSError:
        return math.inf


def available_memory_bytes() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return math.inf


def over_limits(cost: StudyCost, out: Path) -> list[str]:
    """The limits `cost` exceeds, one line each naming the figure and the limit."""
    problems = []
    biggest = max(cost.runs, key=lambda r: r.series_rows, default=None)
    if biggest and biggest.series_rows > MAX_SERIES_ROWS_PER_RUN:
        problems.append(f"run {biggest.run_id} records {_count(biggest.series_rows)} series rows; at most "
                        f"{_count(MAX_SERIES_ROWS_PER_RUN)} per run (fewer streams or a longer study.interval)")
    free = free_disk_bytes(out)
    if cost.bytes_written > DISK_HEADROOM * free:
        problems.append(f"the study writes about {_size(cost.bytes_written)}; {out} has {_size(free)} free")
    memory = available_memory_bytes()
    if cost.memory_bytes > MEMORY_HEADROOM * memory:
        problems.append(f"the study needs about {_size(cost.memory_bytes)} of memory; "
                        f"{_size(memory)} is available")
    return problems


class StudyTooBig(RuntimeError):
    """The estimate exceeds a limit; the message names which (one line each)."""


def _count(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def _size(n: float) -> str:
    if math.isinf(n):
        return "unlimited"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _duration(seconds: float) -> str:
    for unit, scale in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= scale:
            return f"about {seconds / scale:.3g} {unit}"
    return f"about {seconds:.2g} s" if seconds >= 1 else "under 1 s"
