"""Queueing delay and retransmissions on `fatpipe compare`'s page.

Per matched grid point, the median smoothed RTT (`srtt_p50_s`) and the
retransmission rate (`retrans_rate`) of A and B, compared by compare's own
method (compare.compare_points with the metric; the rules, including when
two retransmission rates agree, are in compare.py's docstring): their CSV
tables, findings lines and the page's section "Queueing delay and
retransmissions". A metric either study does not report (old studies,
RPC-only ones) is left out. Goodput, the primary metric, stays compare.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .compare import AGREE_BELOW, DISAGREE_FRACTION, ci_text, compare_points
from .report.page import Section, fmt_num, point_label, short_key, table_html


@dataclass(frozen=True)
class Metric:
    """A runs column compared beside goodput, and how the page shows it."""

    column: str  # the runs table's column
    title: str  # as the findings and the table caption name it
    csv_name: str  # the CSV file, without .csv
    scale: float  # the column's value × scale = the shown value
    unit: str  # of the shown value


METRICS = (
    Metric("srtt_p50_s", "Median smoothed RTT", "compare_srtt", 1e3, "ms"),
    Metric("retrans_rate", "Retransmission rate", "compare_retrans", 100.0, "%"),
)


def with_values(t: pd.DataFrame) -> pd.DataFrame:
    """The matched points with at least one value of the metric on each side."""
    return t[t["matched"] & (t["a_n"] > 0) & (t["b_n"] > 0)]


def metric_tables(runs_a: pd.DataFrame, runs_b: pd.DataFrame) -> list[tuple[Metric, pd.DataFrame]]:
    """compare_points(metric=...) for each metric of METRICS that both
    studies report at some matched point; the others are left out."""
    out = []
    for metric in METRICS:
        if metric.column not in runs_a.columns or metric.column not in runs_b.columns:
            continue
        t = compare_points(runs_a, runs_b, metric=metric.column)
        if not with_values(t).empty:
            out.append((metric, t))
    return out


def _agree_rule(metric: Metric) -> str:
    floor = AGREE_BELOW.get(metric.column)
    rule = f"by more than {DISAGREE_FRACTION:.0%}"
    if floor is not None:
        rule += f"; below {_value(floor, metric)} on both sides agree"
    return rule


def _value(v: float, metric: Metric) -> str:
    return f"{fmt_num(float(v) * metric.scale)}{'' if metric.unit == '%' else ' '}{metric.unit}"


def findings(tables: list[tuple[Metric, pd.DataFrame]], keys: list[str], name_a: str,
             name_b: str) -> list[str]:
    """Per metric: the median ratio over points, how many points disagree,
    and the point that disagrees most (`keys` label it)."""
    lines = []
    for metric, t in tables:
        t = with_values(t)
        r = t["ratio"].dropna()
        over = (f"median ratio {r.median():.2f} (range {r.min():.2f}–{r.max():.2f}) over {len(r)} points"
                if len(r) else "no point with a ratio")
        undefined = int(t["ratio"].isna().sum())
        if undefined:
            over += f", undefined at {undefined} where {name_a}'s is 0"
        d = t[t["disagree"]]
        line = (f"{metric.title} {name_b}/{name_a}: {over}; {len(d)} of {len(t)} points disagree "
                f"({_agree_rule(metric)}).")
        if len(d):
            w = d.iloc[0]
            ratio = f"ratio {w['ratio']:.2f}" if pd.notna(w["ratio"]) else "ratio undefined"
            line += (f" Largest: {point_label(w, keys)} — {_value(w['a_mean'], metric)} vs "
                     f"{_value(w['b_mean'], metric)} ({ratio}).")
        lines.append(line)
    return lines


def _pairs_text(pairs, corr) -> str:
    if not pairs:
        return "–"
    return f"{int(pairs)} ({corr:.2f})" if pd.notna(corr) else f"{int(pairs)}"


def section(tables: list[tuple[Metric, pd.DataFrame]], keys: list[str], name_a: str,
            name_b: str) -> Section | None:
    """One table per metric (A and B means, ratio, its CI, pairs, disagree),
    disagreeing points first, with the findings lines; None when neither
    metric was compared."""
    if not tables:
        return None
    body = ""
    for metric, t in tables:
        t = with_values(t)
        view = t[keys].rename(columns={k: short_key(k) for k in keys}).copy()
        view[f"{name_a} ({metric.unit})"] = t["a_mean"] * metric.scale
        view[f"{name_b} ({metric.unit})"] = t["b_mean"] * metric.scale
        view["ratio B/A"] = t["ratio"]
        view["ratio 95 % CI"] = [ci_text(lo, hi) for lo, hi in zip(t["ratio_ci_low"], t["ratio_ci_high"],
                                                                      strict=True)]
        view["pairs (corr.)"] = [_pairs_text(p, c) for p, c in zip(t["pairs"], t["pair_corr"], strict=True)]
        view["disagree"] = ["yes" if d else "" for d in t["disagree"]]
        caption = (f"{metric.title} (mean over repetitions); disagree: {_agree_rule(metric)}"
                   + ("; ratio –: A's mean is 0." if metric.column in AGREE_BELOW else "."))
        body += table_html(view, caption=caption, highlight=t["disagree"], scroll=len(view) > 30)
    return Section("delay", "Queueing delay and retransmissions", body,
                   f"A = {name_a}, B = {name_b}. The median smoothed RTT shows the queue a CCA keeps; "
                   f"the retransmission rate is retransmitted / sent segments. Ratios and intervals as "
                   f"for goodput ({', '.join(f'{m.csv_name}.csv' for m, _ in tables)}).",
                   tuple(findings(tables, keys, name_a, name_b)))
