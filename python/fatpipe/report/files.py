"""The files the report writes beside report.html: every figure as NAME.png
and NAME.svg, every table as NAME.csv, and the page's list of them, linked
relative to the page (the directory can be moved or served as a whole)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .page import Section, esc, save_figure


class ReportFiles:
    """Writes the report's figure and CSV files into `out` and remembers
    their names for the page's "Files" section."""

    def __init__(self, out: Path):
        self.out = out
        self._names: list[str] = []

    def csv(self, table: pd.DataFrame, name: str) -> None:
        """Write `table` as NAME.csv (no index column)."""
        self.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(self.out / f"{name}.csv", index=False)
        self._names.append(f"{name}.csv")

    def figure(self, fig, name: str, caption: str) -> str:
        """Write `fig` as NAME.png and NAME.svg and return its <figure> for
        the page ("" when there is no figure: the data could not support it)."""
        if fig is None:
            return ""
        self._names += [f"{name}.png", f"{name}.svg"]
        return save_figure(fig, self.out, name, caption)

    @property
    def names(self) -> list[str]:
        """Every file written so far, sorted, each once."""
        return sorted(set(self._names))

    def section(self, note: str) -> Section:
        """The "Files" section: a link to each file written, and `note`."""
        links = "".join(f'<li><a href="{esc(n)}">{esc(n)}</a></li>' for n in self.names)
        return Section("files", "Files", f"<ul>{links}</ul>", note)
