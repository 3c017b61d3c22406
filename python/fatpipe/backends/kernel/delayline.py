"""fatpipe-linkem running in the router namespace (the argument list,
statistics and binary are fatpipe.linuxpath.linkem's)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from ...linuxpath.cmd import expect_line
from ...linuxpath.linkem import QueueConfig, linkem_args, origin_text
from .cleanup import REGISTRY, stop_process
from .netns import Namespace
from .ownership import OwnershipRecord


class Linkem:
    """A running linkem process inside `ns`."""

    def __init__(self, ns: Namespace, binary: Path, queues: list[QueueConfig], seed: int, stats_path: Path,
                 record: OwnershipRecord, dynamics: str | None = None):
        self.stats_path = stats_path
        self.record = record
        # A moving path: its dynamics, and the file the run's origin goes to.
        self.origin_path: Path | None = None
        dynamics_path = None
        if dynamics is not None:
            dynamics_path = stats_path.with_name("linkem-dynamics.json")
            dynamics_path.write_text(dynamics)
            self.origin_path = stats_path.with_name("linkem-origin")
        # `ip netns exec` execs linkem in place, so linkem's parent is this
        # process: --parent-pid lets it die with us (PR_SET_PDEATHSIG).
        self.proc = ns.popen(linkem_args(binary, queues, seed, stats_path, parent_pid=os.getpid(),
                                         dynamics_path=dynamics_path, origin_path=self.origin_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        record.claim_linkem(self.proc.pid)
        REGISTRY.add(f"linkem {self.proc.pid}", lambda: stop_process(self.proc))
        expect_line(self.proc, "ready", "fatpipe-linkem", stop=stop_process)

    def set_origin(self, t0_wall_s: float) -> None:
        """Tells a moving path's linkem the run's time zero (the planned start,
        wall clock), which its schedule counts from: written to the origin
        file as CLOCK_REALTIME ns (linkem.origin_text), then SIGUSR2."""
        if self.origin_path is None or self.proc.poll() is not None:
            return
        tmp = self.origin_path.with_name(self.origin_path.name + ".tmp")
        tmp.write_text(origin_text(t0_wall_s))
        tmp.replace(self.origin_path)
        self.proc.send_signal(signal.SIGUSR2)

    def reset_lateness(self) -> None:
        """SIGUSR1: linkem forgets lateness so far (called when warm-up ends)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)

    def read_stats(self) -> dict:
        return json.loads(self.stats_path.read_text())

    def stop(self) -> dict:
        """SIGTERM; linkem releases held packets and writes final stats."""
        REGISTRY.discard(f"linkem {self.proc.pid}")
        stop_process(self.proc, timeout_s=5.0)
        self.record.release_linkem(self.proc.pid)
        for _ in range(50):
            try:
                stats = self.read_stats()
                if stats.get("final"):
                    return stats
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        err = self.proc.stderr.read() if self.proc.stderr else ""
        raise RuntimeError(f"fatpipe-linkem wrote no final statistics (exit {self.proc.returncode}): {err.strip()}")
