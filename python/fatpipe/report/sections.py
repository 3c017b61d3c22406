"""The report's sections built from the grid points (mean goodput per point
of the sweep): every grid point, goodput against loss, streams and MSS, the
improvement factor of parallel streams, collapse points, the references
beside fatpipe's values, and the failed runs.

Each builder returns a Section, or None when the data does not support it;
figures and CSV tables go through the report's ReportFiles. A section
carries the main findings drawn from its own tables."""

from __future__ import annotations

import pandas as pd

from .. import analysis as an
from ..analysis import references as an_refs
from ..analysis.stats import display_columns
from ..loaded import LoadedStudy
from ..references import METRICS, ReferenceTable
from . import figures as figs
from . import findings as fnd
from . import references as refs
from .files import ReportFiles
from .page import Section, esc, fmt_rate, rate_unit, table_html

MAX_LOSS_PANELS = 6


def single_value(runs: pd.DataFrame, col: str) -> float | None:
    """The value of `col` when every run has the same one; else None."""
    vals = runs[col].dropna().unique() if col in runs.columns else []
    return float(vals[0]) if len(vals) == 1 else None


def _spread(values: list, k: int) -> list:
    if len(values) <= k:
        return values
    idx = sorted({round(i * (len(values) - 1) / (k - 1)) for i in range(k)})
    return [values[i] for i in idx]


def runs_with_queue(study: LoadedStudy) -> pd.DataFrame:
    """The runs table plus ``queue_p50_bytes``: the median of each run's
    sampled bottleneck queue after warm-up (NaN where the backend did not
    sample it)."""
    runs, ps = study.runs, study.path_series
    if ps.empty:
        return runs.assign(queue_p50_bytes=float("nan"))
    warm = runs.groupby("run_id")["warmup_s"].first() if "warmup_s" in runs.columns else pd.Series(dtype=float)
    after = ps[ps["t_s"] > ps["run_id"].map(warm).fillna(0.0)]
    return runs.assign(queue_p50_bytes=runs["run_id"].map(after.groupby("run_id")["queue_bytes"].median()))


def grid_section(study: LoadedStudy, files: ReportFiles, points: pd.DataFrame, keys: list[str],
                 unit: tuple[float, str]) -> Section:
    """Every grid point: n, mean, sd, 95 % CI of goodput, retransmissions,
    the median bottleneck queue and CE marks where they exist, flags."""
    runs = runs_with_queue(study)
    retrans = an.grid_summary(runs, "retrans_rate", keys)[[*keys, "mean"]]
    t = points.merge(retrans.rename(columns={"mean": "retrans"}), on=keys, how="left")
    extra = {}  # column in t -> (shown name, scale)
    if runs["queue_p50_bytes"].notna().any():
        extra["queue_p50_bytes"] = ("queue p50 (kB)", 1e-3)
    if "path_ce_marks" in runs.columns and (runs["path_ce_marks"].fillna(0) > 0).any():
        extra["path_ce_marks"] = ("CE marks", 1.0)
    for col in extra:
        m = an.grid_summary(runs, col, keys)[[*keys, "mean"]]
        t = t.merge(m.rename(columns={"mean": col}), on=keys, how="left")
    files.csv(t.rename(columns={"mean": "goodput_mean_bps", "sd": "goodput_sd_bps",
                                "ci_low": "goodput_ci95_low_bps",
                                "ci_high": "goodput_ci95_high_bps",
                                "retrans": "retrans_rate_mean"}), "grid_points")
    show = display_columns(study.runs, keys)
    div, uname = unit
    view = t[show].rename(columns={k: figs.short_key(k) for k in show}).copy()
    view["n"] = t["n"]
    view[f"goodput ({uname})"] = t["mean"] / div
    view["sd"] = t["sd"] / div
    view["95 % CI"] = [f"{lo / div:.3g} – {hi / div:.3g}" if pd.notna(lo) else "–"
                       for lo, hi in zip(t["ci_low"], t["ci_high"], strict=True)]
    view["retrans (%)"] = t["retrans"] * 100
    for col, (name, scale) in extra.items():
        view[name] = t[col] * scale
    view["failed"] = t["failed"]
    view["flags"] = t["flags"]
    body = table_html(view, scroll=len(view) > 25)
    return Section("grid", "All grid points", body,
                   "Mean goodput over repetitions after warm-up; 95 % CI = mean ± t(0.975, n−1)·sd/√n "
                   "(Student t). Flags are the union over repetitions."
                   + (" Queue p50: median of the bottleneck queue sampled after warm-up, mean over "
                      "repetitions." if "queue_p50_bytes" in extra else "")
                   + (" CE marks: packets the bottleneck marked CE in the whole run, mean over "
                      "repetitions." if "path_ce_marks" in extra else ""))


def loss_section(study: LoadedStudy, files: ReportFiles, points: pd.DataFrame, axis: str,
                 unit: tuple[float, str]) -> Section | None:
    rate, rtt = single_value(study.runs, "rate_bps"), single_value(study.runs, "rtt_s")
    fig = figs.goodput_vs_loss(points, axis, unit, rate, rtt)
    cap = (f"Mean goodput vs {figs.short_key(axis)} (log–log, bars: 95 % CI); colour = streams, "
           f"line style = MSS. Grey: Mathis C·MSS/(RTT·√p) for one stream (not valid for BBR); "
           f"orange: RFC 9438 CUBIC response for one stream; black: bottleneck rate. "
           f"Points at {figs.short_key(axis)} 0 cannot be drawn on a log axis.")
    if fig is None:
        return None
    name = "goodput_vs_" + axis.split(".")[-1]
    return Section(name.replace("_", "-"), f"Goodput vs {figs.short_key(axis)}",
                   files.figure(fig, name, cap))


def factor_section(files: ReportFiles, points: pd.DataFrame, x: str, axis: str | None,
                   unit: tuple[float, str]) -> Section | None:
    """Goodput against `x` (streams or MSS), one panel per level of the loss
    `axis` (at most MAX_LOSS_PANELS of them, spread over its range)."""
    panel = None
    pts = points
    if axis:
        levels = sorted(points[axis].unique())
        keep = _spread(levels, MAX_LOSS_PANELS)
        pts, panel = points[points[axis].isin(keep)], axis
    fig = figs.goodput_vs_factor(pts, x, unit, panel)
    if fig is None:
        return None
    what = "parallel streams" if x == "streams" else "MSS"
    name = "goodput_vs_streams" if x == "streams" else "goodput_vs_mss"
    cap = f"Mean goodput vs {what} (bars: 95 % CI), one panel per {figs.short_key(axis)}" \
        if axis else f"Mean goodput vs {what} (bars: 95 % CI)"
    return Section(name.replace("_", "-"), f"Goodput vs {what}", files.figure(fig, name, cap + "."))


def improvement_section(files: ReportFiles, points: pd.DataFrame) -> Section | None:
    factors = an.improvement_factors(points)
    if factors.empty:
        return None
    files.csv(an.stream_factors(points), "stream_factors")
    files.csv(factors, "improvement_factors")
    view = pd.DataFrame({"CCA": factors["cc"], "average": factors["avg"], "max": factors["max"],
                         "min": factors["min"], "conditions": factors["conditions"],
                         "streams vs 1": factors["streams"]})
    if factors["flow_group"].nunique() > 1:
        view.insert(0, "flow", factors["flow_group"])
    f2 = lambda v: f"{v:.2f}"  # noqa: E731
    body = table_html(view, "Improvement factor from parallel streams",
                      {"average": f2, "max": f2, "min": f2})
    by_n = an.improvement_by_streams(points)
    if by_n.shape[1] > 1:
        t = by_n.reset_index().rename(columns={"cc": "CCA"})
        t.columns = [c if c == "CCA" else f"{c} streams" for c in t.columns]
        body += table_html(t, "Mean factor by stream count", {c: f2 for c in t.columns if c != "CCA"})
    intro = ("factor = mean goodput with n streams / mean goodput with 1 stream at otherwise equal "
             "factors (CCA, MSS, loss, …); per condition n is the largest stream count measured; "
             "average, max and min are over conditions.")
    return Section("streams-factor", "Improvement factor from parallel streams", body, intro,
                   tuple(fnd.improvement_lines(factors)))


def collapse_section(study: LoadedStudy, files: ReportFiles, points: pd.DataFrame, axis: str) -> Section | None:
    cp = an.collapse_points(points, axis)
    if cp.empty:
        return None
    files.csv(cp, f"collapse_points_{axis.split('.')[-1]}")
    show = [c for c in display_columns(study.runs, [c for c in cp.columns if c in points.columns])
            if c in cp.columns and cp[c].nunique(dropna=False) > 1]
    name = axis.split(".")[-1]
    view = cp[show].rename(columns={k: figs.short_key(k) for k in show}).copy()
    unit = rate_unit(cp["reference_bps"].max())
    view[f"goodput at {name} {cp['reference_at'].iloc[0]:g}"] = [fmt_rate(v, unit) for v in cp["reference_bps"]]
    view[f"collapse {name}"] = [f"{v:g}" if pd.notna(v) else f"none ≤ {m:g}"
                                for v, m in zip(cp["collapse_at"], cp["last_measured"], strict=True)]
    view["goodput there"] = [fmt_rate(v, unit) for v in cp["goodput_at_collapse_bps"]]
    intro = (f"Collapse point: the smallest {name} rate at which mean goodput falls below 10 % of the "
             f"same configuration's goodput at the lowest {name} measured.")
    body = table_html(view, highlight=cp["collapse_at"].notna(), scroll=len(view) > 25)
    return Section(f"collapse-{name}", f"Collapse points along {name}", body, intro,
                   tuple(fnd.collapse_lines(cp, axis)))


def goodput_section(files: ReportFiles, points: pd.DataFrame, unit: tuple[float, str]) -> Section | None:
    """Bars of mean goodput per grid point (for a study that sweeps neither
    loss nor streams nor MSS)."""
    fig = figs.goodput_bars(points, unit)
    if fig is None:
        return None
    return Section("goodput", "Goodput per grid point", files.figure(fig, "goodput", "Mean goodput per grid point."))


def references_section(study: LoadedStudy, files: ReportFiles, tables: list[ReferenceTable],
                       collapses: pd.DataFrame, origin: str) -> Section | None:
    """Each reference table beside fatpipe's mean, 95 % CI and the ratio,
    the overlay figure and references.csv; `origin` says where the tables
    come from."""
    if not tables:
        return None
    comparison, common = refs.labelled(an_refs.compare(study.runs, tables, collapses), tables)
    files.csv(comparison, "references")
    body = files.figure(figs.reference_figure(comparison, {t: refs.table_scale(g) for t, g in
                                                           comparison.groupby("table", sort=False)}),
                        "references", "fatpipe's mean (dots, bars: 95 % CI) beside each reference value "
                                      "(open diamonds), one panel per reference table; on a log axis a "
                                      "reference of 0 (a talk's ~0) cannot be drawn.")
    for table in tables:
        g = comparison[comparison["table"] == table.title]
        shared = an_refs.where_label(common[table.title])
        cap = f"{table.title} — {METRICS[table.metric].what}" + (f"; stat: {table.stat}" if table.stat else "") \
            + (f"; every value at {shared}" if shared else "")
        body += table_html(refs.view(g), cap)
        body += f'<p class="note">Source: {esc(table.source)}</p>'
    intro = (f"Reference numbers ({origin}) beside fatpipe's: fatpipe / reference > 1 means fatpipe "
             "measured more. References are not targets; no setting was tuned to match them.")
    return Section("references", "Beside the references", body, intro, tuple(refs.finding_lines(comparison)))


def failed_section(study: LoadedStudy) -> Section | None:
    failed = study.runs[study.runs["status"] != "ok"]
    if failed.empty:
        return None
    t = failed.groupby("run_id", sort=True)["reason"].first().reset_index()
    return Section("failed", "Failed runs", table_html(t))
