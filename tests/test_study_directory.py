"""The study directory is fatpipe's alone while it writes it: one process at
a time (a lock naming its holder), never a foreign directory, never through
a planted symlink, one-line errors for unusable places, orphan temporary
files removed on resume."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fake_backend import FakeBackend
from fatpipe import spec as spec_mod
from fatpipe import storefs
from fatpipe import study as study_mod
from fatpipe.results import StoreError, StudyLocked, StudyStore

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
version = 1
[study]
name = "dir"
backends = ["sim"]
duration = "1s"
interval = "100ms"
repetitions = 2
[path]
rate = "20Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
"""


def _fatpipe(*args, cwd=None, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([sys.executable, "-m", "fatpipe", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


@pytest.fixture
def study_file(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    return p


@pytest.fixture
def fake(monkeypatch):
    backend = FakeBackend()
    monkeypatch.setattr(study_mod, "get_backend", lambda _name: backend)
    return backend


def _plans(study_file):
    spec, raw = spec_mod.load(study_file)
    return study_mod.plan_runs(spec, raw)


def test_a_second_process_on_the_same_out_refuses_naming_the_holder(tmp_path, study_file):
    out = tmp_path / "out"
    store = StudyStore(out)
    with store.lock():  # this test process holds it, as a running study would
        r = _fatpipe("run", str(study_file), "--out", str(out), "--no-report")
    assert r.returncode == 2
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in r.stderr
    assert f"{out} is in use by another fatpipe (pid {os.getpid()} on " in line
    assert not (out / "runs").exists()  # the refused process wrote nothing


def test_the_lock_is_released_when_the_study_ends_and_refused_while_held(tmp_path):
    store = StudyStore(tmp_path / "out")
    with store.lock(), pytest.raises(StudyLocked, match="in use by another fatpipe"), store.lock():
        pass
    with store.lock():  # released: taken again
        pass


def test_a_foreign_nonempty_directory_is_refused_and_nothing_in_it_is_overwritten(tmp_path, study_file):
    out = tmp_path / "mine"
    out.mkdir()
    files = {"manifest.json": b'{"mine": 1}', "runs.parquet": b"user data", "report.html": b"<p>mine</p>"}
    for name, data in files.items():
        (out / name).write_bytes(data)
    r = _fatpipe("run", str(study_file), "--out", str(out), "--no-report")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "is not empty" in r.stderr and "is not a fatpipe study" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(files)  # not even a lock file
    for name, data in files.items():
        assert (out / name).read_bytes() == data


def test_an_empty_directory_and_an_own_study_are_accepted(tmp_path):
    (tmp_path / "empty").mkdir()
    StudyStore(tmp_path / "empty").prepare(SPEC)
    assert (tmp_path / "empty" / ".fatpipe-study").exists()
    StudyStore(tmp_path / "empty").prepare(SPEC)  # its own study: resumed


def test_a_symlink_planted_in_a_runs_workdir_is_removed_not_followed(tmp_path, study_file, fake):
    plans = _plans(study_file)
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    target = tmp_path / "precious"
    target.write_text("keep me")
    workdir = store.root / "work" / plans[0].run_id
    workdir.mkdir(parents=True)
    (workdir / "samples-g0.jsonl").symlink_to(target)
    seen = []

    def run(plan, wd):
        wd = Path(wd)
        seen.append((wd.is_symlink(), sorted(p.name for p in wd.iterdir()), oct(wd.stat().st_mode & 0o777)))
        (wd / "samples-g0.jsonl").write_text('{"t_s": 0}\n')  # what a backend writes there
        return FakeBackend.run(fake, plan, wd)

    fake.run = run
    study_mod.run_plans(plans[:1], store, jobs=1, emit=lambda _line: None)
    assert target.read_text() == "keep me"
    assert seen == [(False, [], "0o700")]  # a fresh private directory, the link gone


@pytest.mark.usefixtures("fake")
def test_a_symlinked_work_directory_is_refused_and_its_target_untouched(tmp_path, study_file):
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sim-p000-r00").mkdir(parents=True)
    (elsewhere / "sim-p000-r00" / "keep").write_text("x")
    os.rmdir(store.root / "work")
    (store.root / "work").symlink_to(elsewhere)
    with pytest.raises(StoreError, match="work is a symlink or not a directory"):
        study_mod.run_plans(_plans(study_file)[:1], store, jobs=1, emit=lambda _line: None)
    assert (elsewhere / "sim-p000-r00" / "keep").read_text() == "x"


def test_a_symlink_at_a_result_file_is_replaced_not_written_through(tmp_path):
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    target = tmp_path / "victim"
    target.write_text("keep me")
    (store.root / "manifest.json").symlink_to(target)
    store.write_manifest({"study": "dir"})
    assert target.read_text() == "keep me"
    assert not (store.root / "manifest.json").is_symlink()


def test_temporary_files_have_unique_names_and_orphans_are_removed_on_resume(tmp_path):
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    orphans = [store.root / ".runs.parquet.123.abcd.tmp", store.root / "series" / ".sim-p000-r00.parquet.9.ff.tmp"]
    for p in orphans:
        p.write_bytes(b"half")
    keep = store.root / "series" / "notes.tmp.txt"
    keep.write_text("not ours")
    removed = store.prepare(SPEC)
    assert sorted(removed) == [".runs.parquet.123.abcd.tmp", "series/.sim-p000-r00.parquet.9.ff.tmp"]
    assert not any(p.exists() for p in orphans) and keep.exists()
    # Two writers of one name never share a temporary file.
    names = set()
    real_open = os.open

    def spy(path, flags, *a, **kw):
        if str(path).endswith(storefs.TMP_SUFFIX):
            names.add(path)
            assert flags & os.O_EXCL and flags & os.O_NOFOLLOW
        return real_open(path, flags, *a, **kw)

    os_open = storefs.os.open
    try:
        storefs.os.open = spy
        store.write_manifest({"a": 1})
        store.write_manifest({"a": 2})
    finally:
        storefs.os.open = os_open
    assert len(names) == 2


def test_a_read_only_parent_gives_a_one_line_error(tmp_path, study_file):
    """As a user without CAP_DAC_OVERRIDE (root writes anywhere: as root the
    command runs with that capability dropped, through setpriv)."""
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    drop = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        caps = "-dac_override,-dac_read_search"
        drop = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    try:
        r = subprocess.run([*drop, sys.executable, "-m", "fatpipe", "run", str(study_file), "--out",
                            str(parent / "study"), "--no-report"], capture_output=True, text=True, env=env,
                           timeout=120)
    finally:
        parent.chmod(0o755)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == (f"error: cannot write {parent / 'study'}: permission denied; "
                                "choose another --out directory or fix it")


def test_an_unusable_out_gives_a_one_line_error(tmp_path, study_file):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out, expected in ((a_file, "exists and is not a directory"), (a_file / "study", "a parent is not a directory")):
        r = _fatpipe("run", str(study_file), "--out", str(out), "--no-report")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and expected in r.stderr


def test_a_read_only_store_is_refused_in_process_as_a_store_error(tmp_path, monkeypatch):
    def refuse(*_a, **_kw):
        raise OSError(30, "Read-only file system")  # EROFS, as a read-only mount gives

    monkeypatch.setattr(storefs.os, "mkdir", refuse)
    with pytest.raises(StoreError, match="the file system is read-only"):
        StudyStore(tmp_path / "out" / "new").prepare(SPEC)


@pytest.mark.usefixtures("fake")
def test_records_list_the_rows_of_their_files(tmp_path, study_file):
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    plans = _plans(study_file)
    study_mod.run_plans(plans[:1], store, jobs=1, emit=lambda _line: None)
    rec = json.loads(store.record_path(plans[0].run_id).read_text())
    assert rec["files"] == {"series": 11}  # 1 stream x (10 intervals + t=0)
