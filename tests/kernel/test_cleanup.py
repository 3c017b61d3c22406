"""`fatpipe clean` touches only fatpipe's own; a study run after a SIGKILL
removes what the dead fatpipe left; an orphan linkem dies with its parent;
rates the kernel path cannot emulate are refused at plan time (root)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fatpipe.backends.base import BackendUnavailable, FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend, ownership
from fatpipe.linuxpath import cmd, parse
from fatpipe.linuxpath.linkem import build_linkem, find_linkem

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
ENV = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))


def wait_for(what: str, predicate, timeout_s: float = 30.0, every_s: float = 0.05):
    """Poll `predicate` until it returns something truthy (returned), or
    fail after `timeout_s` naming `what`."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout_s:g} s for {what}")
        time.sleep(every_s)


def namespaces() -> list[str]:
    return parse.ip_netns_list(cmd.run(["ip", "netns", "list"]))


def alive(pid: int) -> bool:
    """Running (a zombie left for a non-reaping pid 1 counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def records_of(pid: int) -> list[dict]:
    out = []
    for path in ownership.STATE_DIR.glob(f"fp-{pid}-*.json"):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass  # being replaced right now
    return out


def linkem_processes(marker: str) -> list[str]:
    """linkem processes whose arguments contain `marker` (a test's tmp dir:
    other fatpipe processes on this machine are not this test's business)."""
    out = cmd.run(["ps", "-eo", "pid,stat,args"], check=False)
    return [line for line in out.splitlines()
            if "fatpipe-linkem" in line and marker in line and " Z" not in line]


def root_nfqueue_rules() -> list[str]:
    rules = []
    for binary in ("iptables-legacy", "iptables"):
        if cmd.which(binary):
            rules += [r for r in cmd.run([binary, "-w", "-S"], check=False).splitlines() if "NFQUEUE" in r]
    return rules


@needs_root
def test_clean_leaves_a_foreign_fp_namespace_and_the_process_in_it_alone():
    name = "fp-lab"
    if name in namespaces():
        pytest.skip(f"{name} already exists on this machine")
    cmd.run(["ip", "netns", "add", name])
    sleeper = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "900"])
    try:
        wait_for(f"the sleep to run inside {name}",
                 lambda: str(sleeper.pid) in cmd.run(["ip", "netns", "pids", name], check=False).split())
        out = subprocess.run([sys.executable, "-m", "fatpipe", "clean"], env=ENV, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, f"fatpipe clean exited {out.returncode}: {out.stderr}"
        assert sleeper.poll() is None, f"fatpipe clean killed the sleep in {name}; it printed:\n{out.stdout}"
        assert name in namespaces(), f"fatpipe clean deleted {name}; it printed:\n{out.stdout}"
        assert f"left alone namespace {name}" in out.stdout, f"no report of {name} left alone:\n{out.stdout}"
    finally:
        sleeper.kill()
        sleeper.wait()
        cmd.run(["ip", "netns", "delete", name], check=False)
    assert name not in namespaces()


SPEC = """version = 1
[study]
name = "killed-then-rerun"
backends = ["kernel"]
duration = "3s"
warmup = "1s"
interval = "500ms"
repetitions = 1
seed = 1
[path]
rate = "50Mbit"
rtt = "20ms"
buffer = "1bdp"
mtu = 1500
[hosts.default]
rmem_max = "16MiB"
wmem_max = "16MiB"
[[flows]]
cc = "cubic"
streams = 1
"""


@needs_root
def test_a_rerun_after_sigkill_removes_what_the_killed_fatpipe_left(tmp_path):
    spec, out_dir = tmp_path / "study.toml", tmp_path / "out"
    spec.write_text(SPEC)
    run = [sys.executable, "-m", "fatpipe", "run", str(spec), "--out", str(out_dir), "--no-report"]
    first = subprocess.Popen(run, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # Kill it once its path is up: namespaces, iptables rules and linkem.
        record = wait_for("the first run's delay line to start",
                          lambda: next((r for r in records_of(first.pid) if r["linkem"] and r["iptables"]), None),
                          timeout_s=120)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    left = [n for n in namespaces() if n.startswith(f"fp-{first.pid}-")]
    assert left, f"SIGKILL left no namespace to clean up (record {record})"
    # The orphan delay line dies by itself (PR_SET_PDEATHSIG), not at the rerun.
    linkem_pid = record["linkem"][0]["pid"]
    wait_for(f"the orphan linkem {linkem_pid} to exit", lambda: not alive(linkem_pid), timeout_s=10)

    second = subprocess.run(run, env=ENV, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, f"rerun exited {second.returncode}:\n{second.stdout}\n{second.stderr}"
    assert "removed orphan" not in second.stdout, f"linkem outlived its parent:\n{second.stdout}"
    assert f"kernel: removed namespace fp-{first.pid}-" in second.stdout, \
        f"the rerun did not report removing the dead run's namespaces:\n{second.stdout}"
    mine = [n for n in namespaces() if n.startswith((f"fp-{first.pid}-", f"fp-{os.getpid()}-"))]
    assert mine == [], f"namespaces left after the rerun: {mine}"
    assert records_of(first.pid) == [], f"the dead run's records are still in {ownership.STATE_DIR}"
    assert root_nfqueue_rules() == [], f"NFQUEUE rules in the root namespace: {root_nfqueue_rules()}"
    assert linkem_processes(str(tmp_path)) == [], f"linkem still running: {linkem_processes(str(tmp_path))}"
    assert "[1/1] kernel-p000-r00 ok" in second.stdout, f"the redone run did not finish ok:\n{second.stdout}"


PARENT = r"""
import os, subprocess, sys, time
ns, linkem, stats, with_parent = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
args = ["ip", "netns", "exec", ns, linkem, "--queue", "num=7,delay_s=0.01", "--stats", stats]
if with_parent:
    args += ["--parent-pid", str(os.getpid())]
child = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
print(child.pid, child.stdout.readline().strip(), flush=True)
time.sleep(600)
"""


def _linkem_binary() -> str:
    return str(find_linkem() or build_linkem())


@needs_root
@pytest.mark.parametrize("with_parent", [True, False], ids=["parent-pid", "control-without"])
def test_an_orphan_linkem_exits_when_its_parent_is_killed(tmp_path, with_parent):
    ns = f"fptest-orphan-{os.getpid()}"
    cmd.run(["ip", "netns", "add", ns])
    linkem_pid = None
    try:
        parent = subprocess.Popen([sys.executable, "-c", PARENT, ns, _linkem_binary(), str(tmp_path / "s.json"),
                                   "1" if with_parent else "0"], stdout=subprocess.PIPE, text=True)
        pid_text, ready = parent.stdout.readline().split()
        linkem_pid = int(pid_text)
        assert ready == "ready", f"linkem printed {ready!r}, not ready"
        parent.kill()
        parent.wait()
        if with_parent:
            wait_for(f"linkem {linkem_pid} to exit after its parent was killed", lambda: not alive(linkem_pid),
                     timeout_s=5)
        else:
            # The control: without --parent-pid the orphan lives on (this
            # is what the fix removes), so the check above can fail.
            time.sleep(1.0)
            assert alive(linkem_pid), "linkem without --parent-pid exited by itself"
    finally:
        if linkem_pid and alive(linkem_pid):
            os.kill(linkem_pid, signal.SIGKILL)
        cmd.run(["ip", "netns", "delete", ns], check=False)


@needs_root
def test_linkem_whose_parent_is_already_gone_exits_at_once():
    out = subprocess.run([_linkem_binary(), "--queue", "num=7,delay_s=0.01", "--parent-pid", "999999999"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 3 and "parent 999999999 is gone" in out.stderr, (out.returncode, out.stderr)


@needs_root
def test_check_refuses_a_rate_the_kernel_path_cannot_emulate():
    host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
    plan = RunPlan(run_id="kernel-p000-r00", backend="kernel", rep=0, seed=1, duration_s=2.0, warmup_s=0.5,
                   sample_interval_s=0.1, rate_bps=100e12, rtt_s=0.02, loss=0.0, corruption=0.0,
                   buffer_bytes=250_000_000_000, mtu_bytes=1500, senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1"),))
    with pytest.raises(BackendUnavailable) as e:
        KernelBackend().check([plan])
    msg = str(e.value)
    assert "kernel-p000-r00" in msg and "100 Tbit/s" in msg and "ceiling of 10 Gbit/s" in msg, msg
