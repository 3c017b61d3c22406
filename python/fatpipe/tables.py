"""Plain-text tables for the terminal."""

from __future__ import annotations

import pandas as pd

from .analysis.stats import display_columns, grid_summary, point_columns


def _fmt(value, kind: str) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if kind == "mbps":
        return f"{value / 1e6:.1f}"
    if kind == "pct":
        return f"{value * 100:.3f}"
    if kind == "g":
        return f"{value:g}"
    if kind == "ratio":
        return f"{value:.2f}"
    return str(value)


def summary_table(runs: pd.DataFrame) -> str:
    """Mean goodput and retransmission rate per grid point and flow group.

    Grid points are those of the report (analysis.stats.point_columns and
    grid_summary); the columns shown leave out what the report's grid table
    leaves out (display_columns)."""
    ok = runs[runs["status"] == "ok"]
    failed = runs[runs["status"] != "ok"]
    keys = point_columns(runs)
    lines = []
    if not ok.empty:
        goodput = grid_summary(ok, "goodput_bps", keys)
        retrans = grid_summary(ok, "retrans_rate", keys)[[*keys, "mean"]]
        table = goodput.merge(retrans.rename(columns={"mean": "retrans"}), on=keys, how="left")
        shown = display_columns(runs, keys)
        header = [*shown, "n", "goodput Mbit/s", "sd", "retrans %", "flags"]
        rows = [
            [*(_fmt(r[k], "g" if isinstance(r[k], float) else "") for k in shown), str(r["n"]),
             _fmt(r["mean"], "mbps"), _fmt(r["sd"], "mbps"), _fmt(r["retrans"], "pct"), r["flags"] or ""]
            for _, r in table.iterrows()
        ]
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
        lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    if not failed.empty:
        lines.append(f"\n{failed['run_id'].nunique()} runs failed:")
        for run_id, reason in failed.groupby("run_id")["reason"].first().items():
            lines.append(f"  {run_id}: {reason}")
    return "\n".join(lines)


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    return ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)),
            *("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows)]


def backend_comparison_table(runs: pd.DataFrame) -> str:
    """When a study ran on several backends: per grid point, the first
    backend's mean goodput (the reference, in the order of the runs table),
    each other backend's, and their ratio with its 95 % CI
    (compare.compare_points). Empty when fewer than two backends have ok runs."""
    from .compare import DISAGREE_FRACTION, compare_points, match_keys

    ok = runs[runs["status"] == "ok"]
    names = list(dict.fromkeys(ok["backend"])) if "backend" in ok.columns else []
    if len(names) < 2:
        return ""
    ref = names[0]
    lines = []
    for other in names[1:]:
        a, b = ok[ok["backend"] == ref], ok[ok["backend"] == other]
        points = compare_points(a, b)
        points = points[points["matched"]]
        keys, _ = match_keys(a, b)
        shown = display_columns(a.drop(columns="backend"), [k for k in keys if points[k].nunique() > 1 or k in
                                                            ("cc", "streams")])
        header = [*shown, f"{ref} Mbit/s", f"{other} Mbit/s", f"{other}/{ref}", "95% CI", ""]
        rows = [[*(_fmt(r[k], "g" if isinstance(r[k], float) else "") for k in shown),
                 _fmt(r["a_mean"], "mbps"), _fmt(r["b_mean"], "mbps"), _fmt(r["ratio"], "ratio"),
                 f"{_fmt(r['ratio_ci_low'], 'ratio')}-{_fmt(r['ratio_ci_high'], 'ratio')}",
                 "differs" if r["disagree"] else ""]
                for _, r in points.sort_values(shown, kind="stable").iterrows()]
        if not rows:
            continue
        lines.append(f"{other} vs {ref}: goodput ratio per grid point (differs: more than "
                     f"{DISAGREE_FRACTION:.0%} apart)")
        lines += _aligned(header, rows)
    return "\n".join(lines)
