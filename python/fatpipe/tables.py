"""Plain-text tables for the terminal."""

from __future__ import annotations

import pandas as pd


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


def grid_columns(runs: pd.DataFrame) -> list[str]:
    """Columns that identify a grid point: backend, swept keys other than
    flows.* (shown by cc/streams/mss), then the flow group's own keys."""
    swept = [c for c in runs.columns if "." in c and not c.startswith("flows.")]
    return ["backend", *swept, "flow_group", "cc", "streams", "mss_bytes"]


def summary_table(runs: pd.DataFrame) -> str:
    """Mean goodput and retransmission rate per grid point and flow group."""
    ok = runs[runs["status"] == "ok"]
    failed = runs[runs["status"] != "ok"]
    keys = grid_columns(runs)
    lines = []
    if not ok.empty:
        g = ok.groupby(keys, dropna=False, sort=True)
        table = pd.DataFrame({
            "n": g.size(),
            "goodput_mbps": g["goodput_bps"].mean(),
            "sd_mbps": g["goodput_bps"].std(),
            "retrans_pct": g["retrans_rate"].mean(),
            "flags": g["flags"].agg(lambda f: ",".join(sorted({x for v in f for x in str(v).split(",") if x}))),
        }).reset_index()
        header = [*keys, "n", "goodput Mbit/s", "sd", "retrans %", "flags"]
        rows = [
            [*(_fmt(r[k], "g" if isinstance(r[k], float) else "") for k in keys), str(r["n"]),
             _fmt(r["goodput_mbps"], "mbps"), _fmt(r["sd_mbps"], "mbps"),
             _fmt(r["retrans_pct"], "pct"), r["flags"] or ""]
            for _, r in table.iterrows()
        ]
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
        lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths)))
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    if not failed.empty:
        lines.append(f"\n{failed['run_id'].nunique()} runs failed:")
        for run_id, reason in failed.groupby("run_id")["reason"].first().items():
            lines.append(f"  {run_id}: {reason}")
    return "\n".join(lines)
