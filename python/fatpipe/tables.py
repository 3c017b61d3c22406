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
