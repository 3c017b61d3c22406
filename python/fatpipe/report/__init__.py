"""Plots and the HTML report of a study directory.

The HTML report (html.py) is imported on first use, so the comparison can
share page.py's building blocks without loading the report.
"""

from __future__ import annotations

from pathlib import Path

# What the report imports beyond fatpipe's core dependencies, on first use
# (page.py's figures): without it, `fatpipe run` skips the report and says so.
OPTIONAL_DEPENDENCIES = ("matplotlib",)


def write_report(study_dir: str | Path, run_id: str | None = None,
                 references: str | Path | None = None) -> Path:
    """Write DIR/report/report.html with its figures and CSV tables; return
    its path. `references`: a study file whose [[references]] to show
    instead of the study's own."""
    from .html import write_report as write
    return write(study_dir, run_id, references)


__all__ = ["OPTIONAL_DEPENDENCIES", "write_report"]
