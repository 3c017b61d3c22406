"""ECN on the kernel path: ``net.ipv4.tcp_ecn`` per namespace and which
bottleneck disciplines the path can apply.

Negotiation is Linux's own: the sender's SYN asks for ECN when its
namespace's ``tcp_ecn`` is 1 (or its CCA needs ECN), the receiver's
namespace accepts unless its ``tcp_ecn`` is 0 (tcp_ecn_send_syn,
tcp_ecn_create_request). ``tcp_ecn`` is a per-namespace sysctl with no
per-socket equivalent short of a sock_ops BPF program, so a flow's ``ecn``
sets its sender's namespace and flows of one sender must agree (as
``cwnd_clamp`` does, clamp.py). ``tcp_ecn_fallback`` keeps Linux's default.

An RPC connection is opened by the receiver's client (flows.py), so its
SYN carries the receiver's ``tcp_ecn``; the simulator negotiates every
connection from the sender's value.

Marking (``path.aqm = {kind = "ce_threshold", k = …}``) happens in
fatpipe-linkem's bottleneck, the simulator's rule on the same FIFO
(crates/linkem/src/link.rs): so a marking path always uses linkem, even
where netem exists. fq_codel is not in this kernel (and linkem does not
emulate it): refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

LINUX_TCP_ECN = 2  # accept only: Linux's default


class EcnFlow(Protocol):
    group: int
    sender: str
    ecn: int | None


def sender_tcp_ecn(flows: Iterable[EcnFlow], host_ecn: Mapping[str, int]) -> dict[str, int]:
    """``net.ipv4.tcp_ecn`` of each sender namespace (pure): a flow's
    ``ecn`` overrides its host's. Raises ValueError naming the keys when
    flows of one sender need different values."""
    flows = list(flows)
    wanted: dict[str, dict[int, list[str]]] = {}
    for name in host_ecn:
        wanted.setdefault(name, {})
    for f in flows:
        host = host_ecn.get(f.sender, LINUX_TCP_ECN)
        key = f"flows.{f.group}.ecn = {f.ecn}" if f.ecn is not None else \
            f"flows.{f.group} (hosts.{f.sender}.ecn = {host})"
        wanted.setdefault(f.sender, {}).setdefault(host if f.ecn is None else f.ecn, []).append(key)
    out = {}
    for sender, values in wanted.items():
        if len(values) > 1:
            keys = ", ".join(k for ks in values.values() for k in ks)
            raise ValueError(f"sender {sender!r}: {keys}: the kernel backend sets net.ipv4.tcp_ecn per sender "
                             "namespace, so all flows of one sender share one value; give each value its own "
                             "sender (the sim backend negotiates per flow)")
        out[sender] = next(iter(values)) if values else host_ecn.get(sender, LINUX_TCP_ECN)
    return out


def unsupported_aqm(aqm: Mapping[str, Any]) -> str | None:
    """Why the kernel path cannot apply `aqm` (RunPlan.aqm), or None."""
    kind = aqm.get("kind", "droptail")
    if kind in ("droptail", "ce_threshold"):
        return None
    if kind == "fq_codel":
        return ("path.aqm = 'fq_codel': this kernel has no fq_codel qdisc and fatpipe-linkem does not emulate it; "
                "the kernel backend takes 'droptail' or 'ce_threshold' (the sim backend runs fq_codel)")
    return f"path.aqm kind {kind!r}: the kernel backend takes 'droptail' or 'ce_threshold'"


def path_refusal(aqm: Mapping[str, Any], emulator: str, bottleneck: str) -> str | None:
    """Why a path with discipline `aqm`, delay line `emulator` and
    `bottleneck` as asked for (PathConfig; "auto" lets the path choose)
    cannot be built, or None (pure)."""
    refused = unsupported_aqm(aqm)
    if refused or not marks(aqm):
        return refused
    if bottleneck == "tbf" or emulator == "netem":
        return (f"path.aqm = 'ce_threshold' needs fatpipe-linkem as delay line and bottleneck (emulator="
                f"{emulator!r}, bottleneck={bottleneck!r} were asked for): tbf does not mark CE, and this kernel "
                "has neither red nor fq_codel")
    return None


def marks(aqm: Mapping[str, Any]) -> bool:
    """Whether the bottleneck marks CE (a CE threshold)."""
    return aqm.get("kind", "droptail") == "ce_threshold"


def linkem_threshold(aqm: Mapping[str, Any]) -> str | None:
    """The ``--queue`` key of a CE threshold (``ce_k_packets=20``), in the
    plan's units (aqm.Aqm.plan), or None for drop-tail (pure)."""
    if not marks(aqm):
        return None
    for key in ("k_packets", "k_bytes", "k_s"):
        if key in aqm:
            value = aqm[key]
            return f"ce_{key}={value:.9g}" if key == "k_s" else f"ce_{key}={int(value)}"
    raise ValueError(f"path.aqm {dict(aqm)!r}: a ce_threshold needs one of k_packets, k_bytes, k_s")


__all__ = ["LINUX_TCP_ECN", "linkem_threshold", "marks", "path_refusal", "sender_tcp_ecn", "unsupported_aqm"]
