"""The advice for people: a ranked table for the terminal and a
self-contained HTML page (report/page.py's building blocks)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..report.page import Section, fmt_rate, page, pyplot, save_figure, table_html
from ..units import format_time
from .advice import Advice
from .findings import mib, sysctl_lines

TERMINAL_ROWS = 15


def _cells(r) -> dict[str, str]:
    ci = ("–" if pd.isna(r["goodput_ci_low_bps"]) else
          f"{r['goodput_ci_low_bps'] / 1e9:.3g}–{r['goodput_ci_high_bps'] / 1e9:.3g}")
    halves = r["loss_halves_at"]
    margin = "–" if pd.isna(halves) else (">tried" if math.isinf(halves) else f"{halves:.2g}")
    return {
        "#": f"{r['rank']}{'*' if r['recommended'] else ''}",
        "cc": r["cc"], "streams": str(r["streams"]), "MTU": str(r["mtu_bytes"]),
        "rmem/wmem": f"{mib(r['rmem_bytes'])}/{mib(r['wmem_bytes'])}"
                     + (" (raise)" if r["buffers"] == "raised" else ""),
        "n": str(r["n"]), "goodput Gbit/s": f"{r['goodput_bps'] / 1e9:.3g}", "95% CI": ci,
        "retrans %": "–" if pd.isna(r["retrans_rate"]) else f"{r['retrans_rate'] * 100:.3g}",
        "window-bound": "yes" if r["window_bound"] else "",
        "cap/stream Gbit/s": "–" if pd.isna(r["stream_cap_bps"]) else f"{r['stream_cap_bps'] / 1e9:.3g}",
        "halves at loss": margin,
        "competitor share": "–" if pd.isna(r["competing_share"]) else f"{r['competing_share'] * 100:.0f} %",
        "Jain": "–" if pd.isna(r["jain"]) else f"{r['jain']:.2f}",
    }


def terminal_text(advice: Advice, rows: int = TERMINAL_ROWS) -> str:
    lines = [*advice.measured, f"Recommendation: {advice.recommendation}", *([advice.hosts] if advice.hosts else []),
             ""]
    cells = [_cells(r) for _, r in advice.table.head(rows).iterrows()]
    if cells:
        header = list(cells[0])
        if advice.request.competing is None:
            header = [h for h in header if h not in ("competitor share", "Jain")]
        if advice.table["stream_cap_bps"].isna().all():
            header.remove("cap/stream Gbit/s")
        widths = [max(len(h), *(len(c[h]) for c in cells)) for h in header]
        lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
        lines += ["  ".join(c[h].rjust(w) for h, w in zip(header, widths, strict=True)) for c in cells]
        more = len(advice.table) - rows
        lines.append(f"(* recommended{f'; {more} more candidates in the HTML page' if more > 0 else ''})")
    lines += ["", *([advice.baseline] if advice.baseline else []), *advice.buffers["lines"], advice.jumbo,
              *advice.notes]
    rec = advice.table[advice.table["recommended"]]
    if not rec.empty and rec.iloc[0]["buffers"] == "raised":
        lines += ["Sysctls for the recommendation (sender and receiver):",
                  *(f"  sysctl -w {s}" for s in sysctl_lines(int(rec.iloc[0]["rmem_bytes"]),
                                                               int(rec.iloc[0]["wmem_bytes"])))]
    lines += ["", "Assumptions:", *(f"  - {a}" for a in advice.assumptions)]
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in advice.stage_times.items())
    lines.append(f"\nadvice took {advice.wall_s:.1f} s ({stages}); runs in {advice.root}")
    return "\n".join(lines)


def _figure(advice: Advice, out: Path) -> str:
    top = advice.table.head(20).iloc[::-1]
    if top.empty:
        return ""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(top) + 1.2))
    labels = [f"{r['cc']} x{r['streams']} MTU {r['mtu_bytes']}{' (raise buffers)' if r['buffers'] == 'raised' else ''}"
              for _, r in top.iterrows()]
    mean = top["goodput_bps"].to_numpy() / 1e9
    lo = (top["goodput_bps"] - top["goodput_ci_low_bps"]).fillna(0).to_numpy() / 1e9
    hi = (top["goodput_ci_high_bps"] - top["goodput_bps"]).fillna(0).to_numpy() / 1e9
    colors = ["#d62728" if r else "#1f77b4" for r in top["recommended"]]
    ax.barh(range(len(top)), mean, xerr=[lo, hi], color=colors, capsize=3)
    ax.set_yticks(range(len(top)), labels)
    ax.axvline(advice.request.rate / 1e9, color="k", lw=0.8, ls="--")
    ax.set_xlabel("goodput, Gbit/s (95 % CI; dashed: link rate)")
    return save_figure(fig, out, "advice-goodput", "Expected goodput of the best candidates (red: recommended)")


def write_html(advice: Advice) -> Path:
    out = advice.root
    out.mkdir(parents=True, exist_ok=True)
    rows = [_cells(r) for _, r in advice.table.iterrows()]
    table = pd.DataFrame(rows)
    top = (f'<div class="findings"><b>Recommendation</b><p>{_esc(advice.recommendation)}</p>'
           f'<p>{_esc(advice.hosts)}</p></div>')
    sections = []
    if advice.measured:
        sections.append(Section("measured", "The path as measured", _ul(advice.measured)))
    sections.append(Section("ranking", "Candidates, ranked by expected goodput",
                            _figure(advice, out) + table_html(table, highlight=advice.table["recommended"],
                                                              scroll=True),
                            "Goodput after the warm-up, mean of the runs with its Student-t 95 % interval; "
                            "retransmissions per segment sent; window-bound: the receive window or send buffer "
                            "held the flow back; halves at loss: the loss rate at which goodput falls to half."))
    rec = advice.table[advice.table["recommended"]]
    sysctls = []
    if not rec.empty:
        sysctls = sysctl_lines(int(rec.iloc[0]["rmem_bytes"]), int(rec.iloc[0]["wmem_bytes"]))
    found = ([advice.baseline] if advice.baseline else []) + advice.buffers["lines"] + advice.notes
    sections.append(Section("buffers", "Socket buffers and sysctls",
                            _ul(found) + "<p>For the recommendation:</p><pre>"
                            + _esc("\n".join(f"sysctl -w {s}" for s in sysctls)) + "</pre>"))
    sections.append(Section("jumbo", "Jumbo frames", f"<p>{_esc(advice.jumbo)}</p>"))
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in advice.stage_times.items())
    sections.append(Section("assumptions", "Assumptions", _ul(advice.assumptions) +
                            f'<p class="note">Runs of {format_time(advice.timing.duration_s)}; the advice took '
                            f"{advice.wall_s:.1f} s ({_esc(stages)}). Each stage is a study in "
                            f"{_esc(str(advice.root))} (repeat one with <code>fatpipe run STAGE.toml</code>).</p>"))
    html = page("fatpipe advise", advice.request.describe(), top, sections)
    path = out / "advice.html"
    path.write_text(html)
    advice.frame().to_csv(out / "advice.csv", index=False)
    return path


def _esc(text: str) -> str:
    from ..report.page import esc
    return esc(text)


def _ul(lines: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{_esc(s)}</li>" for s in lines) + "</ul>"


__all__ = ["fmt_rate", "terminal_text", "write_html"]
