"""The report's "main findings": short sentences computed from the tables.

Every sentence is derived from the data; none is written in advance. Each
function returns a list of sentences (empty when it has nothing to say).
"""

from __future__ import annotations

import math

import pandas as pd

from ..analysis import models
from .page import fmt_rate, point_label


def _g(x: float) -> str:
    return f"{x:.3g}"


def improvement_lines(factors: pd.DataFrame) -> list[str]:
    out = []
    for _, r in factors.sort_values("avg", ascending=False).iterrows():
        n = int(r["conditions"])
        span = f"{r['streams']} streams vs 1, {n} condition{'s' if n != 1 else ''}"
        if r["avg"] >= 1.1:
            verb = f"parallel streams raise goodput {r['avg']:.2f}× on average"
        elif r["avg"] <= 0.9:
            verb = f"parallel streams lower goodput to {r['avg']:.2f}× on average"
        else:
            verb = f"parallel streams change goodput little ({r['avg']:.2f}× on average)"
        out.append(f"{r['cc']}: {verb} (max {r['max']:.2f}×, min {r['min']:.2f}×; {span}).")
    return out


def best_point_line(points: pd.DataFrame, keys: list[str], unit) -> list[str]:
    pts = points.dropna(subset=["mean"])
    if len(pts) < 2:
        return []
    best = pts.loc[pts["mean"].idxmax()]
    worst = pts.loc[pts["mean"].idxmin()]
    return [f"Highest mean goodput: {fmt_rate(best['mean'], unit)} ({point_label(best, keys)}); "
            f"lowest: {fmt_rate(worst['mean'], unit)} ({point_label(worst, keys)})."]


def collapse_lines(cpoints: pd.DataFrame, axis: str) -> list[str]:
    """Per CCA: the smallest collapse point over configurations with 1 stream
    and with the most streams, and how much more loss the streams tolerate."""
    if cpoints.empty:
        return []
    name = axis.split(".")[-1]
    out = []
    for cc, g in cpoints.groupby("cc", sort=True):
        by_n = {}
        for n, gn in g.groupby("streams"):
            at = gn["collapse_at"].dropna()
            by_n[int(n)] = (float(at.min()) if not at.empty else math.nan,
                            float(gn["last_measured"].max()))
        ends = sorted({min(by_n), max(by_n)})
        if all(math.isnan(by_n[n][0]) for n in ends):
            counts = " or ".join(str(n) for n in ends)
            out.append(f"{cc}: no goodput collapse up to {name} "
                       f"{_g(max(by_n[n][1] for n in ends))} with {counts} "
                       f"stream{'s' if ends[-1] != 1 else ''}.")
            continue
        parts = []
        for n in ends:
            at, last = by_n[n]
            s = f"{n} stream{'s' if n != 1 else ''}"
            parts.append(f"none up to {name} {_g(last)} with {s}" if math.isnan(at)
                         else f"from {name} {_g(at)} with {s}")
        text = f"{cc}: goodput collapse (< 10 % of its lowest-{name} goodput) " + "; ".join(parts)
        if len(ends) == 2:
            (a_lo, _), (a_hi, last_hi) = by_n[ends[0]], by_n[ends[1]]
            if not math.isnan(a_lo) and not math.isnan(a_hi) and a_hi > a_lo:
                text += f": {a_hi / a_lo:.3g}× more {name} tolerated with parallel streams"
            elif not math.isnan(a_lo) and math.isnan(a_hi):
                text += f": ≥ {last_hi / a_lo:.3g}× more {name} tolerated with parallel streams"
        out.append(text + ".")
    return out


def mss_lines(points: pd.DataFrame) -> list[str]:
    """One sentence: per CCA, the mean goodput ratio of the largest to the
    smallest MSS at otherwise equal factors."""
    if points["mss_bytes"].nunique() < 2:
        return []
    stat = {"n", "mean", "sd", "ci_low", "ci_high", "failed", "flags"}
    cond = [c for c in points.columns if c not in stat and c not in ("mss_bytes", "path.mtu")
            and not c.endswith(".mss")]
    small, large = points["mss_bytes"].min(), points["mss_bytes"].max()
    ratios: dict[str, list[float]] = {}
    for _, g in points.dropna(subset=["mean"]).groupby(cond, dropna=False):
        a, b = g[g["mss_bytes"] == small], g[g["mss_bytes"] == large]
        if len(a) and len(b) and a["mean"].iloc[0] > 0:
            ratios.setdefault(g["cc"].iloc[0], []).append(b["mean"].iloc[0] / a["mean"].iloc[0])
    if not ratios:
        return []
    per = ", ".join(f"{cc} {sum(r) / len(r):.2f}× (range {min(r):.2f}–{max(r):.2f})"
                    for cc, r in sorted(ratios.items(), key=lambda kv: -sum(kv[1]) / len(kv[1])))
    return [f"MSS {large} B vs {small} B multiplies mean goodput by: {per}, "
            f"at otherwise equal factors."]


def model_lines(points: pd.DataFrame, axis: str, rate_bps: float | None,
                rtt_s: float | None) -> list[str]:
    """Single-stream reno/cubic measured vs the Mathis / RFC 9438 model, over
    points where the model is below 90 % of the bottleneck (not capped)."""
    if not rtt_s or axis not in points.columns:
        return []
    out = []
    pts = points[(points["streams"] == 1) & (points[axis] > 0)].dropna(subset=["mean"])
    for cc, model, name in (("reno", models.mathis_bps, "Mathis"),
                            ("cubic", models.cubic_bps, "RFC 9438 CUBIC")):
        sub = pts[pts["cc"].astype(str).str.lower() == cc]
        ratios = []
        for _, r in sub.iterrows():
            p = r[axis] if axis == "path.loss" else models.packet_loss_probability(
                0.0, r[axis], r["mss_bytes"])
            m = model(r["mss_bytes"], rtt_s, p)
            if rate_bps and m > 0.9 * rate_bps:
                continue
            ratios.append(r["mean"] / m)
        if ratios:
            out.append(f"{cc}, 1 stream: measured goodput is {sum(ratios) / len(ratios):.2f}× the "
                       f"{name} model on average ({len(ratios)} points below the link rate).")
    return out


def fairness_lines(fair: pd.DataFrame, keys: list[str]) -> list[str]:
    if fair.empty:
        return []
    per_point = fair.groupby(keys, dropna=False, sort=False) if keys else [((), fair)]
    worst = None
    for _, g in per_point:
        if worst is None or g["jain"].iloc[0] < worst["jain"].iloc[0]:
            worst = g
    mean_j = fair.drop_duplicates(subset=keys or None)["jain"].mean() if keys else fair["jain"].iloc[0]
    shares = ", ".join(f"{r['cc']} (flow {r['flow_group']}) {r['share'] * 100:.0f} %"
                       for _, r in worst.sort_values("flow_group").iterrows())
    where = point_label(worst.iloc[0], keys) if keys else "all runs"
    return [f"Jain's index averages {mean_j:.2f} over sweep points; least fair: {where} "
            f"with J = {worst['jain'].iloc[0]:.2f} ({shares})."]


def against_cubic_lines(table: pd.DataFrame) -> list[str]:
    """Per number of X groups: CUBIC's mean share against each X, lowest
    first, with its range over the table's sweep points."""
    out = []
    for k, g in table.groupby("cc_flows", sort=True):
        per = []
        for cc, gx in g.groupby("cc", sort=False):
            sh = gx["cubic_share"] * 100
            span = f" ({sh.min():.0f}–{sh.max():.0f} % over {len(gx)} points)" if len(gx) > 1 else ""
            per.append((sh.mean(), f"{cc} {sh.mean():.0f} %{span}"))
        fair = g["fair_share"].iloc[0] * 100
        listed = "; ".join(text for _, text in sorted(per))
        out.append(f"Against CUBIC (1 cubic vs {k} X, fair share {fair:.0f} %), CUBIC's mean share: "
                   f"{listed}.")
    return out


def series_collapse_lines(collapses: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    hit = collapses[collapses["collapses"] > 0]
    if collapses.empty:
        return []
    total = collapses["run_id"].nunique()
    if hit.empty:
        return [f"No run's goodput collapsed (< 10 % of its median for ≥ 1 s) in {total} runs."]
    merged = hit.merge(runs[["run_id", "flow_group", "cc"]], on=["run_id", "flow_group"], how="left")
    by_cc = ", ".join(f"{cc} {n}" for cc, n in merged.groupby("cc")["run_id"].nunique().items())
    return [f"{hit['run_id'].nunique()} of {total} runs had a goodput collapse (< 10 % of the "
            f"run's median for ≥ 1 s; by CCA: {by_cc}); longest {hit['collapsed_s'].max():.1f} s."]


def flag_lines(runs: pd.DataFrame) -> list[str]:
    ok = runs[runs["status"] == "ok"]
    out = []
    counts: dict[str, int] = {}
    for v in ok.get("flags", pd.Series(dtype=object)).dropna():
        for f in str(v).split(","):
            if f:
                counts[f] = counts.get(f, 0) + 1
    for f, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        why = {"rwnd_limited": " (bounded by the receive window: an end-host limit, not the network)",
               "sndbuf_limited": " (bounded by the send buffer: an end-host limit)",
               "emulator_late": " (the delay emulator fell behind: treat with care)",
               "loss_off": " (measured loss differs from the spec)",
               "host_drops": " (packets lost outside the emulated path: not the path asked for)",
               "cpu_bound": " (a CPU core of a sender's or the receiver's machine was saturated: the host, "
                            "not only the path, may have set the rate)"}.get(f, "")
        out.append(f"{n} of {len(ok)} run × flow rows flagged {f}{why}.")
    failed = runs[runs["status"] != "ok"]["run_id"].nunique()
    if failed:
        out.append(f"{failed} runs failed; see 'Failed runs'.")
    return out
