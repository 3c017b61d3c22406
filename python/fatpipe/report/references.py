"""The comparison with reference numbers, as text: each reference table of
the study (its ``[[references]]``, or those of another study file) with
fatpipe's mean, 95 % CI and the ratio, as the report's tables and findings
(sections.references_section adds the overlay figure and references.csv)
and as Markdown (scripts/studies_vs_talks.py writes it into
docs/studies-vs-talks.md). Nothing here draws, so matplotlib stays unloaded."""

from __future__ import annotations

import math

import pandas as pd

from ..analysis import collapse as an_collapse
from ..analysis import references as an_refs
from ..references import METRICS, ReferenceTable
from .page import fmt_num, fmt_rate, rate_unit, short_key


def table_scale(g: pd.DataFrame) -> tuple[float, str]:
    """(divisor, unit name) of one reference table's numbers; rates are
    scaled per value (""), as a table may hold Gbit/s and Mbit/s."""
    unit = METRICS[g["metric"].iloc[0]].unit
    if unit == "rate":
        return rate_unit(pd.concat([g["reference"], g["fatpipe"]]).max())
    if unit == "fraction":
        return 0.01, "%"
    return 1.0, "×"


def labelled(comparison: pd.DataFrame, tables: list[ReferenceTable]) -> tuple[pd.DataFrame, dict[str, dict]]:
    """`comparison` plus ``label`` (each value's where, without the keys
    every value of its table shares), and those shared keys per table title
    (they go into the table's caption)."""
    labels, common = [], {}
    for table in tables:
        shared = {k: v for k, v in table.values[0].where.items()
                  if len(table.values) > 1 and all(k in x.where and x.where[k] == v for x in table.values)}
        common[table.title] = shared
        for v in table.values:
            rest = {short_key(k): x for k, x in v.where.items() if k not in shared}
            labels.append(an_refs.where_label(rest) or "all")
    return comparison.assign(label=labels), common


def _fmt(v: float, div: float, unit: str) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    if unit == "rate":
        return fmt_rate(v) if v else "0"
    return f"{v / div:.3g}" if unit != "×" else f"{v:.2f}"


def _ci(lo: float, hi: float, mean: float, div: float, unit: str) -> str:
    """The interval in the mean's unit: "13.8 – 13.9 Gbit/s"."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "–"
    if unit == "rate":
        d, name = rate_unit(abs(mean) if math.isfinite(mean) and mean else max(abs(lo), abs(hi)))
        return f"{lo / d:.3g} – {hi / d:.3g} {name}"
    return f"{_fmt(lo, div, unit)} – {_fmt(hi, div, unit)}"


def view(g: pd.DataFrame) -> pd.DataFrame:
    """One reference table as people read it: rates each in its own unit,
    fractions in %, factors with two decimals."""
    div, unit = table_scale(g)
    if METRICS[g["metric"].iloc[0]].unit == "rate":
        unit = "rate"
    head = "" if unit == "rate" else f" ({unit})"
    return pd.DataFrame({
        "where": g["label"].to_numpy(),
        f"reference{head}": [_fmt(v, div, unit) + (f" ({n})" if n else "")
                             for v, n in zip(g["reference"], g["note"], strict=True)],
        f"fatpipe{head}": [_fmt(v, div, unit) for v in g["fatpipe"]],
        "95 % CI": [_ci(lo, hi, m, div, unit) for lo, hi, m in zip(g["ci_low"], g["ci_high"], g["fatpipe"],
                                                                    strict=True)],
        "n": g["n"].to_numpy(),
        "fatpipe / reference": [f"{r:.2f}" if math.isfinite(r) else "–" for r in g["ratio"]],
        "": g["problem"].to_numpy(),
    })


def study_collapses(study) -> pd.DataFrame:
    """run_collapses of every run × flow group of a study that kept series,
    each run after its own warm-up (the report's collapse sections and the
    collapse_fraction references use this one table)."""
    runs = study.runs
    s = study.read_series(columns=["run_id", "flow_group", "stream", "t_s", "goodput_bps"])
    if "kind" in runs.columns and (runs["kind"] == "transfer").any():
        # A transfer's streams fall idle once its data sets are done: no collapse.
        idle = set(runs.loc[runs["kind"] == "transfer", ["run_id", "flow_group"]].itertuples(index=False, name=None))
        s = s[[k not in idle for k in zip(s["run_id"], s["flow_group"], strict=True)]]
    warm = dict(zip(runs["run_id"], runs["warmup_s"], strict=True)) if "warmup_s" in runs.columns else 0.0
    return an_collapse.run_collapses(s, warm)


def collapses_of(study, tables: list[ReferenceTable]) -> pd.DataFrame | None:
    """study_collapses when a table needs them (collapse_fraction) and the
    study kept series; else None."""
    if not any(t.metric == "collapse_fraction" for t in tables) or not (study.root / "series.parquet").exists():
        return None
    return study_collapses(study)


def finding_lines(comparison: pd.DataFrame) -> list[str]:
    lines = []
    for title, g in comparison.groupby("table", sort=False):
        r = g["ratio"].dropna()
        r = r[r.apply(math.isfinite)]
        if r.empty:
            continue
        lines.append(f"{title}: fatpipe / reference from {r.min():.2f} to {r.max():.2f} "
                     f"(median {r.median():.2f}) over {len(r)} of {len(g)} reference values")
    return lines


def markdown(comparison: pd.DataFrame, tables: list[ReferenceTable]) -> str:
    """The comparison as Markdown tables, one per reference table, with
    each table's source (for docs/studies-vs-talks.md)."""
    labelled_cmp, common = labelled(comparison, tables)
    parts = []
    for table in tables:
        g = labelled_cmp[labelled_cmp["table"] == table.title]
        v = view(g).rename(columns={"": "problem"})
        shared = an_refs.where_label(common[table.title])
        head = f"**{table.title}**" + (f" ({shared})" if shared else "") + f". Source: {table.source}."
        rows = ["| " + " | ".join(v.columns) + " |", "|" + "---|" * len(v.columns)]
        rows += ["| " + " | ".join(fmt_num(x) if not isinstance(x, str) else x for x in r) + " |"
                 for r in v.itertuples(index=False)]
        parts.append(head + "\n\n" + "\n".join(rows))
    return "\n\n".join(parts) + "\n"
