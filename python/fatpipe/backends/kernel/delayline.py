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
from ...linuxpath.linkem import QueueConfig, linkem_args
from .cleanup import REGISTRY, stop_process
from .netns import Namespace
from .ownership import OwnershipRecord


class Linkem:
    """A running linkem process inside `ns`."""

    def __init__(self, ns: Namespace, binary: Path, queues: list[QueueConfig], seed: int, stats_path: Path,
                 record: OwnershipRecord):
        self.stats_path = stats_path
        self.record = record
        # `ip netns exec` execs linkem in place, so linkem's parent is this
        # process: --parent-pid lets it die with us (PR_SET_PDEATHSIG).
        self.proc = ns.popen(linkem_args(binary, queues, seed, stats_path, parent_pid=os.getpid()),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        record.claim_linkem(self.proc.pid)
        REGISTRY.add(f"linkem {self.proc.pid}", lambda: stop_process(self.proc))
        expect_line(self.proc, "ready", "fatpipe-linkem", stop=stop_process)

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
