"""Matplotlib (Agg) figures of a study. Each function takes tables and
returns a Figure, or None when the data cannot support the figure."""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.ticker
import numpy as np
import pandas as pd

from ..analysis import models
from ..analysis.stats import repeats_group_column, without_repeated_swept
from .page import cc_color, point_label, pyplot, short_key

plt = pyplot()
STAT_COLUMNS = {"n", "mean", "sd", "ci_low", "ci_high", "failed", "flags"}
LINESTYLES = ["-", "--", ":", "-."]


def _keys(points: pd.DataFrame) -> list[str]:
    return [c for c in points.columns if c not in STAT_COLUMNS]


def _varying(points: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """Keys that take more than one value, keys swept together shown once."""
    return without_repeated_swept(points, [k for k in keys if points[k].nunique(dropna=False) > 1])


def line_keys(points: pd.DataFrame, exclude: Sequence[str]) -> list[str]:
    """Keys that vary among `points`, minus `exclude` and minus swept keys
    that the flow group's own columns already determine (``path.mtu`` given
    the MSS, ``flows.0.cc`` given the CCA of group 0)."""
    return [k for k in _varying(points, _keys(points))
            if k not in exclude and not repeats_group_column(points, k)]


def _grid(n: int, ncols: int = 2, w: float = 6.2, h: float = 4.0):
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _errorbar(ax, x, mean, lo, hi, **kw):
    mean = np.asarray(mean, dtype=float)
    yerr = np.vstack([mean - np.asarray(lo, dtype=float), np.asarray(hi, dtype=float) - mean])
    yerr = np.where(np.isfinite(yerr), np.maximum(yerr, 0), 0)
    ax.errorbar(x, mean, yerr=yerr, capsize=3, marker="o", markersize=4, **kw)


def goodput_vs_loss(points: pd.DataFrame, axis: str, unit: tuple[float, str],
                    rate_bps: float | None, rtt_s: float | None):
    """Mean goodput (95 % CI bars) vs loss or corruption on log axes, one
    panel per CCA, one line per stream count (colour) and MSS (style), with
    the Mathis and RFC 9438 CUBIC references for one stream."""
    pts = points[(points[axis] > 0) & points["mean"].notna()]
    if pts.empty or pts[axis].nunique() < 2:
        return None
    div, uname = unit
    keys = line_keys(pts, (axis, "cc"))
    ccs = list(dict.fromkeys(pts["cc"]))
    fig, axes = _grid(len(ccs))
    streams_levels = sorted(pts["streams"].unique())
    cmap = plt.get_cmap("viridis")
    mss_levels = sorted(pts["mss_bytes"].unique())
    xs = np.logspace(math.log10(pts[axis].min()), math.log10(pts[axis].max()), 80)
    for ax, cc in zip(axes, ccs, strict=True):
        sub = pts[pts["cc"] == cc]
        groups = sub.groupby(keys, sort=True) if keys else [((), sub)]
        for _key, g in groups:
            g = g.sort_values(axis)
            first = g.iloc[0]
            si = streams_levels.index(first["streams"])
            color = cmap(si / max(1, len(streams_levels) - 1) * 0.85)
            ls = LINESTYLES[mss_levels.index(first["mss_bytes"]) % len(LINESTYLES)]
            _errorbar(ax, g[axis], g["mean"] / div, g["ci_low"] / div, g["ci_high"] / div,
                      color=color, linestyle=ls, label=point_label(first, keys))
        if rtt_s:
            for mss in mss_levels:
                p = xs if axis == "path.loss" else models.packet_loss_probability(0.0, xs, mss)
                ls = LINESTYLES[mss_levels.index(mss) % len(LINESTYLES)]
                ax.plot(xs, models.mathis_bps(mss, rtt_s, p, cap_bps=rate_bps) / div,
                        color="0.45", linewidth=1, linestyle=ls,
                        label=f"Mathis, 1 stream, MSS {mss} B")
                if str(cc).lower().startswith("cubic"):
                    ax.plot(xs, models.cubic_bps(mss, rtt_s, p, cap_bps=rate_bps) / div,
                            color="#ff7f0e", linewidth=1.2, linestyle=ls,
                            label=f"RFC 9438 CUBIC, 1 stream, MSS {mss} B")
        if rate_bps:
            ax.axhline(rate_bps / div, color="k", linewidth=0.8, alpha=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{cc}: goodput vs {short_key(axis)}")
        ax.set_xlabel(f"{short_key(axis)} probability" + (" per packet" if axis == "path.loss" else " per bit"))
        ax.set_ylabel(f"goodput ({uname})")
    _shared_legend(fig, axes)
    return fig


def _shared_legend(fig, axes, ncol: int = 4) -> None:
    """One legend below all panels, each label once."""
    seen: dict[str, object] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, h)
    ncol = max(1, min(ncol, len(seen)))
    rows = math.ceil(len(seen) / ncol)
    height = fig.get_size_inches()[1]
    bottom = min(0.4, (0.28 * rows + 0.3) / height)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=ncol, frameon=False,
               fontsize=9, bbox_to_anchor=(0.5, 0))


def goodput_vs_factor(points: pd.DataFrame, x: str, unit: tuple[float, str], panel: str | None):
    """Mean goodput (95 % CI bars) vs `x` (streams or mss_bytes), one line per
    CCA and the other flow factor, one panel per value of `panel`."""
    pts = points[points["mean"].notna()]
    if pts.empty or pts[x].nunique() < 2:
        return None
    div, uname = unit
    other = "mss_bytes" if x == "streams" else "streams"
    if x == "mss_bytes":  # one and the most streams keep the figure readable
        pts = pts[pts["streams"].isin([pts["streams"].min(), pts["streams"].max()])]
    panels = sorted(pts[panel].unique()) if panel else [None]
    fig, axes = _grid(len(panels), ncols=2 if len(panels) == 4 else 3, w=5.6, h=3.8)
    other_levels = sorted(pts[other].unique())
    ccs = list(dict.fromkeys(pts["cc"]))
    keys = line_keys(pts, (x, panel, "cc", other))
    for ax, pv in zip(axes, panels, strict=True):
        sub = pts if pv is None else pts[pts[panel] == pv]
        for _key, g in sub.groupby(["cc", other, *keys], sort=False):
            g = g.sort_values(x)
            first = g.iloc[0]
            ls = LINESTYLES[other_levels.index(first[other]) % len(LINESTYLES)]
            label = point_label(first, ["cc", other, *keys]) if len(other_levels) > 1 or keys \
                else str(first["cc"])
            _errorbar(ax, g[x], g["mean"] / div, g["ci_low"] / div, g["ci_high"] / div,
                      color=cc_color(first["cc"], ccs.index(first["cc"])), linestyle=ls,
                      label=label)
        if x == "mss_bytes":
            ax.set_xticks(sorted(pts[x].unique()))
        if x == "streams":
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(pts[x].unique()))
            ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("parallel streams" if x == "streams" else "MSS (bytes)")
        ax.set_ylabel(f"goodput ({uname})")
        lo, hi = sub["mean"].min(), sub["mean"].max()
        if lo > 0 and hi / lo > 30:  # orders of magnitude apart: log scale
            ax.set_yscale("log")
            ax.set_ylabel(f"goodput ({uname}, log scale)")
        else:
            ax.set_ylim(bottom=0)
        title = "goodput vs " + ("parallel streams" if x == "streams" else "MSS")
        ax.set_title(title if pv is None else f"{short_key(panel)} = {pv:g}" if isinstance(pv, float)
                     else f"{short_key(panel)} = {pv}")
    _shared_legend(fig, axes)
    return fig


def time_series(series: pd.DataFrame, groups: pd.DataFrame, title: str, unit: tuple[float, str],
                path_steps: list[tuple[float, float, float]] | None = None,
                app_steps: list[tuple[int, list[tuple[float, float | None]]]] | None = None):
    """Per-stream goodput, cwnd, sRTT & min RTT, retransmissions of one run.
    `groups` maps flow_group → cc/streams (the run's rows of the runs table).
    `path_steps` ((from s, rate bit/s, RTT s), a path that moves): the link's
    rate over the goodput and the propagation RTT over the RTTs, as steps.
    `app_steps` ((group, [(from s, bit/s or None: unlimited)]), application-
    limited flows): each stream's write rate over the goodput, as steps."""
    if series.empty:
        return None
    div, uname = unit
    fig, axes = plt.subplots(4, 1, figsize=(12, 11), sharex=True)
    gi = {int(r["flow_group"]): r for _, r in groups.iterrows()}
    many = series.groupby(["flow_group", "stream"]).ngroups > 12
    for (group, stream), s in series.groupby(["flow_group", "stream"], sort=True):
        s = s.sort_values("t_s")
        row = gi.get(int(group))
        cc = row["cc"] if row is not None else "?"
        color = f"C{int(group) % 10}" if len(gi) > 1 else f"C{int(stream) % 10}"
        label = None if many else f"flow {group} ({cc}) stream {stream}"
        kw = {"color": color, "linewidth": 0.7 if many else 1.1, "alpha": 0.6 if many else 0.9}
        axes[0].plot(s["t_s"], s["goodput_bps"] / div, label=label, **kw)
        axes[1].plot(s["t_s"], s["cwnd_segments"], **kw)
        axes[2].plot(s["t_s"], s["srtt_s"] * 1e3, **kw)
        axes[2].plot(s["t_s"], s["min_rtt_s"] * 1e3, linestyle="--", **{**kw, "linewidth": 0.8})
        axes[3].plot(s["t_s"], s["retrans_segments"].diff().clip(lower=0), **kw)
    several = series.groupby("flow_group")["stream"].nunique()
    if len(gi) > 1 and (several > 1).any() or many:
        tot = series.assign(t=series["t_s"].round(3)).groupby(["flow_group", "t"])["goodput_bps"].sum()
        for group, t in tot.groupby(level=0):
            if several.get(group, 1) < 2:
                continue
            row = gi.get(int(group))
            axes[0].plot(t.index.get_level_values(1), t.values / div,
                         color=f"C{int(group) % 10}" if len(gi) > 1 else "k", linewidth=2,
                         label=f"flow {group} ({row['cc'] if row is not None else '?'}) total")
    warm = groups["warmup_s"].iloc[0] if "warmup_s" in groups.columns and len(groups) else None
    for ax in axes:
        if warm:
            ax.axvspan(0, warm, color="0.85", alpha=0.5, linewidth=0)
    if path_steps:
        end = float(series["t_s"].max())
        ts = [t for t, _, _ in path_steps] + [end]
        axes[0].step(ts, [r / div for _, r, _ in path_steps] + [path_steps[-1][1] / div], where="post", color="k",
                     linestyle=":", linewidth=1.2, label="link rate (schedule)")
        axes[2].step(ts, [rtt * 1e3 for _, _, rtt in path_steps] + [path_steps[-1][2] * 1e3], where="post",
                     color="k", linestyle=":", linewidth=1.2)
    for group, steps in app_steps or []:
        end = float(series["t_s"].max())
        rates = [np.nan if r is None else r / div for _, r in steps]
        axes[0].step([t for t, _ in steps] + [end], rates + rates[-1:], where="post", color=f"C{group % 10}",
                     linestyle="--", linewidth=1.2, label=f"flow {group} write rate per stream (app)")
    axes[0].set_ylabel(f"goodput ({uname})")
    axes[1].set_ylabel("cwnd (segments)")
    axes[2].set_ylabel("RTT (ms)\nsolid sRTT, dashed min")
    axes[3].set_ylabel("retransmitted\nsegments / interval")
    axes[3].set_xlabel("time since start (s); grey: warm-up, excluded from statistics")
    axes[0].set_title(title)
    axes[0].legend(loc="upper right", ncol=2)
    fig.tight_layout()
    return fig


def queue_figure(path_series: pd.DataFrame, title: str, buffer_bytes: float | None, warmup_s: float | None):
    """The bottleneck of one run: queue occupancy at each sample (with the
    buffer size), and drops and CE marks per interval (differences of the
    cumulative counters). None without samples."""
    if path_series.empty:
        return None
    p = path_series.sort_values("t_s")
    counters = p[["queue_drops", "ce_marks"]].diff().fillna(p[["queue_drops", "ce_marks"]]).clip(lower=0)
    marks = bool((counters.to_numpy() > 0).any())
    fig, axes = plt.subplots(2 if marks else 1, 1, figsize=(12, 6.5 if marks else 3.8), sharex=True, squeeze=False)
    axes = axes[:, 0]
    axes[0].plot(p["t_s"], p["queue_bytes"] / 1e3, color="C0", linewidth=1.1, label="queued")
    if buffer_bytes:
        axes[0].axhline(buffer_bytes / 1e3, color="k", linestyle="--", linewidth=0.8, label="buffer")
    axes[0].set_ylabel("bottleneck queue (kB)")
    axes[0].set_ylim(bottom=0)
    axes[0].legend(loc="upper right")
    axes[0].set_title(title)
    if marks:
        axes[1].plot(p["t_s"], counters["queue_drops"], color="C3", label="drops", drawstyle="steps-pre")
        axes[1].plot(p["t_s"], counters["ce_marks"], color="C2", label="CE marks", drawstyle="steps-pre")
        axes[1].set_ylabel("packets / interval")
        axes[1].legend(loc="upper right")
    for ax in axes:
        if warmup_s:
            ax.axvspan(0, warmup_s, color="0.85", alpha=0.5, linewidth=0)
    axes[-1].set_xlabel("time since start (s); grey: warm-up")
    fig.tight_layout()
    return fig


def fairness_figure(fair: pd.DataFrame, point_keys: Sequence[str]):
    """Stacked bars of each flow group's mean share per sweep point, with the
    mean Jain index above each bar."""
    if fair.empty:
        return None
    points = list(fair.groupby(list(point_keys), sort=False, dropna=False)) if point_keys \
        else [((), fair)]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(points) + 3), 4.6))
    for x, (_key, g) in enumerate(points):
        bottom = 0.0
        for _, r in g.sort_values("flow_group").iterrows():
            color = f"C{int(r['flow_group']) % 10}"
            ax.bar(x, r["share"] * 100, bottom=bottom, color=color, edgecolor="white", width=0.7)
            if r["share"] > 0.06:
                clamp = r.get("cwnd_clamp")
                name = r["cc"] if clamp is None or pd.isna(clamp) else f"{r['cc']} ≤{int(clamp)}"
                ax.text(x, bottom + r["share"] * 50, f"{name}\n{r['share'] * 100:.0f} %",
                        ha="center", va="center", fontsize=8, color="white")
            bottom += r["share"] * 100
        ax.text(x, 102, f"J={g['jain'].iloc[0]:.2f}", ha="center", va="bottom", fontsize=9)
    labels = [point_label(g.iloc[0], point_keys) or "all" for _, g in points]
    ax.set_xticks(range(len(points)), labels, rotation=20 if len(points) > 4 else 0, ha="right"
                  if len(points) > 4 else "center")
    ax.set_ylim(0, 112)
    ax.set_ylabel("share of total goodput (%)")
    ax.set_title("Per-flow share of goodput after warm-up (J = Jain's index, 1 = equal)")
    ax.grid(axis="x", visible=False)
    fig.tight_layout()
    return fig


def rpc_cdf(rpcs: pd.DataFrame, labels: dict, warmup_s: float = 0.0, what: str = "RPC"):
    """CDF of completion time (ms, log x) per sweep point and group: of the
    RPCs (started after the warm-up), or of the transfers table's data sets
    (`what`). `labels` maps (run_id, flow_group) → the line's label; runs of
    the same label (repetitions) are pooled."""
    if rpcs.empty:
        return None
    df = rpcs[rpcs["start_s"] >= warmup_s].copy()
    df["label"] = [labels.get((r, int(g))) for r, g in zip(df["run_id"], df["flow_group"], strict=True)]
    df = df.dropna(subset=["label"])
    if df.empty:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.6))
    for i, (label, g) in enumerate(df.groupby("label", sort=False)):
        d = np.sort(g["duration_s"].to_numpy() * 1e3)
        ax.plot(d, np.arange(1, d.size + 1) / d.size, label=label, color=f"C{i % 10}")
    ax.set_xscale("log")
    ax.set_xlabel(f"{what} completion time (ms, log scale)")
    ax.set_ylabel(f"fraction of {what}s ≤ x")
    ax.set_ylim(0, 1.01)
    pooled = "after warm-up, repetitions pooled" if warmup_s > 0 else "repetitions pooled"
    ax.set_title(f"{what} completion time distribution ({pooled})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def goodput_bars(points: pd.DataFrame, unit: tuple[float, str]):
    """Fallback: mean goodput (95 % CI) per grid point as horizontal bars."""
    pts = points[points["mean"].notna()]
    if pts.empty or len(pts) > 60:
        return None
    div, uname = unit
    keys = _varying(pts, _keys(pts)) or ["cc"]
    labels = [point_label(r, keys) for _, r in pts.iterrows()]
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(pts) + 1.5))
    y = np.arange(len(pts))
    err = np.vstack([pts["mean"] - pts["ci_low"], pts["ci_high"] - pts["mean"]]) / div
    err = np.where(np.isfinite(err), err, 0)
    ax.barh(y, pts["mean"] / div, xerr=err, capsize=3,
            color=[cc_color(c, i) for i, c in enumerate(pts["cc"])])
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"mean goodput ({uname}), bars: 95 % CI")
    ax.set_title("Goodput per grid point")
    fig.tight_layout()
    return fig


def reference_figure(comparison: pd.DataFrame, scale: dict[str, tuple[float, str]]):
    """fatpipe's number (dot, bars: 95 % CI where there is one) beside each
    reference value (open diamond), one panel per reference table.
    `comparison` is analysis.references.compare's table with a ``label``
    column; `scale` maps each table's title to (divisor, unit name)."""
    tables = [(t, g) for t, g in comparison.groupby("table", sort=False) if g["fatpipe"].notna().any()]
    if not tables:
        return None
    fig, axes = _grid(len(tables), ncols=1, w=max(7.0, min(16.0, 0.55 * comparison.groupby("table").size().max()
                                                            + 4)), h=3.9)
    for ax, (title, g) in zip(axes, tables, strict=True):
        div, uname = scale[title]
        x = np.arange(len(g))
        mean = g["fatpipe"].to_numpy(dtype=float) / div
        lo = g["ci_low"].to_numpy(dtype=float) / div
        hi = g["ci_high"].to_numpy(dtype=float) / div
        lo, hi = np.where(np.isfinite(lo), lo, mean), np.where(np.isfinite(hi), hi, mean)
        _errorbar(ax, x, mean, lo, hi, color="C0", linestyle="none", label="fatpipe (mean, 95 % CI)")
        ref = g["reference"].to_numpy(dtype=float) / div
        ax.plot(x, ref, linestyle="none", marker="D", markersize=7, markerfacecolor="none",
                markeredgecolor="k", label="reference")
        vals = np.concatenate([mean[np.isfinite(mean)], ref])
        pos = vals[vals > 0]
        if pos.size and pos.max() / pos.min() > 30:
            ax.set_yscale("log")  # references of 0 (a talk's "~0") cannot be drawn there
        else:
            ax.set_ylim(bottom=0)
        ax.set_xticks(x, g["label"], rotation=25 if len(g) > 4 else 0, ha="right" if len(g) > 4 else "center",
                      fontsize=8)
        ax.set_xlim(-0.6, len(g) - 0.4)
        ax.set_ylabel(uname)
        ax.set_title(title)
        ax.grid(axis="x", visible=False)
    _shared_legend(fig, axes, ncol=2)
    return fig
