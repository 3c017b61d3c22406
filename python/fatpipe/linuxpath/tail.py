"""The engine's samples as they are written, for live results (live.py):
a thread reads each samples file's new whole lines every interval and
sends the rows (parsed as the run's own series is: flows.parse_samples)
to the run's stream. The engine flushes its file after each interval."""

from __future__ import annotations

import threading
from pathlib import Path

from .flows import FlowSpec, parse_samples


class SampleTail(threading.Thread):
    """Follows the samples files of `files` until stopped; `stream` is the
    run's live stream (live.RunStream)."""

    def __init__(self, stream, files: list[tuple[FlowSpec, Path]], period_s: float):
        super().__init__(name="fatpipe-sample-tail", daemon=True)
        self.stream, self.files, self.period_s = stream, files, period_s
        self.offsets: dict[Path, int] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.period_s):
            self.poll()

    def poll(self) -> None:
        """Send what each file gained since the last poll (whole lines)."""
        for f, path in self.files:
            offset = self.offsets.get(path, 0)
            try:
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    data = fh.read()
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n") + 1
            if end:
                self.offsets[path] = offset + end
                self.stream.samples(parse_samples(data[:end].decode(), f.group, f.cc))

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=5.0)
