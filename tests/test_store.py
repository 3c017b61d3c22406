import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from fake_backend import FakeBackend
from fatpipe import spec as spec_mod
from fatpipe import study as study_mod
from fatpipe.results import SCHEMA_VERSION, StudyStore

SPEC = """
version = 1
[study]
name = "store"
duration = "2s"
warmup = "1s"
repetitions = 2
interval = "100ms"
[path]
rate = "100Mbit"
rtt = "10ms"
loss = 1e-3
[[flows]]
cc = "cubic"
streams = 2
[[flows]]
cc = "reno"
sender = "s2"
[sweep]
"flows.0.cc" = ["cubic", "bbr"]
"""


@pytest.fixture
def setup(tmp_path, monkeypatch):
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    spec, raw = spec_mod.load(p)
    plans = study_mod.plan_runs(spec, raw)
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    backend = FakeBackend()
    monkeypatch.setattr(study_mod, "get_backend", lambda _name: backend)
    return plans, store, backend, monkeypatch


def test_round_trip_writes_runs_and_series_with_schema_version(setup):
    plans, store, backend, _ = setup
    study_mod.run_plans(plans, store, jobs=1, emit=lambda _line: None)
    counts = store.consolidate()
    runs = store.runs_table()
    assert counts["runs"] == len(plans) * 2  # two flow groups per run
    assert set(runs["status"]) == {"ok"}
    assert "flows.0.cc" in runs.columns
    g0 = runs[(runs["flow_group"] == 0) & (runs["rep"] == 0)]
    # 2 streams x 1 MB/s x 8 bits, measured after the 1 s warm-up
    assert g0["goodput_bps"].iloc[0] == pytest.approx(16e6)
    assert g0["retrans_rate"].iloc[0] == pytest.approx(0.01)
    g1 = runs[(runs["flow_group"] == 1) & (runs["rep"] == 1)]
    assert g1["goodput_bps"].iloc[0] == pytest.approx(16e6)  # rep 1 runs at 2 MB/s
    assert "rwnd_limited" in g1["flags"].iloc[0]
    series = pd.read_parquet(store.root / "series.parquet")
    assert {"run_id", "goodput_bps", "cwnd_segments", "srtt_s"} <= set(series.columns)
    meta = pq.read_schema(store.root / "runs.parquet").metadata
    assert meta[b"fatpipe.schema_version"] == str(SCHEMA_VERSION).encode()


def test_interrupted_study_resumes_without_redoing_or_duplicating(setup):
    plans, store, backend, monkeypatch = setup
    backend.interrupt_after = 3
    with pytest.raises(KeyboardInterrupt):
        study_mod.run_plans(plans, store, jobs=1, emit=lambda _line: None)
    done = store.finished()
    assert len(done) == 3
    before = {rid: store.record_path(rid).read_bytes() for rid in done}
    backend.interrupt_after = None
    backend.calls.clear()
    study_mod.run_plans(plans, store, jobs=1, emit=lambda _line: None)
    assert sorted(backend.calls) == sorted(p.run_id for p in plans if p.run_id not in done)
    for rid, data in before.items():
        assert store.record_path(rid).read_bytes() == data  # finished runs untouched
    store.consolidate()
    runs = store.runs_table()
    assert runs.groupby(["run_id", "flow_group"]).size().max() == 1
    assert runs["run_id"].nunique() == len(plans)


def test_failed_run_is_recorded_with_reason_and_retried_on_resume(setup):
    plans, store, backend, _ = setup
    broken = [study_mod.RunPlan(**{**p.__dict__, "flows": (p.flows[0].__class__(**{**p.flows[0].__dict__,
                                                                                 "cc": "broken"}),)})
              for p in plans[:1]]
    progress = study_mod.run_plans(broken, store, jobs=1, emit=lambda _line: None)
    assert progress.failed == 1
    rec = json.loads(store.record_path(broken[0].run_id).read_text())
    assert rec["status"] == "failed" and "backend exploded" in rec["reason"]
    assert broken[0].run_id not in store.finished()


def test_a_different_spec_in_the_same_directory_is_refused(setup):
    _, store, _, _ = setup
    with pytest.raises(FileExistsError, match="different spec"):
        store.prepare(SPEC + "\n# changed\n")
