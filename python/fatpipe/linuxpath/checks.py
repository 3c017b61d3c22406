"""One line of a `fatpipe doctor` report on a Linux machine."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True  # the backend cannot run without it
