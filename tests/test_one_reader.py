"""One reader, one grouping, one goodput: the report and compare read a study
through StudyStore.load(); the terminal summary and the report group grid
points alike; goodput from delivered bytes is defined in fatpipe.goodput only."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fake_backend import FakeBackend
from fatpipe import goodput, results, summary
from fatpipe import spec as spec_mod
from fatpipe import study as study_mod
from fatpipe.analysis.stats import grid_summary, point_columns
from fatpipe.compare import compare
from fatpipe.report import write_report
from fatpipe.results import StudyStore
from fatpipe.tables import summary_table
from synthetic_study import streams_study

ROOT = Path(__file__).resolve().parents[1]

# Two flow groups, group 0's CCA swept: group 1's rows differ per sweep point.
SPEC = """
version = 1
[study]
name = "grid"
duration = "2s"
warmup = "1s"
repetitions = 2
interval = "100ms"
[path]
rate = "100Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
streams = 2
[[flows]]
cc = "reno"
sender = "s2"
[sweep]
"flows.0.cc" = ["cubic", "bbr", "htcp"]
"""


def _fake_study(tmp_path, monkeypatch):
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    spec, raw = spec_mod.load(p)
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    monkeypatch.setattr(study_mod, "get_backend", lambda _name: FakeBackend())
    study_mod.run_plans(study_mod.plan_runs(spec, raw), store, jobs=1, emit=lambda _line: None)
    store.consolidate()
    return store


def test_report_and_compare_read_studies_through_the_store(tmp_path, monkeypatch):
    a = streams_study(tmp_path / "a", ccs=("bbr",), streams=(1, 2), mtus=(1500,), losses=(1e-5, 1e-3),
                      reps=2, duration_s=3.0)
    b = streams_study(tmp_path / "b", ccs=("bbr",), streams=(1, 2), mtus=(1500,), losses=(1e-5, 1e-3),
                      reps=2, duration_s=3.0, seed=4)
    loaded = []
    real_load = results.StudyStore.load

    def counting_load(self):
        loaded.append(self.root)
        return real_load(self)

    monkeypatch.setattr(results.StudyStore, "load", counting_load)
    write_report(a)
    assert loaded == [a]
    compare(a, b, tmp_path / "cmp")
    assert loaded == [a, a, b]


def test_compare_imports_no_report_reader():
    code = "import sys, fatpipe.compare; print('fatpipe.report.html' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_terminal_summary_has_one_line_per_report_grid_point(tmp_path, monkeypatch):
    runs = _fake_study(tmp_path, monkeypatch).runs_table()
    points = grid_summary(runs, "goodput_bps", point_columns(runs))
    lines = summary_table(runs).splitlines()
    assert len(points) == 6  # 3 sweep points x 2 flow groups
    assert len(lines) == 1 + len(points)  # a header, then one line per grid point
    # Group 1 (reno) appears once per value of the swept flows.0.cc.
    assert sum(" reno " in f" {line} " for line in lines[1:]) == 3


def test_goodput_of_a_stream_is_measured_after_the_warmup():
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    delivered = np.array([0, 10, 1000, 2000, 5000])
    w = goodput.measurement_window(t, 1.0)
    assert w == (2, 4)
    assert goodput.window_goodput_bps(t, delivered, w) == pytest.approx(4000 * 8 / 1.0)
    assert goodput.measurement_window(t, 2.0) is None  # one sample after the warm-up: no window


def test_summary_and_total_goodput_agree_and_intervals_sum_to_the_total(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    spec, raw = spec_mod.load(p)
    plan = study_mod.plan_runs(spec, raw)[0]
    outcome = FakeBackend().run(plan, tmp_path)
    rows = summary.summarize(plan, outcome)
    for group, row in enumerate(rows):
        mask = [g == group for g in outcome.series["flow_group"]]
        series = {k: [v for v, m in zip(vals, mask, strict=True) if m] for k, vals in outcome.series.items()}
        assert goodput.total_goodput_bps(series, plan.warmup_s) == pytest.approx(row["goodput_bps"])
    per_interval = pd.DataFrame(summary.series_with_goodput(outcome))
    after = per_interval[per_interval["t_s"] > plan.warmup_s + 1e-9]
    span = plan.duration_s - plan.warmup_s
    total = after["goodput_bps"].sum() * plan.sample_interval_s / span
    assert total == pytest.approx(sum(r["goodput_bps"] for r in rows))


def test_only_fatpipe_goodput_turns_delivered_bytes_into_a_rate():
    sources = [*(ROOT / "python" / "fatpipe").rglob("*.py"), *(ROOT / "bench").glob("*.py")]
    offenders = []
    for path in sources:
        if path.name == "goodput.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "delivered" in line and re.search(r"\*\s*8\b|8\s*/", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []
