"""Congestion controls named by BPF object: ``cc = "bpf:NAME"`` (one of
fatpipe's ports in bpf/cca/), ``cc = "bpf:path/to/my_cca.bpf.c"`` (a
user's source, compiled with the ports' clang arguments and headers by
``fatpipe-ccaload --compile``) or ``cc = "bpf:path/to/my_cca.o"`` (an
object built elsewhere). The simulator runs the object's struct_ops
programs itself (crates/sim/src/bpf, docs/bpf-ccas.md); a relative path
is taken from the study file's directory.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import bpfports

PREFIX = "bpf:"
_PORT = re.compile(r"^[a-z0-9_]+$")
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fatpipe" / "bpf"


class BpfCcaError(ValueError):
    """A ``bpf:`` name that names no usable object; the message says why."""


@dataclass(frozen=True)
class BpfObject:
    cc: str  # the name as the study gives it
    kind: str  # "port", "source" or "object"
    file: str  # the port's file under bpf/cca/, or the path given
    object_sha256: str
    elf: bytes = b""
    name: str = ""  # the name it registers (tcp_congestion_ops.name)

    def facts(self) -> dict[str, Any]:
        return {"source": "bpf", "kind": self.kind, "file": self.file, "name": self.name,
                "object_sha256": self.object_sha256}


def _named(obj: BpfObject) -> BpfObject:
    """`obj` with the name it registers, read by the simulator's loader,
    which also says why it would refuse the object."""
    try:
        from . import _native
    except ImportError as e:
        raise BpfCcaError(f"{obj.cc}: the simulator extension fatpipe._native is not built ({e})") from None
    try:
        facts = _native.bpf_object_facts(obj.elf)
    except ValueError as e:
        raise BpfCcaError(f"{obj.cc}: {e}") from None
    return replace(obj, name=facts["name"])


def is_bpf(cc: str | None) -> bool:
    return bool(cc) and cc.startswith(PREFIX)


def relative_to(raw: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """`raw` (a study's TOML table) with each relative ``bpf:`` path of
    ``flows.N.cc`` and of a swept ``flows.N.cc`` taken from `base_dir`."""

    def fix(cc: Any) -> Any:
        if not isinstance(cc, str) or not is_bpf(cc):
            return cc
        target = cc[len(PREFIX):]
        if _PORT.match(target) or Path(target).expanduser().is_absolute():
            return cc
        return PREFIX + str((base_dir / Path(target).expanduser()).resolve())

    out = dict(raw)
    flows = raw.get("flows")
    if isinstance(flows, list):
        out["flows"] = [{**f, "cc": fix(f.get("cc"))} if isinstance(f, dict) and "cc" in f else f for f in flows]
    sweep = raw.get("sweep")
    if isinstance(sweep, dict):
        out["sweep"] = {k: ([fix(v) for v in vals] if isinstance(vals, list) and k.endswith(".cc") else vals)
                        for k, vals in sweep.items()}
    return out


_MEMO: dict[tuple, BpfObject] = {}


def resolve(cc: str) -> BpfObject:
    """The object `cc` names, with its bytes. Raises BpfCcaError."""
    target = cc[len(PREFIX):]
    if _PORT.match(target):
        return _port(cc, target)
    path = Path(target).expanduser()
    try:
        st = path.stat()
    except OSError as e:
        raise BpfCcaError(f"{cc}: {path}: {e.strerror or e}") from None
    key = (cc, st.st_mtime_ns, st.st_size)
    if key in _MEMO:
        return _MEMO[key]
    if path.name.endswith(".c"):
        obj = _compile(cc, path)
    elif path.name.endswith(".o"):
        elf = path.read_bytes()
        obj = _named(BpfObject(cc, "object", str(path), hashlib.sha256(elf).hexdigest(), elf))
    else:
        raise BpfCcaError(f"{cc}: expected a port name (such as bpf:htcp), a .bpf.c source or a .o object")
    _MEMO[key] = obj
    return obj


def _loader(cc: str) -> tuple[Path, dict[str, bpfports.Port]]:
    try:
        return bpfports.loader()
    except (FileNotFoundError, RuntimeError, OSError, subprocess.SubprocessError) as e:
        raise BpfCcaError(f"{cc}: {bpfports.BINARY}, which builds BPF objects, is not available: {e}") from None


def _port(cc: str, name: str) -> BpfObject:
    memo = _MEMO.get((cc,))
    if memo:
        return memo
    binary, ports = _loader(cc)
    if name not in ports:
        raise BpfCcaError(f"{cc}: no port named {name!r}; fatpipe's ports: {', '.join(sorted(ports))}")
    r = subprocess.run([str(binary), "--object", name], capture_output=True, timeout=60)
    if r.returncode != 0:
        raise BpfCcaError(f"{cc}: {binary} --object {name}: {r.stderr.decode(errors='replace').strip()}")
    obj = _named(BpfObject(cc, "port", f"bpf/cca/{ports[name].file}", hashlib.sha256(r.stdout).hexdigest(), r.stdout))
    _MEMO[(cc,)] = obj
    return obj


def _compile(cc: str, src: Path) -> BpfObject:
    """Compile `src` (cached by the source, the headers beside it and the
    loader's ports, whose hashes cover fatpipe's headers)."""
    binary, ports = _loader(cc)
    h = hashlib.sha256(src.read_bytes())
    for header in sorted(src.parent.glob("*.h")):
        h.update(header.read_bytes())
    for p in sorted(ports.values(), key=lambda p: p.name):
        h.update(p.source_sha256.encode())
    out = CACHE_DIR / f"{h.hexdigest()}.o"
    if not out.is_file():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        r = subprocess.run([str(binary), "--compile", str(src), str(tmp)], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise BpfCcaError(f"{cc}: {r.stderr.strip()}")
        tmp.replace(out)
    elf = out.read_bytes()
    return _named(BpfObject(cc, "source", str(src), hashlib.sha256(elf).hexdigest(), elf))
