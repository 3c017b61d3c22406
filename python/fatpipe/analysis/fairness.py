"""Sharing a bottleneck: Jain's index and each flow group's share.

Rules
-----
* A *flow* is a flow group (one sender's transfer, possibly several
  streams); its goodput is the runs table's ``goodput_bps`` (after warm-up).
* Jain's fairness index of x_1..x_n is (Σx)² / (n·Σx²): 1 when all are
  equal, 1/n when one flow takes everything. All-zero goodput gives NaN.
* A flow's share is its goodput over the sum of all flows' goodput in the
  same run.
* Jain's index is taken over the bulk flow groups when a run has at least
  two (RPC flows are not meant to take an equal share); otherwise over all.
* Only runs whose flow groups all finished ok with a goodput count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from .stats import mean_ci, swept_columns


def jain_index(values: Iterable[float]) -> float:
    """Jain's fairness index of non-negative allocations."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return math.nan
    sq = float((x * x).sum())
    if sq == 0:
        return math.nan
    return float(x.sum() ** 2 / (x.size * sq))


def run_fairness(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per run: (jain, shares).

    ``jain``: run_id, backend, swept keys, flows, total_bps, jain.
    ``shares``: run_id, backend, swept keys, flow_group, cc, cwnd_clamp
    (None if unclamped), streams, kind, goodput_bps, share.
    """
    swept = swept_columns(runs)
    ident = [c for c in ["run_id", "backend", *swept] if c in runs.columns]
    j_rows, s_rows = [], []
    for _run_id, g in runs.groupby("run_id", sort=True):
        if (g["status"] != "ok").any() or g["goodput_bps"].isna().any() or len(g) < 2:
            continue
        g = g.sort_values("flow_group")
        total = float(g["goodput_bps"].sum())
        first = g.iloc[0]
        base = {c: first[c] for c in ident}
        bulk = g[g["kind"] != "rpc"] if "kind" in g.columns else g
        pool = bulk if len(bulk) >= 2 else g
        j_rows.append({**base, "flows": len(pool), "total_bps": total,
                       "jain": jain_index(pool["goodput_bps"])})
        for _, r in g.iterrows():
            s_rows.append({**base, "flow_group": r["flow_group"], "cc": r["cc"],
                           "cwnd_clamp": r.get("cwnd_clamp"),
                           "streams": r["streams"], "kind": r.get("kind"),
                           "goodput_bps": r["goodput_bps"],
                           "share": r["goodput_bps"] / total if total > 0 else math.nan})
    jain = pd.DataFrame(j_rows, columns=[*ident, "flows", "total_bps", "jain"])
    shares = pd.DataFrame(s_rows, columns=[*ident, "flow_group", "cc", "cwnd_clamp", "streams", "kind",
                                           "goodput_bps", "share"])
    return jain, shares


def fairness_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per sweep point and flow group: mean share and its 95 % CI, mean
    goodput, and the point's mean Jain index (repeated on each group's row)."""
    jain, shares = run_fairness(runs)
    if shares.empty:
        return pd.DataFrame()
    point = [c for c in ["backend", *swept_columns(runs)] if c in shares.columns]
    rows = []
    for key, g in shares.groupby([*point, "flow_group"], dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        k = dict(zip([*point, "flow_group"], key, strict=True))
        s = mean_ci(g["share"])
        jmask = np.ones(len(jain), dtype=bool)
        for c in point:
            jmask &= (jain[c] == k[c]).to_numpy() | (jain[c].isna() & pd.isna(k[c])).to_numpy()
        rows.append({**k, "cc": g["cc"].iloc[0], "cwnd_clamp": g["cwnd_clamp"].iloc[0],
                     "streams": g["streams"].iloc[0],
                     "kind": g["kind"].iloc[0], "n": s["n"],
                     "goodput_bps": g["goodput_bps"].mean(),
                     "share": s["mean"], "share_ci_low": s["ci_low"], "share_ci_high": s["ci_high"],
                     "jain": float(jain.loc[jmask, "jain"].mean())})
    return pd.DataFrame(rows)
