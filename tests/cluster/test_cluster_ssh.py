"""`--cluster ssh:…` (Dask's SSHCluster over asyncssh) on the hosts backend's
lab: network namespaces with real OpenSSH servers (tests/hosts/sshlab.py).
The client runs in the lab's emulator namespace, which routes to both the
scheduler's host (s1) and the worker hosts (s1, rx); the lab's ssh_config
reaches each sshd through its ProxyCommand. Needs root, sshd and nc."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytest.importorskip("distributed", reason="needs fatpipe[cluster] (dask[distributed])")
pytest.importorskip("asyncssh", reason="needs asyncssh")

sys.path.insert(0, str(Path(__file__).parents[1] / "hosts"))

import sshlab
from clusterlab import PYTHON_DIR, Lines, child_env, write_small_study

MISSING = sshlab.missing_requirements()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"ssh lab: {MISSING}")

# sshd on these ports sets PYTHONPATH to this worktree in its sessions, as
# an installed fatpipe would be found on a real host.
PY_PORT = 2222


@pytest.fixture(scope="module")
def lab():
    sshlab.remove_stale()
    built = sshlab.build_lab(tag="c")
    try:
        env = {"PYTHONPATH": str(PYTHON_DIR)}
        built.add_sshd("lab-s1-py", "s1", "198.19.1.1", port=PY_PORT, env=env)
        built.add_sshd("lab-rx-py", "rx", "198.19.2.1", port=PY_PORT, env=env)
        built.write_client_files()
        yield built
    finally:
        built.close()
    assert built.leftovers() == []


def test_ssh_cluster_runs_the_study_on_workers_in_two_lab_hosts(lab, tmp_path):
    study = write_small_study(tmp_path / "s.toml")
    spec = f"ssh:lab-s1-py,lab-s1-py,lab-rx-py,ssh_config={lab.ssh_config},python={sys.executable}"
    proc = subprocess.Popen(["ip", "netns", "exec", lab.namespaces["emu"].name, sys.executable, "-m", "fatpipe",
                             "run", str(study), "--out", str(tmp_path / "out"), "--no-report", "--cluster", spec],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env())
    try:
        seen = Lines(proc).rest(timeout_s=150)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, "\n".join(seen)
    assert any(s.startswith("cluster: an SSH cluster (scheduler on lab-s1-py, workers on lab-s1-py, lab-rx-py), "
                            "2 workers") for s in seen), "\n".join(seen)
    runs = pq.read_table(tmp_path / "out" / "runs.parquet", columns=["run_id", "status"]).to_pylist()
    assert len(runs) == 12 and {r["status"] for r in runs} == {"ok"}, runs
