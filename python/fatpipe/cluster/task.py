"""What a Dask worker runs: one plan, computed in a scratch directory of its
own, returned (tables, scratch files, who computed it) for the client to
record. Nothing here touches the study directory."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..backends.base import RunPlan
from ..runcompute import RunResult, compute_run, read_work_files
from .identity import identity


def machine_lock_path(token: str) -> Path:
    """Where the lock for a machine token lives: /run/fatpipe for root (the
    kernel backend's own directory), else the temporary directory."""
    base = Path("/run/fatpipe") if os.geteuid() == 0 else Path(tempfile.gettempdir())
    return base / f"cluster-{token}.lock"


@contextlib.contextmanager
def machine_token(token: str | None) -> Iterator[None]:
    """Hold this machine's `token` (flock) for a run that needs the machine
    to itself, so that two workers on one machine that both offer the token
    still run one such run at a time. None: nothing to hold."""
    if token is None:
        yield
        return
    path = machine_lock_path(token)
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def run_on_worker(plan: RunPlan, token: str | None) -> RunResult:
    """Compute one run on this worker (fatpipe.runcompute.compute_run) in a
    new scratch directory, which is read back into the result and removed."""
    with machine_token(token), tempfile.TemporaryDirectory(prefix=f"fatpipe-{plan.run_id}-") as tmp:
        workdir = Path(tmp) / plan.run_id
        workdir.mkdir(mode=0o700)
        result = compute_run(plan, workdir)
        result.work_files = read_work_files(workdir)
    result.worker = identity()
    return result
