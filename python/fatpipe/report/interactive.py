"""The interactive time series of one run: per-stream goodput, cwnd, RTT and
retransmissions embedded in the report as JSON and drawn by timeseries.js
(inlined: the page stays self-contained and works offline). Zoom, pan and
per-stream toggles; the static PNG/SVG figure stays beside it for papers.

Reduction: every line shares one time axis. When a run has more sample
times than 2 × `buckets`, the run is cut into `buckets` equal time buckets
and each line keeps its minimum and maximum in each bucket (drawn as a
vertical stroke at the bucket's middle), so peaks and dips survive; the
page says how many samples were reduced to how many buckets. The bucket
count shrinks with the number of lines to keep the page's data under
MAX_VALUES numbers.
"""

from __future__ import annotations

import html
import json
import math
from importlib import resources

import numpy as np
import pandas as pd

DEFAULT_BUCKETS = 1000
MIN_BUCKETS = 150
MAX_VALUES = 300_000  # numbers of line data in one page, about 2 MB of JSON
MAX_STREAMS = 64  # streams drawn; the rest are left out (and the page says so)
SIGNIFICANT_DIGITS = 4
# matplotlib's tab10, the static figure's colours
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf"]

CSS = """
.fp-ts { margin: 1em 0; user-select: none; }
.fp-ts-bar { display: flex; flex-wrap: wrap; gap: 0.3em; align-items: center; margin-bottom: 0.4em; }
.fp-ts-bar button { font: inherit; font-size: 0.82em; border: 1px solid #d0d7de; background: #fff;
                    border-radius: 4px; padding: 1px 7px; cursor: pointer; }
.fp-ts-key[aria-pressed="false"] { opacity: 0.4; text-decoration: line-through; }
.fp-ts-swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.35em;
                vertical-align: -0.1em; border-radius: 2px; }
.fp-ts-panels { position: relative; cursor: crosshair; touch-action: none; }
.fp-ts-panel svg { display: block; }
.fp-ts-grid { stroke: #e5e7eb; stroke-width: 1; }
.fp-ts-tick { font-size: 10px; fill: #57606a; }
.fp-ts-label { font-size: 11px; fill: #1d1d1f; font-weight: bold; }
.fp-ts-warmup { fill: #d9d9d9; opacity: 0.5; }
.fp-ts-band { display: none; position: absolute; top: 0; bottom: 0; background: rgba(47, 111, 223, 0.15);
              pointer-events: none; }
.fp-ts-readout { color: #57606a; font-size: 0.82em; margin-left: auto; min-width: 8em; }
"""


def _round(values: np.ndarray) -> list:
    """Values with SIGNIFICANT_DIGITS significant digits, NaN as None (JSON null)."""
    return [None if not math.isfinite(v) else float(f"{v:.{SIGNIFICANT_DIGITS}g}") for v in values.tolist()]


def bucket_count(lines: int) -> int:
    """Buckets per line so that min and max of every line fit MAX_VALUES."""
    return max(MIN_BUCKETS, min(DEFAULT_BUCKETS, MAX_VALUES // max(1, 2 * lines)))


def reduce_lines(t_s: np.ndarray, lines: list[np.ndarray], buckets: int
                 ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray | None]]]:
    """(times, [(lo, hi)]) of `lines` sampled at the sorted times `t_s`
    (NaN where a line has no sample). Up to 2 × `buckets` times: unchanged,
    hi None. Beyond: each bucket's middle time and each line's min and max
    in it (NaN for a bucket a line has no sample in)."""
    if len(t_s) <= 2 * buckets:
        return t_s, [(v, None) for v in lines]
    edges = np.linspace(t_s[0], t_s[-1], buckets + 1)
    which = np.clip(np.searchsorted(edges, t_s, side="right") - 1, 0, buckets - 1)
    starts = np.searchsorted(which, np.arange(buckets))
    empty = np.bincount(which, minlength=buckets) == 0
    starts = np.minimum(starts, len(t_s) - 1)
    out = []
    for v in lines:
        lo = np.fmin.reduceat(v, starts)
        hi = np.fmax.reduceat(v, starts)
        lo[empty], hi[empty] = np.nan, np.nan
        out.append((lo, hi))
    return (edges[:-1] + edges[1:]) / 2, out


def payload(series: pd.DataFrame, groups: pd.DataFrame, unit: tuple[float, str],
            warmup_s: float | None) -> dict:
    """The JSON the page's script draws: the time axis, the streams (legend
    entries, with one total per flow group of several streams) and four
    panels of lines."""
    div, uname = unit
    cc = {int(r["flow_group"]): r["cc"] for _, r in groups.iterrows()}
    s = series.assign(t_key=series["t_s"].round(3))
    keys = sorted(s.groupby(["flow_group", "stream"]).groups)
    left_out = max(0, len(keys) - MAX_STREAMS)
    keys = keys[:MAX_STREAMS]
    t = np.array(sorted(s["t_key"].unique()), dtype=float)
    streams, raw = [], {"goodput": [], "cwnd": [], "rtt": [], "retrans": []}

    def aligned(frame: pd.DataFrame, col: str) -> np.ndarray:
        return frame.set_index("t_key")[col].reindex(t).to_numpy(dtype=float)

    by_key = {k: g.sort_values("t_s").drop_duplicates("t_key") for k, g in s.groupby(["flow_group", "stream"])}
    for i, (group, stream) in enumerate(keys):
        g = by_key[(group, stream)]
        streams.append({"label": f"flow {group} ({cc.get(int(group), '?')}) stream {stream}",
                        "color": COLORS[i % len(COLORS)], "total": False})
        retrans = g["retrans_segments"].astype(float).diff().clip(lower=0).fillna(0.0)
        raw["goodput"].append((i, aligned(g, "goodput_bps") / div, False))
        raw["cwnd"].append((i, aligned(g, "cwnd_segments"), False))
        raw["rtt"].append((i, aligned(g, "srtt_s") * 1e3, False))
        raw["rtt"].append((i, aligned(g, "min_rtt_s") * 1e3, True))
        raw["retrans"].append((i, aligned(g.assign(r=retrans.to_numpy()), "r"), False))
    per_group = s.groupby(["flow_group", "t_key"])["goodput_bps"].sum()
    for group in sorted(s["flow_group"].unique()):
        if s[s["flow_group"] == group]["stream"].nunique() < 2:
            continue
        i = len(streams)
        streams.append({"label": f"flow {group} ({cc.get(int(group), '?')}) total", "color": "#000000",
                        "total": True})
        raw["goodput"].append((i, per_group.loc[group].reindex(t).to_numpy(dtype=float) / div, False))
    flat = [v for lines in raw.values() for _, v, _ in lines]
    buckets = bucket_count(len(flat))
    times, reduced = reduce_lines(t, flat, buckets)
    it = iter(reduced)
    labels = {"goodput": f"goodput ({uname})", "cwnd": "cwnd (segments)",
              "rtt": "RTT (ms): solid sRTT, dashed min RTT", "retrans": "retransmitted segments / interval"}
    panels = []
    for name, lines in raw.items():
        out = []
        for stream, _v, dash in lines:
            lo, hi = next(it)
            out.append({"stream": stream, "dash": dash, "lo": _round(lo),
                        "hi": None if hi is None else _round(hi)})
        panels.append({"name": name, "label": labels[name], "lines": out})
    return {"t": _round(times), "warmup_s": float(warmup_s or 0.0), "samples": int(len(t)),
            "buckets": int(len(times)) if len(times) < len(t) else None, "left_out": left_out,
            "streams": streams, "panels": panels}


def script_source() -> str:
    return resources.files(__package__).joinpath("timeseries.js").read_text(encoding="utf-8")


def _json_for_script(data: dict) -> str:
    """JSON safe inside <script>: no "</" can end the element early."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def view_html(data: dict, dom_id: str = "fp-ts", what: str = "run") -> str:
    """The interactive view (element `dom_id`): legend and buttons, the
    panels' container, the data and the script, with a note on reduction
    and use."""
    reduced = (f"The run's {data['samples']} sample times are reduced to {data['buckets']} time buckets: "
               "each line shows its minimum and maximum in each bucket (a vertical stroke), so zooming in "
               "shows the reduced data; every sample is in series.parquet. ") if data["buckets"] else ""
    left = (f"{data['left_out']} more streams are left out of this view (the first "
            f"{MAX_STREAMS} are drawn). ") if data["left_out"] else ""
    note = ("Interactive: wheel zooms the time axis at the cursor, drag zooms to a range, shift+drag pans, "
            f"double-click or “reset zoom” shows the whole {what}; the legend's buttons hide or show a line in "
            "every panel; grey: warm-up. " + reduced + left)
    return (f'<style>{CSS}</style><div class="fp-ts" id="{dom_id}">'
            '<div class="fp-ts-bar"><button type="button" data-act="reset">reset zoom</button>'
            '<button type="button" data-act="all">all streams</button>'
            '<button type="button" data-act="none">no streams</button>'
            '<span class="fp-ts-readout">time axis: seconds since start</span></div>'
            '<div class="fp-ts-bar fp-ts-legend"></div><div class="fp-ts-panels"></div>'
            f'<p class="note">{html.escape(note)}</p>'
            '<noscript><p class="note">The interactive view needs JavaScript; the static figure below '
            f'shows the same {what}.</p></noscript>'
            f'<script type="application/json" class="fp-ts-data" id="{dom_id}-data">{_json_for_script(data)}</script>'
            f'</div><script>{script_source()}</script>')
