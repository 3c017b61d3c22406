"""The study spec: strict, versioned TOML loaded into pydantic models.

Unknown keys, bad units and impossible values are rejected with a
:class:`SpecError` whose lines each name the key path (``path.rate``,
``flows.1.streams``, ``sweep."flows.0.cc"``) and what is allowed.

Validation never crashes and never expands a sweep to judge it: whatever the
file holds (any TOML type where a number is meant, inf, nan, overflowing or
subnormal numbers, binary data, deep nesting), the answer is a spec or a
SpecError. Booleans are not numbers. Absurd magnitudes are refused by the
limits below, and a sweep's size is computed, and refused above
``MAX_RUNS``, before anything is expanded.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from . import appspec, bpfcc, capturespec, crossspec, hostcpu, pathspec, pathtrace, transferspec
from . import references as references_mod
from . import sweep as sweep_mod
from .aqm import DROPTAIL, Aqm
from .backends import DEFAULT_BACKEND, backend_names
from .buffer import Buffer, parse_buffer
from .references import References
from .spec_errors import SpecError
from .spec_errors import key_path as _loc
from .spec_errors import short as _short
from .spec_errors import validation_problems as _problems
from .spec_toml import MAX_KEY_PARTS, MAX_NESTING_DEPTH, MAX_SPEC_BYTES, load_raw  # noqa: F401 (spec.load_raw)
from .spec_toml import long_dotted_key as _long_dotted_key  # noqa: F401 (tests)
from .spec_units import unit_field
from .sweep import Sweep
from .testbed import Testbed, study_problems, validate_testbed
from .units import (
    format_time,
    parse_per_second,
    parse_rate_bps,
    parse_size_bytes,
    parse_time_s,
    toml_type,
)
from .wire import TCP_IP_HEADER_BYTES, TIMESTAMP_OPTION_BYTES

SPEC_VERSION = 1

# ---- limits: what a spec may ask for ---------------------------------------
# Runs of one study (sweep points x repetitions x backends).
MAX_RUNS = 100_000
# The simulator's clock counts nanoseconds: a nonzero time below that is 0.
TIME_RESOLUTION_S = 1e-9
# Simulated time of one run: at most a day.
MAX_DURATION_S = 86_400.0
MAX_RTT_S = 10.0
# Series samples: at least 1 µs apart, at most a million per run.
MIN_INTERVAL_S = 1e-6
MAX_SAMPLES_PER_RUN = 1_000_000
# Rates from 1 kbit/s to 10 Tbit/s; sizes from 1 byte to 1 TiB.
MIN_RATE_BPS = 1e3
MAX_RATE_BPS = 1e13
MAX_SIZE_BYTES = 1 << 40
# RPC arrivals (open loop) from one per 1000 s to ten million per second.
MIN_EVENT_RATE_PER_S = 1e-3
MAX_EVENT_RATE_PER_S = 1e7
# A host's mean per-packet processing jitter (docs/host-model.md): 0 (an
# ideal host) to 10 ms, beyond any host that still keeps up with its packets.
MAX_PROCESSING_JITTER_S = 0.01
# Longest start spread of a host's streams (hosts.<name>.start_spread).
MAX_START_SPREAD_S = 10.0

# What a sweep may vary: SWEEPABLE (sweep.py).
TCP_MIN_MSS = 88  # include/net/tcp.h
# Linux defaults of net.ipv4.tcp_rmem[2] / tcp_wmem[2].
LINUX_RMEM_MAX_BYTES = 6291456
LINUX_WMEM_MAX_BYTES = 4194304


# net.ipv4.tcp_ecn: what each value means; 2 is Linux's default.
TCP_ECN_VALUES = {0: "off", 1: "request and accept", 2: "accept only, Linux's default"}
LINUX_TCP_ECN = 2


def _tcp_ecn(value: Any) -> Any:
    if isinstance(value, bool) or value not in TCP_ECN_VALUES:
        shown = repr(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else toml_type(value)
        allowed = ", ".join(f"{k} ({v})" for k, v in TCP_ECN_VALUES.items())
        raise ValueError(f"got {shown}; net.ipv4.tcp_ecn is one of {allowed}")
    return value


TcpEcn = Annotated[int, BeforeValidator(_tcp_ecn)]

# A flow's cwnd clamp in segments: TCP_BPF_SNDCWND_CLAMP takes a C int > 0
# (net/core/filter.c bpf_sol_tcp_setsockopt rejects val <= 0).
MAX_CWND_CLAMP_SEGMENTS = 2**31 - 1


def _cwnd_clamp(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CWND_CLAMP_SEGMENTS:
        scalar = isinstance(value, (int, float, str)) and not isinstance(value, bool)
        shown = repr(value) if scalar else toml_type(value)
        raise ValueError(f"got {shown}; cwnd_clamp is a whole number of segments from 1 to "
                         f"{MAX_CWND_CLAMP_SEGMENTS} (tp->snd_cwnd_clamp, as TCP_BPF_SNDCWND_CLAMP sets it)")
    return value


CwndClamp = Annotated[int, BeforeValidator(_cwnd_clamp)]


def _on_clock(seconds: float) -> float:
    if 0 < seconds < TIME_RESOLUTION_S:
        raise ValueError(
            f"{seconds:g} s is below the simulator's 1 ns clock; write 0 or at least '1ns'"
        )
    return seconds


def _time(lo: float = 0.0, hi: float = MAX_DURATION_S, above_zero: bool = False) -> Any:
    """A time in seconds on the simulator's clock (0 or at least 1 ns)."""
    return Annotated[float, unit_field(parse_time_s, lo, hi, " s", above_zero), AfterValidator(_on_clock)]


def _version(value: Any) -> Any:
    if type(value) is not int or value != SPEC_VERSION:
        raise ValueError(
            f"got {value!r}; write version = {SPEC_VERSION} (the integer; this fatpipe "
            f"reads spec version {SPEC_VERSION})"
        )
    return value


RateBps = Annotated[float, unit_field(parse_rate_bps, MIN_RATE_BPS, MAX_RATE_BPS, " bit/s")]
TimeS = _time()
DurationS = _time(above_zero=True)
IntervalS = _time(lo=MIN_INTERVAL_S)
RttS = _time(hi=MAX_RTT_S, above_zero=True)
ExtraRttS = _time(hi=MAX_RTT_S)
ProcessingJitterS = _time(hi=MAX_PROCESSING_JITTER_S)
StartSpreadS = _time(hi=MAX_START_SPREAD_S)
SizeBytes = Annotated[int, unit_field(parse_size_bytes, None, MAX_SIZE_BYTES, " bytes", above_zero=True)]
PerSecond = Annotated[float, unit_field(parse_per_second, MIN_EVENT_RATE_PER_S, MAX_EVENT_RATE_PER_S, "/s")]
# A flow's `rate` read by its kind (FlowSection._rate_of_kind).
_PER_SECOND = unit_field(parse_per_second, MIN_EVENT_RATE_PER_S, MAX_EVENT_RATE_PER_S, "/s").func
_RATE_BPS = unit_field(parse_rate_bps, MIN_RATE_BPS, MAX_RATE_BPS, " bit/s").func
Probability = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]
InterruptCoalescingS = _time(hi=hostcpu.MAX_INTERRUPT_COALESCING_S, above_zero=True)
NicRateBps = Annotated[float, unit_field(parse_rate_bps, MIN_RATE_BPS, MAX_RATE_BPS, " bit/s",
                                         allowed="nic_rate is a rate from 1 kbit/s to 10 Tbit/s")]


def _profile(value: Any) -> Any:
    # hostprofiles validates its profiles with HostSection: imported here,
    # when a spec is validated, not when this module is.
    from .hostprofiles import PROFILES
    if value not in PROFILES:
        shown = repr(_short(value, 40)) if isinstance(value, str) else toml_type(value)
        raise ValueError(f"got {shown}; the host profiles are {', '.join(PROFILES)} (docs/host-model.md)")
    return value


ProfileName = Annotated[str, BeforeValidator(_profile)]


class _Strict(BaseModel):
    # strict: no bool-as-int, no "2"-as-int; unit fields parse text themselves.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# The validation context key that carries validate()'s `imported_from`.
IMPORTED_FROM = "imported_from"


class StudySection(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)]
    description: str = ""
    backends: list[str] = Field(default_factory=lambda: [DEFAULT_BACKEND], min_length=1)
    duration: DurationS
    warmup: TimeS = 0.0
    repetitions: Annotated[int, Field(ge=1, le=10000)] = 1
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 1
    # "per-run": every point and repetition draws its own seed; "per-repetition":
    # repetition r of every point shares one (common random numbers: the
    # sweep's CCAs meet the same random losses, so they compare in pairs).
    seeds: Literal["per-run", "per-repetition"] = "per-run"
    interval: IntervalS = 0.1  # sampling interval of the series

    @field_validator("backends")
    @classmethod
    def _registered_backends(cls, names: list[str], info: ValidationInfo) -> list[str]:
        # An imported study names the tool that made its runs (validate()'s imported_from).
        known = backend_names()
        imported_from = (info.context or {}).get(IMPORTED_FROM)
        unknown = [n for n in names if n not in known and n != imported_from]
        if unknown:
            raise ValueError(f"got {', '.join(map(repr, unknown))}; the backends are {', '.join(known)}")
        return names

    @model_validator(mode="after")
    def _warmup_shorter_than_duration(self) -> StudySection:
        if self.warmup >= self.duration:
            raise ValueError(
                f"warmup ({self.warmup:g} s) must be shorter than duration ({self.duration:g} s)"
            )
        return self


class PathSection(_Strict):
    # None: not emulated, the path is what it is and the run measures it
    # (only on a backend that runs on a real path: Backend.measures_path).
    rate: RateBps | None = None
    rtt: RttS | None = None
    loss: Probability = 0.0  # random loss per packet
    corruption: Annotated[float, Field(ge=0, le=1e-3)] = 0.0  # per bit
    buffer: Annotated[Buffer, BeforeValidator(parse_buffer)] = Buffer(amount=1, unit="bdp")
    mtu: Annotated[int, Field(ge=576, le=65535)] = 1500
    aqm: Aqm = DROPTAIL  # the bottleneck's queue discipline (aqm.py)
    # How the path moves (pathspec.py, docs/path-dynamics.md): steps of
    # rate, RTT and loss; bursty loss; jitter; a policer; aggregation.
    schedule: pathspec.Schedule = []
    loss_model: pathspec.LossModel = pathspec.INDEPENDENT
    jitter: pathspec.JitterSpec | None = None
    reorder: pathspec.ReorderSpec | None = None  # netem's reorder knob
    policer: pathspec.PolicerSpec | None = None
    aggregation: pathspec.AggregationSpec | None = None
    drops: pathspec.Drops = []  # data packets dropped at chosen instants
    # The bottleneck's service from a Mahimahi delivery trace (pathtrace.py).
    trace: pathtrace.TraceSpec | None = None
    # The delay line of the kernel and hosts backends (docs/path-dynamics.md,
    # "On the kernel backend"): "auto" (fatpipe-linkem for a path that
    # moves), "linkem" or "netem". The simulator ignores it.
    emulator: Literal["auto", "linkem", "netem"] = "auto"


class HostSection(_Strict):
    rmem_max: SizeBytes | None = None  # net.ipv4.tcp_rmem[2]
    wmem_max: SizeBytes | None = None  # net.ipv4.tcp_wmem[2]
    stream_rate_cap: RateBps | None = None  # per-stream send cap (CPU-bound host)
    extra_rtt: ExtraRttS = 0.0  # added delay on this host's access link, round trip
    ecn: TcpEcn | None = None  # net.ipv4.tcp_ecn (None: Linux's default, 2)
    # The receiver coalesces back-to-back segments with GRO and ACKs once per
    # super-packet (crates/sim/src/tcp/receiver/gro.rs); only the receiver's
    # setting matters. Off by default. The kernel backend's veth receiver has
    # no GRO; there linkem carries each TSO packet as one unit instead
    # (crates/linkem/src/units.rs, docs/kernel-path.md).
    gro: bool | None = None
    # Mean per-packet processing delay of this host (exponential, in order
    # per flow; docs/host-model.md): the receiver's delays each data
    # segment, a sender's each ACK. None or 0: an ideal host. The simulator's
    # hosts only: the kernel and hosts backends run real hosts, whose own
    # processing applies.
    processing_jitter: ProcessingJitterS | None = None
    # How far apart this sender's application starts its streams: each
    # stream of a flow group begins at the group's start plus a seeded
    # uniform offset below it (docs/host-model.md). None: the simulator's
    # default, 1 ms. The simulator's hosts only: the kernel and hosts
    # backends record when their streams really began
    # (stream_first_send_s).
    start_spread: StartSpreadS | None = None
    # ---- the host's CPU and NIC (docs/host-model.md, "Keys"; limits and
    # checks across hosts in hostcpu.py). The simulator's hosts only: the
    # kernel and hosts backends run real hosts, whose own CPU and NIC
    # apply, and take these keys as met.
    # A named host profile (python/fatpipe/data/host_profiles.toml): its
    # keys are defaults under hosts.default's and the host's own.
    profile: ProfileName | None = None
    # The host's CPU cores: the CPU cost model is on iff this is set (here,
    # in hosts.default or by a profile). None: an ideal host, never busy.
    cpu_cores: hostcpu.CpuCores | None = None
    # Application threads serving the host's streams (1: one for all, as
    # iperf3 before 3.16). None: one thread per stream.
    app_threads: hostcpu.AppThreads | None = None
    # Hosts naming the same machine share its cores (and agree on
    # cpu_cores). None: the host is a machine of its own.
    machine: hostcpu.MachineName | None = None
    # The NIC's receive ring in packets: arrivals beyond it while the core
    # is busy are dropped. None: hostcpu.DEFAULT_RX_RING_PACKETS.
    rx_ring: hostcpu.RxRingPackets | None = None
    # The host's total line/PCIe/memory ceiling, shared by its streams
    # (independent of cpu_cores). None: no ceiling but the path's.
    nic_rate: NicRateBps | None = None
    # CPU time per unit of work under the cost model (None: 0): per packet
    # and per byte sent (copy, checksum); per packet received, per GRO unit
    # handed to TCP, per byte received; per ACK processed, per SACK block of
    # scoreboard work, per timer that fires.
    cost_send_packet: hostcpu.CostPerUnitS | None = None
    cost_send_byte: hostcpu.CostPerByteS | None = None
    cost_receive_packet: hostcpu.CostPerUnitS | None = None
    cost_receive_unit: hostcpu.CostPerUnitS | None = None
    cost_receive_byte: hostcpu.CostPerByteS | None = None
    cost_ack: hostcpu.CostPerUnitS | None = None
    cost_sack_block: hostcpu.CostPerUnitS | None = None
    cost_timer: hostcpu.CostPerUnitS | None = None
    # The retransmission queue's structure, where its cost differs: "list"
    # (Linux before 4.15: SACK processing walks the queue from its head,
    # `cost_rtx_walk` per segment walked) or "rbtree" (4.15 and later,
    # commit 75c119afe14f). None: the rb-tree.
    rtx_queue: Literal["list", "rbtree"] | None = None
    cost_rtx_walk: hostcpu.CostPerWalkedSegmentS | None = None
    # Receive interrupt moderation (ethtool -C rx-usecs, rx-frames;
    # docs/host-model.md): packets reach TCP at the interrupt `interrupt_
    # coalescing` after their batch's first one, or once the batch has
    # `interrupt_coalescing_frames` packets. The receiver's moderates data,
    # a sender's its ACKs. None: an interrupt per packet.
    interrupt_coalescing: InterruptCoalescingS | None = None
    interrupt_coalescing_frames: hostcpu.InterruptFrames | None = None
    # The sending host's root qdisc (docs/host-model.md, "qdisc"): "fq"
    # paces every flow at its sk_pacing_rate (what ESnet recommends on
    # data-transfer nodes); "fq_codel" and "pfifo_fast" (Linux's and most
    # distributions' defaults) pace only the CCAs that ask (BBR, through
    # TCP's internal pacing). None: the host's default, unpaced.
    qdisc: Literal["fq", "fq_codel", "pfifo_fast"] | None = None


class FlowSection(_Strict):
    kind: Literal["bulk", "rpc", "transfer", "cross"] = "bulk"
    # Required but for kind = "cross": a CCA's name, or bpf:NAME|FILE.bpf.c|FILE.o (bpfcc.py).
    cc: Annotated[str, Field(pattern=r"^([a-z0-9_]+|bpf:\S+)$")] | None = None
    streams: Annotated[int, Field(ge=1, le=1000)] = 1
    mss: Annotated[int, Field(ge=TCP_MIN_MSS, le=65495)] | None = None  # TCP_MAXSEG
    sender: Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{1,8}$")] = "s1"
    start: TimeS = 0.0
    request: SizeBytes | None = None
    response: SizeBytes | None = None
    concurrency: Annotated[int, Field(ge=1, le=10000)] | None = None
    # rpc: open-loop arrivals per second ('200/s'); transfer: data sets'
    # arrivals per second; cross: each source's
    # sending rate while on ('20Mbit'). Read by _rate_of_kind.
    rate: float | None = None
    ecn: TcpEcn | None = None  # net.ipv4.tcp_ecn of this flow's sender, over its host's
    cwnd_clamp: CwndClamp | None = None  # segments; tp->snd_cwnd_clamp (TCP_BPF_SNDCWND_CLAMP)
    # Each stream's pacing cap, bit/s: SO_MAX_PACING_RATE on Linux (TCP then
    # paces the socket), the sender's max pacing rate in the simulator; with
    # the host's stream_rate_cap, the lower of the two.
    pacing_rate: RateBps | None = None
    # kind = "transfer" only (transferspec.py, docs/transfers.md).
    size: SizeBytes | None = None  # one data set's bytes
    split: Literal["equal", "chunks"] | None = None  # over the streams (None: equal)
    chunk: SizeBytes | None = None  # split = "chunks": the bytes a stream takes at a time
    count: Annotated[int, Field(ge=1, le=transferspec.MAX_COUNT)] | None = None  # data sets (None: 1)
    # kind = "cross" only (crossspec.py, docs/path-dynamics.md "Cross traffic").
    pattern: Literal["constant", "on_off"] | None = None
    on: TimeS | None = None  # mean on period (pattern = "on_off")
    off: TimeS | None = None  # mean off period (pattern = "on_off")
    shape: Annotated[float, Field(allow_inf_nan=False)] | None = None  # Pareto shape of on and off (1.5)
    packet_size: SizeBytes | None = None  # IP packet bytes (the path MTU)
    stop: TimeS | None = None  # the sources stop (the run's end)
    # kind = "bulk" only (appspec.py): each stream's application write rate
    # (None: it always has data) and its steps ([[flows.app]]).
    app_rate: appspec.AppRate | None = None
    app: appspec.AppSchedule = []

    @field_validator("rate", mode="before")
    @classmethod
    def _rate_of_kind(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        return (_RATE_BPS if info.data.get("kind") == crossspec.KIND else _PER_SECOND)(value)

    @model_validator(mode="after")
    def _kind_fields(self) -> FlowSection:
        problems = crossspec.flow_problems(self) + appspec.flow_problems(self) + transferspec.flow_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        if self.kind == crossspec.KIND:
            return self
        if self.cc is None:
            raise ValueError("cc is missing: the flow's congestion control, such as 'cubic'")
        rpc_keys = ("request", "response", "concurrency", "rate")
        if self.kind == "bulk":
            given = [k for k in rpc_keys if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to kind = \"rpc\" (rate also to \"transfer\")")
        elif self.kind == "rpc":
            if self.request is None or self.response is None:
                raise ValueError('kind = "rpc" needs both request and response sizes')
            if (self.concurrency is None) == (self.rate is None):
                raise ValueError(
                    'kind = "rpc" needs exactly one of concurrency (closed loop) '
                    "or rate (open loop, e.g. '200/s')"
                )
        return self


class Spec(_Strict):
    """One study. Checks across sections are :func:`cross_problems`, which
    :func:`validate` applies: validate specs with it, not with the model alone."""

    version: Annotated[int, BeforeValidator(_version)]
    study: StudySection
    path: PathSection = PathSection()  # left out: the real path (a backend that measures it)
    hosts: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{1,8}$")], HostSection] = {}
    flows: list[FlowSection] = Field(min_length=1, max_length=64)
    sweep: Sweep = Sweep()  # cartesian axes and linked groups (sweep.py)
    testbed: Testbed | None = None  # the machines of the hosts backend (testbed.py)
    references: References = []  # a talk's or paper's numbers for this study (references.py)
    capture: capturespec.CaptureSection | None = None  # packet captures per run (capturespec.py)

    # ---- derived values --------------------------------------------------

    def host_layers(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        """The keys that make host `name`, lowest precedence first, each
        layer as (where it is written, {key: value}): its profile's (its
        own section's profile, else hosts.default's), hosts.default's, its
        own section's."""
        layers = [(f"hosts.{n}", {k: getattr(section, k) for k in section.model_fields_set})
                  for n in dict.fromkeys(("default", name)) if (section := self.hosts.get(n)) is not None]
        profile = next((keys["profile"] for _, keys in reversed(layers) if keys.get("profile") is not None), None)
        if profile is not None:
            from .hostprofiles import profile_keys  # see _profile
            layers.insert(0, (f"profile {profile!r}", profile_keys(profile)))
        return layers

    def host(self, name: str) -> HostSection:
        """Limits of host `name`: its own section over `hosts.default` over
        the profile either names (the host's own wins)."""
        merged: dict[str, Any] = {}
        for _, keys in self.host_layers(name):
            merged.update(keys)
        return HostSection().model_copy(update=merged)

    def mss_payload_bytes(self, flow: FlowSection) -> int:
        """Payload per segment as Linux computes it (tcp_mtu_to_mss): the MSS
        (TCP_MAXSEG, default mtu - 40) less the 12-byte timestamp option."""
        mss = flow.mss if flow.mss is not None else self.path.mtu - TCP_IP_HEADER_BYTES
        return mss - TIMESTAMP_OPTION_BYTES

    def path_unset(self) -> list[str]:
        """The path keys left out (the real path is measured instead)."""
        return [f"path.{k}" for k in ("rate", "rtt") if getattr(self.path, k) is None]

    def buffer_bytes(self) -> int | None:
        """The bottleneck buffer in bytes; None when it is a multiple of a
        BDP the spec leaves to the real path."""
        if self.path_unset() and self.path.buffer.unit == "bdp":
            return None
        return self.path.buffer.to_bytes(self.path.rate or 0.0, self.path.rtt or 0.0, self.path.mtu)


# ---- checks across sections ----------------------------------------------


def cross_problems(spec: Spec) -> list[tuple[str, str]]:
    """What no single section can check: names, fits and totals."""
    problems = []
    senders = {f.sender for f in spec.flows if f.kind != crossspec.KIND}
    for name in spec.hosts:
        if name not in senders and name not in ("default", "receiver"):
            problems.append((f"hosts.{name}", (
                f"hosts.{name} names no sender; senders are {sorted(senders)}, "
                "plus 'default' (every host) and 'receiver'")))
    for i, flow in enumerate(spec.flows):
        if flow.mss is not None and flow.mss > spec.path.mtu - TCP_IP_HEADER_BYTES:
            problems.append((f"flows.{i}.mss", (
                f"flows.{i}.mss = {flow.mss} does not fit path.mtu = {spec.path.mtu} "
                f"(at most mtu - {TCP_IP_HEADER_BYTES} = {spec.path.mtu - TCP_IP_HEADER_BYTES})")))
        if flow.start >= spec.study.duration:
            problems.append((f"flows.{i}.start", f"flows.{i}.start must be before study.duration"))
    problems += hostcpu.problems({name: spec.host_layers(name) for name in [*sorted(senders), "receiver"]})
    unset = spec.path_unset()
    for key in ("buffer", "loss", "corruption", "aqm", *pathspec.KEYS, "trace", "emulator"):
        if unset and key in spec.path.model_fields_set:
            problems.append((f"path.{key}", (
                f"{' and '.join(unset)} {'is' if len(unset) == 1 else 'are'} left out (the path is what it is, "
                f"not emulated), so path.{key} cannot be applied: leave it out too, or give path.rate and "
                "path.rtt")))
    buffer_bytes = spec.path.buffer.nominal_bytes(spec.path.rate or 0.0, spec.path.rtt or 0.0, spec.path.mtu)
    if not unset and not 1 <= buffer_bytes <= MAX_SIZE_BYTES:
        problems.append(("path.buffer", (
            f"comes to {buffer_bytes:.4g} bytes; a buffer holds from 1 byte to "
            f"{MAX_SIZE_BYTES} bytes (1 TiB)")))
    samples = spec.study.duration / spec.study.interval
    if samples > MAX_SAMPLES_PER_RUN:
        problems.append(("study.interval", (
            f"{format_time(spec.study.interval)} over a {format_time(spec.study.duration)} run "
            f"is {samples:.3g} samples; at most {MAX_SAMPLES_PER_RUN} per run: "
            f"use an interval of at least {format_time(spec.study.duration / MAX_SAMPLES_PER_RUN)}")))
    problems += pathspec.problems(spec)
    problems += pathtrace.problems(spec)
    problems += crossspec.problems(spec)
    problems += appspec.problems(spec)
    problems += capturespec.problems(spec)
    if spec.testbed is not None:
        problems += study_problems(spec.testbed, senders)
    return problems


def run_count(spec: Spec, backends: list[str] | None = None) -> int:
    """Runs the study asks for (sweep points x repetitions x backends),
    computed without expanding the sweep."""
    return spec.sweep.point_count() * spec.study.repetitions * len(backends or spec.study.backends)


def check_run_count(spec: Spec, backends: list[str] | None = None, source: str = "") -> None:
    """Refuse a study of more than MAX_RUNS runs, before it is expanded."""
    count = run_count(spec, backends)
    if count > MAX_RUNS:
        axes = " x ".join(spec.sweep.sizes()) or "1"
        raise SpecError([("sweep", (
            f"asks for {count:,} runs ({axes} sweep points x {spec.study.repetitions} "
            f"repetitions x {len(backends or spec.study.backends)} backends); "
            f"at most {MAX_RUNS:,} runs per study: split it or sweep fewer values"))], source)


# ---- errors -----------------------------------------------------------------


def _too_deep(raw: Any) -> list[tuple[str, str]]:
    """Values nested deeper than MAX_NESTING_DEPTH, found without recursion."""
    stack: list[tuple[Any, tuple, int]] = [(raw, (), 0)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            if where[:1] == ("sweep",):  # up to the swept key: sweep."k", sweep.linked[i]."k"
                name = sweep_mod.raw_where(where[1:4] if where[1:2] == (sweep_mod.LINKED,) else where[1:2])
            else:
                keys = []
                for part in where:
                    if not isinstance(part, str):
                        break
                    keys.append(part)
                name = _loc(tuple(keys))
            return [(name or "spec", (
                f"nested more than {MAX_NESTING_DEPTH} levels deep; a study spec needs at most "
                f"{MAX_NESTING_DEPTH} (arrays and tables inside each other)"))]
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack += [(v, where + (k,), depth + 1) for k, v in items if isinstance(v, (dict, list))]
    return []


# ---- validation ---------------------------------------------------------------


def _validated(raw: dict[str, Any], imported_from: str | None) -> tuple[Spec | None, list[tuple[str, str]]]:
    """The model and the cross-section checks: (spec or None, problems)."""
    try:
        spec = Spec.model_validate(raw, context={IMPORTED_FROM: imported_from})
    except ValidationError as e:
        return None, _problems(e)
    return spec, cross_problems(spec)


def validate(raw: dict[str, Any], source: str = "", imported_from: str | None = None) -> Spec:
    """Validate a raw spec mapping (no sweep applied yet) and its sweep: its
    structure and keys, then its size, then every value of every cartesian
    axis alone and every point of every linked group (its keys together).

    `imported_from` is the tool whose runs an imported study holds (its
    manifest's mark, results.imported_mark): study.backends may name it
    besides the registered backends."""
    if not isinstance(raw, dict):
        raise SpecError([("spec", f"a study spec is a TOML table, got {toml_type(raw)}")], source)
    deep = _too_deep(raw)
    if deep:
        raise SpecError(deep, source)
    spec, problems = _validated(raw, imported_from)
    if spec is None or problems:
        raise SpecError(problems, source)
    problems += spec.sweep.structure_problems()
    swept: dict[str, list[Any]] = {}
    for where, key, values in spec.sweep.entries():
        problems += sweep_mod.key_problems(where, key, values, len(spec.flows), len(spec.path.schedule),
                                           [len(f.app) for f in spec.flows])
        swept.setdefault(key, []).extend(values)
    problems += references_mod.problems(spec.references, swept)
    if problems:
        raise SpecError(problems, source)
    check_run_count(spec, source=source)
    for key, values in spec.sweep.axes.items():
        problems += _check_sweep_values(spec, raw, sweep_mod.where(key), [{key: v} for v in values])
    for i, group in enumerate(spec.sweep.linked):
        rows = [dict(zip(group, row, strict=True)) for row in zip(*group.values(), strict=True)]
        problems += _check_sweep_values(spec, raw, sweep_mod.group_where(i), rows)
    if problems:
        raise SpecError(problems, source)
    return spec


def _check_sweep_values(spec: Spec, raw: dict, where: str, rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each row of overrides (a cartesian axis's value alone, or one point of
    a linked group) validates when set on the spec; `where` names the axis."""
    problems = []
    for i, overrides in enumerate(rows):
        try:
            found = _validated_point(spec, raw, overrides)[1]
        except KeyError as e:
            return [(where, str(e.args[0]))]
        problems += [(f"{where}[{i}] ({path})", msg) for path, msg in found]
    return problems


def _validated_point(
    spec: Spec, raw: dict[str, Any], overrides: dict[str, Any]
) -> tuple[Spec | None, list[tuple[str, str]]]:
    """`spec` with allow-listed sweep `overrides` applied: only the sections
    they touch are validated again, then the checks across sections."""
    changed = _overridden(raw, overrides)
    update: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for key in overrides:
        parts = key.split(".")
        head = parts[0]
        if head in ("study", "path"):
            model = StudySection if head == "study" else PathSection
            where, section_raw = head, changed[head]
        elif head == "hosts":
            model, where, section_raw = HostSection, f"hosts.{parts[1]}", changed["hosts"][parts[1]]
        else:
            model, where, section_raw = FlowSection, f"flows.{parts[1]}", changed["flows"][int(parts[1])]
        try:
            section = model.model_validate(section_raw)
        except ValidationError as e:
            problems += _problems(e, prefix=f"{where}.")
            continue
        if head in ("study", "path"):
            update[head] = section
        elif head == "hosts":
            update.setdefault("hosts", dict(spec.hosts))[parts[1]] = section
        else:
            update.setdefault("flows", list(spec.flows))[int(parts[1])] = section
    if problems:
        return None, problems
    point = spec.model_copy(update=update)
    return point, cross_problems(point)


def point_spec(raw: dict[str, Any], overrides: dict[str, Any], spec: Spec | None = None) -> Spec:
    """The spec at one sweep point of `raw`, a spec that passed :func:`validate`
    (`spec`, its validated form, saves validating it again). Errors name the
    point: each axis value was valid alone, their combination may not be."""
    if not overrides:
        return spec or validate(raw)
    spec, problems = _validated_point(spec or validate(raw), raw, overrides)
    if problems:
        point = ", ".join(f"{_short(k, 40)} = {_short(repr(v), 40)}" for k, v in overrides.items())
        raise SpecError([(f"sweep ({point}) {k}", m) for k, m in problems])
    assert spec is not None
    return spec


def _overridden(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`raw` without its sweep, dotted keys set; copies only the sections on
    each key's path, so the cost does not grow with the rest of the spec."""
    out = {k: v for k, v in raw.items() if k != "sweep"}
    for key, value in overrides.items():
        node: Any = out
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1]):
            prefix = ".".join(parts[: depth + 1])
            if isinstance(node, list):
                if not re.fullmatch(r"0|[1-9][0-9]*", part) or int(part) >= len(node):
                    raise KeyError(f"{prefix}: no such flow (there are {len(node)})")
                index: Any = int(part)
            elif isinstance(node, dict):
                if part not in node:
                    if parts[0] == "hosts" and depth <= 1:
                        node[part] = {}
                    else:
                        raise KeyError(f"{prefix}: no such section in the spec")
                index = part
            else:
                raise KeyError(f"{prefix}: is a value, not a section")
            child = node[index]
            if isinstance(child, (dict, list)):
                child = type(child)(child)
                node[index] = child
            node = child
        if not isinstance(node, dict):
            raise KeyError(f"{key}: does not name a key of a section")
        node[parts[-1]] = value
    return out


def apply_overrides(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Copy `raw` (without its sweep) with dotted keys set (``flows.0.cc`` =
    'bbr'). The key must name an existing section; a leaf may be new only
    where the model has it."""
    return copy.deepcopy(_overridden(raw, overrides))


# ---- files --------------------------------------------------------------------


def load(path: str | Path, imported_from: str | None = None) -> tuple[Spec, dict[str, Any]]:
    """Load and validate a study file (`imported_from` as for :func:`validate`);
    returns the spec and its raw mapping."""
    base_dir = Path(path).resolve().parent
    raw = bpfcc.relative_to(pathtrace.relative_to(load_raw(path), base_dir), base_dir)
    return validate(raw, str(path), imported_from), raw


def load_testbed(path: str | Path) -> Testbed:
    """Read a testbed file (a ``[testbed]`` table alone) or a study that has
    one. Relative ssh_config paths are taken from the file's directory."""
    p = Path(path)
    raw = load_raw(p)
    if "study" in raw:  # a whole study: validate all of it, use its testbed
        spec = validate(raw, str(p))
        if spec.testbed is None:
            raise SpecError([("testbed", "this study has no [testbed] section")], str(p))
        return spec.testbed.relative_to(p.resolve().parent)
    extra = [k for k in raw if k != "testbed"]
    if extra:
        raise SpecError([(k, "unknown key; a testbed file holds only a [testbed] table "
                             "(or is a study with one)") for k in extra], str(p))
    if "testbed" not in raw:
        raise SpecError([("testbed", "missing; a testbed file holds a [testbed] table")], str(p))
    return validate_testbed(raw["testbed"], str(p)).relative_to(p.resolve().parent)
