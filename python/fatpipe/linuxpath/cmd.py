"""Running external tools: argument lists only, never shell strings."""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import IO

# How long a started helper (engine, RPC server/client, linkem) may take to
# print its ready line before it counts as hung.
READY_TIMEOUT_S = 20.0


class CommandFailed(RuntimeError):
    """An external tool exited non-zero; the message has the command and stderr."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        self.args_list = list(args)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"`{' '.join(args)}` exited {returncode}: {stderr.strip()[:500]}")


def run(args: Sequence[str], *, check: bool = True, timeout_s: float = 30.0, input_text: str | None = None) -> str:
    """Run `args` (a list, no shell) and return stdout. Raises CommandFailed."""
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout_s, input=input_text)
    if check and proc.returncode != 0:
        raise CommandFailed(args, proc.returncode, proc.stderr)
    return proc.stdout


def ok(args: Sequence[str], timeout_s: float = 30.0) -> bool:
    """True if the command exits 0 (used by probes)."""
    try:
        subprocess.run(list(args), capture_output=True, timeout=timeout_s, check=True)
        return True
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return False


def which(tool: str) -> str | None:
    return shutil.which(tool)


class NotReady(RuntimeError):
    """A started process did not print its ready line in time (or printed
    something else); the message names it and quotes what it printed."""


def _read_in_thread(read: Callable[[], str]) -> queue.Queue:
    out: queue.Queue = queue.Queue(maxsize=1)
    threading.Thread(target=lambda: out.put(read()), daemon=True).start()
    return out


def _tail(stream: IO[str] | None, timeout_s: float) -> str:
    """What is left on `stream` (the process has been stopped), or '' if
    nothing arrives within `timeout_s` (a grandchild may hold the pipe)."""
    if stream is None:
        return ""
    try:
        return _read_in_thread(stream.read).get(timeout=timeout_s)
    except queue.Empty:
        return ""


def expect_line(proc: subprocess.Popen, word: str, what: str, stop: Callable[[subprocess.Popen], None],
                timeout_s: float = READY_TIMEOUT_S) -> None:
    """Wait at most `timeout_s` for `proc` (text mode, stdout piped) to print
    the line `word`. Otherwise stop it with `stop(proc)` and raise NotReady
    naming `what`, its pid and what it printed on stdout and stderr."""
    read_first_line(proc, what, stop, accept=lambda line: line == word, expected=repr(word), timeout_s=timeout_s)


def read_first_line(proc: subprocess.Popen, what: str, stop: Callable[[subprocess.Popen], None],
                    accept: Callable[[str], bool], expected: str, timeout_s: float = READY_TIMEOUT_S) -> str:
    """The first line `proc` (text mode, stdout piped) prints, stripped,
    within `timeout_s`, if `accept` takes it. Otherwise (no line in time,
    an early exit, another line) stop `proc` with `stop(proc)` and raise
    NotReady naming `what`, its pid, the `expected` line and what it printed
    on stdout and stderr. The line is read in a thread, so a process that
    prints nothing cannot hang the caller."""
    first = _read_in_thread(proc.stdout.readline)
    try:
        line = first.get(timeout=timeout_s)
    except queue.Empty:
        line = None
    if line is not None and accept(line.strip()):
        return line.strip()
    stop(proc)
    if line is None:  # the reader gets the partial line at EOF, once stopped
        try:
            line = first.get(timeout=1.0)
        except queue.Empty:
            line = ""
        problem = f"printed no {expected} line within {timeout_s:g} s"
    elif line == "":
        problem = f"exited ({proc.poll()}) before printing {expected}"
    else:
        problem = f"printed {line.strip()[:200]!r} instead of {expected}"
    stdout = (line + _tail(proc.stdout, 1.0)).strip()
    stderr = _tail(proc.stderr, 1.0).strip()
    raise NotReady(f"{what} (pid {proc.pid}) {problem}; stdout: {stdout[-400:] or '(nothing)'}; "
                   f"stderr: {stderr[-800:] or '(nothing)'}")
