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

Fairness against CUBIC (the Netesto talk's slide of that name)
------------------------------------------------------------
* A run counts when its bulk flow groups (RPC groups left out) are exactly
  one CUBIC group and one or more groups that all run one other CCA X.
* CUBIC's share is its goodput over the bulk groups' total; X's share is
  the rest (all X groups together); the fair share of CUBIC is 1 / (number
  of bulk groups). Jain's index is over the bulk groups.
* Rows pool runs by backend, X, the number of X groups and the swept keys
  other than CCAs (``flows.N.cc``): "1 cubic vs 1 X" with CUBIC as flow 0 or
  as flow 1 is one row.
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


REFERENCE_CC = "cubic"

# Numeric columns of the runs table that order the rows of the table against
# CUBIC (swept values such as "0.5bdp" / "16bdp" do not sort as text).
_ORDER_COLUMNS = ["rate_bps", "rtt_s", "buffer_bytes"]


def against_cubic_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run of one CUBIC bulk group against bulk groups of one other CCA:
    run_id, backend, swept keys, cc (X), cc_flows, flows, cubic_bps, cc_bps,
    cubic_share, cc_share, fair_share, jain (and the path's rate_bps, rtt_s,
    buffer_bytes where the runs table has them)."""
    swept = swept_columns(runs)
    ident = [c for c in ["run_id", "backend", *swept, *_ORDER_COLUMNS] if c in runs.columns]
    cols = [*ident, "cc", "cc_flows", "flows", "cubic_bps", "cc_bps", "cubic_share", "cc_share",
            "fair_share", "jain"]
    rows = []
    for _run_id, g in runs.groupby("run_id", sort=True):
        if (g["status"] != "ok").any() or g["goodput_bps"].isna().any():
            continue
        bulk = g[g["kind"] != "rpc"] if "kind" in g.columns else g
        cc = bulk["cc"].astype(str).str.lower()
        is_ref = (cc == REFERENCE_CC).to_numpy()
        others = set(cc[~is_ref])
        total = float(bulk["goodput_bps"].sum())
        if is_ref.sum() != 1 or len(others) != 1 or total <= 0:
            continue
        ref_bps = float(bulk["goodput_bps"][is_ref].sum())
        first = g.iloc[0]
        rows.append({**{c: first[c] for c in ident}, "cc": others.pop(),
                     "cc_flows": int((~is_ref).sum()), "flows": len(bulk),
                     "cubic_bps": ref_bps, "cc_bps": total - ref_bps,
                     "cubic_share": ref_bps / total, "cc_share": 1.0 - ref_bps / total,
                     "fair_share": 1.0 / len(bulk), "jain": jain_index(bulk["goodput_bps"])})
    return pd.DataFrame(rows, columns=cols)


def against_cubic(runs: pd.DataFrame) -> pd.DataFrame:
    """The table "fairness against CUBIC": one row per backend, X, number of
    X groups and non-CCA sweep point, ordered by X, X groups, rate, RTT and
    buffer: n runs, CUBIC's mean share with its 95 % CI, X's share, CUBIC's
    fair share, mean goodput of CUBIC and of the X groups together, mean
    Jain index."""
    per_run = against_cubic_runs(runs)
    point = [c for c in ["backend", *swept_columns(runs)]
             if c in per_run.columns and not c.endswith(".cc")]
    keys = [*point, "cc", "cc_flows"]
    cols = [*keys, "n", "cubic_share", "cubic_share_ci_low", "cubic_share_ci_high", "cc_share",
            "fair_share", "cubic_bps", "cc_bps", "jain"]
    if per_run.empty:
        return pd.DataFrame(columns=cols)
    order = ["cc", "cc_flows", *[c for c in _ORDER_COLUMNS if c in per_run.columns], *point]
    per_run = per_run.sort_values(order, kind="stable")
    rows = []
    for key, g in per_run.groupby(keys, dropna=False, sort=False):
        s = mean_ci(g["cubic_share"])
        rows.append({**dict(zip(keys, key, strict=True)), "n": s["n"], "cubic_share": s["mean"],
                     "cubic_share_ci_low": s["ci_low"], "cubic_share_ci_high": s["ci_high"],
                     "cc_share": float(g["cc_share"].mean()), "fair_share": float(g["fair_share"].iloc[0]),
                     "cubic_bps": float(g["cubic_bps"].mean()), "cc_bps": float(g["cc_bps"].mean()),
                     "jain": float(g["jain"].mean())})
    return pd.DataFrame(rows, columns=cols)
