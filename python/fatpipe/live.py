"""Live results: a study's events as JSON objects, one per line, while it
runs (``fatpipe run --json-stream``; docs/results.md "Live results").

Events, each an object with ``"event"`` naming its kind:

* ``study_start``: ``study``, ``runs`` (to do), ``schema_version``;
* ``run_start``: ``run_id``, ``backend``, ``rep``, ``seed``, ``swept``;
* ``sample``: one stream's sample: ``run_id``, ``backend``, then the
  series columns (schema.SERIES_COLUMNS) and ``goodput_bps`` (the bytes
  delivered since the stream's previous sample, goodput.py's per-interval
  rule), exactly the row the run stores in ``series.parquet``;
* ``run_end``: ``run_id``, ``status``, ``reason`` and ``groups``: per flow
  group its runs-table row's ``flow_group``, ``kind``, ``cc``, ``streams``,
  ``goodput_bps``, ``retrans_rate``, ``srtt_p50_s`` and ``flags``;
* ``study_end``: ``runs`` done, ``failed``.

A backend that observes its sockets while the run goes (the kernel and
hosts backends: the engine's samples, read as each interval is written)
sends each sample as it happens through :func:`current`; what a run has
not sent live (the simulator, faster than real time; a run made on a Dask
worker) is sent when the run ends, before its ``run_end``, so every
stored sample is sent once.

The sink is process-wide (:func:`streaming`); a run's stream is the
calling thread's (:func:`run`), which the backend's helpers capture.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .goodput import sample_goodput_bps
from .schema import SCHEMA_VERSION, SERIES_COLUMNS

Sink = Callable[[dict[str, Any]], None]

_lock = threading.Lock()
_sink: Sink | None = None
_sinks: list[Sink] = []
_replaying: list[Sink] = []  # the sinks that want a run's samples not sent live, at its end
_local = threading.local()

# The runs-table columns a run_end event carries per flow group.
RUN_END_COLUMNS = ("flow_group", "kind", "cc", "streams", "goodput_bps", "retrans_rate", "srtt_p50_s", "flags")


def json_line(event: Mapping[str, Any]) -> str:
    """One event as a line of JSON (NaN and infinities as null)."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if hasattr(v, "item"):  # numpy scalars
            return clean(v.item())
        return v
    return json.dumps({k: clean(v) for k, v in event.items()}, separators=(",", ":"))


def _fan_out(event: dict[str, Any]) -> None:
    for sink in list(_sinks):
        sink(event)


@contextlib.contextmanager
def streaming(sink: Sink, replay: bool = True) -> Iterator[None]:
    """Send the events of what runs inside to `sink` too (one event at a
    time, to every sink in the order they came). `replay`: it also wants a
    run's samples not sent live, at the run's end (when no sink does, they
    are not built)."""
    global _sink
    _sinks.append(sink)
    if replay:
        _replaying.append(sink)
    _sink = _fan_out
    try:
        yield
    finally:
        _sinks.remove(sink)
        if replay:
            _replaying.remove(sink)
        _sink = _fan_out if _sinks else None


class GoodputLine:
    """The CLI's live progress line (a terminal only): the run being
    sampled, its time and its flows' goodput summed over the last interval,
    rewritten in place as samples arrive; cleared at the run's end."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write
        self.shown = False
        self._at: dict[str, tuple[float, float]] = {}  # run -> (t_s, goodput so far at t_s)

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "sample":
            run_id, t = event["run_id"], event["t_s"]
            last_t, total = self._at.get(run_id, (None, 0.0))
            if last_t is not None and t - last_t > 1e-3:  # a new interval: show the finished one
                self.write(f"\r  {run_id} at {last_t:.1f} s: {total / 1e6:.1f} Mbit/s   ")
                self.shown = True
                total = 0.0
            self._at[run_id] = (t if last_t is None or t - last_t > 1e-3 else last_t,
                                total + (event.get("goodput_bps") or 0.0))
        elif kind == "run_end":
            self._at.pop(event["run_id"], None)
            if self.shown:
                self.write("\r" + " " * 60 + "\r")
                self.shown = False


def emit(event: dict[str, Any]) -> None:
    """Send one event, if a sink listens."""
    sink = _sink
    if sink is not None:
        with _lock:
            sink(event)


class RunStream:
    """One run's samples as they are sent: the per-interval goodput needs
    each stream's previous sample, and a sample is sent once."""

    def __init__(self, run_id: str, backend: str):
        self.run_id, self.backend = run_id, backend
        self._last: dict[tuple[int, int], tuple[float, float]] = {}
        self._sent: set[tuple[int, int, float]] = set()
        self._guard = threading.Lock()

    def samples(self, rows: list[Mapping[str, Any]]) -> None:
        """Send sample rows (SERIES_COLUMNS) not sent before, each stream's
        in time order."""
        with self._guard:
            for row in sorted(rows, key=lambda r: (r["flow_group"], r["stream"], r["t_s"])):
                key = (int(row["flow_group"]), int(row["stream"]), float(row["t_s"]))
                if key in self._sent:
                    continue
                self._sent.add(key)
                stream = key[:2]
                goodput = sample_goodput_bps(self._last.get(stream), key[2], row["delivered_bytes"])
                self._last[stream] = (key[2], row["delivered_bytes"])
                emit({"event": "sample", "run_id": self.run_id, "backend": self.backend,
                      **{c: row.get(c) for c in SERIES_COLUMNS}, "goodput_bps": goodput})

    def series(self, columns: Mapping[str, list]) -> None:
        """Send the rows of a finished run's series not sent live."""
        n = len(columns.get("t_s", ()))
        self.samples([{c: columns[c][i] for c in SERIES_COLUMNS if c in columns} for i in range(n)])


def current() -> RunStream | None:
    """The stream of the run this thread is running (None: nobody listens)."""
    return getattr(_local, "stream", None) if _sink is not None else None


@contextlib.contextmanager
def run(plan: Any) -> Iterator[RunStream | None]:
    """While a run goes on this thread: its run_start, then its stream for
    the backend (:func:`current`); None when nobody listens."""
    if _sink is None:
        yield None
        return
    emit({"event": "run_start", "run_id": plan.run_id, "backend": plan.backend, "rep": plan.rep,
          "seed": plan.seed, "swept": plan.swept})
    _local.stream = RunStream(plan.run_id, plan.backend)
    try:
        yield _local.stream
    finally:
        _local.stream = None


def run_end(stream: RunStream | None, result: Any) -> None:
    """A run has finished: its samples not sent live, then run_end."""
    if stream is None:
        return
    if result.series and _replaying:
        stream.series(result.series)
    groups = [{c: r.get(c) for c in RUN_END_COLUMNS} for r in result.rows]
    emit({"event": "run_end", "run_id": result.run_id, "status": result.status, "reason": result.reason,
          "groups": groups})


def replay(plan: Any, result: Any) -> None:
    """A run made elsewhere (a cluster worker) has arrived: its run_start,
    samples and run_end at once."""
    if _sink is None:
        return
    with run(plan) as stream:
        run_end(stream, result)


def study_start(name: str, runs: int) -> None:
    emit({"event": "study_start", "study": name, "runs": runs, "schema_version": SCHEMA_VERSION})


def study_end(done: int, failed: int) -> None:
    emit({"event": "study_end", "runs": done, "failed": failed})
