"""This machine's /proc/stat read at the two ends of a run's measured
interval (the end of the warm-up and the end of the run), on timer
threads, for linuxpath/procstat.py. The namespaces of a kernel run share
this machine's cores, so one reading serves every end host and the path."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ...linuxpath.procstat import MISSING_READING

PROC_STAT = Path("/proc/stat")
# How long to wait past the run's end for the last reading (its timer fires
# at the end; the traffic is collected after the senders exit, later).
LAST_READING_WAIT_S = 5.0


class CpuWindow:
    """Reads /proc/stat at two wall-clock instants; `readings()` waits for
    the second."""

    def __init__(self, proc_stat: Path = PROC_STAT):
        self.proc_stat = proc_stat
        self._texts: dict[str, str] = {}
        self._errors: list[str] = []
        self._timers: list[threading.Timer] = []

    def _read(self, which: str) -> None:
        try:
            self._texts[which] = self.proc_stat.read_text()
        except OSError as e:
            self._errors.append(f"reading {self.proc_stat} at the {which}: {e}")

    def schedule(self, start_wall_s: float, end_wall_s: float) -> None:
        """Read at `start_wall_s` and at `end_wall_s` (time.time() instants)."""
        if end_wall_s <= start_wall_s:
            self._errors.append("no measured interval: the warm-up lasts the whole run")
            return
        for which, at in (("start", start_wall_s), ("end", end_wall_s)):
            t = threading.Timer(max(0.0, at - time.time()), self._read, args=(which,))
            t.daemon = True
            t.start()
            self._timers.append(t)

    def cancel(self) -> None:
        for t in self._timers:
            t.cancel()

    def readings(self, timeout_s: float = LAST_READING_WAIT_S) -> tuple[str, str] | str:
        """(start text, end text), or why there are none."""
        deadline = time.monotonic() + timeout_s
        for t in self._timers:
            t.join(max(0.0, deadline - time.monotonic()))
        if self._errors:
            return "; ".join(self._errors)
        if set(self._texts) != {"start", "end"}:
            return MISSING_READING
        return self._texts["start"], self._texts["end"]
