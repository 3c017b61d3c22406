"""The sim backend end to end: spec -> plans -> Rust simulator -> store."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fatpipe import _native
from fatpipe.backends.sim import SimBackend
from fatpipe.summary import summarize
from spec_text import plans_for

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
version = 1
[study]
name = "sim-smoke"
backends = ["sim"]
duration = "4s"
warmup = "1s"
repetitions = 2
[path]
rate = "100Mbit"
rtt = "20ms"
loss = 0.0
buffer = "1bdp"
[hosts.default]
rmem_max = "16MB"
wmem_max = "16MB"
[[flows]]
cc = "cubic"
streams = 1
[sweep]
"flows.0.cc" = ["reno", "cubic", "htcp", "bbr"]
"""


def test_every_cca_fills_an_unlimited_path_without_loss(tmp_path):
    backend = SimBackend()
    plans = [p for p in plans_for(SPEC, tmp_path) if p.rep == 0]
    backend.check(plans)
    for plan in plans:
        rows = summarize(plan, backend.run(plan, tmp_path))
        assert rows[0]["goodput_bps"] == pytest.approx(100e6, rel=0.10), plan.flows[0].cc
        assert rows[0]["min_rtt_s"] == pytest.approx(0.02, rel=0.05)


def test_same_seed_gives_identical_series_and_other_seed_differs(tmp_path):
    lossy = SPEC.replace("loss = 0.0", "loss = 1e-3")
    plans = [p for p in plans_for(lossy, tmp_path) if p.flows[0].cc == "cubic"]
    backend = SimBackend()
    a = backend.run(plans[0], tmp_path).series
    b = backend.run(plans[0], tmp_path).series
    c = backend.run(plans[1], tmp_path).series  # rep 1: another seed
    assert a == b
    assert a["delivered_bytes"] != c["delivered_bytes"]


def test_unknown_cca_is_rejected_by_check(tmp_path):
    plans = plans_for(SPEC.replace('["reno", "cubic", "htcp", "bbr"]', '["hybla"]'), tmp_path)
    with pytest.raises(Exception, match="hybla"):
        SimBackend().check(plans)


def test_check_accepts_every_cca_the_native_simulator_lists(tmp_path):
    names = list(_native.available_ccas())
    assert {"bbr3", "bic", "highspeed", "scalable", "westwood", "vegas", "illinois", "yeah", "nv"} <= set(names)
    plans = plans_for(SPEC.replace('["reno", "cubic", "htcp", "bbr"]', json.dumps(names)), tmp_path)
    SimBackend().check(plans)
    assert {p.flows[0].cc for p in plans} == set(names)


def test_cli_runs_a_sim_study_and_writes_tables(tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(SPEC.replace('["reno", "cubic", "htcp", "bbr"]', '["reno", "bbr"]'))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "fatpipe", "run", str(study), "--out", str(out), "--no-report"],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "goodput Mbit/s" in proc.stdout
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 4 and set(runs["status"]) == {"ok"}
    series = pd.read_parquet(out / "series.parquet")
    assert series["t_s"].max() == pytest.approx(4.0, abs=0.11)
