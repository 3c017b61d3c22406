"""A conformance script's result, and the two ways a run stops early:
a construct outside the model (Unsupported) and a difference from what
the script expects (Mismatch)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class Outcome:
    """One script's result: pass, fail (the first differing line) or
    unsupported (the construct outside the model)."""

    script: str
    status: str
    line: int | None = None
    reason: str = ""
    expected: str | None = None
    produced: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class Unsupported(Exception):
    def __init__(self, line: int | None, reason: str):
        super().__init__(reason)
        self.line, self.reason = line, reason


class Mismatch(Exception):
    def __init__(self, line: int, reason: str, expected: str | None = None, produced: str | None = None):
        super().__init__(reason)
        self.line, self.reason, self.expected, self.produced = line, reason, expected, produced
