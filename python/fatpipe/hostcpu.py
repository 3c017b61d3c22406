"""The CPU keys of a study's hosts (`[hosts.<name>]` cpu_cores, app_threads,
machine, rx_ring and the cost_* keys; docs/host-model.md, "Keys"): their
limits, their validators, and the checks that need every host resolved
(its profile's keys under hosts.default's under its own, Spec.host_layers).

The CPU cost model of a host is on iff its cpu_cores is set (directly or by
a profile); the other keys of this module only mean something with it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

from .spec_units import unit_field
from .units import format_time, parse_time_s, toml_type

# ---- limits -------------------------------------------------------------------
MAX_CPU_CORES = 1024
MAX_APP_THREADS = 10_000
# A NIC's receive ring, in packets (descriptors). Many 10/100 Gbit/s NIC
# drivers default to rings of 512-1024 descriptors (`ethtool -g <interface>`
# shows a host's current and maximum sizes); 1024 is the ring of a host with
# the cost model on that does not set it.
MIN_RX_RING_PACKETS = 16
MAX_RX_RING_PACKETS = 65_536
DEFAULT_RX_RING_PACKETS = 1024
# CPU time of one unit of work: per packet, GRO unit, ACK, SACK block or
# timer at most 10 ms (a host that slow does nothing else); per byte at most
# 1 µs (1 MB/s of copying, slower than any host that still moves data).
MAX_COST_PER_UNIT_S = 0.01
MAX_COST_PER_BYTE_S = 1e-6
# Hosts naming the same machine share its cores.
MACHINE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,32}")

# The cost keys of [hosts.<name>] and the fields of the run plan's
# HostCpu (backends/base.py) they become.
COST_FIELDS = {
    "cost_send_packet": "send_packet_s",
    "cost_send_byte": "send_byte_s",
    "cost_receive_packet": "receive_packet_s",
    "cost_receive_unit": "receive_unit_s",
    "cost_receive_byte": "receive_byte_s",
    "cost_ack": "ack_s",
    "cost_sack_block": "sack_block_s",
    "cost_timer": "timer_s",
}
# Keys that mean something only with the cost model on (cpu_cores set).
NEEDS_CORES = ("app_threads", "machine", "rx_ring", *COST_FIELDS)


def whole_number(key: str, lo: int, hi: int, what: str) -> BeforeValidator:
    """A whole number of `what` from `lo` to `hi`, or a ValueError naming
    `key` and the range."""
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            scalar = isinstance(value, (int, float, str)) and not isinstance(value, bool)
            shown = repr(value) if scalar else toml_type(value)
            raise ValueError(f"got {shown}; {key} is a whole number of {what} from {lo} to {hi}")
        return value
    return BeforeValidator(check)


def _machine(value: Any) -> Any:
    if not isinstance(value, str) or not MACHINE_PATTERN.fullmatch(value):
        shown = repr(value[:40]) if isinstance(value, str) else toml_type(value)
        raise ValueError(f"got {shown}; machine is a name of 1 to 32 letters, digits, '_' or '-' "
                         "(hosts naming the same machine share its cores)")
    return value


# Receive interrupt moderation (ethtool -C rx-usecs / rx-frames): the delay
# after a batch's first packet, above 0 and at most 10 ms (NIC drivers take
# a few ms at most); the packet count that fires it early, 1 to 65536.
MAX_INTERRUPT_COALESCING_S = 0.01
MAX_INTERRUPT_COALESCING_FRAMES = 65_536

CpuCores = Annotated[int, whole_number("cpu_cores", 1, MAX_CPU_CORES, "cores")]
InterruptFrames = Annotated[int, whole_number("interrupt_coalescing_frames", 1, MAX_INTERRUPT_COALESCING_FRAMES,
                                              "packets")]
AppThreads = Annotated[int, whole_number("app_threads", 1, MAX_APP_THREADS, "threads")]
RxRingPackets = Annotated[int, whole_number("rx_ring", MIN_RX_RING_PACKETS, MAX_RX_RING_PACKETS, "packets")]
MachineName = Annotated[str, BeforeValidator(_machine)]


def _cost(hi_s: float, per: str) -> Any:
    """CPU time per `per` in seconds, 0 to `hi_s`, written like any time
    ("1.2us", "0.05ns"). A cost is summed over many units, so it is not
    held to the simulator's 1 ns clock."""
    return Annotated[float, unit_field(parse_time_s, 0.0, hi_s, " s",
                                       allowed=f"a cost per {per} is from 0 to {format_time(hi_s)}")]


CostPerUnitS = _cost(MAX_COST_PER_UNIT_S, "packet, unit, ACK, SACK block or timer")
CostPerByteS = _cost(MAX_COST_PER_BYTE_S, "byte")


# ---- checks across hosts --------------------------------------------------------

# A host's layers of keys, lowest precedence first: (where they are
# written, {key: value}), as Spec.host_layers gives them.
Layers = list[tuple[str, dict[str, Any]]]


def _resolved(layers: Layers) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for _, keys in layers:
        merged.update(keys)
    return merged


def _written_at(layers: Layers, key: str) -> str:
    """Where the value of `key` that the host ends up with is written."""
    return next(where for where, keys in reversed(layers) if key in keys)


def problems(hosts: dict[str, Layers]) -> list[tuple[str, str]]:
    """What the CPU keys of the concrete hosts (each sender and the
    receiver, with their layers) get wrong together: a key that needs the
    cost model on a host without cpu_cores, hosts of one machine that
    disagree on its cores, and an interrupt frame count without its delay."""
    lacking: dict[str, list[str]] = {}  # "hosts.x.key" -> hosts without cpu_cores
    machines: dict[str, tuple[str, int]] = {}  # machine -> (first host, its cores)
    out = []
    for name, layers in hosts.items():
        host = _resolved(layers)
        if host.get("interrupt_coalescing_frames") is not None and host.get("interrupt_coalescing") is None:
            where = _written_at(layers, "interrupt_coalescing_frames")
            out.append((f"{where}.interrupt_coalescing_frames", (
                f"host {name} has a frame count but no interrupt_coalescing: the count fires the interrupt "
                "early, so it needs the delay it cuts short (e.g. interrupt_coalescing = \"50us\")")))
        cores = host.get("cpu_cores")
        if cores is None:
            for key in NEEDS_CORES:
                if host.get(key) is not None:
                    lacking.setdefault(f"{_written_at(layers, key)}.{key}", []).append(name)
            continue
        machine = host.get("machine")
        if machine is None:
            continue
        first, first_cores = machines.setdefault(machine, (name, cores))
        if first_cores != cores:
            out.append((f"hosts.{name}.cpu_cores", (
                f"hosts {first} and {name} share machine {machine!r} but have cpu_cores {first_cores} and "
                f"{cores}; hosts of one machine share its cores: give them the same cpu_cores")))
    for where, names in lacking.items():
        key = where.rsplit(".", 1)[1]
        needed = " and ".join(f"hosts.{n}.cpu_cores" for n in names)
        out.append((where, (
            f"{key} applies to the CPU cost model, which is on only for a host with cpu_cores: it needs "
            f"{needed} (or hosts.default.cpu_cores) or a profile that gives it (docs/host-model.md)")))
    return out
