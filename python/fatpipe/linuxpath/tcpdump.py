"""tcpdump as the Linux backends run it for a capture (capturespec.py,
docs/captures.md), the one definition of its arguments: headers only
(`-s`), at most the file budget (`-c`: max_size over a record's most
bytes), the flow groups by their ports, its own user kept (`-Z root`, so
it writes the run's directory), packet-buffered output. The kernel
backend runs it in a namespace, the hosts backend through an agent."""

from __future__ import annotations

import re

from ..capturespec import PCAP_RECORD_HEADER_BYTES
from .flows import group_port

# How long tcpdump may take to say "listening on".
READY_TIMEOUT_S = 10.0
# tcpdump's buffer (-B, KiB): a burst at the test rates fits without drops.
BUFFER_KIB = 16384


def port_filter(groups: tuple[int, ...]) -> str:
    """tcpdump's filter for flow groups `groups` (each has its own port:
    flows.group_port); every TCP packet when none are named."""
    if not groups:
        return "tcp"
    return "tcp and (" + " or ".join(f"port {group_port(g)}" for g in groups) + ")"


def packet_limit(capture) -> int:
    """The packets a file of the plan's CapturePlan may hold (tcpdump -c):
    its max_bytes over a record's most bytes, less the file header's room."""
    return max(1, capture.max_bytes // (PCAP_RECORD_HEADER_BYTES + capture.snaplen_bytes) - 1)


def tcpdump_args(iface: str, path: str, capture) -> list[str]:
    """tcpdump's arguments after its name, for the plan's CapturePlan,
    writing `path` from interface `iface`."""
    count = packet_limit(capture)
    return ["-i", iface, "-w", path, "-n", "-Z", "root", "-s", str(capture.snaplen_bytes), "-c", str(count),
            "-B", str(BUFFER_KIB), "-U", port_filter(capture.groups)]


def capture_facts(stderr_text: str, capture) -> dict:
    """What tcpdump said when it closed: packets captured and dropped by
    the kernel, and whether the file reached its packet limit."""
    n = {k: int(v) for v, k in re.findall(r"(\d+) packets? (captured|dropped by kernel)", stderr_text)}
    return {"captured": n.get("captured"), "dropped": n.get("dropped by kernel"),
            "truncated": n.get("captured", 0) >= packet_limit(capture)}
