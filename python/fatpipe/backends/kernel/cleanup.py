"""Leave nothing behind: a registry of live resources, and `clean()` for
what a crashed fatpipe left.

Every namespace the kernel backend creates is named ``fp-<pid>-<n>-<role>``
(ownership.NAME_PREFIX) and written to an ownership record before it is
created (ownership.py); processes run inside those namespaces only. The
registry removes resources in reverse order of creation on normal exit
(``atexit``) and on exceptions (the backend's ``finally``). Signals are not
handled here: the CLI owns them (fatpipe.cli.install_signal_handlers turns
SIGINT and SIGTERM into KeyboardInterrupt, which unwinds through those
``finally`` blocks). After a SIGKILL nothing runs: `clean()` (and
`clean_stale()`, which a study calls before its first run) removes what the
records of dead owners name, and nothing else.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
from collections.abc import Callable

from ...linuxpath import cmd, parse
from . import ownership
from .ownership import NAME_PREFIX, OwnershipRecord, Unreadable

# A linkem as /proc/<pid>/comm names it (crates/linkem).
LINKEM_COMM = "fatpipe-linkem"


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
    """Kill the processes inside fatpipe namespace `name`, then delete it.
    Only for namespaces this process created or an ownership record names
    (callers: Namespace.delete, remove_recorded)."""
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
                        removed.append(f"stopped process {pid} in {name}")
                except ProcessLookupError:
                    pass
        if sig == signal.SIGTERM and pids:
            for _ in range(20):
                if not any(_pid_alive(p) for p in pids):
                    break
                threading.Event().wait(0.05)
    cmd.run(["ip", "netns", "delete", name], check=False)
    removed.append(f"removed namespace {name}")
    return removed


def remove_iptables_rule(namespace: str, rule: list[str]) -> bool:
    """Delete a recorded ``iptables … -A CHAIN …`` rule (as ``-D``) inside
    `namespace`; False if it was not there."""
    if "-A" not in rule:
        return False
    delete = [a if a != "-A" else "-D" for a in rule]
    return cmd.ok(["ip", "netns", "exec", namespace, *delete])


def remove_recorded(record: OwnershipRecord) -> list[str]:
    """Remove what `record` names, then the record: an orphan linkem (same
    pid, start time and name only), the iptables rules, the namespaces and
    the processes inside them."""
    done: list[str] = []
    for p in record.linkem:
        pid = p["pid"]
        if ownership.same_process(pid, p["start_ticks"]) and ownership.process_name(pid) == LINKEM_COMM:
            try:
                os.kill(pid, signal.SIGKILL)
                done.append(f"removed orphan {LINKEM_COMM} (pid {pid}) of {record.prefix}")
            except ProcessLookupError:
                pass
    existing = set(fatpipe_namespaces())
    for r in record.iptables:
        if r["namespace"] in existing and remove_iptables_rule(r["namespace"], r["rule"]):
            done.append(f"removed iptables rule in {r['namespace']}: {' '.join(r['rule'][1:])}")
    for name in reversed(record.namespaces):
        if name in existing:
            done += remove_namespace(name)
    record.discard()
    return done


def _describe_left_alone(record: OwnershipRecord) -> str:
    return (f"left alone {record.prefix} ({len(record.namespaces)} namespaces): its fatpipe "
            f"(pid {record.owner_pid}) is still running")


def clean(include_live: bool = False) -> list[str]:
    """`fatpipe clean`: remove what the ownership records of fatpipe
    processes that are gone name (or of every record if `include_live`),
    and report what is left alone: records of live fatpipe processes, and
    namespaces named fp-… that no record names (not fatpipe's). One line
    per item, starting with what was done ("removed …", "left alone …")."""
    if os.geteuid() != 0:
        if fatpipe_namespaces() or ownership.STATE_DIR.exists():
            return ["left alone everything: only root can check and remove the kernel backend's namespaces "
                    "(sudo fatpipe clean)"]
        return []
    done, recorded = _clean_records(include_live, report_live=True)
    for name in fatpipe_namespaces():
        if name not in recorded:
            done.append(f"left alone namespace {name}: no fatpipe ownership record in "
                        f"{ownership.STATE_DIR}, so not fatpipe's")
    return done


def clean_stale() -> list[str]:
    """What a study runs before its first kernel run: remove what records
    of dead fatpipe processes name (an earlier run killed with SIGKILL).
    Returns one "removed …" line per item; silent about everything else."""
    if os.geteuid() != 0:
        return []  # nothing of root's to touch (KernelBackend.check refuses non-root runs)
    return _clean_records(include_live=False, report_live=False)[0]


def _clean_records(include_live: bool, report_live: bool) -> tuple[list[str], set[str]]:
    """(what was done, every namespace some record names)."""
    done: list[str] = []
    recorded: set[str] = set()
    try:
        records = ownership.load_records()
    except ownership.UnsafeStateDir as e:
        return [f"left alone everything: {e}"], recorded
    for rec in records:
        if isinstance(rec, Unreadable):
            if report_live:
                done.append(f"left alone {rec.path}: not a fatpipe record ({rec.reason})")
            continue
        recorded.update(rec.namespaces)
        if rec.owner_alive() and not include_live:
            if report_live:
                done.append(_describe_left_alone(rec))
            continue
        done += remove_recorded(rec)
    return done, recorded
