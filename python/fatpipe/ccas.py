"""The simulator's CCA registry and the traits it gives each algorithm.

One list of congestion control algorithms exists: fatpipe_sim's
``cc::REGISTRY`` (crates/sim/src/cc/registry.rs), exported by the binding
as ``fatpipe._native.cca_registry()``. This module loads it once, on first
use, and answers what the advisor and the report ask: which algorithms are
rate-based, bound by random loss, in mainline Linux, Linux's default,
in need of ECN, and where each stands in the registry's order (the
report's colours follow it). Adding an algorithm to the registry needs no
edit here.

Without the extension (a kernel-backend install) the registry is empty:
importing this module still works, every name is unknown (``traits()``
returns None, the sets are empty, the report falls back to its cycling
colours), and what needs the simulator (the advisor, the sim backend)
reports the missing extension itself.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class CcaTraits:
    """One registry entry (the keys of ``cca_registry()``'s dicts)."""

    name: str
    rate_based: bool  # models the path and paces itself (BBR): owns cwnd and pacing
    loss_bound: bool  # random loss bounds its rate (not rate-based ones, not Westwood)
    linux_mainline: bool  # net/ipv4/tcp_<name>.c in mainline Linux (not bbr3)
    linux_default: bool  # net.ipv4.tcp_congestion_control's default (cubic)
    needs_ecn: bool  # TCP_CONG_NEEDS_ECN: needs ECN marking at the bottleneck (dctcp)


def _load() -> tuple[CcaTraits, ...]:
    try:
        from . import _native
    except ImportError:  # the extension is not built: no simulator, no registry
        return ()
    keys = {f.name for f in fields(CcaTraits)}
    out = []
    for entry in _native.cca_registry():
        if set(entry) != keys:
            raise RuntimeError(f"fatpipe._native.cca_registry() gives {sorted(entry)} for {entry.get('name')!r}; "
                               f"fatpipe.ccas expects {sorted(keys)}: rebuild the extension or update CcaTraits")
        out.append(CcaTraits(**entry))
    return tuple(out)


@functools.cache
def registry() -> tuple[CcaTraits, ...]:
    """Every simulator CCA in registry order; empty without the extension."""
    return _load()


def names() -> list[str]:
    """The registry's names in order."""
    return [c.name for c in registry()]


def traits(name: str) -> CcaTraits | None:
    """The traits of `name`, or None for a name the registry does not know
    (a kernel-only CCA, an imported study's, or no extension)."""
    return next((c for c in registry() if c.name == name), None)


def index(name: str) -> int | None:
    """Position of `name` in the registry, or None if unknown."""
    return next((i for i, c in enumerate(registry()) if c.name == name), None)


def rate_based() -> frozenset[str]:
    """CCAs whose rate does not follow the loss rate: they model the path."""
    return frozenset(c.name for c in registry() if c.rate_based)


def not_loss_bound() -> frozenset[str]:
    """CCAs random loss does not bound (rate-based ones and Westwood)."""
    return frozenset(c.name for c in registry() if not c.loss_bound)


def linux_default() -> str | None:
    """Linux's default CCA (net.ipv4.tcp_congestion_control), if known."""
    return next((c.name for c in registry() if c.linux_default), None)


def deployable_defaults() -> list[str]:
    """What a host can switch to without a patched kernel or an ECN
    bottleneck: every mainline CCA that does not need ECN, Linux's default
    first, then registry order (the advisor's default ``ccas``)."""
    picked = [c.name for c in registry() if c.linux_mainline and not c.needs_ecn]
    return sorted(picked, key=lambda n: n != linux_default())
