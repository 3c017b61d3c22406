"""fatpipe's number beside each reference value of a study
(fatpipe.references): the rows a reference's ``where`` selects, reduced as
its metric says.

Rules
-----
* ``where`` selects rows of the runs table whose columns equal its values
  (numbers within a relative 1e-9); a column the table lacks selects nothing.
* goodput and share: the selected rows must be one grid point and one flow
  group (:func:`~fatpipe.analysis.stats.point_columns`); fatpipe's number is
  the mean over its ok repetitions with the Student-t 95 % CI.
* improvement_factor: the improvement factors
  (:func:`~fatpipe.analysis.streams.improvement_factors`) of the selected
  rows must be one CCA of one flow group; fatpipe's number is their `stat`.
* collapse_fraction: the fraction of the selected ok runs in which at least
  one selected flow group collapsed
  (:func:`~fatpipe.analysis.collapse.run_collapses`); n counts the runs.
* ratio = fatpipe / reference; NaN when the reference is 0.
* A reference that selects nothing, or more than its metric allows, keeps
  its row with the reason in ``problem`` and no fatpipe number.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..references import ReferenceTable
from .fairness import run_fairness
from .stats import grid_summary, point_columns
from .streams import improvement_factors

COLUMNS = ["table", "metric", "where", "reference", "note", "fatpipe", "ci_low", "ci_high", "n",
           "ratio", "problem", "source"]


def where_label(where: dict) -> str:
    """`where` as text: ``flows.0.cc=bbr, path.loss=0.001``."""
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in where.items())


def select(table: pd.DataFrame, where: dict) -> tuple[pd.DataFrame, str]:
    """Rows of `table` matching `where`, and "" or why none can match."""
    mask = np.ones(len(table), dtype=bool)
    for key, value in where.items():
        if key not in table.columns:
            return table.iloc[0:0], f"the results have no column {key}"
        col = table[key]
        if isinstance(value, str):
            mask &= (col.astype(object) == value).to_numpy()
        else:
            num = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
            mask &= np.isclose(num, float(value), rtol=1e-9, atol=0.0)
    return table[mask], ""


def _one_point(rows: pd.DataFrame, metric: str) -> tuple[dict | None, str]:
    """The mean and CI of `metric` over `rows` when they are one grid point."""
    keys = point_columns(rows)
    pts = grid_summary(rows, metric, keys)
    if len(pts) != 1:
        differ = [k for k in keys if pts[k].nunique(dropna=False) > 1]
        return None, (f"selects {len(pts)} grid points (they differ in {', '.join(differ)}); "
                      "name those in where")
    p = pts.iloc[0]
    if not p["n"]:
        return None, "no ok run at that grid point"
    return {"fatpipe": p["mean"], "ci_low": p["ci_low"], "ci_high": p["ci_high"], "n": int(p["n"])}, ""


def _goodput(runs, _collapses, where, _stat):
    rows, why = select(runs, where)
    return (None, why or "selects no run") if rows.empty else _one_point(rows, "goodput_bps")


def _share(runs, _collapses, where, _stat):
    shares = run_fairness(runs)[1]
    info = [c for c in point_columns(runs) if c in runs.columns and c not in shares.columns]
    shares = shares.merge(runs[["run_id", "flow_group", *info]], on=["run_id", "flow_group"], how="left")
    rows, why = select(shares.assign(status="ok"), where)
    return (None, why or "selects no run with two or more flow groups") if rows.empty \
        else _one_point(rows, "share")


def _improvement(runs, _collapses, where, stat):
    rows, why = select(runs, where)
    if rows.empty:
        return None, why or "selects no run"
    f = improvement_factors(rows)
    if len(f) != 1:
        return None, (f"gives {len(f)} improvement factors (CCAs {', '.join(map(str, f['cc']))}); "
                      "name one cc (and flow_group) in where" if len(f) else
                      "gives no improvement factor (needs 1 and more streams at the same conditions)")
    r = f.iloc[0]
    return {"fatpipe": float(r[stat]), "ci_low": math.nan, "ci_high": math.nan,
            "n": int(r["conditions"])}, ""


def _collapse_fraction(runs, collapses, where, _stat):
    rows, why = select(runs[runs["status"] == "ok"], where)
    if rows.empty:
        return None, why or "selects no ok run"
    c = rows[["run_id", "flow_group"]].merge(collapses, on=["run_id", "flow_group"], how="left")
    if c["collapses"].isna().all():
        return None, "the selected runs have no time series to find collapses in"
    hit = (c["collapses"].fillna(0) > 0).groupby(c["run_id"]).any()
    return {"fatpipe": float(hit.mean()), "ci_low": math.nan, "ci_high": math.nan, "n": len(hit)}, ""


REDUCERS = {"goodput": _goodput, "share": _share, "improvement_factor": _improvement,
            "collapse_fraction": _collapse_fraction}


def compare(runs: pd.DataFrame, tables: list[ReferenceTable],
            collapses: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per reference value (COLUMNS): the reference in SI units,
    fatpipe's number, its CI, n and the ratio fatpipe / reference.
    `collapses` is run_collapses' table (needed for collapse_fraction)."""
    if collapses is None:
        collapses = pd.DataFrame(columns=["run_id", "flow_group", "collapses", "collapsed_s"])
    out = []
    for table in tables:
        for v, ref in zip(table.values, table.si_values(), strict=True):
            got, problem = REDUCERS[table.metric](runs, collapses, v.where, table.stat)
            got = got or {"fatpipe": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0}
            ratio = got["fatpipe"] / ref if ref > 0 else math.nan
            out.append({"table": table.title, "metric": table.metric, "where": where_label(v.where),
                        "reference": ref, "note": v.note, **got, "ratio": ratio,
                        "problem": problem, "source": table.source})
    return pd.DataFrame(out, columns=COLUMNS)
