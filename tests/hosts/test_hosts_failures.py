"""What ends a hosts run early never leaves anything on a host: no process
of the run, no qdisc or NFQUEUE rule, no changed sysctl, no run directory;
and the runs that finished stay intact.

Each case waits for an event (the run's traffic started: its samples file
exists on the sender), injects the failure, and then waits, with a
deadline derived from the agent's lease, for the hosts to be clean."""

from __future__ import annotations

import asyncio
import glob
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest
import sshlab
from test_hosts_run import RUN_HOSTS, leftovers_on_hosts, write_study

import fatpipe
from conftest import write_testbed
from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.hosts import layout

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
SYSCTLS = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_no_metrics_save")
LEASE_S = 4.0
KEEPALIVE_S = 1.0
# The agent cleans up at most one lease after it last heard from us, plus
# its SIGTERM grace and SIGKILL wait (agent.py); then some slack for the lab.
CLEAN_WITHIN_S = LEASE_S + 2.0 + 5.0 + 10.0


def sysctls(lab) -> dict[str, str]:
    out = {}
    for role, ns in lab.namespaces.items():
        for key in SYSCTLS:
            path = "/proc/sys/" + key.replace(".", "/")
            out[f"{role} {key}"] = " ".join(sshlab.cmd.run(ns.exec_args(["cat", path])).split())
    return out


class HostsState:
    """The lab's hosts before a case, and what differs afterwards."""

    def __init__(self, lab):
        self.lab = lab
        self.before = sysctls(lab)
        assert leftovers_on_hosts(lab) == [], "a previous test left something on the hosts"

    def left(self) -> list[str]:
        now = sysctls(self.lab)
        changed = [f"sysctl {k} = {now[k]!r}, was {v!r}" for k, v in self.before.items() if now[k] != v]
        return leftovers_on_hosts(self.lab) + changed

    def assert_clean(self, within_s: float = CLEAN_WITHIN_S) -> None:
        deadline = time.monotonic() + within_s
        while (left := self.left()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == [], f"left on the hosts {within_s:g} s after the failure: {left}"


def sender_samples_exist() -> bool:
    return bool(glob.glob(f"{layout.REMOTE_ROOT}/{layout.RUN_DIR_PREFIX}*.alpha/samples-g0.jsonl"))


def wait_for(condition, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s:g} s"
        time.sleep(0.05)


def serving_sshd(lab, alias: str) -> list[int]:
    """The per-connection sshd processes under the listener of `alias`."""
    listener = lab.daemons[alias].proc.pid
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
            if ppid == listener:
                found.append(int(entry.name))
    return found


def one_point_study(tmp_path: Path, name: str, duration: str = "8s") -> Path:
    return write_study(tmp_path / f"{name}.toml", name, duration=duration, losses="[0.0]", ccs='["cubic"]')


def where_it_waits(thread: threading.Thread) -> str:
    """The stack of a run thread that did not end, and of every task of
    the event loop it runs (what a hang waits on)."""
    frame = sys._current_frames().get(thread.ident)
    if frame is None:
        return "(thread gone)"
    text = "".join(traceback.format_stack(frame))
    while frame is not None:
        loop = frame.f_locals.get("self")
        if isinstance(loop, asyncio.AbstractEventLoop):
            tasks = io.StringIO()
            for task in asyncio.all_tasks(loop):
                task.print_stack(file=tasks)
            return text + "\n" + tasks.getvalue()
        frame = frame.f_back
    return text


def run_in_thread(study: Path, out: Path, testbed: Path) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def go():
        try:
            result["study"] = fatpipe.run(study, backend="hosts", out=out, testbed=testbed, progress=None)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            result["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, result


def test_unreachable_host_is_named_and_nothing_starts(lab, tmp_path):
    state = HostsState(lab)
    config = tmp_path / "ssh_config"
    # An address nothing answers on: the ProxyCommand's connect fails.
    config.write_text(lab.ssh_config.read_text() + "\nHost lab-nowhere\n    Hostname 198.19.2.1\n    Port 2999\n"
                      f"    ProxyCommand ip netns exec {lab.namespaces['rx'].name} {sys.executable} {sshlab.RELAY} "
                      "%h %p\n    User root\n")
    hosts = {**RUN_HOSTS, "beta": {**RUN_HOSTS["beta"], "ssh": "lab-nowhere"}}
    testbed = write_testbed(lab, tmp_path / "testbed.toml", hosts)
    testbed.write_text(testbed.read_text().replace(str(lab.ssh_config), str(config)))
    with pytest.raises(BackendUnavailable) as e:
        fatpipe.run(one_point_study(tmp_path, "unreachable"), backend="hosts", out=tmp_path / "out",
                    testbed=testbed, progress=None)
    assert "receiver on beta: NOT READY" in str(e.value) and "alpha: ready" in str(e.value), str(e.value)
    assert not (tmp_path / "out").exists()
    assert state.left() == []


def test_killed_sshd_fails_the_run_and_the_study_resumes(lab, tmp_path):
    state = HostsState(lab)
    testbed = write_testbed(lab, tmp_path / "testbed.toml", RUN_HOSTS, lease=f"{LEASE_S:g}s")
    study, out = one_point_study(tmp_path, "sshd-killed"), tmp_path / "out"
    thread, result = run_in_thread(study, out, testbed)
    wait_for(sender_samples_exist, "the run's traffic")
    serving = serving_sshd(lab, "lab-s1")
    assert serving, "no sshd serves the sender's connection"
    for pid in serving:
        os.kill(pid, signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive(), f"the run went on 120 s after sshd {serving} was killed:\n{where_it_waits(thread)}"
    state.assert_clean()
    runs = result["study"].runs
    assert list(runs["status"].unique()) == ["failed"]
    assert "host alpha (lab-s1)" in runs["reason"].iloc[0], runs["reason"].iloc[0]
    # The listener lives on: the study resumes and redoes the failed run.
    again = fatpipe.run(study, backend="hosts", out=out, testbed=testbed, progress=None)
    assert list(again.runs["status"].unique()) == ["ok"], again.runs["reason"].to_string()
    state.assert_clean()


def drop_all(lab, role: str, on: bool) -> None:
    """Drop every packet of host `role` (its SSH too) or stop doing so."""
    ns = lab.namespaces[role]
    for chain in ("INPUT", "OUTPUT"):
        sshlab.cmd.run(ns.exec_args(["iptables-legacy", "-w", "-I" if on else "-D", chain, "-j", "DROP"]),
                       check=on)


def test_host_whose_traffic_is_dropped_cleans_up_by_its_lease(lab, tmp_path):
    state = HostsState(lab)
    testbed = write_testbed(lab, tmp_path / "testbed.toml", RUN_HOSTS, lease=f"{LEASE_S:g}s",
                            keepalive=f"{KEEPALIVE_S:g}s")
    thread, result = run_in_thread(one_point_study(tmp_path, "dropped"), tmp_path / "out", testbed)
    try:
        wait_for(sender_samples_exist, "the run's traffic")
        drop_all(lab, "s1", True)
        thread.join(timeout=120)
        assert not thread.is_alive(), f"the run went on 120 s after its traffic was dropped:\n{where_it_waits(thread)}"
        # Nothing reaches the sender now: its agent ends by its lease.
        state.assert_clean()
    finally:
        drop_all(lab, "s1", False)
    runs = result["study"].runs
    assert list(runs["status"].unique()) == ["failed"]
    assert "host alpha" in runs["reason"].iloc[0], runs["reason"].iloc[0]


RUNNER = "import sys; from fatpipe.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_fatpipe_cleans_the_hosts_and_keeps_finished_runs(lab, tmp_path, sig):
    state = HostsState(lab)
    testbed = write_testbed(lab, tmp_path / "testbed.toml", RUN_HOSTS)
    study = write_study(tmp_path / "study.toml", "signalled", duration="5s", losses="[0.0, 0.0]",
                        ccs='["cubic", "reno"]')
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, "run", str(study), "--backend", "hosts", "--testbed",
                             str(testbed), "--out", str(out), "--no-report"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The second run's traffic: the first has finished and been recorded.
        wait_for(lambda: (out / "runs" / "hosts-p000-r00.json").exists() and sender_samples_exist(),
                 "the second run's traffic", timeout_s=90)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, err
    state.assert_clean(within_s=15.0)  # the controller closed every agent before it exited
    record = json.loads((out / "runs" / "hosts-p000-r00.json").read_text())
    assert record["status"] == "ok"
    finished = fatpipe.load(out).runs
    assert list(finished["run_id"].unique()) == ["hosts-p000-r00"] and (finished["status"] == "ok").all()


def test_max_sessions_4_host_runs_the_study(lab, tmp_path):
    state = HostsState(lab)
    hosts = {**RUN_HOSTS, "alpha": {**RUN_HOSTS["alpha"], "ssh": "lab-s1-max4"}}
    testbed = write_testbed(lab, tmp_path / "testbed.toml", hosts)
    done = fatpipe.run(one_point_study(tmp_path, "max4", duration="4s"), backend="hosts", out=tmp_path / "out",
                       testbed=testbed, progress=None)
    assert list(done.runs["status"].unique()) == ["ok"], done.runs["reason"].to_string()
    state.assert_clean(within_s=5.0)


@pytest.mark.skipif(not os.path.exists(sshlab.FAKETIME_LIB), reason="needs libfaketime (apt-get install faketime)")
def test_clock_offset_of_a_host_is_measured_and_corrected(lab, tmp_path):
    state = HostsState(lab)
    hosts = {**RUN_HOSTS, "beta": {**RUN_HOSTS["beta"], "ssh": "lab-rx-skew"}}  # its clock: +100 s
    testbed = write_testbed(lab, tmp_path / "testbed.toml", hosts)
    done = fatpipe.run(one_point_study(tmp_path, "skewed", duration="4s"), backend="hosts", out=tmp_path / "out",
                       testbed=testbed, progress=None)
    runs = done.runs
    assert list(runs["status"].unique()) == ["ok"], runs["reason"].to_string()
    clock = done.run_facts("hosts-p000-r00")["clock"]
    assert abs(clock["beta"]["offset_s"] - 100.0) < 0.5, clock
    assert abs(clock["alpha"]["offset_s"]) < 0.05, clock
    # Corrected: the RPC client on the skewed receiver started its RPCs at
    # the common start (first RPC within a second of it), not 100 s off.
    starts = done.rpcs["start_s"]
    assert len(starts) > 0 and 0.0 <= starts.min() < 1.0 and starts.max() < 4.0, starts.describe()
    assert runs["path_clock_uncertainty_s"].iloc[0] < 0.01
    state.assert_clean(within_s=5.0)
