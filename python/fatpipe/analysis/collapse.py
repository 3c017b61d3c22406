"""Throughput collapse: in a run's time series, and along a loss sweep.

Rules
-----
*Collapse in a time series* (:func:`collapse_intervals`): a sample is *low*
when its goodput is below ``fraction`` (10 %) of the median goodput of the
samples given (the run's measured part, after warm-up). A sample at t_i
covers (t_{i−1}, t_i], so a run of consecutive low samples i..j spans
t_{i−1} .. t_j. Such a span counts as a collapse when it lasts at least
``min_duration_s`` (1 s). A run whose median is 0 has no reference and no
collapse.

*Collapse point of a loss (or corruption) sweep* (:func:`collapse_points`):
a *configuration* is every grid key except the swept axis. Its reference is
the mean goodput at the axis' smallest value (which may be 0). The collapse
point is the smallest axis value above it whose mean goodput is below
``fraction`` (10 %) of that reference. A configuration that never falls so
low has none (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

COLLAPSE_FRACTION = 0.10
MIN_COLLAPSE_S = 1.0
LOSS_AXES = ("path.loss", "path.corruption")


def collapse_intervals(t_s: Sequence[float], goodput_bps: Sequence[float],
                       fraction: float = COLLAPSE_FRACTION,
                       min_duration_s: float = MIN_COLLAPSE_S,
                       median_bps: float | None = None) -> list[tuple[float, float]]:
    """(start_s, end_s) of every collapse in one goodput series (see the rules)."""
    t = np.asarray(t_s, dtype=float)
    g = np.asarray(goodput_bps, dtype=float)
    order = np.argsort(t, kind="stable")
    t, g = t[order], g[order]
    if t.size < 2:
        return []
    median = float(np.median(g)) if median_bps is None else median_bps
    if not median > 0:
        return []
    low = g < fraction * median
    spans = []
    i = 0
    while i < t.size:
        if not low[i]:
            i += 1
            continue
        j = i
        while j + 1 < t.size and low[j + 1]:
            j += 1
        start = t[i - 1] if i > 0 else t[0] - (t[1] - t[0])
        if t[j] - start >= min_duration_s - 1e-9:
            spans.append((float(start), float(t[j])))
        i = j + 1
    return spans


def collapse_summary(t_s, goodput_bps, **kw) -> dict[str, float]:
    """``collapses`` (count) and ``collapsed_s`` (total time) of one series."""
    spans = collapse_intervals(t_s, goodput_bps, **kw)
    return {"collapses": len(spans), "collapsed_s": float(sum(b - a for a, b in spans))}


def group_series(series: pd.DataFrame) -> pd.DataFrame:
    """Goodput of each flow group (sum over its streams) per sample time.

    Sample times of the streams are matched to the millisecond.
    """
    s = series.assign(t_key=series["t_s"].round(3))
    return (s.groupby(["run_id", "flow_group", "t_key"], sort=True)["goodput_bps"].sum()
            .reset_index().rename(columns={"t_key": "t_s"}))


def run_collapses(series: pd.DataFrame, warmup_s: float | dict[str, float] = 0.0,
                  fraction: float = COLLAPSE_FRACTION,
                  min_duration_s: float = MIN_COLLAPSE_S) -> pd.DataFrame:
    """Collapses of every run × flow group's total goodput after warm-up.

    `warmup_s` is one value or a mapping run_id → warm-up. Returns run_id,
    flow_group, collapses, collapsed_s.
    """
    cols = ["run_id", "flow_group", "collapses", "collapsed_s"]
    if series.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for (run_id, group), g in group_series(series).groupby(["run_id", "flow_group"], sort=True):
        w = warmup_s.get(run_id, 0.0) if isinstance(warmup_s, dict) else warmup_s
        g = g[g["t_s"] > w + 1e-9]
        s = collapse_summary(g["t_s"], g["goodput_bps"], fraction=fraction,
                             min_duration_s=min_duration_s)
        rows.append({"run_id": run_id, "flow_group": group, **s})
    return pd.DataFrame(rows, columns=cols)


def loss_axes(runs_or_points: pd.DataFrame) -> list[str]:
    """The loss-like axes swept with at least two values."""
    return [a for a in LOSS_AXES
            if a in runs_or_points.columns and runs_or_points[a].nunique(dropna=True) >= 2]


def collapse_points(points: pd.DataFrame, axis: str = "path.loss",
                    fraction: float = COLLAPSE_FRACTION) -> pd.DataFrame:
    """Per configuration: the reference goodput and the collapse point along
    `axis` (see the rules). `points` is a grid summary (``mean`` per point).

    Returns the configuration keys, ``reference_at``, ``reference_bps``,
    ``collapse_at`` (NaN if none), ``goodput_at_collapse_bps`` and
    ``last_measured`` (the largest axis value measured).
    """
    stat = {"n", "mean", "sd", "ci_low", "ci_high", "failed", "flags"}
    cond = [c for c in points.columns if c not in stat and c != axis]
    if axis == "path.loss" and "loss" in cond:
        cond.remove("loss")
    if axis == "path.corruption" and "corruption" in cond:
        cond.remove("corruption")
    out_cols = [*cond, "reference_at", "reference_bps", "collapse_at",
                "goodput_at_collapse_bps", "last_measured"]
    rows = []
    if axis not in points.columns:
        return pd.DataFrame(columns=out_cols)
    for key, g in points.dropna(subset=["mean"]).groupby(cond, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        g = g.sort_values(axis)
        ref_at, ref = float(g[axis].iloc[0]), float(g["mean"].iloc[0])
        at, val = math.nan, math.nan
        if ref > 0:
            below = g[(g[axis] > ref_at) & (g["mean"] < fraction * ref)]
            if not below.empty:
                at, val = float(below[axis].iloc[0]), float(below["mean"].iloc[0])
        rows.append({**dict(zip(cond, key, strict=True)), "reference_at": ref_at, "reference_bps": ref,
                     "collapse_at": at, "goodput_at_collapse_bps": val,
                     "last_measured": float(g[axis].iloc[-1])})
    return pd.DataFrame(rows, columns=out_cols)
