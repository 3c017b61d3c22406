"""From the stages' runs tables to the ranked candidates (pure functions).

Rules
-----
* A candidate's **expected goodput** is the mean of its flow group 0's
  ``goodput_bps`` over every ok run at the request's loss (coarse, refine
  and repetition stages pooled: they share one timing), with the Student-t
  95 % interval of analysis.stats.mean_ci.
* **Retransmission cost** is the mean ``retrans_rate`` of those runs.
* **Window-bound**: the mean ``rwnd_limited_frac`` or
  ``sndbuf_limited_frac`` exceeds summary.HOST_LIMIT_FRACTION and the
  goodput stays below WINDOW_BOUND_SHORTFALL of the link's goodput
  ceiling (the receive window or the send buffer, not the network, held
  it back; a window that only stops a full queue from growing does not).
* **Loss margin**: from the margin stage (the candidate at higher loss
  rates), the loss at which the mean goodput falls to half the expected
  goodput, interpolated linearly in log(loss) between the two measured
  loss rates around the crossing; ``inf`` when it never halved (the
  margin is then "beyond" the largest loss tried). The margin factor is
  that loss over the request's loss.
* **Harm to competing traffic**: from the competing stage, the competing
  flow group's mean share of the total goodput and the mean Jain index
  (analysis.fairness.run_fairness).
* **Ranking**: by expected goodput. The **recommendation** is the simplest
  candidate whose mean is at least the best candidate's lower 95 % bound
  (statistically as good) among those with at least MIN_RECOMMENDED_RUNS
  runs (an interval, so refined, not a lucky coarse run): no sysctl change before one, the smallest MTU
  before jumbo frames, fewer streams, retransmissions below
  LOW_RETRANS before more, then the CCAs in the request's order (cubic,
  Linux's default, first), then the higher mean.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis.fairness import run_fairness
from ..analysis.stats import mean_ci
from ..summary import HOST_LIMIT_FRACTION
from ..wire import goodput_ceiling_bps
from .plan import CANDIDATE_KEYS, Candidate, candidate_of
from .request import AdviseRequest

WINDOW_BOUND_SHORTFALL = 0.95
LOW_RETRANS = 1e-3
MIN_RECOMMENDED_RUNS = 2

RANKED_COLUMNS = ["rank", "cc", "streams", "mtu_bytes", "mss_bytes", "rmem_bytes", "wmem_bytes", "buffers",
                  "n", "goodput_bps", "goodput_ci_low_bps", "goodput_ci_high_bps", "retrans_rate",
                  "window_bound", "loss_halves_at", "loss_margin_factor", "competing_share", "jain",
                  "recommended"]


def _group0(runs: pd.DataFrame) -> pd.DataFrame:
    ok = runs[(runs["status"] == "ok") & (runs["flow_group"] == 0)]
    return ok


def candidate_stats(runs: pd.DataFrame, req: AdviseRequest) -> pd.DataFrame:
    """One row per candidate tried at the request's loss."""
    g0 = _group0(runs)
    rows = []
    for key, grp in g0.groupby(list(CANDIDATE_KEYS), sort=True):
        c = candidate_of(dict(zip(CANDIDATE_KEYS, key, strict=True)))
        s = mean_ci(grp["goodput_bps"].tolist())
        rwnd = float(grp["rwnd_limited_frac"].fillna(0).mean())
        sndbuf = float(grp["sndbuf_limited_frac"].fillna(0).mean())
        rows.append({
            "candidate": c, "cc": c.cc, "streams": c.streams, "mtu_bytes": c.mtu, "mss_bytes": c.mss_bytes,
            "rmem_bytes": c.rmem_bytes, "wmem_bytes": c.wmem_bytes,
            "buffers": "as now" if (c.rmem_bytes, c.wmem_bytes) == (req.rmem, req.wmem) else "raised",
            "n": s["n"], "goodput_bps": s["mean"], "goodput_ci_low_bps": s["ci_low"],
            "goodput_ci_high_bps": s["ci_high"], "retrans_rate": float(grp["retrans_rate"].mean()),
            "rwnd_limited_frac": rwnd, "sndbuf_limited_frac": sndbuf,
            "window_bound": bool(max(rwnd, sndbuf) > HOST_LIMIT_FRACTION and s["mean"] <
                                 WINDOW_BOUND_SHORTFALL * goodput_ceiling_bps(req.rate, c.mss_bytes, c.mtu)),
        })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return table.sort_values(["goodput_bps", "n"], ascending=False, kind="stable").reset_index(drop=True)


def half_width(row) -> float:
    """Half the 95 % interval (inf with one repetition)."""
    lo, hi = row["goodput_ci_low_bps"], row["goodput_ci_high_bps"]
    return math.inf if pd.isna(lo) or pd.isna(hi) else (hi - lo) / 2


def contenders(stats: pd.DataFrame, limit: int) -> list[Candidate]:
    """The best candidate and those whose interval reaches the best's mean
    or whose mean reaches the best's lower bound (at most `limit`)."""
    if stats.empty:
        return []
    best = stats.iloc[0]
    low = best["goodput_ci_low_bps"] if not pd.isna(best["goodput_ci_low_bps"]) else 0.0
    out = []
    for _, r in stats.iterrows():
        reach = r["goodput_ci_high_bps"] if not pd.isna(r["goodput_ci_high_bps"]) else r["goodput_bps"]
        if r["goodput_bps"] >= low or reach >= best["goodput_bps"]:
            out.append(r["candidate"])
    return out[:limit]


def simplicity(row, req: AdviseRequest) -> tuple:
    """Sort key of the recommendation among statistically equal candidates."""
    order = req.ccas.index(row["cc"]) if row["cc"] in req.ccas else len(req.ccas)
    return (row["buffers"] != "as now", row["mtu_bytes"] != min(req.mtu), row["streams"],
            not row["retrans_rate"] < LOW_RETRANS, order, -row["goodput_bps"])


def recommended_index(stats: pd.DataFrame, req: AdviseRequest) -> int:
    best = stats.iloc[0]
    low = best["goodput_ci_low_bps"] if not pd.isna(best["goodput_ci_low_bps"]) else best["goodput_bps"]
    equal = stats[(stats["goodput_bps"] >= low) & (stats["n"] >= MIN_RECOMMENDED_RUNS)]
    if equal.empty:
        return 0
    return int(min(equal.index, key=lambda i: simplicity(stats.loc[i], req)))


def loss_margin(margin_runs: pd.DataFrame, c: Candidate, base_loss: float, base_bps: float) -> float:
    """The loss at which `c`'s mean goodput halves (inf: not within the losses tried)."""
    g0 = _group0(margin_runs)
    mask = np.ones(len(g0), dtype=bool)
    for k, v in zip(CANDIDATE_KEYS, c.values(), strict=True):
        mask &= (g0[k] == v).to_numpy()
    means = g0[mask].groupby("path.loss")["goodput_bps"].mean().sort_index()
    points = [(base_loss, base_bps), *((float(p), float(m)) for p, m in means.items() if p > base_loss)]
    half = base_bps / 2
    for (p0, g_0), (p1, g_1) in zip(points, points[1:], strict=False):
        if g_1 <= half < g_0 or g_1 <= half <= g_0 and g_1 < g_0:
            if p0 <= 0:
                return p1
            frac = (g_0 - half) / (g_0 - g_1)
            return float(math.exp(math.log(p0) + frac * (math.log(p1) - math.log(p0))))
    return math.inf


def competition(comp_runs: pd.DataFrame, c: Candidate) -> tuple[float, float]:
    """(the competing flow's mean share, mean Jain index) against `c`."""
    runs = comp_runs.copy()
    mask = np.ones(len(runs), dtype=bool)
    for k, v in zip(CANDIDATE_KEYS, c.values(), strict=True):
        mask &= (runs[k] == v).to_numpy()
    jain, shares = run_fairness(runs[mask])
    if jain.empty:
        return math.nan, math.nan
    other = shares[shares["flow_group"] == 1]
    return float(other["share"].mean()), float(jain["jain"].mean())


def ranked(runs: pd.DataFrame, req: AdviseRequest, margin_runs: pd.DataFrame | None = None,
           comp_runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The table `fatpipe advise` prints and fatpipe.advise() returns."""
    stats = candidate_stats(runs, req)
    if stats.empty:
        return pd.DataFrame(columns=RANKED_COLUMNS)
    stats["rank"] = range(1, len(stats) + 1)
    stats["loss_halves_at"] = math.nan
    stats["competing_share"] = math.nan
    stats["jain"] = math.nan
    for i, r in stats.iterrows():
        if margin_runs is not None and not margin_runs.empty and _tried(margin_runs, r["candidate"]):
            stats.loc[i, "loss_halves_at"] = loss_margin(margin_runs, r["candidate"], req.loss, r["goodput_bps"])
        if comp_runs is not None and not comp_runs.empty and _tried(comp_runs, r["candidate"]):
            stats.loc[i, ["competing_share", "jain"]] = competition(comp_runs, r["candidate"])
    stats["loss_margin_factor"] = stats["loss_halves_at"] / req.loss if req.loss > 0 else math.nan
    stats["recommended"] = False
    stats.loc[recommended_index(stats, req), "recommended"] = True
    return stats[[*RANKED_COLUMNS, "candidate"]]


def _tried(runs: pd.DataFrame, c: Candidate) -> bool:
    mask = np.ones(len(runs), dtype=bool)
    for k, v in zip(CANDIDATE_KEYS, c.values(), strict=True):
        mask &= (runs[k] == v).to_numpy()
    return bool(mask.any())
