"""Packet captures on the kernel backend (capturespec.py, docs/captures.md):
tcpdump at each sender namespace's interface and/or the receiver's, headers
only (``-s``), at most the file budget (``-c``: max_size over a record's
most bytes), the chosen flow groups by their ports, started before the
connections open and stopped at the capture's end or the run's."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ...capturespec import PCAP_RECORD_HEADER_BYTES, file_name
from ...linuxpath.flows import group_port
from .cleanup import REGISTRY, stop_process
from .netns import Namespace

READY_TIMEOUT_S = 10.0
# tcpdump's buffer (-B, KiB): a burst at the test rates fits without drops.
BUFFER_KIB = 16384


@dataclass
class Tcpdump:
    """One tcpdump writing `path` at `iface` of `ns`."""

    ns: Namespace
    iface: str
    path: Path
    snaplen: int
    count: int
    bpf_filter: str
    proc: subprocess.Popen | None = None
    stderr: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        exe = shutil.which("tcpdump")
        if exe is None:
            raise RuntimeError("capture: tcpdump is not installed (scripts/install.sh installs it)")
        # -Z root: keep writing the run's directory (tcpdump would switch to
        # its own user after opening the interface).
        self.proc = self.ns.popen([exe, "-i", self.iface, "-n", "-Z", "root", "-s", str(self.snaplen),
                                   "-c", str(self.count),
                                   "-B", str(BUFFER_KIB), "-U", "-w", str(self.path), self.bpf_filter],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        REGISTRY.add(f"tcpdump {self.proc.pid}", self.stop)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(READY_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"capture: tcpdump on {self.iface} did not start: {' '.join(self.stderr)[-300:]}")

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.strip())
            if "listening on" in line:
                self._ready.set()
        self._ready.set()  # exited: start() reports what it said

    def stop(self) -> None:
        """SIGINT (tcpdump writes what it holds and its counts), then stop_process."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=5.0)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            stop_process(self.proc)
        REGISTRY.discard(f"tcpdump {self.proc.pid}")

    def facts(self) -> dict:
        """The file and tcpdump's own counts ("N packets captured", "M
        packets dropped by kernel")."""
        text = " ".join(self.stderr)
        counts = {k: int(n) for n, k in re.findall(r"(\d+) packets? (captured|dropped by kernel)", text)}
        return {"file": self.path.name, "bytes": self.path.stat().st_size if self.path.exists() else 0,
                "captured": counts.get("captured"), "dropped": counts.get("dropped by kernel"),
                "truncated": counts.get("captured", 0) >= self.count}


def port_filter(groups: tuple[int, ...]) -> str:
    """tcpdump's filter for flow groups `groups` (each has its own port:
    flows.group_port); every TCP packet when none are named."""
    if not groups:
        return "tcp"
    return "tcp and (" + " or ".join(f"port {group_port(g)}" for g in groups) + ")"


def captures(plan, senders: dict[str, Namespace], receiver: Namespace, workdir: Path) -> list[Tcpdump]:
    """The tcpdumps a plan's capture asks for (not started)."""
    c = plan.capture
    if c is None:
        return []
    count = max(1, c.max_bytes // (PCAP_RECORD_HEADER_BYTES + c.snaplen_bytes) - 1)
    flt = port_filter(c.groups)
    out = []
    if c.side in ("sender", "both"):
        out += [Tcpdump(ns, "eth0", Path(workdir) / file_name("sender", name), c.snaplen_bytes, count, flt)
                for name, ns in senders.items()]
    if c.side in ("receiver", "both"):
        out.append(Tcpdump(receiver, "eth0", Path(workdir) / file_name("receiver"), c.snaplen_bytes, count, flt))
    return out
