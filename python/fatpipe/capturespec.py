"""Packet captures (docs/captures.md): a study's ``[capture]`` section, or
``fatpipe run --capture`` for its defaults, writes pcap files per run
into the run's work directory: ``capture-sender-<host>.pcap`` (at each
sender host's interface) and ``capture-receiver.pcap``.

* ``flows``: the flow groups to capture (default: every TCP flow);
* ``side``: ``"sender"`` (default), ``"receiver"`` or ``"both"``;
* ``snaplen``: bytes kept of each packet (default 96: the IP and TCP
  headers with options; the payload is not kept);
* ``duration``: capture the first this much of each run (default: all);
* ``max_size``: the most one file may hold (default 200 MB). A study
  whose capture would pass it at the path's rate is refused before it
  runs (:func:`problems`); the simulator also stops a file there.

The simulator writes the packets it models; the kernel and hosts backends
run tcpdump at the interfaces (tcpdump's ``-s``, ``-c``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .backends import base as run_plan
from .pathspec import _spec_type
from .units import format_time
from .wire import ETH_HEADER_BYTES

if TYPE_CHECKING:  # spec.py imports this module
    from .spec import Spec

SIDES = ("sender", "receiver", "both")
DEFAULT_SNAPLEN_BYTES = 96
DEFAULT_MAX_BYTES = 200_000_000
# pcap's per-record header (pcap-savefile(5)).
PCAP_RECORD_HEADER_BYTES = 16
# The IP and TCP headers with the most options fatpipe's packets carry
# (timestamps and three SACK blocks): what a record keeps at most here.
MAX_HEADER_BYTES = 80

_duration = _spec_type(lambda spec: spec.DurationS)
_size = _spec_type(lambda spec: spec.SizeBytes)


class CaptureSection(BaseModel):
    """A study's ``[capture]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flows: list[Annotated[int, Field(ge=0, le=63)]] | None = None
    side: Literal["sender", "receiver", "both"] = "sender"
    snaplen: Annotated[int, Field(ge=40, le=65535)] = DEFAULT_SNAPLEN_BYTES
    duration: Annotated[float, BeforeValidator(_duration)] | None = None
    max_size: Annotated[int, BeforeValidator(_size)] = DEFAULT_MAX_BYTES


def estimated_bytes(segments: float, snaplen: int) -> float:
    """A capture file of `segments` data packets and their ACKs (one per
    two segments: Linux's delayed ACK), the one estimate of a capture's
    size."""
    return (segments + segments // 2) * (PCAP_RECORD_HEADER_BYTES + min(snaplen, MAX_HEADER_BYTES))


def problems(spec: Spec) -> list[tuple[str, str]]:
    """Flow indices that exist, and a capture that fits its max_size at
    the path's rate (every packet of the bottleneck, in the smallest
    frames the flows send, for the captured time)."""
    c = spec.capture
    if c is None:
        return []
    out = []
    for i, g in enumerate(c.flows or []):
        if g >= len(spec.flows) or spec.flows[g].kind == "cross":
            out.append((f"capture.flows.{i}", f"flow {g} is not a TCP flow of this study "
                                              f"(flows 0..{len(spec.flows) - 1}, cross traffic has no TCP)"))
    rate = spec.path.rate
    if rate is not None:
        seconds = min(spec.study.duration, c.duration or spec.study.duration)
        tcp = [f for f in spec.flows if f.kind != "cross"]
        frame = min((spec.mss_payload_bytes(f) for f in tcp), default=spec.path.mtu) + 52 + ETH_HEADER_BYTES
        size = estimated_bytes(rate * seconds / (8 * frame), c.snaplen)
        if size > c.max_size:
            out.append(("capture.max_size", (
                f"{c.max_size / 1e6:g} MB per file; {format_time(seconds)} at {rate / 1e6:g} Mbit/s would "
                f"capture about {size / 1e6:.3g} MB: raise max_size, shorten capture.duration or capture "
                "fewer flows")))
    return out


def plan(section: CaptureSection | None) -> run_plan.CapturePlan | None:
    """The run plan's CapturePlan (None: no capture)."""
    if section is None:
        return None
    return run_plan.CapturePlan(groups=tuple(section.flows or ()), side=section.side, snaplen_bytes=section.snaplen,
                                duration_s=section.duration, max_bytes=section.max_size)


def file_name(side: str, host: str | None = None) -> str:
    """A capture file's name in the run's work directory."""
    return f"capture-{side}-{host}.pcap" if side == "sender" else "capture-receiver.pcap"
