"""CCAs the kernel lacks, registered from fatpipe's BPF ports for the
length of one run (docs/bpf-ccas.md).

The ports live in ``bpf/cca/NAME.bpf.c`` (each registers as NAME) and are
compiled into the loader ``fatpipe-ccaload`` (crates/ccaload). A run that
names a CCA the kernel does not list in tcp_available_congestion_control
starts the loader with exactly those names; the loader registers them
through BPF links, prints ``ready``, and holds them until its standard
input closes. Links end with the process that holds them, and the loader
dies with the thread that started it (PR_SET_PDEATHSIG), so a fatpipe
killed with SIGKILL leaves no CCA registered. The kernel's own CCA always
wins: a port is loaded only for a name the kernel does not have.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ...linuxpath import cmd
from ...linuxpath.workspace_binary import REPO_ROOT, build_binary, find_binary, unbuildable
from .cleanup import stop_process

PORTS_DIR = REPO_ROOT / "bpf" / "cca"
BTF = Path("/sys/kernel/btf/vmlinux")  # the kernel's types: struct_ops programs need them
BINARY = "fatpipe-ccaload"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
READY_TIMEOUT_S = 30.0  # loading and verifying a few programs takes well under a second
GONE_TIMEOUT_S = 10.0

KERNEL = "kernel"
FATPIPE_BPF = "fatpipe-bpf"


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


def cca_sources(names: list[str], kernel_ccas: list[str], ports: dict[str, Port]) -> dict[str, str | None]:
    """Where each CCA comes from (pure): the kernel's own when it lists the
    name, else fatpipe's BPF port if there is one, else None (unavailable)."""
    return {n: KERNEL if n in kernel_ccas else (FATPIPE_BPF if n in ports else None) for n in names}


def ports_to_load(names: list[str], kernel_ccas: list[str], ports: dict[str, Port]) -> list[str]:
    """The names a run must register: used, missing from the kernel, ported (pure)."""
    sources = cca_sources(sorted(set(names)), kernel_ccas, ports)
    return [n for n, s in sources.items() if s == FATPIPE_BPF]


def kernel_ccas() -> list[str]:
    try:
        return AVAILABLE.read_text().split()
    except OSError:
        return []


def find_loader() -> Path | None:
    """$FATPIPE_CCALOAD, then PATH, then the workspace's release build."""
    return find_binary(BINARY, "FATPIPE_CCALOAD")


def build_loader() -> Path:
    """Build the loader (and so the BPF objects, crates/bpfports/build.rs) with cargo."""
    return build_binary(BINARY, "ccaload", timeout_s=900)


def ports_unavailable() -> str | None:
    """Why fatpipe's BPF ports cannot be registered here (no BTF, or no
    loader and no clang/cargo to build it), or None."""
    if not BTF.exists():
        return f"the kernel has no BTF ({BTF}): BPF struct_ops CCAs cannot load"
    if find_loader() is None:
        why = unbuildable("ccaload") or (None if cmd.which("clang") else "no clang to compile the ports")
        if why:
            return (f"no {BINARY} ({why}; a wheel built where clang, libelf-dev and zlib1g-dev are "
                    f"installed carries it, scripts/install.sh installs them)")
    return None


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


def describe(names: list[str], ports: dict[str, Port]) -> dict[str, dict]:
    """Manifest facts: per CCA, its source and, for a port, file and hash."""
    out = {}
    for n, src in cca_sources(names, kernel_ccas(), ports).items():
        if src == FATPIPE_BPF:
            p = ports[n]
            out[n] = {"source": src, "file": f"bpf/cca/{p.file}", "source_sha256": p.source_sha256}
        else:
            out[n] = {"source": src}
    return out


def wait_until(pred, timeout_s: float, step_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(step_s)
    return True


class Registration:
    """Registers `names` for the ``with`` block: the loader holds them until
    its standard input closes (on leaving the block) or this process dies.
    On leaving, waits until the kernel no longer lists them."""

    def __init__(self, binary: Path, names: list[str]):
        self.binary = binary
        self.names = list(names)
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Registration:
        if not self.names:
            return self
        self.proc = subprocess.Popen([str(self.binary), "--parent-pid", str(os.getpid()), *self.names],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        try:
            cmd.expect_line(self.proc, "ready", f"{BINARY} {' '.join(self.names)}", stop=stop_process,
                            timeout_s=READY_TIMEOUT_S)
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stop()

    def _stop(self) -> None:
        p = self.proc
        if p is None:
            return
        self.proc = None
        try:
            if p.stdin:
                p.stdin.close()
            p.wait(timeout=GONE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            stop_process(p)
        if not wait_until(lambda: not set(self.names) & set(kernel_ccas()), GONE_TIMEOUT_S):
            raise RuntimeError(f"{BINARY} exited but the kernel still lists "
                               f"{' '.join(sorted(set(self.names) & set(kernel_ccas())))}")
