"""fatpipe's agent: runs a run's processes on one host and undoes everything
it did when the controller goes away.

This file runs ON THE HOST (python3 >= 3.7, standard library only, no
fatpipe import). The controller (agent_client.py) pushes it over SFTP into
the run directory (layout.py) and starts it over one SSH channel::

    python3 -u RUN_DIR/fatpipe-agent.py --run-dir RUN_DIR --run-id ID [--lease S] [--keep-results]
    python3 -c SOURCE --cleanup-only RUN_DIR      # a dead agent's leftovers

Protocol: one JSON object per line on stdin, one answer per line on stdout
(``{"id": N, "ok": true, ...}`` or ``{"id": N, "ok": false, "error": ...}``);
the first line out is ``{"event": "ready", "pid": ...}``. Operations: start,
stop, wait, signal, sysctl_set, change, put, get, clock, status, renew (see
OPS). Answers come in request order except ``wait``'s, which come when what
it waits for happens (a line in a process's output, or its exit), so a run
can wait for many processes at once while the lease is renewed.

Lifecycle: the agent writes OWNER_FILE (its pid and lease deadline, on this
host's clock) and STATE_FILE (what to undo) before each change. It cleans up
when its stdin closes (controller gone, Ctrl-C, connection lost), when the
lease passes without a renew, or on SIGTERM/SIGHUP/SIGINT: it kills every
process group it started (SIGTERM, then SIGKILL after a grace period),
restores every sysctl it changed, and removes the run directory unless
told to keep results. It never relies on SSH signal requests (OpenSSH
before 10.0 ignores them for root sessions) and never matches processes by
name: a process is the run's only if its process group is one the agent
started and its environment carries ENV_MARKER=<run dir>.

Cleanup is idempotent: ``--cleanup-only`` replays STATE_FILE for an agent
that died (SIGKILL, host crash), skipping what no longer applies (another
boot, another network namespace), and removes the directory.
"""

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import time

OWNER_FILE = "fatpipe-owner.json"
STATE_FILE = "fatpipe-agent-state.json"
AGENT_FILE = "fatpipe-agent.py"
ENV_MARKER = "FATPIPE_RUN_DIR"
DEFAULT_LEASE_S = 30.0
STOP_GRACE_S = 2.0
KILL_WAIT_S = 5.0
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES = 2 * MAX_FILE_BYTES
# Sysctls the agent may change, each restored at exit. Not the congestion
# control: fatpipe sets the CCA per socket (TCP_CONGESTION).
SYSCTL_ALLOWED = frozenset({
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_slow_start_after_idle", "net.core.rmem_max",
    "net.core.wmem_max",
})
PROTECTED = frozenset({OWNER_FILE, STATE_FILE, AGENT_FILE})
# Programs of the "change" op: what the emulator box needs (qdiscs, the
# delay line's NFQUEUE rules). Each change comes with the command that undoes
# it, saved before the change is made and run at exit.
CHANGE_PROGRAMS = frozenset({"tc", "iptables", "iptables-legacy", "iptables-nft"})
CHANGE_TIMEOUT_S = 20.0
# Signals the "signal" op sends to a group the agent started (linkem's
# SIGUSR1: forget lateness so far).
SIGNALS = {"USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2}
WAIT_POLL_S = 0.02
MAX_WAIT_S = 3600.0
TAIL_BYTES = 2000


class Refused(Exception):
    """A request the agent will not carry out; the message says why."""


# ---- small helpers --------------------------------------------------------

def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def netns_id():
    try:
        st = os.stat("/proc/self/ns/net")
        return f"{st.st_dev}:{st.st_ino}"
    except OSError:
        return None


def write_json_atomic(path, data):
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as f:
        return json.load(f)


def sysctl_path(key):
    if key not in SYSCTL_ALLOWED:
        allowed = ", ".join(sorted(SYSCTL_ALLOWED))
        raise Refused(f"sysctl {key!r} is not one the agent changes (allowed: {allowed})")
    return "/proc/sys/" + key.replace(".", "/")


def sysctl_read(key):
    with open(sysctl_path(key)) as f:
        return " ".join(f.read().split())


def sysctl_write(key, value):
    with open(sysctl_path(key), "w") as f:
        f.write(value)


def check_sysctl_value(key, value):
    if not isinstance(value, str) or not value.strip() or not all(p.lstrip("-").isdigit() for p in value.split()):
        raise Refused(f"sysctl {key} = {value!r}: integers separated by spaces only")
    return " ".join(value.split())


def proc_stat(pid):
    """(state, pgid) of `pid` from /proc/PID/stat, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[2])


def has_marker(pid, marker):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def group_members(pgid, marker):
    """Live (not zombie) processes of group `pgid` that carry `marker`."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_stat(int(name))
        if st and st[1] == pgid and st[0] != "Z" and has_marker(int(name), marker):
            out.append(int(name))
    return out


def leader_exit_status(proc):
    """The exit status of the agent's child `proc` as Popen.returncode
    would give it (negative: killed by that signal), or None while it runs;
    the child stays unreaped."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def leader_exited(proc):
    """Whether the agent's child `proc` has exited, without reaping it (a
    zombie keeps its pid, so the group's number cannot be reused)."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def kill_group(pgid, marker, grace_s, held_leader=None):
    """SIGTERM the run's processes in group `pgid`, SIGKILL what is left
    after `grace_s`; True when none is left. `held_leader` is the agent's
    unreaped child leading the group (its pid cannot be reused while it is
    unreaped, so killpg is safe and reaches members that dropped the marker)."""
    def remaining():
        left = group_members(pgid, marker)
        if held_leader is not None and not leader_exited(held_leader):
            left.append(held_leader.pid)
        return left

    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
        if held_leader is not None and held_leader.returncode is None:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in group_members(pgid, marker):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while remaining():
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        else:
            return True
    return not remaining()


# ---- paths inside the run directory ----------------------------------------

def components(rel):
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\0" in rel:
        raise Refused(f"path {rel!r}: a relative path inside the run directory")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise Refused(f"path {rel!r} escapes the run directory (..)")
    return parts


def open_dir_chain(run_dir, parts, create=False):
    """An fd of directory RUN_DIR/parts..., following no symlink."""
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for p in parts:
            if create:
                try:
                    os.mkdir(p, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                raise Refused(f"path component {p!r}: {e.strerror} (symlinks are not followed)") from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_in(run_dir, rel, flags, mode=0o600):
    parts = components(rel)
    if not parts:
        raise Refused(f"path {rel!r} names the run directory itself")
    if len(parts) == 1 and parts[0] in PROTECTED:
        raise Refused(f"path {rel!r} is the agent's own file")
    dfd = open_dir_chain(run_dir, parts[:-1], create=bool(flags & os.O_CREAT))
    try:
        return os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=dfd)
    except OSError as e:
        raise Refused(f"path {rel!r}: {e.strerror} (symlinks are not followed)") from None
    finally:
        os.close(dfd)


def dir_in(run_dir, rel):
    """RUN_DIR/rel as a path, checked to be a directory reached without symlinks."""
    parts = components(rel or ".") if rel not in (None, ".", "") else []
    os.close(open_dir_chain(run_dir, parts))
    return os.path.join(run_dir, *parts)


# ---- the agent ----------------------------------------------------------------

class Agent:
    def __init__(self, run_dir, run_id, lease_s, keep_results):
        self.run_dir = os.path.abspath(run_dir)
        self.run_id = run_id
        self.lease_s = lease_s
        self.keep_results = keep_results
        self.marker = (f"{ENV_MARKER}={self.run_dir}").encode()
        self.children = {}  # pgid -> Popen (leader, unreaped until its group is gone)
        self.state = {"run_id": run_id, "boot_id": boot_id(), "netns": netns_id(), "marker": self.marker.decode(),
                      "groups": [], "sysctls": {}, "changes": [], "keep_results": keep_results}
        self.waits = []  # pending "wait" requests: (request, deadline on the monotonic clock)
        self.lease_deadline = time.monotonic() + lease_s
        self.stop_reason = None

    def path(self, name):
        return os.path.join(self.run_dir, name)

    def save_state(self):
        write_json_atomic(self.path(STATE_FILE), self.state)

    def write_owner(self):
        write_json_atomic(self.path(OWNER_FILE), {
            "tool": "fatpipe", "run_id": self.run_id, "controller": os.environ.get("SSH_CLIENT", "?"),
            "agent_pid": os.getpid(), "lease_deadline_unix_s": time.time() + self.lease_s})

    # ---- operations (each returns the answer's fields) ----

    def op_start(self, req):
        argv = req.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise Refused("start: argv must be a non-empty list of strings")
        env = req.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise Refused("start: env must map strings to strings")
        cwd = dir_in(self.run_dir, req.get("cwd"))
        full_env = dict(os.environ)
        full_env.update(env)
        full_env[ENV_MARKER] = self.run_dir
        outs = []
        for key in ("stdout", "stderr"):
            rel = req.get(key)
            outs.append(open_in(self.run_dir, rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) if rel else None)
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                                    stdout=outs[0] if outs[0] is not None else subprocess.DEVNULL,
                                    stderr=outs[1] if outs[1] is not None else subprocess.DEVNULL,
                                    start_new_session=True, close_fds=True)
        except OSError as e:
            raise Refused(f"start {argv[0]!r}: {e}") from None
        finally:
            for fd in outs:
                if fd is not None:
                    os.close(fd)
        self.children[proc.pid] = proc
        self.state["groups"].append(proc.pid)
        self.save_state()
        return {"pgid": proc.pid, "pid": proc.pid}

    def op_stop(self, req):
        pgid = req.get("pgid")
        if pgid not in self.children:
            raise Refused(f"stop: {pgid!r} is not a process group this agent started")
        grace = float(req.get("grace_s", STOP_GRACE_S))
        gone = kill_group(pgid, self.marker, grace, self.children[pgid])
        if not gone:
            raise Refused(f"stop: process group {pgid} survived SIGKILL")
        code = self.children.pop(pgid).wait()
        self.state["groups"].remove(pgid)
        self.save_state()
        return {"pgid": pgid, "returncode": code}

    def op_wait(self, req):
        """Registers the wait; :meth:`poll_waits` answers it."""
        pgid = req.get("pgid")
        if pgid not in self.children:
            raise Refused(f"wait: {pgid!r} is not a process group this agent started")
        timeout = req.get("timeout_s", 60.0)
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_WAIT_S:
            raise Refused(f"wait: timeout_s {timeout!r}: a number of seconds in (0, {MAX_WAIT_S:g}]")
        word = req.get("word")
        if word is not None:
            if not isinstance(word, str) or not word or "\n" in word:
                raise Refused("wait: word must be a non-empty string without a newline")
            components(req.get("stdout"))  # the file the word will appear in
        self.waits.append((req, time.monotonic() + timeout))
        return None  # answered later

    def _tail(self, rel):
        if not rel:
            return ""
        try:
            fd = open_in(self.run_dir, rel, os.O_RDONLY)
        except Refused:
            return ""
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - TAIL_BYTES))
            return f.read().decode("utf-8", "replace")

    def _has_line(self, rel, word):
        try:
            fd = open_in(self.run_dir, rel, os.O_RDONLY)
        except Refused:
            return False
        with os.fdopen(fd, "rb") as f:
            return any(line.strip() == word.encode() for line in f.read(1 << 20).splitlines())

    def poll_waits(self):
        """Answers every wait whose condition holds (or whose time is up)."""
        still = []
        for req, deadline in self.waits:
            proc = self.children.get(req["pgid"])
            status = leader_exit_status(proc) if proc is not None else None
            answer = None
            if req.get("word") is not None and self._has_line(req["stdout"], req["word"]):
                answer = {"ok": True, "pgid": req["pgid"], "seen": req["word"]}
            elif proc is None or status is not None:
                if req.get("word") is None:
                    answer = {"ok": True, "pgid": req["pgid"], "returncode": status,
                              "stderr_tail": self._tail(req.get("stderr"))}
                else:
                    answer = {"ok": False, "error": "wait: process group {} exited ({}) before printing {!r}: {}"
                              .format(req["pgid"], status, req["word"], self._tail(req.get("stderr")).strip()[-600:])}
            elif time.monotonic() > deadline:
                what = "printing {!r}".format(req["word"]) if req.get("word") is not None else "exiting"
                answer = {"ok": False, "error": "wait: process group {} not {} within {:g} s: {}".format(
                    req["pgid"], what, req.get("timeout_s", 60.0), self._tail(req.get("stderr")).strip()[-600:])}
            if answer is None:
                still.append((req, deadline))
                continue
            answer["id"] = req.get("id")
            if not self.send(answer):
                self.stop_reason = "stdout closed"
        self.waits = still

    def op_signal(self, req):
        pgid = req.get("pgid")
        if pgid not in self.children:
            raise Refused(f"signal: {pgid!r} is not a process group this agent started")
        name = req.get("signal")
        if name not in SIGNALS:
            raise Refused("signal: {!r} is not one the agent sends (allowed: {})".format(name, ", ".join(SIGNALS)))
        if leader_exited(self.children[pgid]):
            raise Refused(f"signal: process group {pgid} has exited")
        os.killpg(pgid, SIGNALS[name])  # the leader is unreaped: the group id is still this one
        return {"pgid": pgid, "signal": name}

    def op_change(self, req):
        do, undo = req.get("do"), req.get("undo")
        for key, argv in (("do", do), ("undo", undo)):
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                raise Refused(f"change: {key} must be a non-empty list of strings")
            if argv[0] not in CHANGE_PROGRAMS:
                raise Refused("change: {} runs {!r}; the agent changes a host only with {}".format(
                    key, argv[0], ", ".join(sorted(CHANGE_PROGRAMS))))
        if do[0] != undo[0]:
            raise Refused(f"change: undo runs {undo[0]!r}, do runs {do[0]!r}: the same program undoes a change")
        self.state["changes"].append(undo)  # saved before the change: a crash in between is undone too
        self.save_state()
        try:
            done = subprocess.run(do, stdin=subprocess.DEVNULL, capture_output=True, timeout=CHANGE_TIMEOUT_S,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            done = None
            problem = str(e)
        if done is None or done.returncode != 0:
            self.state["changes"].pop()
            self.save_state()
            if done is not None:
                problem = "exit {}: {}".format(done.returncode, done.stderr.decode("utf-8", "replace").strip()[-500:])
            raise Refused("change `{}` failed ({})".format(" ".join(do), problem))
        return {"changes": len(self.state["changes"])}

    def op_sysctl_set(self, req):
        key = req.get("key")
        value = check_sysctl_value(key, req.get("value"))
        old = sysctl_read(key)
        if key not in self.state["sysctls"]:
            self.state["sysctls"][key] = old  # saved before the change, restored at exit
            self.save_state()
        sysctl_write(key, value)
        return {"key": key, "old": old, "value": sysctl_read(key)}

    def op_put(self, req):
        try:
            data = base64.b64decode(req.get("data_b64", ""), validate=True)
        except (ValueError, TypeError):
            raise Refused("put: data_b64 is not base64") from None
        mode = req.get("mode", 0o644)
        if not isinstance(mode, int) or mode & ~0o777:
            raise Refused(f"put: mode {mode!r}: permission bits only")
        fd = open_in(self.run_dir, req.get("path"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return {"path": req["path"], "bytes": len(data)}

    def op_get(self, req):
        offset = req.get("offset", 0)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise Refused("get: offset must be a whole number of bytes >= 0")
        fd = open_in(self.run_dir, req.get("path"), os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise Refused("get {!r}: not a regular file".format(req["path"]))
            f.seek(offset)
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"get {req['path']!r}: larger than {MAX_FILE_BYTES} bytes")
        return {"path": req["path"], "data_b64": base64.b64encode(data).decode()}

    def op_clock(self, req):  # noqa: ARG002 - every op takes its request
        return {"t_ns": time.time_ns()}

    def op_status(self, req):  # noqa: ARG002 - every op takes its request
        groups = []
        for pgid, proc in sorted(self.children.items()):
            groups.append({"pgid": pgid, "running": not leader_exited(proc)})
        return {"pid": os.getpid(), "groups": groups, "sysctls_saved": dict(self.state["sysctls"]),
                "lease_left_s": self.lease_deadline - time.monotonic()}

    def op_renew(self, req):
        lease = req.get("lease_s", self.lease_s)
        if not isinstance(lease, (int, float)) or not 0 < lease <= 3600:
            raise Refused(f"renew: lease_s {lease!r}: a number of seconds in (0, 3600]")
        self.lease_s = float(lease)
        self.lease_deadline = time.monotonic() + self.lease_s
        self.write_owner()
        return {"lease_s": self.lease_s}

    OPS = ("start", "stop", "wait", "signal", "sysctl_set", "change", "put", "get", "clock", "status", "renew")

    def handle(self, line):
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as e:
            return {"id": None, "ok": False, "error": f"not a JSON request: {e}"}
        op = req.get("op")
        try:
            if op not in self.OPS:
                raise Refused("unknown op {!r} (known: {})".format(op, ", ".join(self.OPS)))
            answer = getattr(self, "op_" + op)(req)
            if answer is None:
                return None  # answered later (wait)
            answer.update({"id": req.get("id"), "ok": True})
        except Refused as e:
            answer = {"id": req.get("id"), "ok": False, "error": str(e)}
        except (OSError, ValueError, TypeError) as e:
            answer = {"id": req.get("id"), "ok": False, "error": f"{op}: {e}"}
        return answer

    # ---- the loop ----

    def send(self, obj):
        try:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()
            return True
        except (OSError, ValueError):
            return False

    def serve(self, wakeup_fd):
        buf = b""
        fd = sys.stdin.fileno()
        if not self.send({"event": "ready", "pid": os.getpid(), "run_dir": self.run_dir,
                          "python": sys.version.split()[0], "lease_s": self.lease_s}):
            return "stdout closed"
        while self.stop_reason is None:
            left = self.lease_deadline - time.monotonic()
            if left <= 0:
                return "lease passed without a renew"
            ready, _, _ = select.select([fd, wakeup_fd], [], [], min(left, WAIT_POLL_S) if self.waits else left)
            if self.waits:
                self.poll_waits()
            if fd not in ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return "stdin closed"
            buf += chunk
            if len(buf) > MAX_LINE_BYTES:
                return f"a request line over {MAX_LINE_BYTES} bytes"
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                answer = self.handle(line.decode("utf-8", "replace"))
                if answer is not None and not self.send(answer):
                    return "stdout closed"
        return self.stop_reason

    def on_signal(self, signum, frame):  # noqa: ARG002 - signal handler signature
        self.stop_reason = f"signal {signum}"


def cleanup(run_dir, state, held=None):
    """Undo what `state` records and remove `run_dir` (unless it keeps
    results). Returns a list of problems (empty: all undone)."""
    problems = []
    same_boot = state.get("boot_id") == boot_id()
    same_netns = state.get("netns") == netns_id()
    marker = state.get("marker", "").encode()
    for pgid in list(state.get("groups", [])):
        if same_boot and not kill_group(pgid, marker, STOP_GRACE_S, (held or {}).get(pgid)):
            problems.append(f"process group {pgid} survived SIGKILL")
            continue
        if held and pgid in held:
            held.pop(pgid).wait()
        state["groups"].remove(pgid)
    changes = state.setdefault("changes", [])
    while changes:
        undo = changes[-1]
        if same_boot and not same_netns:
            problems.append("{} was changed in another network namespace ({})".format(
                " ".join(undo), state.get("netns")))
            break
        if same_boot:  # another boot has none of these changes left
            try:
                done = subprocess.run(undo, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, timeout=CHANGE_TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired) as e:
                problems.append("cannot undo with `{}`: {}".format(" ".join(undo), e))
                break
            if done.returncode != 0:
                err = done.stderr.decode("utf-8", "replace").strip()[-300:]
                problems.append("`{}` failed: {}".format(" ".join(undo), err))
                break
        changes.pop()
        if run_dir and os.path.isdir(run_dir):
            write_json_atomic(os.path.join(run_dir, STATE_FILE), state)  # an undone change is never replayed
    for key, old in list(state.get("sysctls", {}).items()):
        if same_boot and not same_netns:
            problems.append("sysctl {} was changed in another network namespace ({})".format(key, state.get("netns")))
            continue
        if same_boot:
            try:
                sysctl_write(key, old)
            except (OSError, Refused) as e:
                problems.append(f"cannot restore sysctl {key} = {old!r}: {e}")
                continue
        del state["sysctls"][key]
    if problems:
        write_json_atomic(os.path.join(run_dir, STATE_FILE), state)
        return problems
    if state.get("keep_results"):
        for name in (STATE_FILE, AGENT_FILE):
            try:
                os.unlink(os.path.join(run_dir, name))
            except FileNotFoundError:
                pass
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    return problems


def cleanup_only(run_dir):
    """Replay a dead agent's STATE_FILE; prints a JSON report."""
    run_dir = os.path.abspath(run_dir)
    # Two cleanups of one directory (two `fatpipe clean` at once) take turns;
    # the second finds nothing left to undo, or no directory at all.
    try:
        dfd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        print(json.dumps({"run_dir": run_dir, "problems": []}))
        return 0
    except OSError as e:
        raise SystemExit(f"{run_dir}: {e.strerror} (not a directory, or a symlink)") from None
    try:
        fcntl.flock(dfd, fcntl.LOCK_EX)
        try:
            state = read_json(os.path.join(run_dir, STATE_FILE))
        except FileNotFoundError:
            state = {}
        problems = cleanup(run_dir, state) if os.path.isdir(run_dir) else []
    finally:
        os.close(dfd)
    print(json.dumps({"run_dir": run_dir, "problems": problems}))
    return 1 if problems else 0


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="fatpipe-agent")
    ap.add_argument("--run-dir")
    ap.add_argument("--run-id")
    ap.add_argument("--lease", type=float, default=DEFAULT_LEASE_S)
    ap.add_argument("--keep-results", action="store_true")
    ap.add_argument("--cleanup-only", metavar="RUN_DIR")
    args = ap.parse_args(argv)
    if args.cleanup_only:
        return cleanup_only(args.cleanup_only)
    if not args.run_dir or not args.run_id:
        ap.error("--run-dir and --run-id are required")
    agent = Agent(args.run_dir, args.run_id, args.lease, args.keep_results)
    os.umask(0o077)
    agent.save_state()
    agent.write_owner()
    # A signal wakes select() through this pipe; its handler sets stop_reason.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, agent.on_signal)
    reason = agent.serve(wake_r)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)  # finish cleaning whatever arrives now
    problems = cleanup(agent.run_dir, agent.state, agent.children)
    report = {"event": "cleaned", "reason": reason, "problems": problems}
    agent.send(report)
    try:
        sys.stderr.write(f"fatpipe-agent: {json.dumps(report)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
