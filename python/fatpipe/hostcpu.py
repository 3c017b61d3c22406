"""The CPU keys of a study's hosts (`[hosts.<name>]` cpu_cores, app_threads,
machine, rx_ring and the cost_* keys; docs/host-model.md, "Keys"): their
limits, their validators, and the checks that need every host resolved
(its profile's keys under hosts.default's under its own, Spec.host_layers).

The CPU cost model of a host is on iff its cpu_cores is set (directly or by
a profile); the other keys of this module only mean something with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

from .spec_units import unit_field
from .units import format_time, parse_time_s, toml_type
from .wire import goodput_ceiling_bps

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
    "cost_rtx_walk": "rtx_walk_s",
}
# Keys that mean something only with the cost model on (cpu_cores set).
NEEDS_CORES = ("app_threads", "machine", "rx_ring", "rtx_queue", *COST_FIELDS)


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
# A list retransmission queue's walk, per segment: at most 1 µs (ten DRAM
# accesses), like a byte's.
CostPerWalkedSegmentS = _cost(MAX_COST_PER_BYTE_S, "segment walked")


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


# ---- what one core drives (docs/host-model.md, "What one core drives") ------------

# tcp_tso_autosize() sizes a TSO/GSO packet to ~1 ms of data at the pacing
# rate, at most sk_gso_max_size (GSO_LEGACY_MAX_SIZE, 64 KiB): above
# ~0.5 Gbit/s a stream hands the device 64 KiB packets.
GSO_MAX_SIZE_BYTES = 65_536
# GRO merges a flow's back-to-back segments into one super-packet below
# GRO_LEGACY_MAX_SIZE (skb_gro_receive: p->len + len >= gro_max_size ->
# -E2BIG), at most one NAPI poll's budget (NAPI_POLL_WEIGHT frames).
GRO_MAX_SIZE_BYTES = 65_536
NAPI_POLL_WEIGHT = 64
# Without GRO the receiver ACKs every second full-sized segment
# (__tcp_ack_snd_check: more than one rcv_mss received; RFC 9293
# 3.8.6.3), with GRO once per super-packet (more than one full frame).
SEGMENTS_PER_ACK = 2
# SACK blocks one ACK carries at most beside the timestamp option
# (tcp_established_options: (40 - 12 - 4) // 8 option bytes).
MAX_SACK_BLOCKS = 3


def tso_packet_bytes(mss_bytes: int, tso: bool = True) -> int:
    """Payload of one packet a bulk stream hands the device: as many
    segments as fit in a 64 KiB TSO/GSO packet, or one segment without
    TSO/GSO."""
    return (GSO_MAX_SIZE_BYTES // mss_bytes) * mss_bytes if tso else mss_bytes


def gro_unit_segments(mss_bytes: int, mtu_bytes: int) -> int:
    """Segments one GRO super-packet holds at most: the first packet whole
    (its IP length, the MTU) and further payloads while the total stays
    below 64 KiB, and no more than NAPI_POLL_WEIGHT (45 at MTU 1500, 7 at
    9000)."""
    return min(NAPI_POLL_WEIGHT, 1 + (GRO_MAX_SIZE_BYTES - 1 - mtu_bytes) // mss_bytes)


def sack_blocks_per_ack(loss: float, window_segments: float) -> float:
    """Typical SACK blocks per ACK of a bulk stream at random loss `loss`
    with `window_segments` in flight: the holes a round trip opens
    (loss × window), each one block on every ACK until it is repaired, at
    most MAX_SACK_BLOCKS."""
    return min(float(MAX_SACK_BLOCKS), max(0.0, loss) * max(0.0, window_segments))


def _cost(host: Mapping[str, Any], key: str) -> float:
    return float(host.get(key) or 0.0)


@dataclass(frozen=True)
class CoreDrive:
    """Payload bit/s one core of a host drives for one bulk stream: as its
    sender and as its receiver; None where the host has no cost model
    (unlimited)."""

    send_bps: float | None
    receive_bps: float | None

    @property
    def bps(self) -> float | None:
        """The binding one: the smaller of the two (None: unlimited)."""
        rates = [r for r in (self.send_bps, self.receive_bps) if r is not None]
        return min(rates) if rates else None


def _per_byte_rate(seconds_per_byte: float) -> float:
    return math.inf if seconds_per_byte <= 0 else 8.0 / seconds_per_byte


def core_drive(host: Mapping[str, Any], mss_bytes: int, mtu_bytes: int, *, gro: bool | None = None,
               tso: bool = True, sack_blocks: float = 0.0) -> CoreDrive:
    """What one core of `host` drives for one bulk stream of `mss_bytes`
    segments at `mtu_bytes`, from its resolved [hosts] keys (a profile's
    keys under the study's: `hostprofiles.profile_keys()` or
    `Spec.host(name)` as a dict; costs in seconds). A stream's work at a
    host runs on the core of its application thread, so this is also the
    most one stream gets there. CPU time per payload byte:

    * sending: cost_send_byte + cost_send_packet / P + (cost_ack +
      sack_blocks × cost_sack_block) / A, with P the payload of one TSO
      packet (tso_packet_bytes: 64 KiB of segments, or one MSS without
      TSO) and A the payload one ACK covers (two segments, or one GRO
      super-packet when the receiver has GRO: gro_unit_segments);
    * receiving: cost_receive_byte + cost_receive_packet / MSS +
      cost_receive_unit / U, with U one GRO super-packet's payload, or one
      segment without GRO;

    and the rate is 8 bits over that time. `gro` is the receiver's (left
    out: the host's own `gro` key); `sack_blocks` the SACK blocks per ACK
    (sack_blocks_per_ack; 0 on a lossless path). Timers (cost_timer) are
    left out: a bulk stream fires a few per round trip. Both rates are
    None when the host has no cost model (no cpu_cores): an ideal host."""
    if host.get("cpu_cores") is None:
        return CoreDrive(None, None)
    gro = bool(host.get("gro")) if gro is None else gro
    unit_bytes = gro_unit_segments(mss_bytes, mtu_bytes) * mss_bytes if gro else mss_bytes
    ack_bytes = unit_bytes if gro else SEGMENTS_PER_ACK * mss_bytes
    ack_s = _cost(host, "cost_ack") + sack_blocks * _cost(host, "cost_sack_block")
    send_s = (_cost(host, "cost_send_byte") + _cost(host, "cost_send_packet") / tso_packet_bytes(mss_bytes, tso)
              + ack_s / ack_bytes)
    receive_s = (_cost(host, "cost_receive_byte") + _cost(host, "cost_receive_packet") / mss_bytes
                 + _cost(host, "cost_receive_unit") / unit_bytes)
    return CoreDrive(_per_byte_rate(send_s), _per_byte_rate(receive_s))


def cores_for(host: Mapping[str, Any], streams: int | None = None) -> int | None:
    """The cores `streams` bulk streams of `host` run on: one per
    application thread (one thread per stream unless app_threads is set),
    at most cpu_cores (None: no cost model; `streams` None: as many as the
    host can use)."""
    cores = host.get("cpu_cores")
    if cores is None:
        return None
    return min(cores, host.get("app_threads") or cores, streams or cores)


def host_drive_bps(host: Mapping[str, Any], per_core_bps: float | None, mss_bytes: int, mtu_bytes: int,
                   streams: int | None = None) -> float | None:
    """What `host` drives in total (payload bit/s) for `streams` bulk
    streams of `mss_bytes` segments (None: as many as it likes): the
    smaller of the cores they run on (cores_for) × `per_core_bps`
    (core_drive) and the payload its nic_rate carries in full frames
    (wire.goodput_ceiling_bps); None when neither bounds it."""
    limits = []
    if host.get("nic_rate") is not None:
        limits.append(goodput_ceiling_bps(float(host["nic_rate"]), mss_bytes, mtu_bytes))
    cores = cores_for(host, streams)
    if cores is not None and per_core_bps is not None and math.isfinite(per_core_bps):
        limits.append(cores * per_core_bps)
    return min(limits) if limits else None
