"""Helpers for the cluster tests: a small sim study, a Dask scheduler and
workers started as subprocesses on 127.0.0.1, and a `fatpipe run` whose
output lines are read with bounded waits (no fixed sleeps)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"

# 12 short sim runs (3 CCAs x 2 stream counts x 2 repetitions).
SMALL_STUDY = """\
version = 1
[study]
name = "cluster-small"
backends = ["sim"]
duration = "{duration}"
warmup = "0.5s"
repetitions = {repetitions}
seed = 7
interval = "100ms"
[path]
rate = "{rate}"
rtt = "20ms"
loss = 1e-4
buffer = "1bdp"
mtu = 1500
[[flows]]
cc = "cubic"
streams = 1
[sweep]
"flows.0.cc" = ["reno", "cubic", "bbr"]
"flows.0.streams" = [1, 2]
"""


def write_small_study(path: Path, duration: str = "2s", repetitions: int = 2, rate: str = "100Mbit") -> Path:
    path.write_text(SMALL_STUDY.format(duration=duration, repetitions=repetitions, rate=rate))
    return path


def child_env() -> dict[str, str]:
    """The environment of subprocesses: this worktree's fatpipe first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_DIR), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


class Lines:
    """A subprocess's stdout, line by line, read by a thread; `expect`
    waits (bounded) for a line that matches and says what was seen if none did."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.seen, self._q = proc, [], queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def expect(self, predicate, timeout_s: float = 60.0, what: str = "a matching line") -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {what} within {timeout_s:.0f} s; output so far:\n" + "\n".join(self.seen))
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"output ended (exit {self.proc.wait(timeout=30)}) before {what}:\n"
                                     + "\n".join(self.seen))
            self.seen.append(line)
            if predicate(line):
                return line

    def rest(self, timeout_s: float = 60.0) -> list[str]:
        """Every line until the output ends."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self._q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"output did not end within {timeout_s:.0f} s:\n" + "\n".join(self.seen)) from None
            if line is None:
                return self.seen
            self.seen.append(line)


def fatpipe_run(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fatpipe", "run", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=child_env(), **kw)


class DaskProcesses:
    """A scheduler and workers on 127.0.0.1, each its own process."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs, self.workers = tmp, [], {}
        self.file = tmp / "scheduler.json"
        self.scheduler = self._start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                      "--port", "0", "--no-dashboard", "--scheduler-file", str(self.file)])
        deadline = time.monotonic() + 60
        while not self.file.exists() or not self.file.read_text().strip():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the scheduler did not write {self.file} (exit {self.scheduler.poll()})")
            time.sleep(0.05)
        self.address = json.loads(self.file.read_text())["address"]

    def _start(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or child_env())
        self.procs.append(proc)
        return proc

    def add_worker(self, name: str, env: dict[str, str] | None = None, resources: str | None = None) -> None:
        argv = [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(self.file),
                "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", name]
        if resources:
            argv += ["--resources", resources]
        self.workers[name] = self._start(argv, env)

    def close(self) -> None:
        for proc in reversed(self.procs):
            stop(proc)
