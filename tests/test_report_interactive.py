"""The report's interactive time series (report/interactive.py): the
min/max reduction keeps every peak and dip, the embedded data stays under
its budget, and nothing in it can end its <script> element early. That it
renders, zooms and toggles in a browser is tested in test_report.py
(headless chromium)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fatpipe.report import interactive


def _series(streams: int, samples: int, interval_s: float = 0.1) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for s in range(streams):
        t = np.arange(samples) * interval_s
        rows.append(pd.DataFrame({
            "run_id": "r", "flow_group": 0, "stream": s, "t_s": t,
            "goodput_bps": rng.uniform(1e8, 2e8, samples), "cwnd_segments": rng.integers(10, 1000, samples),
            "srtt_s": rng.uniform(0.02, 0.03, samples), "min_rtt_s": 0.02,
            "retrans_segments": np.cumsum(rng.integers(0, 3, samples))}))
    return pd.concat(rows, ignore_index=True)


GROUPS = pd.DataFrame({"flow_group": [0], "cc": ["cubic"], "warmup_s": [1.0]})


def test_short_runs_are_embedded_unreduced():
    t = np.arange(100) * 0.1
    v = np.sin(t)
    times, [(lo, hi)] = interactive.reduce_lines(t, [v], buckets=100)
    assert hi is None and np.array_equal(times, t) and np.array_equal(lo, v)


def test_reduction_keeps_each_buckets_min_and_max():
    t = np.arange(10_000) * 0.01
    v = np.zeros_like(t)
    v[1234], v[7777] = 50.0, -20.0  # one-sample spike and dip
    gap = np.full_like(t, np.nan)
    gap[:5000] = 1.0  # a line with no samples in the second half
    times, [(lo, hi), (glo, ghi)] = interactive.reduce_lines(t, [v, gap], buckets=200)
    assert len(times) == len(lo) == len(hi) == 200
    assert np.nanmax(hi) == 50.0 and np.nanmin(lo) == -20.0
    assert times[0] > t[0] and times[-1] < t[-1]  # bucket middles
    assert np.isnan(glo[-50:]).all() and (glo[:90] == 1.0).all() and (ghi[:90] == 1.0).all()


def test_long_runs_with_many_streams_stay_under_the_data_budget():
    data = interactive.payload(_series(25, 6000), GROUPS, (1e6, "Mbit/s"), 1.0)
    lines = sum(len(p["lines"]) for p in data["panels"])
    values = sum(len(line["lo"]) + len(line["hi"] or []) for p in data["panels"] for line in p["lines"])
    assert lines == 25 * 5 + 1  # goodput, cwnd, sRTT, min RTT, retrans per stream, plus the total
    assert values <= interactive.MAX_VALUES
    assert data["buckets"] == interactive.bucket_count(lines) and data["samples"] == 6000
    html = interactive.view_html(data)
    assert "reduced to" in html and f"{data['samples']} sample times" in html


def test_a_short_run_is_not_reduced_and_says_nothing_about_it():
    data = interactive.payload(_series(2, 300), GROUPS, (1e6, "Mbit/s"), 1.0)
    assert data["buckets"] is None and len(data["t"]) == 300
    assert all(line["hi"] is None for p in data["panels"] for line in p["lines"])
    assert "reduced to" not in interactive.view_html(data)


def test_embedded_data_cannot_close_the_script_element():
    data = interactive.payload(_series(1, 10), GROUPS.assign(cc=["</script><b>x"]), (1e6, "Mbit/s"), 0.0)
    html = interactive.view_html(data)
    block = html[html.index('id="fp-ts-data">') + len('id="fp-ts-data">'):]
    block = block[: block.index("</script>")]
    assert json.loads(block)["streams"][0]["label"] == "flow 0 (</script><b>x) stream 0"


def test_the_script_is_inlined_and_fetches_nothing():
    html = interactive.view_html(interactive.payload(_series(1, 10), GROUPS, (1e6, "Mbit/s"), 0.0))
    assert interactive.script_source().strip() in html
    for word in ("http:", "https:", "fetch(", "XMLHttpRequest", "import(", " src="):
        assert word not in html
