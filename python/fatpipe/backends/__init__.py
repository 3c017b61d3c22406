"""Backends: each carries out a RunPlan and returns a RunOutcome (base.py).

The registry is the one place that names backends. Generic layers (spec,
study runner, CLI) ask it for names and instances and never import a backend
module themselves; a backend module is imported only when first asked for,
so `import fatpipe` stays light and a machine without the simulator
extension (or without root) can still use the others.

Every backend subclasses :class:`~fatpipe.backends.base.Backend`, which
declares the capabilities the generic layers read (``takes_testbed``,
``measures_path``, ``cluster_resource``, ``estimated_wall_s``,
``max_parallel_runs``) with their defaults. Tests and plugins add backends
with :func:`register_backend`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .base import Backend, BackendUnavailable

BackendFactory = Callable[[], Backend]

# The backend a study runs on when `study.backends` is not given: the
# simulator needs no root and works on any machine.
DEFAULT_BACKEND = "sim"

_factories: dict[str, BackendFactory] = {}
_instances: dict[str, Backend] = {}
_lock = threading.Lock()


def register_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make `factory()` the backend called `name`. Refuses to replace an
    existing backend unless `replace` (then its cached instance is dropped)."""
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"backend name {name!r}: use letters, digits, '-' and '_'")
    with _lock:
        if name in _factories and not replace:
            raise ValueError(f"backend {name!r} is already registered")
        _factories[name] = factory
        _instances.pop(name, None)


def unregister_backend(name: str) -> None:
    """Forget backend `name` (tests clean up with this)."""
    with _lock:
        _factories.pop(name, None)
        _instances.pop(name, None)


def backend_names() -> tuple[str, ...]:
    """Names of every registered backend, sorted."""
    with _lock:
        return tuple(sorted(_factories))


def get_backend(name: str) -> Backend:
    """The backend called `name` (one instance per process)."""
    with _lock:
        if name in _instances:
            return _instances[name]
        factory = _factories.get(name)
    if factory is None:
        raise BackendUnavailable(f"unknown backend {name!r}; choose one of {', '.join(backend_names())}")
    instance = factory()
    if not isinstance(instance, Backend):
        raise TypeError(f"backend {name!r}: its factory made a {type(instance).__name__}, which does not subclass "
                        "fatpipe.backends.base.Backend")
    with _lock:
        return _instances.setdefault(name, instance)


def _sim() -> Backend:
    from .sim import SimBackend
    return SimBackend()


def _kernel() -> Backend:
    from .kernel import KernelBackend
    return KernelBackend()


def _hosts() -> Backend:
    from .hosts import HostsBackend
    return HostsBackend()


register_backend("sim", _sim)
register_backend("kernel", _kernel)
register_backend("hosts", _hosts)
