"""Packet captures on the kernel backend (capturespec.py, docs/captures.md):
tcpdump (linuxpath/tcpdump.py, its arguments) at each sender namespace's
interface and/or the receiver's, started before the connections open and
stopped at the capture's end or the run's."""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ...capturespec import file_name
from ...linuxpath.tcpdump import READY_TIMEOUT_S, capture_facts, tcpdump_args
from .cleanup import REGISTRY, stop_process
from .netns import Namespace


@dataclass
class Tcpdump:
    """One tcpdump writing `path` at `iface` of `ns`."""

    ns: Namespace
    iface: str
    path: Path
    capture: object  # the plan's CapturePlan
    proc: subprocess.Popen | None = None
    stderr: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        exe = shutil.which("tcpdump")
        if exe is None:
            raise RuntimeError("capture: tcpdump is not installed (scripts/install.sh installs it)")
        self.proc = self.ns.popen([exe, *tcpdump_args(self.iface, str(self.path), self.capture)],
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
        """The file and tcpdump's own counts."""
        return {"file": self.path.name, "bytes": self.path.stat().st_size if self.path.exists() else 0,
                **capture_facts(" ".join(self.stderr), self.capture)}


def captures(plan, senders: dict[str, Namespace], receiver: Namespace, workdir: Path) -> list[Tcpdump]:
    """The tcpdumps a plan's capture asks for (not started)."""
    c = plan.capture
    if c is None:
        return []
    out = []
    if c.side in ("sender", "both"):
        out += [Tcpdump(ns, "eth0", Path(workdir) / file_name("sender", name), c) for name, ns in senders.items()]
    if c.side in ("receiver", "both"):
        out.append(Tcpdump(receiver, "eth0", Path(workdir) / file_name("receiver"), c))
    return out
