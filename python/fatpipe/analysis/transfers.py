"""Completion times of transfer flows' data sets over repetitions
(docs/transfers.md): how long a data set takes and how predictable that is.

Each completed data set (a row of the transfers table) is one sample of
its grid point and flow group; the repetitions pool. The coefficient of
variation (sample standard deviation / mean) is the predictability the
HP-WAN evaluations report; a data set that did not complete within its run
is counted (``incomplete``) but has no completion time to pool.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .stats import mean_ci

# Percentiles of the completion time in the summary.
PERCENTILES = (50, 95, 99)


def transfer_summary(runs: pd.DataFrame, transfers: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """One row per grid point (`keys`) and transfer flow group: data sets
    started and completed over the repetitions, completion time mean (with
    its Student-t 95 % interval), percentiles, largest, sample standard
    deviation and coefficient of variation, and the mean of size /
    completion time."""
    cols = [*keys, "flow_group", "cc", "streams", "size_bytes", "runs", "started", "completed", "incomplete",
            "fct_mean_s", "fct_ci_low_s", "fct_ci_high_s", *(f"fct_p{q}_s" for q in PERCENTILES), "fct_max_s",
            "fct_sd_s", "fct_cv", "goodput_bps"]
    if transfers.empty or "transfer_count" not in runs.columns:
        return pd.DataFrame(columns=cols)
    groups = runs[(runs["kind"] == "transfer") & (runs["status"] == "ok")]
    joined = transfers.merge(groups[["run_id", "flow_group", *keys]], on=["run_id", "flow_group"])
    rows = []
    for key, grp in groups.groupby([*keys, "flow_group"], dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        point = dict(zip([*keys, "flow_group"], key, strict=True))
        mask = np.ones(len(joined), dtype=bool)
        for k, v in point.items():
            mask &= (joined[k].isna() if pd.isna(v) else joined[k] == v).to_numpy()
        dur = joined.loc[mask, "duration_s"].to_numpy(dtype=float)
        size = joined.loc[mask, "size_bytes"].to_numpy(dtype=float)
        stats = mean_ci(dur.tolist())
        started = int(grp["transfer_count"].sum())
        sd = float(np.std(dur, ddof=1)) if dur.size > 1 else None
        rows.append({
            **point, "cc": grp["cc"].iloc[0], "streams": int(grp["streams"].iloc[0]),
            "size_bytes": grp["transfer_size_bytes"].iloc[0], "runs": len(grp), "started": started,
            "completed": int(dur.size), "incomplete": started - int(dur.size),
            "fct_mean_s": stats["mean"], "fct_ci_low_s": stats["ci_low"], "fct_ci_high_s": stats["ci_high"],
            **{f"fct_p{q}_s": float(np.percentile(dur, q)) if dur.size else None for q in PERCENTILES},
            "fct_max_s": float(dur.max()) if dur.size else None,
            "fct_sd_s": sd, "fct_cv": sd / stats["mean"] if sd is not None and stats["mean"] else None,
            "goodput_bps": float(np.mean(size * 8 / dur)) if dur.size else None,
        })
    return pd.DataFrame(rows, columns=cols)
