"""Remove what fatpipe's runs left on a host (`fatpipe clean --testbed`).

This file runs ON THE HOST: the controller sends its source as
``python3 -c SOURCE ROOT PREFIX OWNER_FILE`` and reads one JSON list from
stdout, one entry per run directory found: ``{"path", "action": "removed" |
"kept", "why"}``. Standard library only.

A run directory is ``ROOT/PREFIX<run id>`` (layout.py). It is fatpipe's only
if it is a real directory (not a symlink) holding a regular OWNER_FILE whose
JSON says ``"tool": "fatpipe"``; anything else is left alone, unmentioned.
It is removed unless the agent recorded in the owner file is still running
and its lease has not passed (a run in progress).
"""

import json
import os
import shutil
import stat
import sys
import time


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def owner_of(path, owner_file):
    """The owner record of run directory `path`, or None if not fatpipe's."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return None
        record_path = os.path.join(path, owner_file)
        if not stat.S_ISREG(os.lstat(record_path).st_mode):
            return None
        with open(record_path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("tool") == "fatpipe" else None


def in_use(record, now):
    """Why the run of `record` is still going, or None."""
    pid = record.get("agent_pid")
    lease = record.get("lease_deadline_unix_s")
    if isinstance(pid, int) and pid > 0 and pid_alive(pid):
        if not isinstance(lease, (int, float)) or lease > now:
            return f"its agent (pid {pid}) is running"
    return None


def clean(root, prefix, owner_file, now=None):
    now = time.time() if now is None else now
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for name in names:
        if not name.startswith(prefix):
            continue
        path = os.path.join(root, name)
        record = owner_of(path, owner_file)
        if record is None:
            continue
        busy = in_use(record, now)
        if busy:
            out.append({"path": path, "action": "kept", "why": busy})
            continue
        try:
            shutil.rmtree(path)
            out.append({"path": path, "action": "removed", "why": f"run {record.get('run_id', '?')}"})
        except OSError as e:
            out.append({"path": path, "action": "kept", "why": f"cannot remove: {e}"})
    return out


if __name__ == "__main__":
    print(json.dumps(clean(sys.argv[1], sys.argv[2], sys.argv[3])))
