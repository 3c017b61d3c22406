"""Ownership records: what a fatpipe process created, written down before
it is created, so `fatpipe clean` removes fatpipe's own and nothing else.

One JSON file per live run (one EmulatedPath) in STATE_DIR, named after the
run's namespace prefix (``fp-<pid>-<n>.json``)::

    {"version": 1, "prefix": "fp-123-0", "created_at": "2025-…Z",
     "owner": {"pid": 123, "start_ticks": 4567},
     "namespaces": ["fp-123-0-r", "fp-123-0-rx", "fp-123-0-s0"],
     "iptables": [{"namespace": "fp-123-0-r", "rule": ["iptables-legacy", "-w", "-A", …]}],
     "linkem": [{"pid": 130, "start_ticks": 4890}]}

* A namespace or iptables rule is added to the record (and the file
  rewritten) BEFORE the command that creates it runs, so a crash at any
  point leaves nothing that the record does not name. linkem's pid is
  known only once it started; it runs inside a recorded namespace, whose
  processes are stopped with it in any case.
* A process is identified by its pid AND its start time (field 22 of
  /proc/<pid>/stat, clock ticks since boot; proc(5)), so a recycled pid is
  never taken for the owner or for a linkem.
* STATE_DIR is /run/fatpipe: /run is a tmpfs, so records do not outlive a
  reboot, exactly like the namespaces they describe. The directory must be
  a real directory owned by this user and writable by nobody else, or no
  record in it is trusted (a planted record could otherwise name a
  process to kill).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

# Every namespace fatpipe creates starts with this (fp-<pid>-<n>-<role>);
# the prefix alone proves nothing: the record does.
NAME_PREFIX = "fp-"
STATE_DIR = Path("/run/fatpipe")
RECORD_VERSION = 1
PREFIX_RE = re.compile(rf"^{re.escape(NAME_PREFIX)}(\d+)-(\d+)$")
# Records above this size are not fatpipe's (200 senders make ~20 kB).
MAX_RECORD_BYTES = 1 << 20


class UnsafeStateDir(RuntimeError):
    """The state directory is not a private directory of this user."""


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3… of /proc/<pid>/stat (proc(5)); None if there is no such
    process. The command name (field 2) may hold spaces and parentheses,
    so fields are counted after its last ')'."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rfind(")") + 2:].split()


def process_start_ticks(pid: int) -> int | None:
    """Start time of process `pid` in clock ticks since boot (field 22 of
    /proc/<pid>/stat); None if there is no such process."""
    fields = _stat_fields(pid)
    return int(fields[22 - 3]) if fields else None


def process_name(pid: int) -> str | None:
    """/proc/<pid>/comm (the first 15 bytes of the executable's name)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def same_process(pid: int, start_ticks: int) -> bool:
    """Whether `pid` is still the process that started at `start_ticks` and
    still runs (a zombie, exited but not yet reaped, does not: field 3 is
    its state, Z or X)."""
    fields = _stat_fields(pid)
    return fields is not None and int(fields[22 - 3]) == start_ticks and fields[0] not in ("Z", "X")


def check_state_dir(state_dir: Path, create: bool) -> bool:
    """True if `state_dir` is a safe private directory (created, mode 0700,
    when `create`); False if it does not exist. Raises UnsafeStateDir if it
    is a symlink, not a directory, not ours or writable by others."""
    if create:
        try:
            state_dir.mkdir(mode=0o700, parents=False)
        except FileExistsError:
            pass
    try:
        st = os.lstat(state_dir)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeStateDir(f"{state_dir} is not a directory (a symlink or a file); fatpipe trusts no record there")
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise UnsafeStateDir(f"{state_dir} is owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):o}; "
                             f"fatpipe needs it owned by uid {os.geteuid()} and writable by nobody else")
    return True


@dataclass
class OwnershipRecord:
    """What one run of this process created (see the module doc)."""

    prefix: str
    owner_pid: int
    owner_start_ticks: int
    created_at: str
    namespaces: list[str] = field(default_factory=list)
    iptables: list[dict] = field(default_factory=list)  # {"namespace": str, "rule": [str]}
    linkem: list[dict] = field(default_factory=list)  # {"pid": int, "start_ticks": int}
    state_dir: Path = STATE_DIR

    @classmethod
    def for_this_process(cls, prefix: str, state_dir: Path = STATE_DIR) -> OwnershipRecord:
        pid = os.getpid()
        ticks = process_start_ticks(pid)
        if ticks is None:
            raise RuntimeError(f"cannot read /proc/{pid}/stat: no process start time to record")
        return cls(prefix=prefix, owner_pid=pid, owner_start_ticks=ticks,
                   created_at=dt.datetime.now(dt.UTC).isoformat(), state_dir=Path(state_dir))

    @property
    def path(self) -> Path:
        return self.state_dir / f"{self.prefix}.json"

    def owner_alive(self) -> bool:
        return same_process(self.owner_pid, self.owner_start_ticks)

    def to_json(self) -> dict:
        return {"version": RECORD_VERSION, "prefix": self.prefix, "created_at": self.created_at,
                "owner": {"pid": self.owner_pid, "start_ticks": self.owner_start_ticks},
                "namespaces": list(self.namespaces), "iptables": list(self.iptables), "linkem": list(self.linkem)}

    # -- claims: written before the resource exists -------------------------
    def claim_namespace(self, name: str) -> None:
        if not name.startswith(self.prefix + "-"):
            raise ValueError(f"namespace {name!r} is not under this run's prefix {self.prefix!r}")
        if name not in self.namespaces:
            self.namespaces.append(name)
        self.save()

    def claim_iptables_rule(self, namespace: str, rule: list[str]) -> None:
        if namespace not in self.namespaces:
            raise ValueError(f"iptables rule in {namespace!r}: not a namespace of this run")
        self.iptables.append({"namespace": namespace, "rule": list(rule)})
        self.save()

    def claim_linkem(self, pid: int) -> None:
        ticks = process_start_ticks(pid)
        if ticks is not None:
            self.linkem.append({"pid": pid, "start_ticks": ticks})
            self.save()

    # -- releases: written after the resource is gone ------------------------
    def release_namespace(self, name: str) -> None:
        self.namespaces = [n for n in self.namespaces if n != name]
        self.iptables = [r for r in self.iptables if r["namespace"] != name]
        self._save_or_discard()

    def release_linkem(self, pid: int) -> None:
        self.linkem = [p for p in self.linkem if p["pid"] != pid]
        self._save_or_discard()

    def _save_or_discard(self) -> None:
        if self.namespaces or self.linkem:
            self.save()
        else:
            self.discard()

    def save(self) -> None:
        """Write the record atomically: a unique temporary file (O_EXCL,
        O_NOFOLLOW) renamed over the record."""
        check_state_dir(self.state_dir, create=True)
        tmp = self.state_dir / f".{self.prefix}.{os.getpid()}.{id(self)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_json(), f, indent=1)
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Unreadable:
    """A file in the state directory that is not a valid fatpipe record."""

    path: Path
    reason: str


def parse_record(data: object, path: Path) -> OwnershipRecord:
    """Validate a record's JSON (raises ValueError naming what is wrong):
    every namespace must be under the record's prefix, whose pid must be
    the owner's, and the file must be named after the prefix."""
    if not isinstance(data, dict) or data.get("version") != RECORD_VERSION:
        raise ValueError(f"not a version-{RECORD_VERSION} fatpipe record")
    prefix = data.get("prefix")
    m = PREFIX_RE.match(prefix) if isinstance(prefix, str) else None
    owner = data.get("owner")
    if m is None or not isinstance(owner, dict) or path.name != f"{prefix}.json":
        raise ValueError(f"prefix {prefix!r} is not fp-<pid>-<n> or does not name the file")
    pid, ticks = owner.get("pid"), owner.get("start_ticks")
    if type(pid) is not int or type(ticks) is not int or str(pid) != m.group(1):
        raise ValueError(f"owner {owner!r} does not match prefix {prefix!r}")
    namespaces = data.get("namespaces")
    if not isinstance(namespaces, list) or not all(isinstance(n, str) and n.startswith(prefix + "-")
                                                   and "/" not in n for n in namespaces):
        raise ValueError(f"namespaces {namespaces!r} are not all under {prefix}-")
    rules = data.get("iptables")
    if not isinstance(rules, list) or not all(
            isinstance(r, dict) and r.get("namespace") in namespaces and isinstance(r.get("rule"), list)
            and all(isinstance(a, str) for a in r["rule"]) for r in rules):
        raise ValueError("iptables rules must each name one of the record's namespaces")
    linkem = data.get("linkem")
    if not isinstance(linkem, list) or not all(
            isinstance(p, dict) and type(p.get("pid")) is int and type(p.get("start_ticks")) is int for p in linkem):
        raise ValueError("linkem entries must be {pid, start_ticks} integers")
    return OwnershipRecord(prefix=prefix, owner_pid=pid, owner_start_ticks=ticks,
                           created_at=str(data.get("created_at", "")), namespaces=list(namespaces),
                           iptables=list(rules), linkem=list(linkem), state_dir=path.parent)


def load_records(state_dir: Path = STATE_DIR) -> list[OwnershipRecord | Unreadable]:
    """Every record in `state_dir` (none if it does not exist). Raises
    UnsafeStateDir when the directory cannot be trusted."""
    state_dir = Path(state_dir)
    if not check_state_dir(state_dir, create=False):
        return []
    out: list[OwnershipRecord | Unreadable] = []
    for path in sorted(state_dir.glob("*.json")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise ValueError("not a regular file")
                raw = f.read(MAX_RECORD_BYTES + 1)
            if len(raw) > MAX_RECORD_BYTES:
                raise ValueError(f"larger than {MAX_RECORD_BYTES} bytes")
            out.append(parse_record(json.loads(raw.decode("utf-8")), path))
        except (OSError, ValueError, UnicodeDecodeError) as e:
            out.append(Unreadable(path, str(e)))
    return out
