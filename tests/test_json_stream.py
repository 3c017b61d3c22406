"""`fatpipe run --json-stream`: one JSON object per line on standard output
(live.py, docs/results.md "Live results"), every stored sample sent once
with the values the series table keeps, between its run's run_start and
run_end; progress and tables go to standard error (the live kernel case:
tests/kernel/test_json_stream_kernel.py)."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import fatpipe
from fatpipe.live import RUN_END_COLUMNS
from fatpipe.schema import SERIES_COLUMNS

STUDY = """
version = 1
[study]
name = "streamed"
duration = "2s"
backends = ["sim"]
repetitions = 2
[path]
rate = "50Mbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
streams = 2
[[flows]]
cc = "bbr"
start = "0.5s"
"""


def run_streamed(tmp_path, text=STUDY):
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "fatpipe", "run", str(spec), "--out", str(out), "--json-stream",
                        "--no-report"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return [json.loads(line) for line in p.stdout.splitlines()], p.stderr, out


def test_every_line_is_an_event_and_the_samples_are_the_stored_series(tmp_path):
    events, stderr, out = run_streamed(tmp_path)
    assert "wrote" in stderr and "streamed" in stderr  # the human output moved to standard error
    kinds = [e["event"] for e in events]
    assert kinds[0] == "study_start" and kinds[-1] == "study_end"
    assert events[0]["runs"] == 2 and events[-1] == {"event": "study_end", "runs": 2, "failed": 0}
    samples = pd.DataFrame([e for e in events if e["event"] == "sample"])
    stored = fatpipe.load(out).series
    assert len(samples) == len(stored) > 0
    cols = ["run_id", "backend", *SERIES_COLUMNS, "goodput_bps"]
    assert list(samples.columns[1:]) == cols
    key = ["run_id", "flow_group", "stream", "t_s"]
    a, b = (_cells(df[cols].sort_values(key)) for df in (samples, stored))
    assert a == b


def _cells(df: pd.DataFrame) -> list[list]:
    """The rows' values, nulls (JSON null, Parquet NaN or None) as None."""
    return [[None if pd.isna(v) else v for v in row] for row in df.itertuples(index=False)]


def test_each_runs_samples_come_between_its_start_and_its_end(tmp_path):
    events, _, out = run_streamed(tmp_path)
    runs = fatpipe.load(out).runs
    for run_id in runs["run_id"].unique():
        mine = [i for i, e in enumerate(events) if e.get("run_id") == run_id]
        kinds = [events[i]["event"] for i in mine]
        assert kinds[0] == "run_start" and kinds[-1] == "run_end" and set(kinds[1:-1]) == {"sample"}
        end = events[mine[-1]]
        assert end["status"] == "ok" and [g["flow_group"] for g in end["groups"]] == [0, 1]
        assert set(end["groups"][0]) == set(RUN_END_COLUMNS)
        row = runs[(runs["run_id"] == run_id) & (runs["flow_group"] == 1)].iloc[0]
        assert end["groups"][1]["goodput_bps"] == pytest.approx(row["goodput_bps"])


def test_the_terminal_line_shows_each_finished_intervals_goodput_and_clears_at_the_end():
    from fatpipe.live import GoodputLine

    written = []
    line = GoodputLine(written.append)
    for t in (0.1, 0.2):
        for stream in (0, 1):  # two streams sampled within a millisecond
            line({"event": "sample", "run_id": "r", "t_s": t + stream * 1e-5, "goodput_bps": 10e6})
    line({"event": "sample", "run_id": "r", "t_s": 0.3, "goodput_bps": 1e6})
    line({"event": "run_end", "run_id": "r"})
    assert written[:2] == ["\r  r at 0.1 s: 20.0 Mbit/s   ", "\r  r at 0.2 s: 20.0 Mbit/s   "]
    assert written[-1].strip() == "" and written[-1].endswith("\r")
