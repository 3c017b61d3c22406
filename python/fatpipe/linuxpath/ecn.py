"""ECN on a Linux path: ``net.ipv4.tcp_ecn`` per host (a namespace on one
machine) and which bottleneck disciplines the path can apply.

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
where netem exists. fq_codel (``path.aqm = {kind = "fq_codel", …}``) is
Linux's own qdisc in tbf's child slot (qdisc.tbf_bottleneck_args); linkem
does not emulate it, so it needs a kernel that has the qdisc (built with
CONFIG_NET_SCH_FQ_CODEL, as most distributions' kernels are): the probe
decides (qdisc_refusal).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol

from .qdisc import QDISC_CONFIG, bottleneck_qdiscs

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


def negotiates_ecn(kind: str, needs_ecn: bool | None, sender_tcp_ecn: int, receiver_tcp_ecn: int) -> bool | None:
    """Whether Linux settles ECN on a flow group's connections (pure): the
    side that connects asks when its tcp_ecn is 1 or its CCA needs ECN
    (tcp_ecn_send_syn()), the listening side accepts unless its tcp_ecn is
    0, or when its listener's CCA needs ECN (tcp_ecn_create_request()). A
    bulk or transfer sender connects to the receiver; an RPC client (the
    receiver) connects to its server on the sender. Both ends run the
    group's CCA (engine.py, rpc_engine.py). None when whether the CCA needs
    ECN is not known (a CCA the simulator's registry lacks)."""
    if needs_ecn is None:
        return None
    if kind == "rpc":
        sender_tcp_ecn, receiver_tcp_ecn = receiver_tcp_ecn, sender_tcp_ecn
    return (sender_tcp_ecn == 1 or needs_ecn) and (receiver_tcp_ecn != 0 or needs_ecn)


KINDS = ("droptail", "ce_threshold", "fq_codel")  # the disciplines a Linux path applies


def unsupported_aqm(aqm: Mapping[str, Any]) -> str | None:
    """Why no Linux path can apply `aqm` (RunPlan.aqm), or None (pure;
    whether the running kernel has the qdiscs it needs is qdisc_refusal's)."""
    kind = aqm.get("kind", "droptail")
    if kind in KINDS:
        return None
    return f"path.aqm kind {kind!r}: a Linux path takes {', '.join(repr(k) for k in KINDS)}"


def qdisc_refusal(aqm: Mapping[str, Any], available: Collection[str]) -> str | None:
    """Why `aqm` cannot be had with the qdiscs the running kernel has
    (`available`, as the probe found them), or None (pure)."""
    for kind in bottleneck_qdiscs(dict(aqm)):
        if kind not in available:
            return (f"path.aqm = {kind!r}: the running kernel has no {kind} qdisc (`tc qdisc add … {kind}` "
                    f"fails; Linux builds it with {QDISC_CONFIG[kind]}) and fatpipe-linkem does not emulate it; "
                    f"use a kernel that has it, or the sim backend, which runs {kind}")
    return None


def path_refusal(aqm: Mapping[str, Any], emulator: str, bottleneck: str) -> str | None:
    """Why a path with discipline `aqm`, delay line `emulator` and
    `bottleneck` as asked for (PathConfig; "auto" lets the path choose)
    cannot be built, or None (pure)."""
    refused = unsupported_aqm(aqm)
    if refused:
        return refused
    if marks(aqm) and (bottleneck == "tbf" or emulator == "netem"):
        return (f"path.aqm = 'ce_threshold' needs fatpipe-linkem as delay line and bottleneck (emulator="
                f"{emulator!r}, bottleneck={bottleneck!r} were asked for): tbf does not mark CE at a threshold "
                "of the FIFO (red and fq_codel mark by their own rules)")
    if bottleneck_qdiscs(dict(aqm)) and bottleneck == "linkem":
        return (f"path.aqm = {aqm.get('kind')!r} is a qdisc below tbf (bottleneck='linkem' was asked for): "
                "fatpipe-linkem's bottleneck is a FIFO")
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


__all__ = ["KINDS", "LINUX_TCP_ECN", "linkem_threshold", "marks", "path_refusal", "qdisc_refusal", "sender_tcp_ecn",
           "unsupported_aqm"]
