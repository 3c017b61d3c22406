"""Kernel backend process control that needs no root: the ready-line wait
honours its timeout, no shell runs, the CLI alone handles signals, and
`emulator_late` has one threshold."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import fatpipe.backends.kernel as kernel
from fatpipe import schema, summary
from fatpipe.backends.kernel import clamp, cleanup
from fatpipe.backends.kernel.cleanup import stop_process
from fatpipe.backends.kernel.netns import Namespace
from fatpipe.linuxpath import cmd

ROOT = Path(__file__).resolve().parents[1]
KERNEL_DIR = ROOT / "python" / "fatpipe" / "backends" / "kernel"
# The Linux path model the kernel (and hosts) backend runs: its commands and
# engines are the kernel backend's as much as the modules in KERNEL_DIR.
LINUXPATH_DIR = ROOT / "python" / "fatpipe" / "linuxpath"
KERNEL_MODULES = sorted([*KERNEL_DIR.glob("*.py"), *LINUXPATH_DIR.glob("*.py")])


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


HUNG = ("import sys, time\n"
        "print('loading config', file=sys.stderr, flush=True)\n"
        "sys.stdout.write('almost'); sys.stdout.flush()\n"
        "time.sleep(60)\n")


def test_ready_line_wait_gives_up_after_its_timeout_naming_the_process_and_its_output():
    proc = _child(HUNG)
    t0 = time.monotonic()
    with pytest.raises(cmd.NotReady) as err:
        cmd.expect_line(proc, "ready", "engine receiver", stop=stop_process, timeout_s=0.5)
    assert time.monotonic() - t0 < 5.0
    msg = str(err.value)
    assert f"engine receiver (pid {proc.pid}) printed no 'ready' line within 0.5 s" in msg
    assert "almost" in msg and "loading config" in msg
    assert proc.poll() is not None  # the hung process was stopped


def test_ready_line_wait_reports_another_line_and_an_early_exit():
    proc = _child("print('usage: engine.py', flush=True)\nimport time; time.sleep(60)")
    with pytest.raises(cmd.NotReady, match="printed 'usage: engine.py' instead of 'ready'"):
        cmd.expect_line(proc, "ready", "RPC server of group 1", stop=stop_process, timeout_s=10)
    assert proc.poll() is not None
    proc = _child("import sys; print('no such CCA', file=sys.stderr); sys.exit(3)")
    with pytest.raises(cmd.NotReady, match=r"exited \(3\) before printing 'connected'.*no such CCA"):
        cmd.expect_line(proc, "connected", "engine sender", stop=stop_process, timeout_s=10)


def test_ready_line_wait_returns_once_the_line_arrives():
    proc = _child("import time; time.sleep(0.2); print('ready', flush=True); time.sleep(0.2)")
    cmd.expect_line(proc, "ready", "fatpipe-linkem", stop=stop_process, timeout_s=10)
    assert proc.wait(timeout=10) == 0


class _FakeNs:
    """A namespace whose popen starts `code` instead of its argument list."""

    def __init__(self, name: str, code: str = ""):
        self.name, self.code, self.sysctls = name, code, []

    def popen(self, _args, **kw) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", self.code], **kw)

    def sysctl(self, key: str, value) -> None:
        self.sysctls.append((key, value))


def test_a_silent_cwnd_clamp_priming_listener_cannot_hang_the_run(monkeypatch):
    monkeypatch.setattr(clamp, "LISTENER_READY_S", 0.5)
    sender, receiver = _FakeNs("fp-1-0-s0"), _FakeNs("fp-1-0-rx", HUNG)
    t0 = time.monotonic()
    with pytest.raises(cmd.NotReady) as err:
        clamp.prime_metrics_cache(sender, receiver, "198.19.0.1", 20)
    assert time.monotonic() - t0 < 5.0
    msg = str(err.value)
    assert "priming listener in fp-1-0-rx" in msg and "printed no port number line within 0.5 s" in msg, msg
    assert "loading config" in msg
    assert sender.sysctls[-1] == ("net.ipv4.tcp_no_metrics_save", 1), "metrics saving is off again"


def test_no_shell_runs_in_the_kernel_backend():
    assert any(p.parent == LINUXPATH_DIR for p in KERNEL_MODULES)
    for path in KERNEL_MODULES:
        text = path.read_text()
        assert not re.search(r"[\"'](ba)?sh[\"']\s*,\s*[\"']-c[\"']", text), path.name
        assert "shell=True" not in text, path.name


def test_a_namespace_writes_its_links_sysfs_with_an_argument_list(monkeypatch):
    calls = []
    monkeypatch.setattr(cmd, "run", lambda args, **kw: calls.append((list(args), kw)) or "")
    Namespace("fp-1-0-r").write_net_sysfs("/sys/class/net/rcv/threaded", "1")
    assert calls == [(["ip", "netns", "exec", "fp-1-0-r", "tee", "/sys/class/net/rcv/threaded"],
                      {"input_text": "1"})]
    for bad in ("/proc/sys/net/ipv4/ip_forward", "/sys/class/net/../../kernel/x"):
        with pytest.raises(ValueError, match="refusing"):
            Namespace("fp-1-0-r").write_net_sysfs(bad, "1")


def test_the_kernel_backend_installs_no_signal_handler():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    cleanup.release_at_exit()
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    for path in KERNEL_MODULES:
        if path.name in ("engine.py", "rpc_engine.py"):
            continue  # programs run inside namespaces, not the fatpipe process
        assert "signal.signal(" not in path.read_text(), path.name


SLOW_STUDY = """
version = 1
[study]
name = "sigterm"
backends = ["slow"]
duration = "1s"
repetitions = 3
[path]
rate = "10Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
"""

SLOW_RUNNER = r"""
import sys, time
from pathlib import Path
from types import SimpleNamespace
from fatpipe import backends, cli
sys.path.insert(0, sys.argv[3])
from fake_backend import FakeBackend

class Slow(FakeBackend):
    name = "slow"
    def max_parallel_runs(self, jobs):
        return 1
    def run(self, plan, workdir):
        Path(sys.argv[2], "started").write_text(plan.run_id)
        try:
            time.sleep(60)
        finally:
            Path(sys.argv[2], "cleaned-up").write_text(plan.run_id)

backends.register_backend("slow", Slow)
sys.exit(cli.main(["run", sys.argv[1], "--out", sys.argv[2] + "/out", "--no-report"]))
"""


def test_sigterm_to_the_cli_unwinds_like_ctrl_c(tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(SLOW_STUDY)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUNNER, str(study), str(tmp_path), str(ROOT / "tests")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "started").exists(), proc.stderr.read() if proc.poll() is not None else ""
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "interrupted: finished runs are kept" in err
    assert (tmp_path / "cleaned-up").exists()  # the run's finally ran


def test_emulator_late_has_one_threshold_used_by_the_flag_and_the_kernel_fact():
    rtt = 0.020
    limit = schema.LATENESS_FRACTION_OF_RTT * rtt
    assert not schema.emulator_late(limit * 0.99, rtt)
    assert schema.emulator_late(limit * 1.01, rtt)
    assert not schema.emulator_late(None, rtt)
    assert kernel.emulator_late is schema.emulator_late is summary.emulator_late
    assert not hasattr(kernel, "LATE_P99_LIMIT_S")


def test_packets_lost_outside_the_emulated_path_flag_the_run():
    from fatpipe.backends.base import PathDynamics
    plan = SimpleNamespace(rtt_s=0.020, flows=(), loss=0.0, sample_interval_s=0.1, dynamics=PathDynamics())
    clean = summary.PathReport(emulator="linkem-nfqueue", late_p99_s=1e-4)
    assert "host_drops" not in summary.path_flags(plan, clean)
    dropped = summary.PathReport(emulator="linkem-nfqueue", late_p99_s=1e-4, host_drops=3)
    assert "host_drops" in summary.path_flags(plan, dropped)
