"""Remove what fatpipe's runs left on a host (`fatpipe clean --testbed`).

This file runs ON THE HOST: the controller sends its source as
``python3 -c SOURCE ROOT PREFIX OWNER_FILE [STATE_FILE]`` (with the agent's
source on stdin when STATE_FILE is given) and reads one JSON list from
stdout, one entry per run directory found: ``{"path", "action": "removed" |
"kept", "why"}``. Standard library only.

A run directory is ``ROOT/PREFIX<run id>`` (layout.py). It is fatpipe's only
if it is a real directory (not a symlink) holding a regular OWNER_FILE whose
JSON says ``"tool": "fatpipe"``; anything else is left alone, unmentioned.
It is removed unless the agent recorded in the owner file is still running
and its lease has not passed (a run in progress). A directory holding the
agent's STATE_FILE (processes it started, sysctls it changed) is handed to
the agent's own cleanup (``agent.py --cleanup-only DIR``, the same code the
agent runs when it ends), which kills those processes, restores those
sysctls and removes the directory; without the agent's source such a
directory is kept, since removing it would lose what must be restored.
"""

import json
import os
import shutil
import stat
import subprocess
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


AGENT_CLEANUP_TIMEOUT_S = 60


def agent_cleanup(path, agent_source):
    """Run the agent's cleanup-only mode on `path`; None, or why it failed."""
    try:
        done = subprocess.run([sys.executable, "-c", agent_source, "--cleanup-only", path], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=AGENT_CLEANUP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the agent's cleanup failed: {e}"
    if done.returncode == 0:
        return None
    try:
        problems = json.loads(done.stdout)["problems"]
    except (ValueError, KeyError, TypeError):
        problems = [done.stderr.decode(errors="replace").strip()[-300:] or f"exit {done.returncode}"]
    return "the agent's cleanup left: " + "; ".join(problems)


def clean(root, prefix, owner_file, now=None, state_file=None, agent_source=None):
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
        if state_file and os.path.lexists(os.path.join(path, state_file)):
            why = agent_cleanup(path, agent_source) if agent_source else \
                "holds the agent's saved state (processes, sysctls) but no agent source was given to restore it"
            if why:
                out.append({"path": path, "action": "kept", "why": why})
            else:
                out.append({"path": path, "action": "removed", "why": f"run {record.get('run_id', '?')}, "
                            "its processes stopped and sysctls restored"})
            continue
        try:
            shutil.rmtree(path)
            out.append({"path": path, "action": "removed", "why": f"run {record.get('run_id', '?')}"})
        except OSError as e:
            out.append({"path": path, "action": "kept", "why": f"cannot remove: {e}"})
    return out


if __name__ == "__main__":
    state = sys.argv[4] if len(sys.argv) > 4 else None
    print(json.dumps(clean(sys.argv[1], sys.argv[2], sys.argv[3], state_file=state,
                           agent_source=sys.stdin.read() if state else None)))
