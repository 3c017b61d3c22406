"""Resume heals: a run whose files are damaged (truncated Parquet, a broken
record, unreadable raw samples) is redone, never fatal; a run that panics
inside the simulator fails alone."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fake_backend import FakeBackend
from fatpipe import spec as spec_mod
from fatpipe import study as study_mod
from fatpipe.backends import sim as sim_backend
from fatpipe.results import StudyStore

SPEC = """
version = 1
[study]
name = "heal"
duration = "1s"
interval = "100ms"
repetitions = 3
[path]
rate = "20Mbit"
rtt = "10ms"
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


@pytest.fixture
def done(tmp_path, monkeypatch):
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    spec, raw = spec_mod.load(p)
    plans = study_mod.plan_runs(spec, raw)
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    backend = FakeBackend()

    def run(plan, workdir):
        out = FakeBackend.run(backend, plan, workdir)
        out.rpcs = {"flow_group": [1], "stream": [0], "start_s": [0.1], "duration_s": [0.01],
                    "response_bytes": [10000]}
        (Path(workdir) / "samples-g0.jsonl").write_text('{"t_s": 0.0}\n{"t_s": 0.1}\n')
        return out

    backend.run = run
    monkeypatch.setattr(study_mod, "get_backend", lambda _name: backend)
    study_mod.run_plans(plans, store, jobs=1, emit=lambda _line: None)
    backend.calls.clear()
    return plans, store, backend


def _resume(plans, store):
    lines = []
    study_mod.run_plans(plans, store, jobs=1, emit=lines.append)
    return lines


@pytest.mark.parametrize("damage", ["truncated series", "truncated rpcs", "series without a column",
                                    "truncated record", "truncated raw samples", "missing series"])
def test_a_damaged_run_is_redone_on_resume_and_the_others_are_kept(done, damage):
    plans, store, backend = done
    victim = plans[1].run_id
    series = store.root / "series" / f"{victim}.parquet"
    before = {p.run_id: store.record_path(p.run_id).read_bytes() for p in plans if p.run_id != victim}
    if damage == "truncated series":
        series.write_bytes(series.read_bytes()[:200])
    elif damage == "truncated rpcs":
        rpcs = store.root / "rpcs" / f"{victim}.parquet"
        rpcs.write_bytes(rpcs.read_bytes()[:-30])
    elif damage == "series without a column":
        pq.write_table(pq.read_table(series).drop_columns(["cwnd_segments"]), series)
    elif damage == "truncated record":
        rec = store.record_path(victim)
        rec.write_bytes(rec.read_bytes()[:50])
    elif damage == "truncated raw samples":
        raw = store.root / "work" / victim / "samples-g0.jsonl"
        raw.write_text('{"t_s": 0.0}\n{"t_s": 0.')
    elif damage == "missing series":
        series.unlink()
    lines = _resume(plans, store)
    assert backend.calls == [victim]
    assert any(line.startswith(f"redoing {victim}: ") for line in lines), lines
    for rid, data in before.items():
        assert store.record_path(rid).read_bytes() == data
    assert set(store.finished()) == {p.run_id for p in plans}
    counts = store.consolidate()
    assert counts["runs"] == 2 * len(plans) and counts["rpcs"] == len(plans)


def test_an_intact_study_resumes_with_nothing_to_redo(done):
    plans, store, backend = done
    lines = _resume(plans, store)
    assert backend.calls == [] and not any("redoing" in line for line in lines)


def test_consolidation_skips_a_damaged_run_instead_of_failing(done):
    plans, store, _ = done
    victim = plans[0].run_id
    series = store.root / "series" / f"{victim}.parquet"
    series.write_bytes(series.read_bytes()[:100])
    counts = store.consolidate()
    assert counts["series"] == 3 * 11 * (len(plans) - 1)  # 3 streams x 11 samples per run


def test_a_simulator_panic_fails_that_run_with_its_reason_and_the_study_goes_on(tmp_path, monkeypatch):
    """No plan the scenario accepts makes the simulator panic (its inputs are
    validated and its arithmetic saturates), so the panic comes from a
    stand-in for the native call raising the real exception class that
    crates/py turns a caught panic into."""
    native = sim_backend._native()
    assert issubclass(native.SimulationPanic, RuntimeError)
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    spec, raw = spec_mod.load(p)
    plans = study_mod.plan_runs(spec, raw)
    real = native.simulate

    def simulate(plan_json, bpf_objects=None):
        if json.loads(plan_json)["run_id"] == plans[1].run_id:
            raise native.SimulationPanic("simulator panicked: index out of bounds")
        return real(plan_json, bpf_objects)

    monkeypatch.setattr(sim_backend, "_native", lambda: type("N", (), {"simulate": staticmethod(simulate)}))
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    progress = study_mod.run_plans(plans, store, jobs=2, emit=lambda _line: None)
    assert progress.failed == 1 and progress.done == len(plans)
    rec = json.loads(store.record_path(plans[1].run_id).read_text())
    assert rec["status"] == "failed"
    assert rec["reason"] == "SimulationPanic: simulator panicked: index out of bounds"
    assert set(store.finished()) == {p.run_id for p in plans} - {plans[1].run_id}
