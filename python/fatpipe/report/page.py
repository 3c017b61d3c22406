"""HTML building blocks shared by the report, the comparison and the advice:
one self-contained page of sections (inline CSS, figures as base64 PNG),
tables, labels of columns and grid points, number formatting, and saving
figures as PNG + SVG files."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import ccas

CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 0 auto;
       max-width: 1250px; padding: 1.2em 2em 3em; color: #1d1d1f; line-height: 1.4; }
h1 { font-size: 1.7em; margin-bottom: 0.1em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 2px solid #d0d7de; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
.sub { color: #57606a; margin-top: 0; }
.findings { background: #f3f8ff; border-left: 4px solid #2f6fdf; padding: 0.6em 1.2em; }
.findings li { margin: 0.25em 0; }
.note { color: #57606a; font-size: 0.9em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e5e7eb; }
figcaption { color: #57606a; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.6em 0 1em; font-size: 0.86em; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: right; }
th { background: #f6f8fa; position: sticky; top: 0; }
td.t, th.t { text-align: left; }
tr.hl td { background: #fff4e5; }
caption { caption-side: top; text-align: left; font-weight: bold; padding: 0.3em 0; }
.scroll { max-height: 34em; overflow: auto; display: inline-block; border: 1px solid #e5e7eb; }
.scroll table { margin: 0; }
nav a { margin-right: 1em; }
"""


# A CCA's colour is its place in the simulator's registry (fatpipe.ccas):
# matplotlib's tab10, then tab20's lighter shade of the same ten hues, so
# each registered CCA keeps one colour in every figure and a new one gets
# the next without an edit here.
CC_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
              "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
              "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")


def short_key(key: str) -> str:
    """Readable name of a column: path.loss → loss, flows.1.cc → flow 1 cc."""
    if key.startswith("path."):
        return key[5:]
    if key.startswith("flows."):
        _, g, rest = key.split(".", 2)
        return f"flow {g} {rest}"
    return {"mss_bytes": "MSS B", "flow_group": "flow", "streams": "streams",
            "cwnd_clamp": "cwnd clamp (segments)", "pacing_rate_bps": "pacing rate (bit/s per stream)"}.get(key, key)


def point_label(row, keys: Sequence[str]) -> str:
    parts = []
    for k in keys:
        v = row[k]
        if k == "streams":
            parts.append(f"{v} stream{'s' if v != 1 else ''}")
        elif k == "mss_bytes":
            parts.append(f"MSS {v} B")
        elif k == "cc":
            parts.append(str(v))
        elif k == "cwnd_clamp":
            parts.append("no clamp" if pd.isna(v) else f"clamp {int(v)}")
        elif k == "pacing_rate_bps":
            parts.append("unpaced" if pd.isna(v) else f"paced {v / 1e6:g} Mbit/s")
        else:
            parts.append(f"{short_key(k)} {v:g}" if isinstance(v, float) else f"{short_key(k)} {v}")
    return ", ".join(parts)


def cc_color(cc: str, i: int = 0) -> str:
    """`cc`'s colour by its registry position; a name the registry does not
    know (a kernel-only CCA, an imported study's, no simulator extension)
    gets matplotlib's cycle colour of its position `i` among the plotted."""
    at = ccas.index(str(cc).lower())
    return CC_PALETTE[at % len(CC_PALETTE)] if at is not None else f"C{i % 10}"


def esc(text) -> str:
    return html.escape(str(text))


def rate_unit(max_bps: float) -> tuple[float, str]:
    """(divisor, unit) for showing bit rates around `max_bps`."""
    if not max_bps or not math.isfinite(max_bps) or max_bps >= 1e9:
        return 1e9, "Gbit/s"
    if max_bps >= 1e6:
        return 1e6, "Mbit/s"
    return 1e3, "kbit/s"


def fmt_rate(bps, unit: tuple[float, str] | None = None) -> str:
    if bps is None or (isinstance(bps, float) and not math.isfinite(bps)):
        return "–"
    div, name = unit or rate_unit(abs(bps))
    return f"{bps / div:.3g} {name}"


def fmt_num(value, digits: int = 3) -> str:
    """Compact number: integers as is, floats with `digits` significant digits."""
    if value is None:
        return "–"
    if isinstance(value, float) and not math.isfinite(value):
        return "–"
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        return f"{value:.{digits}g}"
    try:
        if pd.isna(value):
            return "–"
    except (TypeError, ValueError):
        pass
    return str(value)


def table_html(df: pd.DataFrame, caption: str | None = None,
               formats: Mapping[str, Callable] | None = None,
               highlight: Iterable[bool] | None = None, scroll: bool = False) -> str:
    """An HTML table; `formats` maps column → formatter, others use fmt_num.
    Text columns are left-aligned; rows where `highlight` is true are marked."""
    formats = formats or {}
    hl = list(highlight) if highlight is not None else [False] * len(df)
    text_cols = {c for c in df.columns if df[c].dtype == object and c not in formats}
    head = "".join(f'<th class="{"t" if c in text_cols else ""}">{esc(c)}</th>' for c in df.columns)
    body = []
    for flag, (_, row) in zip(hl, df.iterrows(), strict=True):
        cells = []
        for c in df.columns:
            v = row[c]
            text = formats[c](v) if c in formats else fmt_num(v)
            cells.append(f'<td class="{"t" if c in text_cols else ""}">{esc(text)}</td>')
        body.append(f'<tr class="{"hl" if flag else ""}">{"".join(cells)}</tr>')
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    table = f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f'<div class="scroll">{table}</div>' if scroll else table


PLOT_STYLE = {"font.size": 10, "axes.grid": True, "grid.alpha": 0.3, "axes.titlesize": 11,
              "legend.fontsize": 8}


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed) in the style
    of the report and the comparison."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update(PLOT_STYLE)
    return plt


def save_figure(fig, out_dir: Path, name: str, caption: str = "", dpi: int = 110) -> str:
    """Write `name`.png and `name`.svg to `out_dir`; return a <figure> with
    the PNG embedded as base64 (the page needs no other file)."""
    plt = pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    png = buf.getvalue()
    (out_dir / f"{name}.png").write_bytes(png)
    fig.savefig(out_dir / f"{name}.svg", format="svg", bbox_inches="tight")
    plt.close(fig)
    b64 = base64.b64encode(png).decode()
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return (f'<figure id="fig-{esc(name)}"><img alt="{esc(caption or name)}" '
            f'src="data:image/png;base64,{b64}">{cap}</figure>')


def findings_html(lines: list[str]) -> str:
    if not lines:
        return ""
    items = "".join(f"<li>{esc(s)}</li>" for s in lines)
    return f'<div class="findings"><b>Main findings</b><ul>{items}</ul></div>'


@dataclass(frozen=True)
class Section:
    """One section of a page: the anchor the navigation links to, its title,
    body HTML, an optional note under the title, and the main findings drawn
    from the same tables (shown at the top of the page, not in the section)."""

    anchor: str
    title: str
    body: str
    intro: str = ""
    findings: tuple[str, ...] = ()

    def html(self) -> str:
        note = f'<p class="note">{esc(self.intro)}</p>' if self.intro else ""
        return f'<h2 id="{esc(self.anchor)}">{esc(self.title)}</h2>{note}{self.body}'


def page(title: str, subtitle: str, top: str, sections: Sequence[Section]) -> str:
    nav = " ".join(f'<a href="#{esc(s.anchor)}">{esc(s.title)}</a>' for s in sections)
    parts = "".join(s.html() for s in sections)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{esc(title)}</h1><p class=\"sub\">{esc(subtitle)}</p>{top}"
            f"<nav>{nav}</nav>{parts}</body></html>\n")
