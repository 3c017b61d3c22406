"""Improvement factor from parallel streams (study A's table).

Rule
----
For a flow group whose stream count varies, a *condition* is one combination
of every other factor of the grid point (CCA, MSS, loss, corruption, the other
groups' settings, backend, …). At each condition that has a 1-stream point::

    factor(n) = mean goodput with n streams / mean goodput with 1 stream

The summary per CCA (the talk's table: CCA | average | max | min) uses, per
condition, the largest stream count measured there (``n = "max"``, the
default), i.e. "what parallel streams bought at this condition". Pass an
integer `n` to compare that stream count instead, or use
:func:`improvement_by_streams` for the mean factor per CCA and n.
"""

from __future__ import annotations

import math

import pandas as pd

from .stats import grid_summary, point_columns


def stream_factors(points: pd.DataFrame) -> pd.DataFrame:
    """Every factor(n) for n > 1 at every condition.

    `points` is a :func:`~fatpipe.analysis.stats.grid_summary` table (columns
    ``mean`` and the grid keys). Returns the condition keys plus ``streams``,
    ``goodput_1_bps``, ``goodput_n_bps``, ``factor`` and ``largest`` (n is the
    largest stream count measured at that condition).
    """
    keys = [c for c in points.columns
            if c not in ("n", "mean", "sd", "ci_low", "ci_high", "failed", "flags")]
    out = []
    if "streams" not in keys or points.empty:
        return pd.DataFrame(columns=[*keys, "goodput_1_bps", "goodput_n_bps", "factor", "largest"])
    for group, gpts in points.groupby("flow_group", dropna=False):
        own = {"streams", f"flows.{int(group)}.streams"}
        cond = [k for k in keys if k not in own]
        for _, c in gpts.groupby(cond, dropna=False, sort=True):
            c = c.dropna(subset=["mean"])
            one = c[c["streams"] == 1]
            if one.empty:
                continue
            base = float(one["mean"].iloc[0])
            many = c[c["streams"] > 1]
            largest = many["streams"].max() if not many.empty else None
            for _, row in many.iterrows():
                factor = row["mean"] / base if base > 0 else math.nan
                out.append({**{k: row[k] for k in keys}, "goodput_1_bps": base,
                            "goodput_n_bps": float(row["mean"]), "factor": factor,
                            "largest": bool(row["streams"] == largest)})
    return pd.DataFrame(out, columns=[*keys, "goodput_1_bps", "goodput_n_bps", "factor", "largest"])


def improvement_factors(runs_or_points: pd.DataFrame, n: int | str = "max") -> pd.DataFrame:
    """The talk's table: one row per CCA (and flow group when several groups'
    streams vary) with ``avg``, ``max``, ``min`` of the factor over
    conditions, ``conditions`` (how many) and ``streams`` (the n compared,
    as text, e.g. "8" or "2–8").

    Accepts a runs table (summarised first) or a grid summary.
    """
    points = runs_or_points
    if "mean" not in points.columns:
        points = grid_summary(runs_or_points, keys=point_columns(runs_or_points))
    f = stream_factors(points).dropna(subset=["factor"])
    cols = ["flow_group", "cc", "avg", "max", "min", "conditions", "streams"]
    if f.empty:
        return pd.DataFrame(columns=cols)
    if n == "max":
        f = f[f["largest"].astype(bool)]
    else:
        f = f[f["streams"] == int(n)]
    rows = []
    for (group, cc), g in f.groupby(["flow_group", "cc"], sort=True):
        lo, hi = int(g["streams"].min()), int(g["streams"].max())
        rows.append({"flow_group": group, "cc": cc, "avg": g["factor"].mean(),
                     "max": g["factor"].max(), "min": g["factor"].min(),
                     "conditions": len(g), "streams": str(lo) if lo == hi else f"{lo}–{hi}"})
    return pd.DataFrame(rows, columns=cols)


def improvement_by_streams(runs_or_points: pd.DataFrame) -> pd.DataFrame:
    """Mean factor over conditions per CCA (rows) and stream count (columns)."""
    points = runs_or_points
    if "mean" not in points.columns:
        points = grid_summary(runs_or_points, keys=point_columns(runs_or_points))
    f = stream_factors(points).dropna(subset=["factor"])
    if f.empty:
        return pd.DataFrame()
    return f.pivot_table(index="cc", columns="streams", values="factor", aggfunc="mean")
