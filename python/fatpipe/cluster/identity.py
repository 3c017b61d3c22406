"""Who a process is, for the cluster's safety check: the fatpipe version,
a digest of its Python source, the native build id and Dask's version.

A worker that differs from the client in any of these could compute
different results under the same run id, so the study is refused before
anything is submitted (:func:`mismatches`), and a result that comes back
from such a worker (one that joined later) stops the study unrecorded.
"""

from __future__ import annotations

import functools
import hashlib
import socket
from pathlib import Path

from .. import __version__

# The facts compared between the client and every worker, in the order named.
COMPARED = ("fatpipe", "source", "native", "dask")


def _digest(paths: list[Path], root: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.cache
def native_build_id() -> str:
    """The simulator extension's build id: the SHA-256 (first 16 hex
    digits) of the fatpipe._native library file this process loaded, so two
    machines match only with the same build; "not built" without it."""
    try:
        from .. import _native
    except ImportError:
        return "not built"
    path = Path(_native.__file__)
    return _digest([path], path.parent)


@functools.cache
def source_digest() -> str:
    """A digest of fatpipe's Python files as this process imports them."""
    root = Path(__file__).resolve().parents[1]
    return _digest(sorted(root.rglob("*.py")), root)


def identity() -> dict[str, str]:
    """This process's identity (runs on the client and, through
    Client.run, on every worker)."""
    try:
        import distributed
        dask_version = distributed.__version__
    except ImportError:
        dask_version = "missing"
    return {"host": socket.gethostname(), "fatpipe": __version__, "source": source_digest(),
            "native": native_build_id(), "dask": dask_version}


def differences(mine: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """What differs between two identities, one "name: theirs (here mine)" each."""
    return [f"{key} {theirs.get(key, '?')} (here {mine.get(key, '?')})"
            for key in COMPARED if theirs.get(key) != mine.get(key)]
