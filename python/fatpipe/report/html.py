"""The study report: DIR/report/report.html (self-contained) plus every
figure as PNG and SVG and every table as CSV in DIR/report/.

Sections appear only when the data supports them: goodput vs loss and
collapse points when loss or corruption is swept; goodput vs streams and the
improvement-factor table when the stream count varies; goodput vs MSS when
the MSS varies; sharing with ≥ 2 flow groups, and the table against CUBIC
when one CUBIC group meets groups of one other CCA; RPC latency when RPCs exist;
a time series when series exist (an interactive view, interactive.py, above
the static figure); the bottleneck's queue of the same run
when the backend sampled it (the path series), and the median queue and
CE marks in the grid table when there are any. The table of every grid
point is always there. A study with [[references]] (or a report given
another study file's) gets "Beside the references" first (references.py).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import pandas as pd

from .. import analysis as an
from ..analysis.collapse import loss_axes
from ..analysis.stats import display_columns, point_columns, swept_columns, without_repeated_swept
from ..loaded import LoadedStudy
from ..results import StudyStore
from . import figures as figs
from . import findings as fnd
from . import interactive
from . import references as refs
from .page import findings_html, fmt_num, fmt_rate, page, rate_unit, save_figure, section, table_html

MAX_LOSS_PANELS = 6


@dataclass(repr=False)
class ReportStudy(LoadedStudy):
    """The study as StudyStore.load() reads it, plus the files the report
    writes into DIR/report."""

    files: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, loaded: LoadedStudy) -> ReportStudy:
        return cls(**{f.name: getattr(loaded, f.name) for f in fields(LoadedStudy)})

    @property
    def out(self) -> Path:
        return self.root / "report"


def load_study(study_dir: str | Path) -> ReportStudy:
    return ReportStudy.of(StudyStore(study_dir).load())


def _csv(study: ReportStudy, df: pd.DataFrame, name: str) -> None:
    study.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(study.out / f"{name}.csv", index=False)
    study.files.append(f"{name}.csv")


def _fig(study: ReportStudy, fig, name: str, caption: str) -> str:
    if fig is None:
        return ""
    study.files += [f"{name}.png", f"{name}.svg"]
    return save_figure(fig, study.out, name, caption)


def _single(runs: pd.DataFrame, col: str):
    vals = runs[col].dropna().unique() if col in runs.columns else []
    return float(vals[0]) if len(vals) == 1 else None


def _spread(values: list, k: int) -> list:
    if len(values) <= k:
        return values
    idx = sorted({round(i * (len(values) - 1) / (k - 1)) for i in range(k)})
    return [values[i] for i in idx]


# ---- sections -----------------------------------------------------------------


def runs_with_queue(study: ReportStudy) -> pd.DataFrame:
    """The runs table plus ``queue_p50_bytes``: the median of each run's
    sampled bottleneck queue after warm-up (NaN where the backend did not
    sample it)."""
    runs, ps = study.runs, study.path_series
    if ps.empty:
        return runs.assign(queue_p50_bytes=float("nan"))
    warm = runs.groupby("run_id")["warmup_s"].first() if "warmup_s" in runs.columns else pd.Series(dtype=float)
    after = ps[ps["t_s"] > ps["run_id"].map(warm).fillna(0.0)]
    return runs.assign(queue_p50_bytes=runs["run_id"].map(after.groupby("run_id")["queue_bytes"].median()))


def grid_section(study: ReportStudy, points: pd.DataFrame, keys: list[str], unit) -> tuple:
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
    _csv(study, t.rename(columns={"mean": "goodput_mean_bps", "sd": "goodput_sd_bps",
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
    return section("grid", "All grid points", body,
                   "Mean goodput over repetitions after warm-up; 95 % CI = mean ± t(0.975, n−1)·sd/√n "
                   "(Student t). Flags are the union over repetitions."
                   + (" Queue p50: median of the bottleneck queue sampled after warm-up, mean over "
                      "repetitions." if "queue_p50_bytes" in extra else "")
                   + (" CE marks: packets the bottleneck marked CE in the whole run, mean over "
                      "repetitions." if "path_ce_marks" in extra else ""))


def loss_section(study, points, axis, unit) -> tuple:
    rate, rtt = _single(study.runs, "rate_bps"), _single(study.runs, "rtt_s")
    fig = figs.goodput_vs_loss(points, axis, unit, rate, rtt)
    cap = (f"Mean goodput vs {figs.short_key(axis)} (log–log, bars: 95 % CI); colour = streams, "
           f"line style = MSS. Grey: Mathis C·MSS/(RTT·√p) for one stream (not valid for BBR); "
           f"orange: RFC 9438 CUBIC response for one stream; black: bottleneck rate. "
           f"Points at {figs.short_key(axis)} 0 cannot be drawn on a log axis.")
    if fig is None:
        return None
    name = "goodput_vs_" + axis.split(".")[-1]
    return section(name.replace("_", "-"), f"Goodput vs {figs.short_key(axis)}",
                   _fig(study, fig, name, cap))


def factor_section(study, points, x, axis, unit) -> tuple | None:
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
    return section(name.replace("_", "-"), f"Goodput vs {what}", _fig(study, fig, name, cap + "."))


def improvement_section(study, points) -> tuple[tuple | None, pd.DataFrame]:
    factors = an.improvement_factors(points)
    if factors.empty:
        return None, factors
    _csv(study, an.stream_factors(points), "stream_factors")
    _csv(study, factors, "improvement_factors")
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
    return section("streams-factor", "Improvement factor from parallel streams", body, intro), factors


def collapse_section(study, points, axis) -> tuple[tuple | None, list[str]]:
    cp = an.collapse_points(points, axis)
    if cp.empty:
        return None, []
    _csv(study, cp, f"collapse_points_{axis.split('.')[-1]}")
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
    return section(f"collapse-{name}", f"Collapse points along {name}", body, intro), \
        fnd.collapse_lines(cp, axis)


def series_collapse_section(study, collapses) -> tuple | None:
    if collapses.empty:
        return None
    _csv(study, collapses, "run_collapses")
    hit = collapses[collapses["collapses"] > 0]
    if hit.empty:
        return None
    cols = ["run_id", "flow_group", "cc", "streams",
            *display_columns(study.runs, swept_columns(study.runs))]
    info = study.runs[[c for c in cols if c in study.runs.columns]]
    view = hit.merge(info, on=["run_id", "flow_group"], how="left")
    view = view.sort_values("collapsed_s", ascending=False)
    view = view.rename(columns={"collapsed_s": "collapsed (s)", **{k: figs.short_key(k) for k in cols}})
    return section("series-collapse", "Collapses within runs", table_html(view, scroll=len(view) > 25),
                   "A collapse: the flow group's goodput stays below 10 % of the run's median "
                   "(after warm-up) for at least 1 s.")


def fairness_section(study) -> tuple[tuple | None, list[str]]:
    if study.runs["flow_group"].nunique() < 2:
        return None, []
    fair = an.fairness_summary(study.runs)
    if fair.empty:
        return None, []
    _csv(study, fair, "fairness")
    keys = without_repeated_swept(fair, [k for k in ["backend", *swept_columns(study.runs)]
                                         if k in fair.columns and fair[k].nunique(dropna=False) > 1])
    fig = figs.fairness_figure(fair, keys)
    clamp = ["cwnd_clamp"] if fair["cwnd_clamp"].notna().any() else []
    view = fair[[*keys, "flow_group", "cc", *clamp, "streams", "kind", "n"]].rename(
        columns={k: figs.short_key(k) for k in [*keys, *clamp]}).copy()
    unit = rate_unit(fair["goodput_bps"].max())
    view[f"goodput ({unit[1]})"] = fair["goodput_bps"] / unit[0]
    view["share (%)"] = fair["share"] * 100
    view["share 95 % CI (%)"] = [f"{lo * 100:.1f} – {hi * 100:.1f}" if pd.notna(lo) else "–"
                                 for lo, hi in zip(fair["share_ci_low"], fair["share_ci_high"], strict=True)]
    view["Jain"] = fair["jain"]
    body = _fig(study, fig, "fairness", "Mean share of each flow group per sweep point.")
    body += table_html(view, scroll=len(view) > 25)
    return section("fairness", "Sharing the bottleneck", body,
                   "Share = a flow group's goodput / all groups' goodput in the same run; Jain's "
                   "index (Σx)²/(n·Σx²) over the groups, averaged over repetitions."), \
        fnd.fairness_lines(fair, keys)


def against_cubic_section(study) -> tuple[tuple | None, list[str]]:
    """The Netesto talk's "fairness against CUBIC" slide as a table: runs of
    one CUBIC flow group against one or more groups of another CCA X."""
    t = an.against_cubic(study.runs)
    if t.empty:
        return None, []
    _csv(study, t, "fairness_vs_cubic")
    point = [c for c in t.columns[: list(t.columns).index("cc")]
             if c != "backend" or t[c].nunique() > 1]
    view = pd.DataFrame({"X": t["cc"], "X flows": t["cc_flows"]})
    for k in point:
        view[figs.short_key(k)] = t[k]
    view["n"] = t["n"]
    view["CUBIC share (%)"] = t["cubic_share"] * 100
    view["95 % CI (%)"] = [f"{lo * 100:.1f} – {hi * 100:.1f}" if pd.notna(lo) else "–"
                           for lo, hi in zip(t["cubic_share_ci_low"], t["cubic_share_ci_high"], strict=True)]
    view["X share (%)"] = t["cc_share"] * 100
    view["fair CUBIC share (%)"] = t["fair_share"] * 100
    view["Jain"] = t["jain"]
    return section("against-cubic", "Fairness against CUBIC", table_html(view, scroll=len(view) > 25),
                   "Runs of one CUBIC flow group against one or more flow groups of one other CCA X "
                   "(RPC flows left out): CUBIC's share of the bulk goodput, X's share (all X groups "
                   "together), CUBIC's fair share 1/(flow groups) and Jain's index over the groups, "
                   "mean over repetitions (CUBIC as flow 0 or as a later flow pooled)."), \
        fnd.against_cubic_lines(t)


def rpc_section(study, keys: list[str]) -> tuple | None:
    runs = study.runs
    if study.rpcs.empty or "rpc_p50_s" not in runs.columns:
        return None
    rpc_runs = runs[(runs["kind"] == "rpc") & (runs["status"] == "ok")]
    if rpc_runs.empty:
        return None
    label_keys = [k for k in display_columns(runs, keys) if k in swept_columns(runs)
                  and runs[k].nunique(dropna=False) > 1]
    labels = {(r["run_id"], int(r["flow_group"])):
              (figs.point_label(r, label_keys) + ", " if label_keys else "") +
              f"flow {r['flow_group']} ({r['cc']})" for _, r in rpc_runs.iterrows()}
    warm = float(runs["warmup_s"].max()) if "warmup_s" in runs.columns else 0.0
    fig = figs.rpc_cdf(study.rpcs, labels, warm)
    rk = [*label_keys, "flow_group", "cc"]
    tables = []
    for q in ("p50", "p90", "p99", "p999"):
        s = an.grid_summary(rpc_runs, f"rpc_{q}_s", rk)
        tables.append(s[[*rk, "n", "mean"]].rename(columns={"mean": q}))
    t = tables[0]
    for other in tables[1:]:
        t = t.merge(other.drop(columns="n"), on=rk)
    ideal = an.grid_summary(rpc_runs, "rpc_ideal_s", rk)[[*rk, "mean"]].rename(columns={"mean": "ideal"})
    t = t.merge(ideal, on=rk)
    _csv(study, t, "rpc_latency")
    view = t.rename(columns={k: figs.short_key(k) for k in rk}).copy()
    for q, name in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"), ("ideal", "idle path")):
        view[f"{name} (ms)"] = view.pop(q) * 1e3
    body = _fig(study, fig, "rpc_cdf", "RPC completion time CDF per sweep point and RPC flow group.")
    body += table_html(view, "RPC completion time percentiles (mean over repetitions); idle path = "
                             "one RTT plus the response's serialization at the bottleneck rate")
    by_kind = kind_summary(runs[runs["status"] == "ok"], label_keys)
    _csv(study, by_kind, "goodput_by_flow_kind")
    view = by_kind.rename(columns={k: figs.short_key(k) for k in label_keys}).copy()
    view["goodput (Mbit/s)"] = view.pop("goodput_bps") / 1e6
    view["retransmissions (%)"] = view.pop("retrans_rate") * 100
    body += table_html(view, "Streaming (bulk) vs RPC flows: goodput summed over the flow groups of each "
                             "kind, retransmission rate of their segments (means over repetitions)")
    return section("rpc", "RPC latency", body)


def kind_summary(runs, label_keys: list[str]):
    """Goodput and retransmission rate per flow kind (bulk vs rpc) per grid
    point: goodput of an RPC group is its completed responses' bytes."""
    df = runs.copy()
    for col in ("goodput_bps", "rpc_goodput_bps", "retrans_rate"):
        if col not in df.columns:
            df[col] = float("nan")
    df["kind_goodput_bps"] = df["rpc_goodput_bps"].where(df["kind"] == "rpc", df["goodput_bps"])
    per_run = df.groupby(["run_id", *label_keys, "kind"], dropna=False).agg(
        goodput_bps=("kind_goodput_bps", "sum"), retrans_rate=("retrans_rate", "mean")).reset_index()
    return per_run.groupby([*label_keys, "kind"], dropna=False)[["goodput_bps", "retrans_rate"]].mean().reset_index()


def choose_run(study: ReportStudy, collapses: pd.DataFrame, requested: str | None) -> tuple[str, str]:
    """The run to plot: `requested`; else the run with the most collapsed
    time; else the longest run; ties go to the first run id."""
    ok = study.runs[study.runs["status"] == "ok"]
    if requested:
        if requested not in set(study.runs["run_id"]):
            raise ValueError(f"run {requested!r} is not in {study.root}/runs.parquet")
        return requested, "chosen on the command line"
    if not collapses.empty and collapses["collapsed_s"].max() > 0:
        c = collapses.sort_values(["collapsed_s", "run_id"], ascending=[False, True]).iloc[0]
        return c["run_id"], f"the run with the longest goodput collapse ({c['collapsed_s']:.1f} s)"
    longest = ok.sort_values(["duration_s", "run_id"], ascending=[False, True]).iloc[0]
    return longest["run_id"], "the first of the longest runs (no collapses found)"


def series_section(study, collapses, run_id, unit) -> tuple | None:
    if not (study.root / "series.parquet").exists() or study.runs[study.runs["status"] == "ok"].empty:
        return None
    rid, why = choose_run(study, collapses, run_id)
    s = study.read_series(run_id=rid)
    rows = study.runs[study.runs["run_id"] == rid]
    desc = "; ".join(f"flow {r['flow_group']}: {r['cc']}, {r['streams']} stream"
                     f"{'s' if r['streams'] != 1 else ''}, MSS {r['mss_bytes']} B"
                     for _, r in rows.iterrows())
    swept = ", ".join(f"{figs.short_key(k)} {fmt_num(rows.iloc[0][k])}"
                      for k in display_columns(study.runs, swept_columns(study.runs)))
    title = f"Run {rid}: {desc}" + (f" ({swept})" if swept else "")
    su = rate_unit(s["goodput_bps"].max()) if not s.empty else unit
    fig = figs.time_series(s, rows, title, su)
    body = _fig(study, fig, "timeseries", f"Per-stream samples of run {rid}, {why}. "
                "Choose another with `fatpipe report DIR --run RUN_ID`.")
    if body:
        warm = rows["warmup_s"].iloc[0] if "warmup_s" in rows.columns and len(rows) else None
        body = interactive.view_html(interactive.payload(s, rows, su, warm)) + body
    body += queue_figure_html(study, rid, rows)
    return section("timeseries", "Time series of one run", body) if body else None


def queue_figure_html(study: ReportStudy, rid: str, rows: pd.DataFrame) -> str:
    """The bottleneck's queue (and drops and CE marks) during run `rid`,
    when its backend sampled it ("" otherwise)."""
    ps = study.path_series
    ps = ps[ps["run_id"] == rid]
    first = rows.iloc[0] if len(rows) else {}
    fig = figs.queue_figure(ps, f"Bottleneck of run {rid}", first.get("buffer_bytes"), first.get("warmup_s"))
    return _fig(study, fig, "queue", f"Bottleneck queue of run {rid} at each sample (dashed: buffer size); "
                "drops and CE marks per interval when there were any.")


def failed_section(study) -> tuple | None:
    failed = study.runs[study.runs["status"] != "ok"]
    if failed.empty:
        return None
    t = failed.groupby("run_id", sort=True)["reason"].first().reset_index()
    return section("failed", "Failed runs", table_html(t))


# ---- the report -----------------------------------------------------------------


def build_sections(study: ReportStudy, run_id: str | None = None,
                   references: tuple[list, str] | None = None) -> tuple[list, list[str]]:
    """The report's sections and findings; `references` is (reference
    tables, where they come from), by default the study's own."""
    runs = study.runs
    keys = point_columns(runs)
    points = an.grid_summary(runs, "goodput_bps", keys)
    bulk = points[points["kind"] != "rpc"] if "kind" in points.columns else points
    unit = rate_unit(points["mean"].max() if points["mean"].notna().any() else 0)
    sections, lines = [], []
    axes = loss_axes(bulk)
    varies = {c: bulk[c].nunique() > 1 for c in ("streams", "mss_bytes")}
    factor_lines = []
    if varies["streams"]:
        sec, factors = improvement_section(study, bulk)
        factor_lines = fnd.improvement_lines(factors)
    lines += factor_lines
    lines += fnd.best_point_line(bulk, figs.line_keys(bulk, ()), unit)
    for axis in axes:
        s = loss_section(study, bulk, axis, unit)
        sections += [s] if s else []
    if varies["streams"]:
        s = factor_section(study, bulk, "streams", axes[0] if axes else None, unit)
        sections += [s] if s else []
        sections += [sec] if sec else []
    if varies["mss_bytes"]:
        s = factor_section(study, bulk, "mss_bytes", axes[0] if axes else None, unit)
        sections += [s] if s else []
        lines += fnd.mss_lines(bulk)
    for axis in axes:
        sec_c, cl = collapse_section(study, bulk, axis)
        sections += [sec_c] if sec_c else []
        lines += cl
        lines += fnd.model_lines(bulk, axis, _single(runs, "rate_bps"), _single(runs, "rtt_s"))
    if not axes and not any(varies.values()):
        fig = figs.goodput_bars(points, unit)
        if fig is not None:
            sections.append(section("goodput", "Goodput per grid point",
                                     _fig(study, fig, "goodput", "Mean goodput per grid point.")))
    sec_f, fl = fairness_section(study)
    sections += [sec_f] if sec_f else []
    lines += fl
    sec_c, cl = against_cubic_section(study)
    sections += [sec_c] if sec_c else []
    lines += cl
    rpc = rpc_section(study, keys)
    sections += [rpc] if rpc else []
    collapses = pd.DataFrame(columns=["run_id", "flow_group", "collapses", "collapsed_s"])
    if (study.root / "series.parquet").exists():
        collapses = refs.study_collapses(study)
        lines += fnd.series_collapse_lines(collapses, runs)
        sc = series_collapse_section(study, collapses)
        sections += [sc] if sc else []
    ts = series_section(study, collapses, run_id, unit)
    sections += [ts] if ts else []
    tables, origin = references or (study.spec.references if study.spec else [], "its study.toml")
    sec_r, rl = refs.references_section(study, tables, collapses, lambda fig, name, cap: _fig(study, fig, name, cap),
                                        lambda df, name: _csv(study, df, name), origin)
    if sec_r:
        sections.insert(0, sec_r)
        lines = rl + lines
    lines += fnd.flag_lines(runs)
    sections.append(grid_section(study, points, keys, unit))
    fs = failed_section(study)
    sections += [fs] if fs else []
    return sections, lines


def _subtitle(study: ReportStudy) -> str:
    r = study.runs
    n_runs = r["run_id"].nunique()
    ok = r[r["status"] == "ok"]["run_id"].nunique()
    parts = [f"{n_runs} runs ({ok} ok)", "backends: " + ", ".join(sorted(r["backend"].unique()))]
    for col, fmt in (("rate_bps", lambda v: fmt_rate(v)), ("rtt_s", lambda v: f"RTT {v * 1e3:g} ms"),
                     ("duration_s", lambda v: f"{v:g} s runs"),
                     ("warmup_s", lambda v: f"first {v:g} s excluded")):
        v = _single(r, col)
        if v is not None:
            parts.append(fmt(v))
    reps = r.groupby(point_columns(r), dropna=False)["run_id"].nunique()
    if len(reps):
        parts.append(f"{reps.max()} repetitions per grid point")
    return " · ".join(parts)


def reference_tables(path: str | Path | None) -> tuple[list, str] | None:
    """The [[references]] of the study file at `path` (validated), and a
    note of where they come from; None for no path."""
    if path is None:
        return None
    from ..spec import load
    return load(path)[0].references, f"from {Path(path).name}"


def write_report(study_dir: str | Path, run_id: str | None = None,
                 references: str | Path | None = None) -> Path:
    """Write DIR/report/report.html with its figures and CSV tables; return
    its path. `references`: a study file whose [[references]] to show
    instead of the study's own (results stored before they were written)."""
    study = load_study(study_dir)
    study.out.mkdir(parents=True, exist_ok=True)
    sections, lines = build_sections(study, run_id, reference_tables(references))
    files = "".join(f'<li><a href="{f}">{f}</a></li>' for f in sorted(set(study.files)))
    sections.append(section("files", "Files", f"<ul>{files}</ul>",
                            f"Written to {study.out} on "
                            f"{dt.datetime.now().strftime('%Y-%m-%d %H:%M')}; raw tables: "
                            "runs.parquet, series.parquet, rpcs.parquet in the study directory."))
    title = f"fatpipe report: {study.name}"
    sub = (study.description + " — " if study.description else "") + _subtitle(study)
    html = page(title, sub, findings_html(lines), sections)
    path = study.out / "report.html"
    path.write_text(html, encoding="utf-8")
    (study.out / "findings.json").write_text(json.dumps(lines, indent=1, ensure_ascii=False))
    return path
