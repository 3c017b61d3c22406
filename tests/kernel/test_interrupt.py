"""SIGINT during a kernel run leaves no fp- namespace and no linkem process."""

import os
import os as _os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest as _pytest

from fatpipe.backends.kernel import ownership
from fatpipe.linuxpath import cmd, parse

needs_root = _pytest.mark.skipif(_os.geteuid() != 0, reason="needs root (network namespaces)")

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


RUNNER = r'''
import sys
from pathlib import Path
from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend
host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
plan = RunPlan(run_id="sigint", backend="kernel", rep=0, seed=1, duration_s=30.0, warmup_s=0.0,
               sample_interval_s=0.1, rate_bps=50e6, rtt_s=0.02, loss=0.0, corruption=0.0, buffer_bytes=125000,
               mtu_bytes=1500, senders={"s1": host}, receiver=host,
               flows=(FlowPlan(group=0, kind="bulk", cc="cubic", streams=2, mss_bytes=1448, sender="s1"),))
KernelBackend().run(plan, Path(sys.argv[1]))
'''


def namespaces_of(pid: int) -> list[str]:
    return [n for n in parse.ip_netns_list(cmd.run(["ip", "netns", "list"])) if n.startswith(f"fp-{pid}-")]


def linkem_children(pid_prefix: str) -> list[str]:
    out = cmd.run(["ps", "-eo", "pid,args"], check=False)
    return [line for line in out.splitlines() if "fatpipe-linkem" in line and pid_prefix in line]


@needs_root
def test_sigint_removes_namespaces_and_processes(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Wait until the run is under way: its namespaces and linkem exist.
        deadline = time.time() + 30
        while time.time() < deadline and not (tmp_path / "samples-g0.jsonl").exists():
            time.sleep(0.1)
        assert namespaces_of(proc.pid), "run did not start"
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert namespaces_of(proc.pid) == []
    records = sorted(p.name for p in ownership.STATE_DIR.glob(f"fp-{proc.pid}-*.json"))
    assert records == [], f"ownership records left after SIGINT: {records}"
    assert linkem_children(str(tmp_path)) == []
    engines = [line for line in cmd.run(["ps", "-eo", "pid,args"]).splitlines()
               if "engine.py" in line and str(tmp_path) in line]
    assert engines == []
