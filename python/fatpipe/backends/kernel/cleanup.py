"""Leave nothing behind: a registry of live resources, and `clean()` for
what a crashed fatpipe left.

Every namespace the kernel backend creates is named ``fp-<pid>-<n>-<role>``
(netns.NAME_PREFIX). Processes run inside those namespaces only. The
registry removes resources in reverse order of creation on normal exit
(``atexit``) and on exceptions (the backend's ``finally``). Signals are not
handled here: the CLI owns them (fatpipe.cli.install_signal_handlers turns
SIGINT and SIGTERM into KeyboardInterrupt, which unwinds through those
``finally`` blocks).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
from collections.abc import Callable

from . import cmd, parse

NAME_PREFIX = "fp-"


class Registry:
    """Undo actions for live resources, run last-in first-out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._undo: list[tuple[str, Callable[[], None]]] = []

    def add(self, what: str, undo: Callable[[], None]) -> None:
        with self._lock:
            self._undo.append((what, undo))

    def discard(self, what: str) -> None:
        with self._lock:
            self._undo = [(w, u) for w, u in self._undo if w != what]

    def release_all(self) -> list[str]:
        """Run every undo action (errors are swallowed: best effort)."""
        done = []
        while True:
            with self._lock:
                if not self._undo:
                    return done
                what, undo = self._undo.pop()
            try:
                undo()
                done.append(what)
            except Exception:  # noqa: BLE001 - cleanup must go on
                pass

    def __len__(self) -> int:
        return len(self._undo)


REGISTRY = Registry()
_at_exit = False


def release_at_exit() -> None:
    """Release whatever is still registered when the interpreter exits
    (idempotent)."""
    global _at_exit
    if not _at_exit:
        atexit.register(REGISTRY.release_all)
        _at_exit = True


def stop_process(proc: subprocess.Popen, timeout_s: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after `timeout_s`: only the process we started."""
    if proc.poll() is not None:
        return
    try:
        proc.terminate()
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s)
    except ProcessLookupError:
        pass


def fatpipe_namespaces() -> list[str]:
    """Names of namespaces that carry the fatpipe prefix."""
    try:
        out = cmd.run(["ip", "netns", "list"])
    except (cmd.CommandFailed, OSError):
        return []
    return [n for n in parse.ip_netns_list(out) if n.startswith(NAME_PREFIX)]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_namespace(name: str) -> list[str]:
    """Kill the processes inside fatpipe namespace `name`, then delete it."""
    if not name.startswith(NAME_PREFIX):
        raise ValueError(f"refusing to remove {name!r}: not a fatpipe namespace ({NAME_PREFIX}*)")
    removed = []
    pids = parse.ip_netns_pids(cmd.run(["ip", "netns", "pids", name], check=False))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if pid != os.getpid() and _pid_alive(pid):
                try:
                    os.kill(pid, sig)
                    if sig == signal.SIGTERM:
                        removed.append(f"process {pid} in {name}")
                except ProcessLookupError:
                    pass
        if sig == signal.SIGTERM and pids:
            for _ in range(20):
                if not any(_pid_alive(p) for p in pids):
                    break
                threading.Event().wait(0.05)
    cmd.run(["ip", "netns", "delete", name], check=False)
    removed.append(f"namespace {name}")
    return removed


def _owner_pid(name: str) -> int | None:
    """The pid in ``fp-<pid>-…``, None if the name has another form."""
    parts = name.split("-")
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else None


def clean(include_live: bool = False) -> list[str]:
    """Remove namespaces (and the processes in them) left by a crashed
    fatpipe. Namespaces whose owning fatpipe process is still alive are kept
    unless `include_live`. Returns human-readable descriptions of what was
    removed (``"namespace fp-123-0-r"``, ``"process 456 in fp-123-0-r"``)."""
    removed: list[str] = []
    for name in fatpipe_namespaces():
        owner = _owner_pid(name)
        if not include_live and owner is not None and owner != os.getpid() and _pid_alive(owner):
            continue
        removed += remove_namespace(name)
    return removed
