"""Backends: each carries out a RunPlan and returns a RunOutcome (base.py)."""

from __future__ import annotations

from functools import lru_cache

from .base import Backend, BackendUnavailable

NAMES = ("sim", "kernel")


@lru_cache(maxsize=None)
def get_backend(name: str) -> Backend:
    """The backend called `name` (one instance per process)."""
    if name == "sim":
        from .sim import SimBackend
        return SimBackend()
    if name == "kernel":
        from .kernel import KernelBackend
        return KernelBackend()
    raise BackendUnavailable(f"unknown backend {name!r}; choose one of {', '.join(NAMES)}")
