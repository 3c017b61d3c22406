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

import os
import subprocess
import time
from pathlib import Path

from ...bpfports import (  # noqa: F401 - the kernel backend's names for them
    BINARY,
    PORTS_DIR,
    Port,
    build_loader,
    find_loader,
    is_stale,
    list_ports,
    loader,
    parse_port_list,
    source_names,
    source_sha256,
)
from ...linuxpath import cmd
from ...linuxpath.workspace_binary import unbuildable
from .cleanup import stop_process

BTF = Path("/sys/kernel/btf/vmlinux")  # the kernel's types: struct_ops programs need them
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
READY_TIMEOUT_S = 30.0  # loading and verifying a few programs takes well under a second
GONE_TIMEOUT_S = 10.0

KERNEL = "kernel"
FATPIPE_BPF = "fatpipe-bpf"


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
        """`names`: ports by name, or NAME=PATH for an object file that
        registers as NAME."""
        self.binary = binary
        self.args = list(names)
        self.names = [n.partition("=")[0] for n in names]
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Registration:
        if not self.names:
            return self
        self.proc = subprocess.Popen([str(self.binary), "--parent-pid", str(os.getpid()), *self.args],
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


def object_files(objects, workdir: Path) -> list[str]:
    """NAME=PATH registrations for BPF objects (bpfcc.BpfObject): each
    object written under the run's directory, which keeps what ran."""
    out = []
    for obj in objects:
        path = Path(workdir) / "bpf" / f"{obj.name}.o"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(obj.elf)
        out.append(f"{obj.name}={path}")
    return out
