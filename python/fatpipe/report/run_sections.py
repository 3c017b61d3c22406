"""The report's sections built from flow groups and single runs: sharing the
bottleneck, fairness against CUBIC, RPC latency, collapses within runs, and
the time series (and bottleneck queue) of one run.

Each builder returns a Section, or None when the data does not support it;
figures and CSV tables go through the report's ReportFiles. A section
carries the main findings drawn from its own tables."""

from __future__ import annotations

import pandas as pd

from .. import analysis as an
from ..analysis.stats import display_columns, swept_columns, without_repeated_swept
from ..analysis.transfers import transfer_summary
from ..loaded import LoadedStudy
from . import figures as figs
from . import findings as fnd
from . import interactive
from .files import ReportFiles
from .page import Section, fmt_num, rate_unit, table_html


def fairness_section(study: LoadedStudy, files: ReportFiles) -> Section | None:
    if study.runs["flow_group"].nunique() < 2:
        return None
    fair = an.fairness_summary(study.runs)
    if fair.empty:
        return None
    files.csv(fair, "fairness")
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
    body = files.figure(fig, "fairness", "Mean share of each flow group per sweep point.")
    body += table_html(view, scroll=len(view) > 25)
    return Section("fairness", "Sharing the bottleneck", body,
                   "Share = a flow group's goodput / all groups' goodput in the same run; Jain's "
                   "index (Σx)²/(n·Σx²) over the groups, averaged over repetitions.",
                   tuple(fnd.fairness_lines(fair, keys)))


def against_cubic_section(study: LoadedStudy, files: ReportFiles) -> Section | None:
    """The Netesto talk's "fairness against CUBIC" slide as a table: runs of
    one CUBIC flow group against one or more groups of another CCA X."""
    t = an.against_cubic(study.runs)
    if t.empty:
        return None
    files.csv(t, "fairness_vs_cubic")
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
    return Section("against-cubic", "Fairness against CUBIC", table_html(view, scroll=len(view) > 25),
                   "Runs of one CUBIC flow group against one or more flow groups of one other CCA X "
                   "(RPC flows left out): CUBIC's share of the bulk goodput, X's share (all X groups "
                   "together), CUBIC's fair share 1/(flow groups) and Jain's index over the groups, "
                   "mean over repetitions (CUBIC as flow 0 or as a later flow pooled).",
                   tuple(fnd.against_cubic_lines(t)))


def rpc_section(study: LoadedStudy, files: ReportFiles, keys: list[str]) -> Section | None:
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
    files.csv(t, "rpc_latency")
    view = t.rename(columns={k: figs.short_key(k) for k in rk}).copy()
    for q, name in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"), ("ideal", "idle path")):
        view[f"{name} (ms)"] = view.pop(q) * 1e3
    body = files.figure(fig, "rpc_cdf", "RPC completion time CDF per sweep point and RPC flow group.")
    body += table_html(view, "RPC completion time percentiles (mean over repetitions); idle path = "
                             "one RTT plus the response's serialization at the bottleneck rate")
    by_kind = kind_summary(runs[runs["status"] == "ok"], label_keys)
    files.csv(by_kind, "goodput_by_flow_kind")
    view = by_kind.rename(columns={k: figs.short_key(k) for k in label_keys}).copy()
    view["goodput (Mbit/s)"] = view.pop("goodput_bps") / 1e6
    view["retransmissions (%)"] = view.pop("retrans_rate") * 100
    body += table_html(view, "Streaming (bulk) vs RPC flows: goodput summed over the flow groups of each "
                             "kind, retransmission rate of their segments (means over repetitions)")
    return Section("rpc", "RPC latency", body)


def transfer_section(study: LoadedStudy, files: ReportFiles, keys: list[str]) -> Section | None:
    """Completion times of the transfer flows' data sets per grid point,
    repetitions pooled: mean (95 % CI), percentiles, largest and the
    coefficient of variation (analysis/transfers.py), with their CDF."""
    runs = study.runs
    if "transfer_count" not in runs.columns or not (runs["kind"] == "transfer").any():
        return None
    label_keys = [k for k in display_columns(runs, keys) if k in swept_columns(runs)
                  and runs[k].nunique(dropna=False) > 1]
    point_keys = [k for k in ("backend", *label_keys) if k in runs.columns]
    t = transfer_summary(runs, study.transfers, point_keys)
    if t.empty:
        return None
    files.csv(t, "transfer_completion")
    ok = runs[(runs["kind"] == "transfer") & (runs["status"] == "ok")]
    labels = {(r["run_id"], int(r["flow_group"])):
              figs.point_label(r, point_keys) + f", flow {r['flow_group']} ({r['cc']})" for _, r in ok.iterrows()}
    fig = figs.rpc_cdf(study.transfers, labels, what="data set")
    view = t[[*point_keys, "flow_group", "cc", "streams"]].rename(columns={k: figs.short_key(k) for k in point_keys})
    view["size (MB)"] = t["size_bytes"] / 1e6
    view["completed"] = [f"{c} / {s}" for c, s in zip(t["completed"], t["started"], strict=True)]
    view["mean (s)"] = t["fct_mean_s"]
    view["95 % CI (s)"] = [f"{lo:.3g} – {hi:.3g}" if pd.notna(lo) else "–"
                           for lo, hi in zip(t["fct_ci_low_s"], t["fct_ci_high_s"], strict=True)]
    for q in ("p50", "p95", "p99", "max"):
        view[f"{q} (s)"] = t[f"fct_{q}_s"]
    view["CV"] = t["fct_cv"]
    view["size / time (Mbit/s)"] = t["goodput_bps"] / 1e6
    body = files.figure(fig, "transfer_cdf", "Completion time CDF of the data sets per grid point and flow group.")
    body += table_html(view, "Completion times of the data sets, repetitions pooled: from a data set's start "
                             "until the receiver had its last byte; CV = standard deviation / mean")
    return Section("transfers", "Transfer completion times", body,
                   "Each data set is one sample; a data set still moving at its run's end counts as started "
                   "but not completed.")


def readback_section(study: LoadedStudy) -> Section | None:
    """What the sockets of runs on real Linux said they ran with (the runs'
    facts ``streams_read_back``: linuxpath/readback.py), per backend and
    flow group over every stream of every run: each distinct value."""
    ok = study.runs[study.runs["status"] == "ok"]
    seen: dict[tuple[str, int], dict[str, set]] = {}
    cols = {"ccas": "CCA (TCP_CONGESTION)", "snd_mss_bytes": "MSS (tcpi_snd_mss)",
            "snd_wscale": "window scale", "sack": "SACK", "timestamps": "timestamps", "ecn": "ECN",
            "max_pacing_rate_bps": "max pacing rate (Mbit/s)"}
    for run_id, backend in ok[["run_id", "backend"]].drop_duplicates().itertuples(index=False):
        try:
            facts = study.run_facts(run_id)
        except KeyError:  # a study whose run records are gone (rebuilt tables)
            continue
        for s in facts.get("streams_read_back", []):
            cell = seen.setdefault((backend, int(s["flow_group"])), {c: set() for c in cols} | {"streams": set()})
            cell["streams"].add((run_id, s["stream"]))
            for c in cols:
                v = s.get(c)
                if c == "ccas":
                    v = "/".join(v)
                elif c == "max_pacing_rate_bps":
                    v = "not set" if v is None else f"{v / 1e6:.3f}"
                cell[c].add(v)
    if not seen:
        return None
    asked = ok.drop_duplicates(["backend", "flow_group"]).set_index(["backend", "flow_group"])
    rows = []
    for (backend, group), cell in sorted(seen.items()):
        row = {"backend": backend, "flow": group, "asked CCA": asked.loc[(backend, group), "cc"],
               "asked MSS": asked.loc[(backend, group), "mss_bytes"], "streams": len(cell["streams"])}
        for c, title in cols.items():
            row[title] = ", ".join(str(v) for v in sorted(cell[c], key=str))
        rows.append(row)
    return Section("readback", "What the sockets ran with", table_html(pd.DataFrame(rows)),
                   "Read back from every sampled socket of the runs on real Linux (TCP_CONGESTION, TCP_INFO): "
                   "each distinct value over the streams and repetitions. A run whose CCA, pacing rate or MSS "
                   "differed from what it asked for failed, naming the stream.")


def kind_summary(runs: pd.DataFrame, label_keys: list[str]) -> pd.DataFrame:
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


def series_collapse_section(study: LoadedStudy, files: ReportFiles, collapses: pd.DataFrame) -> Section | None:
    """The runs whose goodput collapsed for a while (run_collapses.csv holds
    every run × flow group, collapsed or not)."""
    if collapses.empty:
        return None
    files.csv(collapses, "run_collapses")
    hit = collapses[collapses["collapses"] > 0]
    if hit.empty:
        return None
    cols = ["run_id", "flow_group", "cc", "streams",
            *display_columns(study.runs, swept_columns(study.runs))]
    info = study.runs[[c for c in cols if c in study.runs.columns]]
    view = hit.merge(info, on=["run_id", "flow_group"], how="left")
    view = view.sort_values("collapsed_s", ascending=False)
    view = view.rename(columns={"collapsed_s": "collapsed (s)", **{k: figs.short_key(k) for k in cols}})
    return Section("series-collapse", "Collapses within runs", table_html(view, scroll=len(view) > 25),
                   "A collapse: the flow group's goodput stays below 10 % of the run's median "
                   "(after warm-up) for at least 1 s.")


def choose_run(study: LoadedStudy, collapses: pd.DataFrame, requested: str | None) -> tuple[str, str]:
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


def series_section(study: LoadedStudy, files: ReportFiles, collapses: pd.DataFrame, run_id: str | None,
                   unit: tuple[float, str]) -> Section | None:
    """One run's per-stream samples: the interactive view above the static
    figure, then the bottleneck's queue when the backend sampled it."""
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
    fig = figs.time_series(s, rows, title, su, path_steps(study, rid), app_steps(study, rid))
    body = files.figure(fig, "timeseries", f"Per-stream samples of run {rid}, {why}. "
                        "Choose another with `fatpipe report DIR --run RUN_ID`.")
    if body:
        warm = rows["warmup_s"].iloc[0] if "warmup_s" in rows.columns and len(rows) else None
        body = interactive.view_html(interactive.payload(s, rows, su, warm)) + body
    body += queue_figure_html(study, files, rid, rows)
    return Section("timeseries", "Time series of one run", body) if body else None


def path_steps(study: LoadedStudy, rid: str) -> list[tuple[float, float, float]] | None:
    """The link's rate and propagation RTT over run `rid` when its path has
    a schedule that changes either at times ((from s, bit/s, s) steps),
    else None. A step that waits for a sender's state (`on`) has no time
    in the plan and is left out."""
    plan = study.run_plan(rid)
    timed = [s for s in plan.dynamics.schedule if s.at_s is not None] if plan is not None else []
    if plan is None or plan.rate_bps is None or plan.rtt_s is None or \
            not any(s.rate_bps is not None or s.rtt_s is not None for s in timed):
        return None
    steps = [(0.0, plan.rate_bps, plan.rtt_s)]
    for s in timed:
        _, rate, rtt = steps[-1]
        steps.append((s.at_s, s.rate_bps if s.rate_bps is not None else rate, s.rtt_s if s.rtt_s is not None else rtt))
    return steps


def app_steps(study: LoadedStudy, rid: str) -> list[tuple[int, list[tuple[float, float | None]]]] | None:
    """Each application-limited flow group of run `rid` with its streams'
    write rate over the run (AppLimit.write_rate_steps), else None."""
    plan = study.run_plan(rid)
    out = [(f.group, f.app.write_rate_steps()) for f in plan.flows if f.app is not None] if plan else []
    return out or None


def queue_figure_html(study: LoadedStudy, files: ReportFiles, rid: str, rows: pd.DataFrame) -> str:
    """The bottleneck's queue (and drops and CE marks) during run `rid`,
    when its backend sampled it ("" otherwise)."""
    ps = study.path_series
    ps = ps[ps["run_id"] == rid]
    first = rows.iloc[0] if len(rows) else {}
    fig = figs.queue_figure(ps, f"Bottleneck of run {rid}", first.get("buffer_bytes"), first.get("warmup_s"))
    return files.figure(fig, "queue", f"Bottleneck queue of run {rid} at each sample (dashed: buffer size); "
                        "drops and CE marks per interval when there were any.")
