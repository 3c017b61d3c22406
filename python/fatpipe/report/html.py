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

This module assembles the page; the section builders are in sections.py
(from the grid points) and run_sections.py (from flow groups and single
runs), and ReportFiles (files.py) writes the figure and CSV files.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import analysis as an
from ..analysis.collapse import loss_axes
from ..analysis.stats import point_columns
from ..loaded import LoadedStudy
from ..results import StudyStore
from . import figures as figs
from . import findings as fnd
from . import references as refs
from .capture_section import sequence_section
from .files import ReportFiles
from .page import Section, findings_html, fmt_rate, page, rate_unit
from .run_sections import (
    against_cubic_section,
    fairness_section,
    readback_section,
    rpc_section,
    series_collapse_section,
    series_section,
    transfer_section,
)
from .sections import (
    collapse_section,
    factor_section,
    failed_section,
    goodput_section,
    grid_section,
    improvement_section,
    loss_section,
    references_section,
    single_value,
)


def load_study(study_dir: str | Path) -> LoadedStudy:
    return StudyStore(study_dir).load()


@dataclass
class Contents:
    """The report's sections in page order and its main findings in reading
    order."""

    sections: list[Section] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    def add(self, section: Section | None) -> None:
        """Append a section and the findings it carries (nothing for None:
        the data did not support it)."""
        if section is not None:
            self.sections.append(section)
            self.findings += section.findings

    def note(self, lines: list[str]) -> None:
        """Findings that stand without a section of their own."""
        self.findings += lines


def build_sections(study: LoadedStudy, files: ReportFiles, run_id: str | None = None,
                   references: tuple[list, str] | None = None) -> Contents:
    """The report's sections and findings; `references` is (reference
    tables, where they come from), by default the study's own."""
    runs = study.runs
    keys = point_columns(runs)
    points = an.grid_summary(runs, "goodput_bps", keys)
    bulk = points[points["kind"] != "rpc"] if "kind" in points.columns else points
    unit = rate_unit(points["mean"].max() if points["mean"].notna().any() else 0)
    axes = loss_axes(bulk)
    first_axis = axes[0] if axes else None
    varies = {c: bulk[c].nunique() > 1 for c in ("streams", "mss_bytes")}
    has_series = (study.root / "series.parquet").exists()
    collapses = refs.study_collapses(study) if has_series else \
        pd.DataFrame(columns=["run_id", "flow_group", "collapses", "collapsed_s"])
    tables, origin = references or (study.spec.references if study.spec else [], "its study.toml")

    out = Contents()
    out.add(references_section(study, files, tables, collapses, origin))
    for axis in axes:
        out.add(loss_section(study, files, bulk, axis, unit))
    if varies["streams"]:
        out.add(factor_section(files, bulk, "streams", first_axis, unit))
        out.add(improvement_section(files, bulk))
    out.note(fnd.best_point_line(bulk, figs.line_keys(bulk, ()), unit))
    if varies["mss_bytes"]:
        out.add(factor_section(files, bulk, "mss_bytes", first_axis, unit))
        out.note(fnd.mss_lines(bulk))
    for axis in axes:
        out.add(collapse_section(study, files, bulk, axis))
        out.note(fnd.model_lines(bulk, axis, single_value(runs, "rate_bps"), single_value(runs, "rtt_s")))
    if not axes and not any(varies.values()):
        out.add(goodput_section(files, points, unit))
    out.add(fairness_section(study, files))
    out.add(against_cubic_section(study, files))
    out.add(rpc_section(study, files, keys))
    out.add(transfer_section(study, files, keys))
    out.add(readback_section(study))
    if has_series:
        out.note(fnd.series_collapse_lines(collapses, runs))
        out.add(series_collapse_section(study, files, collapses))
    out.add(series_section(study, files, collapses, run_id, unit))
    out.add(sequence_section(study, files, run_id))
    out.note(fnd.flag_lines(runs))
    out.add(grid_section(study, files, points, keys, unit))
    out.add(failed_section(study))
    return out


def _subtitle(study: LoadedStudy) -> str:
    r = study.runs
    n_runs = r["run_id"].nunique()
    ok = r[r["status"] == "ok"]["run_id"].nunique()
    parts = [f"{n_runs} runs ({ok} ok)", "backends: " + ", ".join(sorted(r["backend"].unique()))]
    for col, fmt in (("rate_bps", lambda v: fmt_rate(v)), ("rtt_s", lambda v: f"RTT {v * 1e3:g} ms"),
                     ("duration_s", lambda v: f"{v:g} s runs"),
                     ("warmup_s", lambda v: f"first {v:g} s excluded")):
        v = single_value(r, col)
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
    files = ReportFiles(study.root / "report")
    files.out.mkdir(parents=True, exist_ok=True)
    contents = build_sections(study, files, run_id, reference_tables(references))
    contents.add(files.section(f"Written to {files.out} on "
                               f"{dt.datetime.now().strftime('%Y-%m-%d %H:%M')}; raw tables: "
                               "runs.parquet, series.parquet, rpcs.parquet in the study directory."))
    title = f"fatpipe report: {study.name}"
    sub = (study.description + " — " if study.description else "") + _subtitle(study)
    html = page(title, sub, findings_html(contents.findings), contents.sections)
    path = files.out / "report.html"
    path.write_text(html, encoding="utf-8")
    (files.out / "findings.json").write_text(json.dumps(contents.findings, indent=1, ensure_ascii=False))
    return path
