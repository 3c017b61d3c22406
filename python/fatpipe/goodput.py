"""Goodput from samples of cumulative delivered bytes: the one definition.

Every backend samples each stream's cumulative payload bytes acknowledged
(``delivered_bytes``, Linux's tcpi_bytes_acked) at times ``t_s``. Two
goodputs come from them, and nothing else in fatpipe computes either:

* over a measurement window (:func:`window_goodput_bps`): the window runs
  from the first sample at or after the warm-up to the last sample, and a
  stream's goodput is the bytes delivered between them × 8 / the time
  between them. A stream with fewer than two samples in it has none. A
  group's goodput (:func:`total_goodput_bps`) is the sum over its streams.
* per sampling interval (:func:`interval_goodput_bps`): the bytes delivered
  since the stream's previous sample × 8 / the time since it; a stream's
  first sample has 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

# Sample times within this of the warm-up's end count as after it.
WARMUP_SLACK_S = 1e-9


def measurement_window(t_s: np.ndarray, warmup_s: float) -> tuple[int, int] | None:
    """Indices (first, last) of one stream's window in its time-sorted
    samples: the first sample at or after the warm-up, and the last."""
    after = np.nonzero(t_s >= warmup_s - WARMUP_SLACK_S)[0]
    if after.size < 2:
        return None
    return int(after[0]), int(after[-1])


def window_goodput_bps(t_s: np.ndarray, delivered_bytes: np.ndarray, window: tuple[int, int]) -> float | None:
    """Goodput of one stream over `window` (from measurement_window)."""
    a, b = window
    dt = float(t_s[b] - t_s[a])
    if dt <= 0:
        return None
    return float(delivered_bytes[b] - delivered_bytes[a]) * 8 / dt


def _streams(series: Mapping[str, Sequence]) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """(t_s, delivered_bytes) of each (flow_group, stream), sorted by time."""
    groups = np.asarray(series["flow_group"], dtype=np.int64)
    streams = np.asarray(series["stream"], dtype=np.int64)
    t = np.asarray(series["t_s"], dtype=float)
    delivered = np.asarray(series["delivered_bytes"], dtype=float)
    for g, s in sorted(set(zip(groups.tolist(), streams.tolist(), strict=True))):
        mask = (groups == g) & (streams == s)
        order = np.argsort(t[mask], kind="stable")
        yield t[mask][order], delivered[mask][order]


def total_goodput_bps(series: Mapping[str, Sequence], warmup_s: float) -> float | None:
    """Sum of every stream's window goodput in `series` (columns flow_group,
    stream, t_s, delivered_bytes, as lists or arrays); None if no stream has
    a window."""
    total, any_stream = 0.0, False
    for t, delivered in _streams(series):
        window = measurement_window(t, warmup_s)
        bps = window_goodput_bps(t, delivered, window) if window else None
        if bps is not None:
            total += bps
            any_stream = True
    return total if any_stream else None


def sample_goodput_bps(previous: tuple[float, float] | None, t_s: float, delivered_bytes: float) -> float:
    """One sample's goodput over its interval: the bytes delivered since
    the stream's `previous` sample (t_s, delivered_bytes) × 8 / the time
    since it; 0 for a stream's first sample (None)."""
    if previous is None or t_s <= previous[0]:
        return 0.0
    return (delivered_bytes - previous[1]) * 8 / (t_s - previous[0])


def interval_goodput_bps(series: Mapping[str, Sequence]) -> list[float]:
    """Goodput of each sample over its interval, in the rows' own order."""
    groups, streams = series["flow_group"], series["stream"]
    t, delivered = series["t_s"], series["delivered_bytes"]
    n = len(t)
    goodput = [0.0] * n
    last: dict[tuple[int, int], tuple[float, float]] = {}
    for i in sorted(range(n), key=lambda i: (groups[i], streams[i], t[i])):
        key = (groups[i], streams[i])
        goodput[i] = sample_goodput_bps(last.get(key), t[i], delivered[i])
        last[key] = (t[i], delivered[i])
    return goodput


def rows_as_columns(rows: Sequence[Mapping]) -> dict[str, list]:
    """Sample rows (dicts) as the columns the functions above take."""
    keys = ("flow_group", "stream", "t_s", "delivered_bytes")
    return {k: [r[k] for r in rows] for k in keys}
