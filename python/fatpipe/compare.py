"""`fatpipe compare A B`: the same grid points of two studies side by side
(kernel vs sim, one sim version vs another), as compare.html plus CSV.

Rules
-----
* Metrics: goodput (`goodput_bps`) is the primary one (compare_goodput.csv,
  the ratio and scatter figures, the grid-point table, the first findings).
  The median smoothed RTT (`srtt_p50_s`: the queue a CCA keeps) and the
  retransmission rate (`retrans_rate`: retransmitted / sent segments) are
  compared per point by the same method, compare_points(metric=...), when
  both studies report them (compare_metrics.py: compare_srtt.csv,
  compare_retrans.csv, the section "Queueing delay and retransmissions").
* Grid points are matched on the flow group's own columns (flow_group, kind,
  cc, streams, mss_bytes), the nominal path (rate_bps, rtt_s, loss,
  corruption, buffer_bytes, mtu_bytes) and every swept key both studies
  have. Backend, run ids, seeds and repetitions are ignored. A swept key
  only one study has is not matched on (the page says so).
* Per point: ratio = B's mean / A's mean (of goodput, or the metric). Its
  95 % CI uses the delta method on the log ratio, se² = sd_a²/(n_a·m_a²) + sd_b²/(n_b·m_b²),
  with Welch–Satterthwaite degrees of freedom: ratio·exp(±t·se). Needs at
  least two repetitions on each side.
* Paired points: on a path with random loss or corruption (the one
  randomness the backends draw alike), when the same run seeds appear on
  both sides (at least PAIRED_MIN_PAIRS ok runs of the point with a seed
  the other side has too), the runs are paired by seed and the same delta
  method takes the
  covariance of the pairs into account,
  se² = (sd_a²/m_a² + sd_b²/m_b² − 2·cov_ab/(m_a·m_b))/n, with n − 1
  degrees of freedom (the ratio is still of the means over those pairs).
  Pairing is valid whatever the seeds drive; it narrows the interval when
  one seed draws the same random events on both sides (the simulator and
  the kernel path's linkem lose the same data segments for a seed: common
  random numbers), and only costs degrees of freedom where it does not
  (a lossless path, netem's own draws). The table reports the pairs and
  their correlation.
* A point *disagrees* when |ratio − 1| > 15 %; disagreeing points are listed
  first, largest disagreement first.
* Retransmission rates are often 0 or tiny, where a ratio says nothing:
  two rates agree when both means are below RETRANS_AGREE_BELOW (0.1 % of
  the segments sent); otherwise the 15 % rule decides. Where A's mean is 0
  and B's is not below the floor, the ratio is undefined (NaN, shown as –)
  and the point disagrees; such points, and those where B's mean is 0,
  come first among the disagreeing (AGREE_BELOW holds each metric's floor;
  goodput and RTT have none).
* Repetitions to resolve: per point, the fewest repetitions per side (pairs
  when paired) whose interval, with the variance seen, would be at most
  ±15 % (t·se ≤ ln 1.15, se² = the per-run relative variance / n, with
  2n − 2 degrees of freedom unpaired or n − 1 paired): how far a point is
  from resolving a 15 % difference.
* RPC groups: mean p50/p90/p99/p99.9 completion times of A and B side by side.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .analysis.stats import GROUP_COLUMNS, display_columns, grid_summary, swept_columns, t_quantile
from .report.page import (
    Section,
    cc_color,
    findings_html,
    fmt_num,
    fmt_rate,
    page,
    point_label,
    pyplot,
    rate_unit,
    save_figure,
    short_key,
    table_html,
)
from .results import StudyStore

DISAGREE_FRACTION = 0.15
RETRANS_AGREE_BELOW = 1e-3  # retransmitted / sent segments: 0.1 %
AGREE_BELOW = {"retrans_rate": RETRANS_AGREE_BELOW}  # metric -> absolute agreement floor (rules)
PAIRED_MIN_PAIRS = 3
NOMINAL_COLUMNS = ["rate_bps", "rtt_s", "loss", "corruption", "buffer_bytes", "mtu_bytes"]
RPC_QUANTILES = (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"))


def match_keys(a: pd.DataFrame, b: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(keys to match on, swept keys only one study has)."""
    sa, sb = swept_columns(a), swept_columns(b)
    common = [k for k in sa if k in sb]
    only = sorted(set(sa) ^ set(sb))
    nominal = [c for c in NOMINAL_COLUMNS if c in a.columns and c in b.columns]
    own = [c for c in GROUP_COLUMNS if c in a.columns and c in b.columns]
    return [*common, *nominal, *own], only


def ratio_ci(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int,
             confidence: float = 0.95) -> tuple[float, float, float]:
    """(b/a, low, high): the log-ratio delta-method interval (see the rules)."""
    if mean_a is None or mean_b is None or not (mean_a > 0 and mean_b >= 0):
        return math.nan, math.nan, math.nan
    ratio = mean_b / mean_a
    if mean_b == 0 or n_a < 2 or n_b < 2 or not (math.isfinite(sd_a) and math.isfinite(sd_b)):
        return ratio, math.nan, math.nan
    va = sd_a ** 2 / (n_a * mean_a ** 2)
    vb = sd_b ** 2 / (n_b * mean_b ** 2)
    if va + vb == 0:
        return ratio, ratio, ratio
    df = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))
    half = t_quantile(0.5 + confidence / 2, df) * math.sqrt(va + vb)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def paired_ratio_ci(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean b / mean a, low, high) over paired runs a[i], b[i]: the delta
    method with the pairs' covariance and n − 1 degrees of freedom (rules)."""
    n = len(a)
    ma, mb = float(np.mean(a)), float(np.mean(b))
    if n < 2 or not (ma > 0 and mb > 0):
        return (mb / ma if ma > 0 else math.nan), math.nan, math.nan
    var = _paired_rel_var(a, b) / n
    ratio = mb / ma
    if var <= 0:
        return ratio, ratio, ratio
    half = t_quantile(0.5 + confidence / 2, n - 1) * math.sqrt(var)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def reps_to_resolve(rel_var_per_run: float, paired: bool, fraction: float = DISAGREE_FRACTION,
                    confidence: float = 0.95, cap: int = 100_000) -> float:
    """Fewest repetitions per side (pairs when `paired`) for a ratio
    interval of at most ±`fraction` given the per-run relative variance
    (see the rules); NaN when unknown, `cap` when beyond it."""
    if not math.isfinite(rel_var_per_run) or rel_var_per_run < 0:
        return math.nan
    target = math.log(1 + fraction)
    n = 2
    while n < cap:
        df = n - 1 if paired else 2 * n - 2
        if t_quantile(0.5 + confidence / 2, df) * math.sqrt(rel_var_per_run / n) <= target:
            return n
        n = n + 1 if n < 64 else int(n * 1.1)
    return cap


def _ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"] if "status" in runs.columns else runs


def _paired_rel_var(a: np.ndarray, b: np.ndarray) -> float:
    """Per-pair variance of the log ratio of means (delta method)."""
    ma, mb = float(np.mean(a)), float(np.mean(b))
    if not (ma > 0 and mb > 0):
        return math.nan
    c = np.cov(a, b, ddof=1)
    return float(c[0, 0] / ma ** 2 + c[1, 1] / mb ** 2 - 2 * c[0, 1] / (ma * mb))


def _random_path(runs: pd.DataFrame) -> pd.Series:
    """Rows whose path draws random losses (nominal loss or corruption > 0)."""
    drawn = pd.Series(False, index=runs.index)
    for col in ("loss", "corruption"):
        if col in runs.columns:
            drawn |= runs[col].fillna(0) > 0
    return drawn


def paired_points(runs_a: pd.DataFrame, runs_b: pd.DataFrame, keys: list[str],
                  metric: str = "goodput_bps") -> pd.DataFrame:
    """Per point with at least PAIRED_MIN_PAIRS seed-matched ok runs: the
    keys, ``pairs``, ``pair_corr``, ``ratio`` and its paired CI."""
    cols = [*keys, "pairs", "pair_corr", "ratio", "ratio_ci_low", "ratio_ci_high", "reps_to_resolve"]
    if "seed" not in runs_a.columns or "seed" not in runs_b.columns or metric not in runs_a.columns \
            or metric not in runs_b.columns:
        return pd.DataFrame(columns=cols)
    side = [_ok(r) for r in (runs_a, runs_b)]
    side = [r[_random_path(r)][[*keys, "seed", metric]].dropna(subset=["seed", metric]) for r in side]
    both = side[0].merge(side[1], on=[*keys, "seed"], suffixes=("_a", "_b"))
    rows = []
    for key, g in both.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        if len(g) < PAIRED_MIN_PAIRS:
            continue
        a, b = g[f"{metric}_a"].to_numpy(float), g[f"{metric}_b"].to_numpy(float)
        corr = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else math.nan
        rows.append({**dict(zip(keys, key, strict=True)), "pairs": len(g), "pair_corr": corr,
                     **dict(zip(("ratio", "ratio_ci_low", "ratio_ci_high"), paired_ratio_ci(a, b), strict=True)),
                     "reps_to_resolve": reps_to_resolve(_paired_rel_var(a, b), paired=True)})
    return pd.DataFrame(rows, columns=cols)


def compare_points(runs_a: pd.DataFrame, runs_b: pd.DataFrame,
                   metric: str = "goodput_bps") -> pd.DataFrame:
    """Matched grid points of `metric` with a_*/b_* statistics, ratio, ratio
    CI, ``pairs`` (0: unpaired), ``pair_corr`` and ``disagree`` (with the
    metric's floor from AGREE_BELOW, see the rules); disagreeing points
    first. Unmatched points have NaN on the missing side and ``matched``
    False."""
    keys, _ = match_keys(runs_a, runs_b)
    sa = grid_summary(runs_a, metric, keys)
    sb = grid_summary(runs_b, metric, keys)
    stat = ["n", "mean", "sd", "ci_low", "ci_high", "failed", "flags"]
    m = sa.rename(columns={c: f"a_{c}" for c in stat}).merge(
        sb.rename(columns={c: f"b_{c}" for c in stat}), on=keys, how="outer")
    m["matched"] = m["a_n"].notna() & m["b_n"].notna()
    r = [ratio_ci(row.a_mean, row.a_sd, int(row.a_n or 0), row.b_mean, row.b_sd, int(row.b_n or 0))
         if row.matched else (math.nan,) * 3
         for row in m.itertuples()]
    m["ratio"], m["ratio_ci_low"], m["ratio_ci_high"] = zip(*r, strict=True) if r else ((), (), ())
    m["pairs"], m["pair_corr"] = 0, math.nan
    rel_var = (m["a_sd"] / m["a_mean"]) ** 2 + (m["b_sd"] / m["b_mean"]) ** 2
    m["reps_to_resolve"] = [reps_to_resolve(v, paired=False) if ok else math.nan
                            for v, ok in zip(rel_var, m["matched"], strict=True)]
    paired = paired_points(runs_a, runs_b, keys, metric)
    if not paired.empty:
        m = m.merge(paired, on=keys, how="left", suffixes=("", "_paired"))
        use = m["pairs_paired"].notna()
        taken = ("pairs", "pair_corr", "ratio", "ratio_ci_low", "ratio_ci_high", "reps_to_resolve")
        for c in taken:
            m[c] = m[c].where(~use, m[f"{c}_paired"])
        m = m.drop(columns=[f"{c}_paired" for c in taken])
        m["pairs"] = m["pairs"].astype(int)
    m["disagree"] = (m["ratio"] - 1).abs() > DISAGREE_FRACTION
    m["_size"] = np.abs(np.log(m["ratio"].where(m["ratio"] > 0)))
    floor = AGREE_BELOW.get(metric)
    if floor is not None:
        below = (m["a_mean"] < floor) & (m["b_mean"] < floor)
        a_zero = m["matched"] & (m["a_mean"] == 0) & (m["b_mean"] >= floor)
        m["disagree"] = (m["disagree"] & ~below) | a_zero
        m.loc[m["disagree"] & ~(m["ratio"] > 0), "_size"] = math.inf
    m = m.sort_values(["matched", "disagree", "_size"], ascending=[False, False, False],
                      na_position="last", kind="stable")
    return m.drop(columns="_size").reset_index(drop=True)


def ci_text(lo, hi) -> str:
    """A confidence interval as a table cell ("–" where there is none)."""
    return f"{lo:.3g} – {hi:.3g}" if pd.notna(lo) else "–"


def compare_rpc(runs_a: pd.DataFrame, runs_b: pd.DataFrame) -> pd.DataFrame:
    """Mean RPC completion-time percentiles of A and B per matched RPC point."""
    if "rpc_p50_s" not in runs_a.columns or "rpc_p50_s" not in runs_b.columns:
        return pd.DataFrame()
    ra = runs_a[runs_a["kind"] == "rpc"]
    rb = runs_b[runs_b["kind"] == "rpc"]
    if ra.empty or rb.empty:
        return pd.DataFrame()
    keys, _ = match_keys(runs_a, runs_b)
    out = None
    for q, _name in RPC_QUANTILES:
        col = f"rpc_{q}_s"
        a = grid_summary(ra, col, keys)[[*keys, "mean"]].rename(columns={"mean": f"a_{q}_s"})
        b = grid_summary(rb, col, keys)[[*keys, "mean"]].rename(columns={"mean": f"b_{q}_s"})
        both = a.merge(b, on=keys, how="inner")
        out = both if out is None else out.merge(both, on=keys)
    return out if out is not None else pd.DataFrame()


# ---- the page ---------------------------------------------------------------------


SWEPT_NOMINAL = {"path.rate": "rate_bps", "path.rtt": "rtt_s", "path.loss": "loss",
                 "path.corruption": "corruption", "path.buffer": "buffer_bytes",
                 "path.mtu": "mtu_bytes"}


def _shown_keys(t: pd.DataFrame, keys: list[str]) -> list[str]:
    """Keys that vary among the points, without a nominal column whose swept
    key is shown and without swept keys the flow group's columns determine."""
    varying = [k for k in keys if t[k].nunique(dropna=False) > 1]
    shown = display_columns(t, varying)
    covered = {SWEPT_NOMINAL[k] for k in keys if k in SWEPT_NOMINAL}
    shown = [k for k in shown if k not in covered]
    return shown or ["cc"]


def _ratio_figure(t: pd.DataFrame, keys: list[str], name_a: str, name_b: str):
    plt = pyplot()
    t = t[t["matched"] & t["ratio"].notna() & (t["ratio"] > 0)]
    if t.empty:
        return None
    t = t.head(60)
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(t) + 1.8))
    y = np.arange(len(t))
    lo = (t["ratio"] - t["ratio_ci_low"]).fillna(0).clip(lower=0)
    hi = (t["ratio_ci_high"] - t["ratio"]).fillna(0).clip(lower=0)
    colors = ["#d62728" if d else "#1f77b4" for d in t["disagree"]]
    ax.axvspan(1 - DISAGREE_FRACTION, 1 + DISAGREE_FRACTION, color="0.9", zorder=0)
    ax.axvline(1, color="k", linewidth=0.8)
    ax.errorbar(t["ratio"], y, xerr=np.vstack([lo, hi]), fmt="none", ecolor="0.4", capsize=3)
    ax.scatter(t["ratio"], y, c=colors, zorder=3)
    ax.set_yticks(y, [point_label(r, keys) for _, r in t.iterrows()], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    from matplotlib.ticker import FormatStrFormatter
    ax.xaxis.set_major_formatter(FormatStrFormatter("%.3g"))
    ax.xaxis.set_minor_formatter(FormatStrFormatter("%.3g"))
    ax.set_xlabel(f"goodput ratio {name_b} / {name_a} (log scale; bars: 95 % CI; "
                  f"grey band: ±{DISAGREE_FRACTION:.0%})")
    ax.set_title(f"Goodput of {name_b} relative to {name_a} per grid point (red: disagree)")
    fig.tight_layout()
    return fig


def _scatter_figure(t: pd.DataFrame, name_a: str, name_b: str, unit):
    plt = pyplot()
    t = t[t["matched"] & (t["a_mean"] > 0) & (t["b_mean"] > 0)]
    if t.empty:
        return None
    div, uname = unit
    fig, ax = plt.subplots(figsize=(6.5, 6))
    for i, (cc, g) in enumerate(t.groupby("cc", sort=True)):
        ax.scatter(g["a_mean"] / div, g["b_mean"] / div, label=str(cc), color=cc_color(cc, i))
    lim = np.array([min(t["a_mean"].min(), t["b_mean"].min()),
                    max(t["a_mean"].max(), t["b_mean"].max())]) / div
    lim = lim * np.array([0.7, 1.4])
    ax.plot(lim, lim, color="k", linewidth=0.8)
    ax.fill_between(lim, lim * (1 - DISAGREE_FRACTION), lim * (1 + DISAGREE_FRACTION),
                    color="0.9", zorder=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"{name_a}: mean goodput ({uname})")
    ax.set_ylabel(f"{name_b}: mean goodput ({uname})")
    ax.set_title("Mean goodput per grid point (line: equal; band ±15 %)")
    ax.legend()
    fig.tight_layout()
    return fig


def _names(a: Path, b: Path) -> tuple[str, str]:
    na, nb = a.resolve().name, b.resolve().name
    if na == nb:
        na, nb = f"{a.resolve().parent.name}/{na}", f"{b.resolve().parent.name}/{nb}"
    return na, nb


def compare(dir_a: str | Path, dir_b: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write compare.html and CSV tables for studies A and B; return the page's path."""
    a, b = StudyStore(dir_a).load(), StudyStore(dir_b).load()
    name_a, name_b = _names(Path(dir_a), Path(dir_b))
    out = Path(out_dir) if out_dir else Path(dir_b) / f"compare-vs-{Path(dir_a).resolve().name}"
    out.mkdir(parents=True, exist_ok=True)
    keys, only = match_keys(a.runs, b.runs)
    t = compare_points(a.runs, b.runs)
    t.to_csv(out / "compare_goodput.csv", index=False)
    matched = t[t["matched"]]
    shown = _shown_keys(matched if not matched.empty else t, keys)
    unit = rate_unit(max(t["a_mean"].max(skipna=True) or 0, t["b_mean"].max(skipna=True) or 0))
    # compare_metrics builds on this module's method, so it is imported here.
    from . import compare_metrics
    metrics = compare_metrics.metric_tables(a.runs, b.runs)
    for metric, table in metrics:
        table.to_csv(out / f"{metric.csv_name}.csv", index=False)
    delay = compare_metrics.section(metrics, shown, name_a, name_b)

    lines = [f"{len(matched)} grid points matched; {int(t['a_n'].isna().sum())} only in {name_b}, "
             f"{int(t['b_n'].isna().sum())} only in {name_a}."]
    if not matched.empty and matched["ratio"].notna().any():
        r = matched["ratio"].dropna()
        d = matched[matched["disagree"]]
        lines.append(f"Goodput {name_b}/{name_a}: median ratio {r.median():.2f} "
                     f"(range {r.min():.2f}–{r.max():.2f}); {len(d)} of {len(matched)} points "
                     f"disagree by more than {DISAGREE_FRACTION:.0%}.")
        if len(d):
            w = d.iloc[0]
            lines.append(f"Largest disagreement: {point_label(w, shown)} — "
                         f"{fmt_rate(w['a_mean'], unit)} vs {fmt_rate(w['b_mean'], unit)} "
                         f"(ratio {w['ratio']:.2f}).")
        for cc, g in matched.groupby("cc", sort=True):
            rr = g["ratio"].dropna()
            if len(rr) and matched["cc"].nunique() > 1:
                lines.append(f"{cc}: median ratio {rr.median():.2f} over {len(rr)} points.")
    lines += delay.findings if delay else ()
    if only:
        lines.append("Swept in one study only (not matched on): " + ", ".join(only) + ".")

    sections = []
    fig = _ratio_figure(matched, shown, name_a, name_b)
    body = save_figure(fig, out, "compare_ratio", "Ratio per grid point, disagreeing points "
                       "first (at most 60 shown; all are in the table).") if fig else ""
    fig = _scatter_figure(matched, name_a, name_b, unit)
    body += save_figure(fig, out, "compare_scatter", "Mean goodput of B against A.") if fig else ""
    if body:
        sections.append(Section("plots", "Goodput ratio", body))
    div, uname = unit
    view = t[shown].rename(columns={k: short_key(k) for k in shown}).copy()
    for side, name in (("a", name_a), ("b", name_b)):
        view[f"{name} ({uname})"] = t[f"{side}_mean"] / div
        view[f"{name} 95 % CI"] = [ci_text(lo / div, hi / div)
                                   for lo, hi in zip(t[f"{side}_ci_low"], t[f"{side}_ci_high"], strict=True)]
        view[f"n {side.upper()}"] = t[f"{side}_n"]
    view["ratio B/A"] = t["ratio"]
    view["ratio 95 % CI"] = [ci_text(lo, hi) for lo, hi in zip(t["ratio_ci_low"], t["ratio_ci_high"], strict=True)]
    view["pairs (corr.)"] = [f"{int(p)} ({c:.2f})" if p else "–"
                             for p, c in zip(t["pairs"], t["pair_corr"], strict=True)]
    view["reps for ±15 %"] = t["reps_to_resolve"]
    view["disagree"] = ["yes" if d else "" for d in t["disagree"]]
    sections.append(Section(
        "table", "Grid points", table_html(view, highlight=t["disagree"], scroll=len(view) > 30),
        f"A = {name_a}, B = {name_b}. Ratio CI: delta method on the log ratio with Welch degrees "
        f"of freedom, or over runs paired by seed (pairs: their number and correlation). Reps for "
        f"±15 %: repetitions per side (pairs) that would resolve a 15 % difference at the variance seen. "
        f"Disagree: |B/A − 1| > {DISAGREE_FRACTION:.0%}. Matched on: "
        + ", ".join(keys) + "."))
    sections += [delay] if delay else []
    rpc = compare_rpc(a.runs, b.runs)
    if not rpc.empty:
        rpc.to_csv(out / "compare_rpc.csv", index=False)
        rk = _shown_keys(rpc, keys)
        rv = rpc[rk].rename(columns={k: short_key(k) for k in rk}).copy()
        for q, name in RPC_QUANTILES:
            rv[f"{name} A (ms)"] = rpc[f"a_{q}_s"] * 1e3
            rv[f"{name} B (ms)"] = rpc[f"b_{q}_s"] * 1e3
        rv["p99 B/A"] = rpc["b_p99_s"] / rpc["a_p99_s"]
        sections.append(Section("rpc", "RPC completion times", table_html(
            rv, formats={c: fmt_num for c in rv.columns}), "Means over repetitions."))
    html = page(f"fatpipe compare: {name_a} vs {name_b}",
                f"A = {Path(dir_a).resolve()} · B = {Path(dir_b).resolve()}",
                findings_html(lines), sections)
    path = out / "compare.html"
    path.write_text(html, encoding="utf-8")
    return path
