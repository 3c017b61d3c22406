"""The backend registry: generic layers (spec, study runner, CLI) ask it and
never name a backend (test_generic_layers.py); a backend registered from
outside runs a study end to end, as many runs at once as it allows."""

import threading
import time

import pandas as pd
import pytest

import fatpipe
from fake_backend import FakeBackend, FakeReport
from fatpipe import backends, cli
from fatpipe import spec as spec_mod
from fatpipe.study import plan_runs

SPEC = """
version = 1
[study]
name = "registry"
backends = ["dummy"]
duration = "2s"
warmup = "1s"
repetitions = 6
interval = "100ms"
[path]
rate = "100Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
streams = 2
"""


class DummyBackend(FakeBackend):
    """FakeBackend's samples, run slowly enough that parallel runs overlap;
    records how many ran at once and on which threads."""

    name = "dummy"

    def __init__(self, at_once):
        super().__init__()
        self.at_once = at_once
        self.lock = threading.Lock()
        self.active = 0
        self.most_at_once = 0
        self.threads = set()
        self.cleaned = []

    def max_parallel_runs(self, jobs):
        return min(jobs, self.at_once)

    def run(self, plan, workdir):
        with self.lock:
            self.active += 1
            self.most_at_once = max(self.most_at_once, self.active)
            self.threads.add(threading.get_ident())
        try:
            time.sleep(0.15)
            return super().run(plan, workdir)
        finally:
            with self.lock:
                self.active -= 1

    def doctor(self):
        return FakeReport()

    def clean(self):
        return ["dummy leftover"]


@pytest.fixture
def dummy():
    made = []

    def register(at_once):
        backend = DummyBackend(at_once)
        backends.register_backend("dummy", lambda: backend, replace=True)
        made.append(backend)
        return backend

    yield register
    backends.unregister_backend("dummy")


def _spec_file(tmp_path, text=SPEC):
    p = tmp_path / "study.toml"
    p.write_text(text)
    return p


def test_a_registered_backend_runs_a_study_through_the_cli_with_parallel_runs(tmp_path, dummy):
    backend = dummy(at_once=3)
    out = tmp_path / "out"
    assert cli.main(["run", str(_spec_file(tmp_path)), "--out", str(out), "--jobs", "4", "--no-report"]) == 0
    runs = pd.read_parquet(out / "runs.parquet")
    assert set(runs["backend"]) == {"dummy"} and set(runs["status"]) == {"ok"}
    assert runs["run_id"].nunique() == 6
    assert runs["goodput_bps"].iloc[0] == pytest.approx(16e6)  # 2 streams x 1 MB/s
    assert 1 < backend.most_at_once <= 3


def test_a_registered_backend_runs_a_study_through_fatpipe_run(tmp_path, dummy):
    backend = dummy(at_once=2)
    s = fatpipe.run(_spec_file(tmp_path), out=tmp_path / "out", jobs=8, progress=None)
    assert set(s.runs["backend"]) == {"dummy"} and len(s.runs) == 6
    assert backend.most_at_once == 2
    assert s.manifest["backends"] == {"dummy": {"fake": True}}


def test_a_backend_that_allows_one_run_at_a_time_runs_in_the_calling_thread(tmp_path, dummy):
    backend = dummy(at_once=1)
    fatpipe.run(_spec_file(tmp_path), out=tmp_path / "out", jobs=8, progress=None)
    assert backend.most_at_once == 1
    assert backend.threads == {threading.get_ident()}


def test_the_spec_accepts_registered_backends_and_names_them_when_rejecting_one(tmp_path, dummy):
    dummy(at_once=1)
    spec, _ = spec_mod.load(_spec_file(tmp_path))
    assert spec.study.backends == ["dummy"]
    with pytest.raises(spec_mod.SpecError) as err:
        spec_mod.load(_spec_file(tmp_path, SPEC.replace('["dummy"]', '["ns3"]')))
    msg = str(err.value)
    assert "study.backends" in msg and "'ns3'" in msg
    assert ", ".join(backends.backend_names()) in msg


def test_the_default_backend_comes_from_the_registry(tmp_path):
    spec, _ = spec_mod.load(_spec_file(tmp_path, SPEC.replace('backends = ["dummy"]\n', "")))
    assert spec.study.backends == [backends.DEFAULT_BACKEND]
    assert backends.DEFAULT_BACKEND in backends.backend_names()


def test_cli_backend_choices_follow_the_registry(tmp_path, dummy, capsys):
    dummy(at_once=1)
    assert cli.main(["check", str(_spec_file(tmp_path)), "--backend", "dummy"]) == 0
    assert "6 runs" in capsys.readouterr().out
    backends.unregister_backend("dummy")
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["check", "x.toml", "--backend", "dummy"])


def test_doctor_and_clean_ask_every_registered_backend(monkeypatch, capsys):
    backend = DummyBackend(at_once=1)
    # Only the dummy: the real kernel doctor would probe namespaces here.
    monkeypatch.setattr(backends, "_factories", {"dummy": lambda: backend})
    monkeypatch.setattr(backends, "_instances", {})
    assert cli.main(["doctor"]) == 0
    assert "dummy backend:\n  [ok] fake backend: always usable" in capsys.readouterr().out
    assert cli.main(["clean"]) == 0
    assert "dummy: dummy leftover" in capsys.readouterr().out


def test_the_base_declares_every_capability_with_a_default_and_every_backend_subclasses_it(tmp_path):
    class Bare(backends.Backend):
        name = "bare"

        def check(self, plans):
            pass

        def facts(self):
            return {}

        def run(self, plan, workdir):  # noqa: ARG002 - never called
            raise AssertionError("not run")

        def doctor(self):
            return FakeReport()

        def clean(self):
            return []

        def clean_stale(self):
            return []

    bare = Bare()
    assert (bare.takes_testbed, bare.measures_path, bare.cluster_resource) == (False, False, None)
    assert bare.max_parallel_runs(8) == 1
    spec, raw = spec_mod.load(_spec_file(tmp_path, SPEC.replace('["dummy"]', '["sim"]')))
    [plan, *_] = plan_runs(spec, raw)
    assert bare.estimated_wall_s(plan, 1e6) is None
    for name in backends.backend_names():
        assert isinstance(backends.get_backend(name), backends.Backend), name


def test_a_factory_that_makes_no_backend_subclass_is_refused_naming_it():
    class NotABackend:
        name = "loose"

    backends.register_backend("loose", NotABackend)
    try:
        with pytest.raises(TypeError, match="backend 'loose'.*NotABackend.*does not subclass"):
            backends.get_backend("loose")
    finally:
        backends.unregister_backend("loose")


def test_an_unknown_backend_is_a_clear_error():
    with pytest.raises(backends.BackendUnavailable, match="unknown backend 'ns3'; choose one of"):
        backends.get_backend("ns3")
    with pytest.raises(ValueError, match="already registered"):
        backends.register_backend("sim", lambda: None)
