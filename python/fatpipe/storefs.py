"""Files in a study directory, handled so that nothing planted there is
followed, and the lock that gives one process the directory.

fatpipe may run as root in a directory other users can write to, so inside
a study directory:

* every directory fatpipe uses is opened with ``O_NOFOLLOW``; a symlink
  where a directory belongs is refused (:class:`StoreError`), never followed;
* every file is written to a new temporary file created with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a unique name
  (``.<name>.<pid>.<random>.tmp``) and renamed over its final name, which
  replaces a symlink there instead of writing through it;
* removal (``remove_entry``) unlinks links and walks directories relative to
  an open directory descriptor (``shutil.rmtree(dir_fd=…)``), so it never
  leaves the study directory.

The study directory itself (``--out``) is the user's choice and may be a
symlink; what lies inside it may not.

The lock is ``<study>/.fatpipe.lock``, held with ``flock`` for as long as a
process writes the study and released by the kernel when the process dies,
so a crash never leaves a stale lock. The file holds the holder's pid, host
and start time, for the message a second process gives.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import secrets
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO

LOCK_NAME = ".fatpipe.lock"
TMP_SUFFIX = ".tmp"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class StoreError(RuntimeError):
    """The study directory cannot be used; the message is one line naming
    the path and what to do."""


class StudyLocked(StoreError):
    """Another process is writing this study directory."""


def os_problem(path: Path | str, e: OSError) -> StoreError:
    """A one-line StoreError for an OSError on `path` (read-only, full,
    missing or not a directory)."""
    hint = {
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.ENOTDIR: "a parent is not a directory",
        errno.ENOENT: "no such file or directory",
        errno.ELOOP: "a symlink where fatpipe does not follow one",
    }.get(e.errno or 0, e.strerror or str(e))
    return StoreError(f"cannot write {path}: {hint}; choose another --out directory or fix it")


def open_root(root: Path) -> int:
    """Create the study directory (and its parents) if needed and open it."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileExistsError:
        raise StoreError(f"cannot use {root} as a study directory: it exists and is not a directory") from None
    except OSError as e:
        raise os_problem(root, e) from None


def open_subdir(parent_fd: int, name: str, shown: Path, create: bool = True) -> int:
    """Open (creating if asked) directory `name` under `parent_fd` without
    following a symlink. `shown` is its path for messages."""
    for _attempt in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, 0o755, dir_fd=parent_fd)
            except FileExistsError:
                pass  # created meanwhile: open it
            except OSError as e:
                raise os_problem(shown, e) from None
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise StoreError(
                    f"{shown} is a symlink or not a directory; fatpipe does not follow symlinks "
                    "inside a study directory: remove it and run again"
                ) from None
            raise os_problem(shown, e) from None
    raise StoreError(f"{shown}: could not be created")


def write_file(dir_fd: int, name: str, shown: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write `name` in the directory `dir_fd` atomically: `write` fills a new
    temporary file (unique name, O_EXCL, O_NOFOLLOW), which is synced and
    renamed over `name`."""
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}"
    try:
        fd = os.open(tmp, _NEW_FILE_FLAGS, 0o644, dir_fd=dir_fd)
    except OSError as e:
        raise os_problem(shown, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as e:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise os_problem(shown, e) from None
        raise


def remove_entry(dir_fd: int, name: str) -> bool:
    """Remove `name` under `dir_fd`: a file or symlink is unlinked (a link's
    target is never touched), a directory removed with its contents.
    Returns whether something was there."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)
    return True


def remove_tmp_files(dir_fd: int) -> list[str]:
    """Remove the temporary files (``.*.tmp``) a killed writer left in
    `dir_fd`; returns their names."""
    removed = []
    with os.scandir(dir_fd) as entries:
        names = [e.name for e in entries if e.name.startswith(".") and e.name.endswith(TMP_SUFFIX)
                 and not e.is_dir(follow_symlinks=False)]
    for name in names:
        try:
            os.unlink(name, dir_fd=dir_fd)
            removed.append(name)
        except FileNotFoundError:
            pass
    return removed


def entries(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as it:
        return sorted(e.name for e in it)


class StudyLock:
    """The flock on ``<study>/.fatpipe.lock`` (see the module doc)."""

    def __init__(self, root_fd: int, root: Path) -> None:
        self.root = root
        self.fd: int | None = None
        shown = root / LOCK_NAME
        try:
            fd = os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=root_fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise StoreError(f"{shown} is a symlink; remove it and run again") from None
            raise os_problem(shown, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StudyLocked(
                f"{root} is in use by another fatpipe ({holder}); wait for it to finish "
                "or choose another --out directory"
            ) from None
        except OSError as e:
            os.close(fd)
            raise os_problem(shown, e) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode() + b"\n", 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"
