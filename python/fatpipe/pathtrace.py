"""``path.trace``: the bottleneck's service from a Mahimahi delivery trace
(docs/path-dynamics.md, "Traces").

A trace file has one line per delivery opportunity: the millisecond, from
the trace's start, at which one 1504-byte opportunity occurs (Mahimahi's
``LinkQueue::PACKET_SIZE``; its traces' README says "one 1500-byte
packet"). Several lines may repeat a millisecond; timestamps never
decrease; the trace repeats with its last timestamp as the period.

The spec writes ``trace = "traces/foo.trace"`` (relative to the spec file)
or ``trace = {file = "traces/foo.trace", direction = "data"}``. Only the
data direction has a queue to serve, so ``direction`` is ``"data"``. The
trace replaces ``path.rate`` as the bottleneck's service; ``path.rate``
still sets a buffer written in BDPs and the estimates, so give it the
trace's mean rate. The run plan carries the trace itself in run-length
form (backends/base.py Trace), never the file's path: a run may execute on
a machine without the file.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from .backends import base as run_plan
from .units import toml_type

if TYPE_CHECKING:  # spec.py imports this module
    from .spec import Spec

# Largest trace file read (a Mahimahi trace of a 140 s LTE drive is ~3 MB).
MAX_TRACE_BYTES = 64 << 20
# Largest period accepted: 1 day, far beyond any run.
MAX_PERIOD_MS = 86_400_000
OPPORTUNITY_BYTES = 1504


class TraceSpec(BaseModel):
    """path.trace: the file and the direction it serves."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    file: str
    direction: Literal["data"] = "data"

    @model_validator(mode="before")
    @classmethod
    def _file_alone(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"file": value}
        if not isinstance(value, dict):
            raise ValueError(f"got {toml_type(value)}; write the trace file's name ('traces/lte.trace') or "
                             "{file = '...', direction = 'data'}")
        return value

    @model_validator(mode="after")
    def _readable(self) -> TraceSpec:
        read_trace(self.file)
        return self

    def plan(self) -> run_plan.Trace:
        """The run plan's Trace (the file read once per version of it)."""
        return read_trace(self.file)

    def mean_rate_bps(self) -> float:
        """The trace's mean service in bit/s of IP packets."""
        t = read_trace(self.file)
        return sum(t.counts) * OPPORTUNITY_BYTES * 8 / (sum(t.ms_gaps) / 1000)


def read_trace(file: str) -> run_plan.Trace:
    """The run-length form of the trace in `file`; a ValueError says what
    is wrong (naming the line), as Mahimahi's loader refuses it."""
    try:
        st = os.stat(file)
    except OSError as e:
        raise ValueError(f"cannot read trace file {file!r}: {e.strerror or e}") from None
    if st.st_size > MAX_TRACE_BYTES:
        raise ValueError(f"trace file {file!r} is larger than {MAX_TRACE_BYTES} bytes")
    return _read(str(Path(file).resolve()), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _read(file: str, _mtime_ns: int, _size: int) -> run_plan.Trace:
    gaps: list[int] = []
    counts: list[int] = []
    last = 0
    with open(file, encoding="ascii", errors="replace") as f:
        for n, line in enumerate(f, start=1):
            text = line.strip()
            if not text.isdigit():
                raise ValueError(f"trace file {file!r} line {n}: {text[:20]!r} is not a whole number of "
                                 "milliseconds (one delivery opportunity per line)")
            ms = int(text)
            if ms < last:
                raise ValueError(f"trace file {file!r} line {n}: {ms} ms is before the line above ({last} ms); "
                                 "timestamps must not decrease")
            if ms > MAX_PERIOD_MS:
                raise ValueError(f"trace file {file!r} line {n}: {ms} ms is beyond {MAX_PERIOD_MS} ms (1 day)")
            if counts and ms == last:
                counts[-1] += 1
            else:
                gaps.append(ms - last)
                counts.append(1)
            last = ms
    if not counts:
        raise ValueError(f"trace file {file!r} has no delivery opportunity")
    if last == 0:
        raise ValueError(f"trace file {file!r} lasts no time: its last timestamp (the period) must be above 0 ms")
    return run_plan.Trace(ms_gaps=tuple(gaps), counts=tuple(counts))


def relative_to(raw: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """`raw` (a study's TOML table) with a relative path.trace file taken
    from `base_dir`, the directory of the spec file."""
    path = raw.get("path")
    trace = path.get("trace") if isinstance(path, dict) else None
    file = trace.get("file") if isinstance(trace, dict) else trace
    if not isinstance(file, str) or Path(file).expanduser().is_absolute():
        return raw
    resolved = str((base_dir / Path(file).expanduser()).resolve())
    new_trace: Any = {**trace, "file": resolved} if isinstance(trace, dict) else resolved
    return {**raw, "path": {**path, "trace": new_trace}}


def problems(spec: Spec) -> list[tuple[str, str]]:
    """A trace replaces the rate: no schedule step may set one."""
    if spec.path.trace is None:
        return []
    return [(f"path.schedule.{i}.rate", "path.trace replaces the bottleneck's rate: a step cannot set rate with it")
            for i, step in enumerate(spec.path.schedule) if step.rate is not None]
