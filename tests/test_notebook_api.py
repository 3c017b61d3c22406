"""fatpipe.run() and fatpipe.load() from plain Python, as a notebook uses them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import fatpipe
from fatpipe import cli

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
version = 1
[study]
name = "notebook"
description = "fatpipe.run from python"
backends = ["sim"]
duration = "2s"
warmup = "0.5s"
interval = "100ms"
[path]
rate = "50Mbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
streams = 2
[[flows]]
cc = "reno"
kind = "rpc"
sender = "s2"
request = "100B"
response = "10kB"
concurrency = 1
"""

SCRIPT = """
import json, sys, fatpipe
s = fatpipe.run(sys.argv[1], backend="sim", out=sys.argv[2], jobs=1, progress=None)
again = fatpipe.load(sys.argv[2])
print(json.dumps({
    "types": [type(t).__name__ for t in (s.runs, s.series, s.rpcs)],
    "runs": len(s.runs), "series": len(s.series), "rpcs": len(s.rpcs),
    "name": s.spec.study.name, "manifest_study": s.manifest["study"],
    "same_goodput": s.runs["goodput_bps"].tolist() == again.runs["goodput_bps"].tolist(),
    "same_series": len(again.series) == len(s.series),
}))
"""


def test_run_and_load_work_from_a_plain_python_process(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(SPEC)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(study), str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["types"] == ["DataFrame"] * 3
    assert got["runs"] == 2 and got["series"] > 0 and got["rpcs"] > 0
    assert got["name"] == got["manifest_study"] == "notebook"
    assert got["same_goodput"] and got["same_series"]


def test_fatpipe_run_and_the_cli_take_the_same_path_to_the_same_tables(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(SPEC)
    via_api = fatpipe.run(study, out=tmp_path / "api", progress=None)
    assert cli.main(["run", str(study), "--out", str(tmp_path / "cli"), "--no-report"]) == 0
    via_cli = fatpipe.load(tmp_path / "cli")
    cols = [c for c in via_api.runs.columns if c != "wall_s"]
    pd.testing.assert_frame_equal(via_api.runs[cols], via_cli.runs[cols])
    assert set(via_api.manifest) == set(via_cli.manifest)


def test_load_reads_series_lazily_and_by_run(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(SPEC)
    s = fatpipe.run(study, out=tmp_path / "out", progress=None)
    assert "series" not in vars(s)  # not read until asked for
    one = s.read_series(columns=["run_id", "t_s"], run_id=s.runs["run_id"].iloc[0])
    assert list(one.columns) == ["run_id", "t_s"] and len(one) == len(s.series)
    assert s.name == "notebook" and s.description == "fatpipe.run from python"
    assert "notebook" in repr(s)


def test_load_of_a_directory_without_results_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no runs.parquet"):
        fatpipe.load(tmp_path)
