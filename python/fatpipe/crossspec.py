"""Cross traffic: a ``[[flows]]`` entry of ``kind = "cross"``
(docs/path-dynamics.md, "Cross traffic"). Unresponsive packets through the
same bottleneck as the TCP flows, from ``streams`` independent sources:

* ``rate``: each source's sending rate while on, as the bottleneck counts
  it (frames on the link), e.g. ``"20Mbit"``;
* ``pattern``: ``"constant"`` (the default) or ``"on_off"``, with ``on`` and
  ``off`` the mean on and off periods, each drawn from a Pareto
  distribution of shape ``shape`` (default 1.5);
* ``packet_size``: the IP packet's bytes (default: the path MTU);
* ``start`` and ``stop``: when the sources begin and end.

The TCP keys (cc, mss, sender, the RPC keys, ecn, cwnd_clamp, pacing_rate) do not apply.
:func:`flow_problems` checks one flow's keys (FlowSection's validator);
:func:`problems` what needs the rest of the spec; :func:`plan` gives the
run plan's CrossFlow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .backends import base as run_plan
from .units import format_time

if TYPE_CHECKING:  # spec.py imports this module
    from .spec import FlowSection, Spec

KIND = "cross"
PATTERNS = ("constant", "on_off")
# The keys only a cross flow takes, and those only an on_off one does.
CROSS_KEYS = ("pattern", "on", "off", "shape", "packet_size", "stop")
ON_OFF_KEYS = ("on", "off", "shape")
# The keys of a TCP flow that a cross flow refuses.
TCP_KEYS = ("cc", "mss", "sender", "request", "response", "concurrency", "ecn", "cwnd_clamp", "pacing_rate")
# The Pareto shape unless given: 1 < shape < 2 gives self-similar traffic
# of Hurst parameter (3 - shape)/2 (Willinger et al. 1997), 0.75 here.
DEFAULT_SHAPE = 1.5
MAX_SHAPE = 100.0
# The smallest packet: an IPv4 and a UDP header (crates/sim/src/path_plan.rs).
MIN_PACKET_BYTES = 28
# Most sources in one group (crates/sim/src/scenario.rs MAX_CROSS_STREAMS).
MAX_STREAMS = 1000


def flow_problems(flow: FlowSection) -> list[str]:
    """What is wrong with one flow's cross keys, each naming the key: a
    cross flow's own keys on a TCP flow, TCP keys on a cross flow, a
    missing rate or on/off period."""
    given = flow.model_fields_set
    if flow.kind != KIND:
        extra = [k for k in CROSS_KEYS if k in given]
        return [f"{', '.join(extra)} only apply to kind = \"cross\""] if extra else []
    out = [f"{key} does not apply to kind = \"cross\" (cross traffic has no TCP)" for key in TCP_KEYS if key in given]
    if flow.rate is None:
        out.append("kind = \"cross\" needs rate: each source's sending rate while on, such as '20Mbit'")
    if flow.streams > MAX_STREAMS:
        out.append(f"streams = {flow.streams}: a cross flow has at most {MAX_STREAMS} sources")
    if flow.pattern == "on_off":
        missing = [k for k in ("on", "off") if getattr(flow, k) is None]
        if missing:
            out.append(f"pattern = \"on_off\" needs {' and '.join(missing)}: "
                       "the mean on and off periods, such as '10ms'")
        if flow.shape is not None and not 1 < flow.shape <= MAX_SHAPE:
            out.append(f"shape = {flow.shape:g}: a Pareto shape above 1 (a finite mean) and at most {MAX_SHAPE:g}")
    else:
        extra = [k for k in ON_OFF_KEYS if k in given]
        if extra:
            out.append(f"{', '.join(extra)} only apply to pattern = \"on_off\"")
    if flow.stop is not None and flow.stop <= flow.start:
        out.append(f"stop = {format_time(flow.stop)} is not after start ({format_time(flow.start)})")
    return out


def problems(spec: Spec) -> list[tuple[str, str]]:
    """What cross flows need of the rest of `spec`: a packet that fits the
    path MTU, a FIFO bottleneck (not fq_codel), a TCP flow beside them."""
    out: list[tuple[str, str]] = []
    cross = [(i, f) for i, f in enumerate(spec.flows) if f.kind == KIND]
    if not cross:
        return out
    if len(cross) == len(spec.flows):
        out.append(("flows", "only cross traffic: at least one TCP flow (kind bulk or rpc) is needed beside it"))
    for i, f in cross:
        if f.packet_size is not None and not MIN_PACKET_BYTES <= f.packet_size <= spec.path.mtu:
            out.append((f"flows.{i}.packet_size", (
                f"{f.packet_size} bytes; an IP packet of cross traffic is from {MIN_PACKET_BYTES} bytes "
                f"(IPv4 + UDP headers) to path.mtu = {spec.path.mtu}")))
        if spec.path.aqm.kind == "fq_codel":
            out.append((f"flows.{i}.kind", (
                "cross traffic joins the FIFO bottleneck; it is not modelled through path.aqm = fq_codel "
                "(use droptail or ce_threshold)")))
    return out


def plan(flow: FlowSection) -> run_plan.CrossFlow:
    """The run plan's CrossFlow of a cross flow, in SI units."""
    assert flow.rate is not None, "checked by flow_problems"
    return run_plan.CrossFlow(rate_bps=flow.rate, pattern=flow.pattern or "constant", on_s=flow.on, off_s=flow.off,
                              shape=flow.shape, packet_bytes=flow.packet_size, stop_s=flow.stop)
