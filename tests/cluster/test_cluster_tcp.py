"""An existing scheduler (tcp://) with workers as separate processes on
127.0.0.1: a worker killed in the middle of a study loses no run and
duplicates none; a worker with a different fatpipe build is refused by name
before anything is written."""

from __future__ import annotations

import shutil
import signal
import time

import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip("distributed", reason="needs fatpipe[cluster] (dask[distributed])")

from clusterlab import PYTHON_DIR, Lines, child_env, fatpipe_run, write_small_study  # noqa: E402 - after the skip

RUNS = 24


def _worker_address(client, name: str, timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for address, info in client.scheduler_info(n_workers=-1)["workers"].items():
            if info.get("name") == name:
                return address
        time.sleep(0.05)
    raise AssertionError(f"worker {name} did not register within {timeout_s:.0f} s")


def _running_on(client, address: str, timeout_s: float = 60) -> list[str]:
    """The fatpipe tasks the scheduler has given worker `address` (waits
    until it has one)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        keys = [k for k in client.processing(workers=[address]).get(address, ()) if str(k).startswith("fatpipe-")]
        if keys:
            return keys
        time.sleep(0.02)
    raise AssertionError(f"worker {address} got no fatpipe run within {timeout_s:.0f} s")


def test_worker_killed_mid_study_every_run_present_exactly_once_after_a_second_invocation(tmp_path, dask_processes):
    lab = dask_processes()
    lab.add_worker("wA")
    lab.add_worker("wB")
    study = write_small_study(tmp_path / "s.toml", duration="3s", repetitions=4, rate="1Gbit")
    out = tmp_path / "out"
    with distributed.Client(lab.address, timeout=60, set_as_default=False) as watcher:
        watcher.wait_for_workers(2, timeout=60)
        victim = _worker_address(watcher, "wA")
        first = fatpipe_run([str(study), "--out", str(out), "--no-report", "--cluster", lab.address])
        lines = Lines(first)
        try:
            lines.expect(lambda s: s.startswith(f"[1/{RUNS}] "), what="the first finished run")
            killed_runs = _running_on(watcher, victim)
            lab.workers["wA"].kill()
            lab.workers["wA"].wait(timeout=30)
            done_at_kill = len([s for s in lines.seen if s.startswith("[")])
            lines.expect(lambda s: s.startswith(f"[{done_at_kill + 1}/{RUNS}] "), what="a run finished after the kill")
            first.send_signal(signal.SIGINT)
            lines.rest()
            code = first.wait(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
    assert code in (130, 0), f"first invocation exit {code}:\n" + "\n".join(lines.seen)

    second = fatpipe_run([str(study), "--out", str(out), "--no-report", "--cluster", lab.address])
    again = Lines(second)
    seen = again.rest(timeout_s=120)
    assert second.wait(timeout=60) == 0, "\n".join(seen)
    assert any(s.startswith("resuming: ") for s in seen), "\n".join(seen)

    runs = pq.read_table(out / "runs.parquet", columns=["run_id", "status"]).to_pylist()
    ids = [r["run_id"] for r in runs]
    assert len(ids) == RUNS and len(set(ids)) == RUNS, f"runs not present exactly once: {sorted(ids)}"
    assert {r["status"] for r in runs} == {"ok"}, runs
    for key in killed_runs:  # what the killed worker was running was redone, once
        run_id = "-".join(str(key).split("-")[1:4])
        assert ids.count(run_id) == 1, (run_id, sorted(ids))
    series_ids = set(pq.read_table(out / "series.parquet", columns=["run_id"])["run_id"].to_pylist())
    assert series_ids == set(ids)


def test_worker_with_a_different_build_is_refused_by_name_before_anything_is_written(tmp_path, dask_processes):
    other = tmp_path / "other"
    shutil.copytree(PYTHON_DIR / "fatpipe", other / "fatpipe", ignore=shutil.ignore_patterns("__pycache__"))
    with (other / "fatpipe" / "units.py").open("a") as f:
        f.write("\n# a worker whose fatpipe source differs from the client's\n")
    lab = dask_processes()
    env = child_env()
    env["PYTHONPATH"] = str(other)
    lab.add_worker("stale", env=env)
    with distributed.Client(lab.address, timeout=60, set_as_default=False) as watcher:
        watcher.wait_for_workers(1, timeout=60)
        stale = _worker_address(watcher, "stale")
    study = write_small_study(tmp_path / "s.toml")
    proc = fatpipe_run([str(study), "--out", str(tmp_path / "out"), "--no-report", "--cluster", lab.address])
    seen = Lines(proc).rest(timeout_s=120)
    assert proc.wait(timeout=60) == 2, "\n".join(seen)
    refusal = next((s for s in seen if s.startswith("error: refusing to submit")), None)
    assert refusal is not None, "\n".join(seen)
    assert stale in refusal and "source" in refusal, refusal
    assert not (tmp_path / "out").exists()
