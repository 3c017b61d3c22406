"""A study's cost is estimated before it runs and refused above the limits
unless forced; exit codes tell the truth (a study cut short by a closed
stdout exits non-zero; commands that run nothing never claim to keep runs)."""

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import fatpipe
from fatpipe import cli, estimate
from fatpipe import spec as spec_mod
from fatpipe import study as study_mod
from fatpipe.wire import ETH_HEADER_BYTES

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
version = 1
[study]
name = "cost"
backends = ["sim"]
duration = "2s"
interval = "100ms"
repetitions = {reps}
[path]
rate = "10Mbit"
rtt = "10ms"
mtu = 1500
[[flows]]
cc = "cubic"
streams = 3
"""


def _file(tmp_path, reps=2, text=None):
    p = tmp_path / "s.toml"
    p.write_text(text or SPEC.format(reps=reps))
    return p


def _fatpipe(*args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([sys.executable, "-m", "fatpipe", *args], capture_output=True, text=True, env=env,
                          timeout=300, **kw)


def test_run_cost_follows_the_documented_formulas(tmp_path):
    spec, raw = spec_mod.load(_file(tmp_path))
    plan = study_mod.plan_runs(spec, raw)[0]
    cost = estimate.run_cost(plan)
    assert cost.packets == pytest.approx(10e6 * 2 / (8 * (1500 + ETH_HEADER_BYTES)))
    assert cost.series_rows == 3 * 20
    assert cost.bytes_written == 2 * 60 * estimate.SERIES_ROW_BYTES
    from fatpipe.backends.sim import SIM_PACKETS_PER_S
    assert cost.wall_s == pytest.approx(cost.packets / SIM_PACKETS_PER_S)


def test_a_gro_receiver_makes_the_simulator_estimate_faster(tmp_path):
    # One ACK per super-packet instead of one per two segments: the sim
    # backend's wall-time guess uses its GRO throughput (backends/sim.py).
    from fatpipe.backends.sim import SIM_PACKETS_PER_S, SIM_PACKETS_PER_S_GRO
    text = SPEC.format(reps=1) + "[hosts.receiver]\ngro = true\n"
    spec, raw = spec_mod.load(_file(tmp_path, text=text))
    cost = estimate.run_cost(study_mod.plan_runs(spec, raw)[0])
    assert cost.wall_s == pytest.approx(cost.packets / SIM_PACKETS_PER_S_GRO)
    assert SIM_PACKETS_PER_S_GRO > SIM_PACKETS_PER_S


def test_a_host_processing_jitter_makes_the_simulator_estimate_slower(tmp_path):
    # One more event per data unit and ACK (backends/sim.py).
    from fatpipe.backends.sim import SIM_HOST_DELAY_COST, SIM_PACKETS_PER_S
    text = SPEC.format(reps=1) + '[hosts.receiver]\nprocessing_jitter = "20us"\n'
    spec, raw = spec_mod.load(_file(tmp_path, text=text))
    cost = estimate.run_cost(study_mod.plan_runs(spec, raw)[0])
    assert cost.wall_s == pytest.approx(cost.packets / SIM_PACKETS_PER_S * SIM_HOST_DELAY_COST)
    assert SIM_HOST_DELAY_COST > 1


def test_rpc_rows_are_the_fewer_of_arrivals_and_what_the_bottleneck_carries(tmp_path):
    text = SPEC.format(reps=1) + ('[[flows]]\ncc = "reno"\nkind = "rpc"\nsender = "s2"\n'
                                  'request = "100B"\nresponse = "1MB"\nrate = "2/s"\nstreams = 2\n')
    spec, raw = spec_mod.load(_file(tmp_path, text=text))
    cost = estimate.run_cost(study_mod.plan_runs(spec, raw)[0])
    assert cost.rpc_rows == pytest.approx(min(2 * 2 * 2.0, 10e6 * 2 / (8 * 1e6)))


def test_a_study_over_the_disk_limit_is_refused_unless_forced(tmp_path, monkeypatch):
    monkeypatch.setattr(estimate, "free_disk_bytes", lambda _out: 1000.0)
    study = _file(tmp_path)
    with pytest.raises(estimate.StudyTooBig, match=r"writes about .* has 1 kB free \(--force runs it anyway\)"):
        fatpipe.run(study, out=tmp_path / "out", progress=None)
    assert not (tmp_path / "out").exists()  # refused before anything was written
    s = fatpipe.run(study, out=tmp_path / "out", progress=None, force=True)
    assert len(s.runs) == 2


def test_a_run_with_too_many_series_rows_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(estimate, "MAX_SERIES_ROWS_PER_RUN", 50)
    spec, raw = spec_mod.load(_file(tmp_path))
    cost = estimate.study_cost(study_mod.plan_runs(spec, raw), jobs=1)
    assert estimate.over_limits(cost, tmp_path) == [
        "run sim-p000-r00 records 60 series rows; at most 50 per run (fewer streams or a longer study.interval)"]


def test_the_memory_estimate_covers_runs_at_once_and_consolidation(tmp_path):
    spec, raw = spec_mod.load(_file(tmp_path, reps=4))
    plans = study_mod.plan_runs(spec, raw)
    cost = estimate.study_cost(plans, jobs=2)
    per_run = 60 * estimate.SERIES_COLUMN_COUNT * estimate.PY_VALUE_BYTES
    assert cost.memory_bytes == max(2 * per_run, 2 * 240 * estimate.SERIES_ROW_BYTES)
    assert cost.wall_s == pytest.approx(sum(estimate.run_cost(p).wall_s for p in plans) / 2)


def test_check_and_run_print_the_estimate_and_run_refuses_over_a_limit(tmp_path):
    study = _file(tmp_path)
    r = _fatpipe("check", str(study))
    assert r.returncode == 0
    # 120 rows x (51 columns: run_id, backend, SERIES_COLUMNS, goodput_bps) x 8 bytes, twice.
    assert "estimate: 2 runs, 3.3k packets on the bottleneck, 120 series rows, 97.9 kB written" in r.stdout
    r = _fatpipe("run", str(study), "--out", str(tmp_path / "out"), "--no-report")
    assert r.returncode == 0 and "estimate: 2 runs" in r.stdout


def test_a_one_nanosecond_interval_is_refused_by_run_before_anything_is_written(tmp_path):
    study = _file(tmp_path, text=SPEC.format(reps=1).replace('"100ms"', '"1ns"'))
    r = _fatpipe("run", str(study), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "study.interval" in r.stderr and "minimum of 1e-06 s" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_study_whose_stdout_is_closed_stops_non_zero_and_resumes(tmp_path):
    """`fatpipe run … | head`: the study stops at the next progress line,
    exits 128 + SIGPIPE like a Unix tool killed by SIGPIPE, says so on
    stderr, and keeps its finished runs for the rerun."""
    study = _file(tmp_path, reps=40)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.Popen([sys.executable, "-m", "fatpipe", "run", str(study), "--out", str(out), "--jobs", "1",
                             "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = proc.stdout.readline()  # as `head -1` does, then it exits
    proc.stdout.close()
    rc = proc.wait(timeout=300)
    err = proc.stderr.read().decode()
    assert first.startswith(b"estimate:")
    assert rc == 128 + signal.SIGPIPE == cli.EXIT_OUTPUT_CLOSED
    assert "stopped: standard output was closed; finished runs are kept" in err and "Traceback" not in err
    kept = len(list((out / "runs").glob("*.json")))
    assert kept < 40
    r = _fatpipe("run", str(study), "--out", str(out), "--no-report")
    assert r.returncode == 0
    assert (f"resuming: {kept} of 40 runs already finished" in r.stdout) or kept == 0


def test_commands_that_run_nothing_do_not_claim_to_keep_runs_when_interrupted(tmp_path, monkeypatch, capsys):
    study = _file(tmp_path)

    def interrupted(_args):
        raise KeyboardInterrupt

    for command, argv in (("check", ["check", str(study)]), ("doctor", ["doctor"]), ("clean", ["clean"]),
                          ("report", ["report", str(tmp_path)]), ("compare", ["compare", "a", "b"])):
        monkeypatch.setattr(cli, f"cmd_{command}", interrupted)
        assert cli.main(argv) == 130
        err = capsys.readouterr().err
        assert "interrupted" in err and "finished runs are kept" not in err, command
    monkeypatch.setattr(cli, "cmd_run", interrupted)
    assert cli.main(["run", str(study)]) == 130
    assert "finished runs are kept" in capsys.readouterr().err


def test_the_estimate_prints_readable_sizes_and_durations():
    assert estimate._size(38400) == "38.4 kB" and estimate._size(math.inf) == "unlimited"
    assert estimate._duration(90) == "about 1.5 min" and estimate._duration(7200) == "about 2 h"
    assert estimate._duration(0.0003) == "under 1 s"
