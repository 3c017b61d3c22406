"""Where fatpipe puts its files on a host, and how it marks them as its own.

A run's agent works in ``REMOTE_ROOT/RUN_DIR_PREFIX<run id>`` (for example
``/tmp/fatpipe-run-hosts-p000-r00``). The controller creates it (mode 0700,
failing if it exists) and writes OWNER_FILE there first: a JSON record
(:func:`owner_record`) naming fatpipe, the run, the controller, the agent's
pid and its lease deadline; the agent (agent.py, pushed there as
AGENT_FILE) rewrites it with its own pid and keeps STATE_FILE, what it must
undo. `fatpipe clean --testbed` removes
exactly the directories that carry that record and whose agent is gone
(remote_clean.py); nothing else on a host is ever removed.
"""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

# The agent (which runs on the host and imports nothing of fatpipe) defines
# the names of its own files; they are re-exported here.
from .agent import AGENT_FILE, OWNER_FILE, STATE_FILE

__all__ = ["AGENT_FILE", "OWNER_FILE", "REMOTE_ROOT", "RUN_DIR_PREFIX", "STATE_FILE", "owner_record", "run_dir",
           "script_source"]

REMOTE_ROOT = "/tmp"
RUN_DIR_PREFIX = "fatpipe-run-"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def run_dir(run_id: str, root: str = REMOTE_ROOT) -> str:
    """The remote directory of run `run_id`."""
    if not _RUN_ID.match(run_id) or ".." in run_id:
        raise ValueError(f"run id {run_id!r}: letters, digits, '_', '.', '-' only")
    return f"{root.rstrip('/')}/{RUN_DIR_PREFIX}{run_id}"


def owner_record(run_id: str, agent_pid: int | None, lease_s: float, now_s: float | None = None) -> dict:
    """What OWNER_FILE holds (remote_clean.owner_of reads it)."""
    now_s = time.time() if now_s is None else now_s
    return {"tool": "fatpipe", "run_id": run_id, "controller": f"{socket.gethostname()}:{os.getpid()}",
            "agent_pid": agent_pid, "lease_deadline_unix_s": now_s + lease_s}


def script_source(module_file: str) -> str:
    """The source of a remote script (remote_probe.py, remote_clean.py),
    sent as ``python3 -c SOURCE``."""
    return Path(module_file).read_text()
