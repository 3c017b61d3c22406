"""From the stages' runs tables to the ranked candidates (pure functions).

Rules
-----
* A candidate's **expected goodput** is the mean of its flow group 0's
  ``goodput_bps`` over every ok run at the request's loss (coarse, refine
  and repetition stages pooled: they share one timing), with the Student-t
  95 % interval of analysis.stats.mean_ci.
* **Retransmission cost** is the mean ``retrans_rate`` of those runs.
* **Stream cap**: what each stream was held to (plan.stream_cap_bps:
  --stream-cap, and with a host model its share of the cores).
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
* **Ranking**: by expected goodput.
* **Recommendation** (choose()), deterministic, in four steps:

  1. *Equal*: the candidates with at least MIN_RECOMMENDED_RUNS runs (an
     interval, so refined, not a lucky coarse run) whose mean reaches the
     lower 95 % bound of the best such candidate (statistically as good)
     or lies within EQUAL_WITHIN of its mean (as good in practice: the
     advice aims at ±3 % intervals, advice.TARGET_HALF_WIDTH, and does not
     resolve smaller differences; tight intervals must not make 0.8 %
     outweigh a 16× larger loss margin).
     If no candidate has that many runs, the best one (stated: one run).
  2. *Robust*: among them, those whose loss margin (the loss at which
     goodput halves; "did not halve" counts as twice the largest loss
     tried; not measured counts as 0) is at least 1/MARGIN_MUCH of the
     largest: a candidate whose goodput halves at a quarter of the loss
     another equal candidate withstands is dropped.
  3. *Harmless* (with --competing): among those, the ones that leave the
     competing flow at least HARM_KEEP of the largest share any of them
     leaves it (not measured counts as 0): 16 aggressive streams that
     starve the competitor lose to a fair choice as fast.
  4. *Simplest*: no sysctl change before one, the smallest MTU before
     jumbo frames, fewer streams, retransmissions below LOW_RETRANS
     before more, then the CCAs in the request's order (cubic, Linux's
     default, first), then the higher mean.

  choose() also says why: which candidate steps 2 and 3 set aside, and
  its margin or harm, for the recommendation sentence.
* **Stage order** (stage_order()): the margin and competing stages run the
  equal candidates first — the simplest of each CCA before a second one of
  the same CCA (so an aggressive CCA and a robust one are both measured),
  then the rest of the equal set, then the fastest others. The refine
  stage takes its candidates the same way from the coarse runs (one run
  each; fewest streams first with --competing), so a path where many
  candidates fill the link refines a diverse, rule-aware few rather than
  whichever happened to be fastest by a hair.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis.fairness import run_fairness
from ..analysis.stats import mean_ci
from ..summary import HOST_LIMIT_FRACTION
from ..wire import goodput_ceiling_bps
from .plan import CANDIDATE_KEYS, Candidate, candidate_of, setup_changes, stream_cap_bps
from .request import AdviseRequest

WINDOW_BOUND_SHORTFALL = 0.95
LOW_RETRANS = 1e-3
MIN_RECOMMENDED_RUNS = 2
EQUAL_WITHIN = 0.03
MARGIN_MUCH = 4.0  # one step of the margin stage's 4× loss ladder
HARM_KEEP = 0.5

RANKED_COLUMNS = ["rank", "cc", "streams", "mtu_bytes", "mss_bytes", "rmem_bytes", "wmem_bytes", "buffers",
                  "n", "goodput_bps", "goodput_ci_low_bps", "goodput_ci_high_bps", "retrans_rate",
                  "window_bound", "stream_cap_bps", "loss_halves_at", "loss_margin_factor", "competing_share", "jain",
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
            "buffers": "raised" if "buffers" in setup_changes(req, c) else "as now",
            "n": s["n"], "goodput_bps": s["mean"], "goodput_ci_low_bps": s["ci_low"],
            "goodput_ci_high_bps": s["ci_high"], "retrans_rate": float(grp["retrans_rate"].mean()),
            "rwnd_limited_frac": rwnd, "sndbuf_limited_frac": sndbuf,
            "stream_cap_bps": stream_cap_bps(req, c) or math.nan,
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
    """Sort key of the recommendation among equal candidates (step 4)."""
    order = req.ccas.index(row["cc"]) if row["cc"] in req.ccas else len(req.ccas)
    changes = setup_changes(req, row["candidate"])
    return ("buffers" in changes, "mtu" in changes, row["streams"],
            not row["retrans_rate"] < LOW_RETRANS, order, -row["goodput_bps"])


def equal_set(stats: pd.DataFrame, min_runs: int = MIN_RECOMMENDED_RUNS) -> list[int]:
    """Indices of the candidates as good as the best among those with at
    least `min_runs` runs (step 1 of the rule)."""
    refined = stats[stats["n"] >= min_runs]
    if refined.empty:
        return []
    best = refined.sort_values(["goodput_bps", "n"], ascending=False, kind="stable").iloc[0]
    low = best["goodput_ci_low_bps"] if not pd.isna(best["goodput_ci_low_bps"]) else best["goodput_bps"]
    low = min(low, (1 - EQUAL_WITHIN) * best["goodput_bps"])
    return [int(i) for i in refined.index if refined.loc[i, "goodput_bps"] >= low]


def _effective_margin(halves_at: float, largest_loss_tried: float) -> float:
    if pd.isna(halves_at):
        return 0.0
    return 2 * largest_loss_tried if math.isinf(halves_at) else float(halves_at)


def robust_subset(stats: pd.DataFrame, pool: list[int], largest_loss_tried: float) -> list[int]:
    """Step 2: the candidates of `pool` whose loss margin is at least
    1/MARGIN_MUCH of the largest (all of them when none was measured)."""
    if "loss_halves_at" not in stats or not pool:
        return pool
    eff = {i: _effective_margin(stats.loc[i, "loss_halves_at"], largest_loss_tried) for i in pool}
    top = max(eff.values())
    return [i for i in pool if eff[i] >= top / MARGIN_MUCH] if top > 0 else pool


def choose(stats: pd.DataFrame, req: AdviseRequest, largest_loss_tried: float = math.nan) -> tuple[int, dict]:
    """The recommended row (module doc, steps 1–4) and why: a dict with
    ``equal`` (how many were equal, step 1), and when step 2 or 3
    changed the choice, ``fragile``/``harmful``: the index of the
    candidate simplicity alone would have picked."""
    equal = equal_set(stats)
    if not equal:
        return 0, {"equal": 0}
    why: dict = {"equal": len(equal)}

    def simplest(idx: list[int]) -> int:
        return min(idx, key=lambda i: (simplicity(stats.loc[i], req), i))

    pool = equal
    robust = robust_subset(stats, pool, largest_loss_tried)
    if simplest(robust) != simplest(pool):
        why["fragile"] = simplest(pool)
    pool = robust
    if req.competing and "competing_share" in stats:
        share = {i: 0.0 if pd.isna(stats.loc[i, "competing_share"]) else float(stats.loc[i, "competing_share"])
                 for i in pool}
        top = max(share.values())
        if top > 0:
            fair = [i for i in pool if share[i] >= HARM_KEEP * top]
            if simplest(fair) != simplest(pool):
                why["harmful"] = simplest(pool)
            pool = fair
    return simplest(pool), why


def stage_order(stats: pd.DataFrame, req: AdviseRequest, fewest_streams_first: bool = False,
                robust_first: bool = False, min_runs: int = MIN_RECOMMENDED_RUNS) -> list[Candidate]:
    """Which candidates the margin and competing stages measure first
    (module doc): the equal set (its robust part first if `robust_first`),
    one per CCA first, then the others by goodput. With min_runs=1 it
    picks the coarse candidates to refine."""
    def key(i: int) -> tuple:
        k = simplicity(stats.loc[i], req)
        return ((stats.loc[i, "streams"], k) if fewest_streams_first else k), i

    equal = equal_set(stats, min_runs)
    groups = [equal]
    if robust_first:
        robust = robust_subset(stats, equal, stats.attrs.get("largest_loss_tried", math.nan))
        groups = [robust, [i for i in equal if i not in robust]]
    picked: list[int] = []
    for group in groups:
        group = sorted(group, key=key)
        seen: set[str] = set()
        for i in group:
            if stats.loc[i, "cc"] not in seen:
                seen.add(stats.loc[i, "cc"])
                picked.append(i)
        picked += [i for i in group if i not in picked]
    picked += [int(i) for i in stats.index if int(i) not in picked]  # stats is sorted by goodput
    return [stats.loc[i, "candidate"] for i in picked]


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
    largest = float(margin_runs["path.loss"].max()) if margin_runs is not None and not margin_runs.empty else math.nan
    chosen, why = choose(stats, req, largest)
    stats["recommended"] = False
    stats.loc[chosen, "recommended"] = True
    out = stats[[*RANKED_COLUMNS, "candidate"]]
    out.attrs["why"] = {k: (stats.loc[v, "candidate"] if k in ("fragile", "harmful") else v) for k, v in why.items()}
    out.attrs["largest_loss_tried"] = largest
    return out


def _tried(runs: pd.DataFrame, c: Candidate) -> bool:
    mask = np.ones(len(runs), dtype=bool)
    for k, v in zip(CANDIDATE_KEYS, c.values(), strict=True):
        mask &= (runs[k] == v).to_numpy()
    return bool(mask.any())
