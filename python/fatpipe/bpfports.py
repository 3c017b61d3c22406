"""fatpipe's BPF ports and their loader binary ``fatpipe-ccaload``
(crates/ccaload, objects built by crates/bpfports): which ports a binary
carries, whether it is stale against bpf/cca/, and building it. The
kernel backend registers the ports through it; the simulator gets their
objects from it (bpfcc.py)."""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .linuxpath.workspace_binary import REPO_ROOT, build_binary, find_binary

PORTS_DIR = REPO_ROOT / "bpf" / "cca"
BINARY = "fatpipe-ccaload"


@dataclass(frozen=True)
class Port:
    name: str  # the CCA name it registers
    file: str  # under bpf/cca/
    source_sha256: str  # the port's source, then the shared headers (crates/bpfports/build.rs)


def parse_port_list(text: str) -> dict[str, Port]:
    """``fatpipe-ccaload --list`` output (name, file, sha256; tab-separated)
    → ports by name (pure)."""
    ports = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and all(parts):
            ports[parts[0]] = Port(*parts)
    return ports


def source_sha256(name: str, ports_dir: Path = PORTS_DIR) -> str | None:
    """SHA-256 of bpf/cca/NAME.bpf.c followed by every header there in name
    order: what build.rs embeds, so a stale loader can be told apart."""
    src = ports_dir / f"{name}.bpf.c"
    if not src.is_file():
        return None
    h = hashlib.sha256(src.read_bytes())
    for header in sorted(ports_dir.glob("*.h"), key=lambda p: p.name):
        h.update(header.read_bytes())
    return h.hexdigest()


def source_names(ports_dir: Path = PORTS_DIR) -> list[str]:
    return sorted(p.name[: -len(".bpf.c")] for p in ports_dir.glob("*.bpf.c"))


def find_loader() -> Path | None:
    """$FATPIPE_CCALOAD, then PATH, then the workspace's release build."""
    return find_binary(BINARY, "FATPIPE_CCALOAD")


def build_loader() -> Path:
    """Build the loader (and so the BPF objects, crates/bpfports/build.rs) with cargo."""
    return build_binary(BINARY, "ccaload", timeout_s=900)


def list_ports(binary: Path) -> tuple[dict[str, Port], str]:
    """The ports a loader binary carries, and its note on ports not built."""
    r = subprocess.run([str(binary), "--list"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{binary} --list exited {r.returncode}: {r.stderr.strip()}")
    return parse_port_list(r.stdout), r.stderr.strip()


def is_stale(ports: dict[str, Port], ports_dir: Path = PORTS_DIR) -> bool:
    """Whether the source tree has ports, or port sources, the binary lacks."""
    for name in source_names(ports_dir):
        if name not in ports or ports[name].source_sha256 != source_sha256(name, ports_dir):
            return True
    return False


_CACHE: dict[str, tuple[Path, dict[str, Port]]] = {}


def loader(build: bool = True) -> tuple[Path, dict[str, Port]]:
    """The loader and its ports; built (or rebuilt when its ports' sources
    changed) when the source tree is here and `build` allows. Raises
    FileNotFoundError/RuntimeError naming what is missing."""
    if "loader" in _CACHE:
        return _CACHE["loader"]
    binary = find_loader()
    ports: dict[str, Port] = {}
    if binary is not None:
        ports, _ = list_ports(binary)
    if build and (binary is None or (binary.is_relative_to(REPO_ROOT) and is_stale(ports))):
        binary = build_loader()
        ports, note = list_ports(binary)
        if note:
            raise RuntimeError(f"{BINARY}: {note}")
    if binary is None:
        raise FileNotFoundError(f"{BINARY} not built (cargo build --release -p {BINARY})")
    _CACHE["loader"] = (binary, ports)
    return binary, ports
