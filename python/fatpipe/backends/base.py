"""The one small base class every backend subclasses (:class:`Backend`).

A backend receives a fully resolved :class:`RunPlan` (one point of the sweep,
one repetition, every unit already converted to SI numbers) and returns a
:class:`RunOutcome`: raw per-stream samples, per-RPC completions and what the
emulated path really did, in the schema of :mod:`fatpipe.schema`. It never computes summary statistics: that is done
once, for every backend alike, by :mod:`fatpipe.summary`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .. import wire
from ..schema import (
    RPC_COLUMNS,
    SERIES_COLUMNS,
    TRANSFER_COLUMNS,  # noqa: F401 (re-exported beside RPC_COLUMNS)
    CpuReport,
    PathReport,
    empty_events,
    empty_path_series,
    empty_transfers,
)
from ..testbed import Testbed

__all__ = ["RPC_COLUMNS", "SERIES_COLUMNS", "Aggregation", "Backend", "BackendUnavailable", "CpuReport",
           "CrossFlow", "DoctorReport", "FlowPlan", "GilbertElliott", "HostCpu", "HostLimits", "Jitter",
           "PathDrop", "PathDynamics", "PathReport", "PathStep", "Policer", "Reorder", "RunOutcome", "RunPlan",
           "StateTrigger", "Trace"]


@dataclass(frozen=True)
class HostCpu:
    """A host's CPU cost model (docs/host-model.md): its cores, how its
    application and NIC feed them, and the CPU time of each unit of work
    (a study's hosts.<name>.cpu_cores, app_threads, machine, rx_ring and
    cost_* keys)."""

    cores: int
    app_threads: int | None  # None: one application thread per stream
    machine: str | None  # hosts naming the same machine share its cores (None: the host's own)
    rx_ring_packets: int  # receive ring: arrivals beyond it while the core is busy are dropped
    send_packet_s: float = 0.0  # per packet sent
    send_byte_s: float = 0.0  # per byte sent (copy, checksum)
    receive_packet_s: float = 0.0  # per packet received
    receive_unit_s: float = 0.0  # per unit handed to TCP (a GRO super-packet, or a packet)
    receive_byte_s: float = 0.0  # per byte received
    ack_s: float = 0.0  # per ACK processed
    sack_block_s: float = 0.0  # per SACK block of scoreboard work
    timer_s: float = 0.0  # per timer that fires
    rtx_queue: str | None = None  # "list": the retransmission queue of Linux before 4.15 (None: the rb-tree)
    rtx_walk_s: float = 0.0  # per segment a list queue's SACK processing walks


@dataclass(frozen=True)
class HostLimits:
    """End-host limits that shape real results (a study's [hosts] tables, README.md "The spec")."""

    rmem_max_bytes: int  # tcp_rmem[2]: bounds the receive window
    wmem_max_bytes: int  # tcp_wmem[2]: bounds the sender's unacked + unsent data
    stream_rate_cap_bps: float | None = None  # per-stream send cap (CPU-bound host)
    extra_rtt_s: float = 0.0  # added round-trip delay on this host's access link
    ecn: int = 2  # net.ipv4.tcp_ecn: 0 off, 1 request and accept, 2 accept only (Linux's default)
    gro: bool = False  # the host receives through GRO (one ACK per coalesced super-packet)
    processing_jitter_s: float | None = None  # mean per-packet processing delay (None: an ideal host)
    start_spread_s: float | None = None  # the streams start within this of their group's start (None: 1 ms)
    cpu: HostCpu | None = None  # the CPU cost model (None: an ideal host, never busy)
    nic_rate_bps: float | None = None  # the host's total ceiling across its streams (None: none)
    interrupt_coalescing_s: float | None = None  # receive interrupt delay after a batch's first packet (None: none)
    interrupt_coalescing_frames: int | None = None  # packets that fire the interrupt early (None: no count)
    qdisc: str | None = None  # the host's root qdisc: "fq" paces every flow (None: the default, unpaced)


@dataclass(frozen=True)
class StateTrigger:
    """The instant a plan item waits for instead of a time (`on`): the
    `nth` time flow `flow`'s first stream enters or leaves a state of its
    CCA, plus `after_s` (crates/sim/src/path/trigger.rs). Only the
    simulator can watch a sender's state."""

    event: str  # "enter:STATE" or "exit:STATE", STATE as the CCA logs it or the BBR draft names it
    nth: int = 1  # which occurrence, from 1
    flow: int = 0  # the flows index whose first stream is watched
    after_s: float = 0.0  # delay after the event


@dataclass(frozen=True)
class PathStep:
    """A change of the path at `at_s` seconds after the run's start, or
    when a sender's state changes (`on`) (a study's [[path.schedule]]): the
    values given replace the path's from then on; None keeps the one in
    effect. Exactly one of at_s and on."""

    at_s: float | None = None
    rate_bps: float | None = None  # the bottleneck's service rate
    rtt_s: float | None = None  # the base round-trip propagation delay
    loss: float | None = None  # the random loss's long-run mean per packet
    on: StateTrigger | None = None


@dataclass(frozen=True)
class PathDrop:
    """Data packets dropped at a chosen instant (a study's [[path.drops]]):
    from the first data packet reaching the bottleneck at or after `at_s`
    (or the instant `on` gives), `count` consecutive data packets of flow
    `flow` (None: of any TCP flow; cross traffic never)."""

    at_s: float | None = None
    count: int = 1
    flow: int | None = None
    on: StateTrigger | None = None


@dataclass(frozen=True)
class GilbertElliott:
    """Bursty loss (path.loss_model): a two-state Markov chain stepped once
    per data packet, netem's `loss gemodel p r 1-h 1-k`. The chance of
    entering the bad state, netem's p, follows from the long-run mean loss
    in effect (RunPlan.loss, or a step's): p = r (L - good_loss) /
    (bad_loss - L)."""

    r: float  # chance per packet of leaving the bad state (netem's r)
    bad_loss: float  # loss per packet in the bad state (netem's 1-h)
    good_loss: float = 0.0  # loss per packet in the good state (netem's 1-k)


@dataclass(frozen=True)
class Jitter:
    """Per-packet delay variation added to the one-way delay (path.jitter)."""

    deviation_s: float  # uniform: +-deviation_s; normal: its standard deviation
    distribution: str = "uniform"  # "uniform" | "normal"
    reorder: bool = False  # a packet may overtake one sent before it (netem's tfifo); False: never
    direction: str = "data"  # "data" (sender -> receiver) | "ack" | "both"


@dataclass(frozen=True)
class Reorder:
    """netem's reorder knob (path.reorder, `reorder P gap G`): after gap - 1
    packets taken with their delay, the next skips the delay (it is sent at
    once, overtaking those in flight) with `probability`."""

    probability: float
    gap: int = 1  # tc's default when only a probability is given
    direction: str = "data"  # "data" | "ack" | "both"


@dataclass(frozen=True)
class Policer:
    """A token bucket in front of the bottleneck (path.policer): a data
    packet passes when the bucket holds its frame's bytes, else it is
    dropped; the bucket fills at rate_bps up to burst_bytes."""

    rate_bps: float
    burst_bytes: int


@dataclass(frozen=True)
class Aggregation:
    """A link that releases what reached it in bursts (path.aggregation):
    packets wait for the next multiple of interval_s after the run's start,
    and each release carries at most `bytes` of frames (None: all waiting),
    netem's slot."""

    direction: str  # "data" | "ack"
    interval_s: float
    bytes: int | None = None


@dataclass(frozen=True)
class Trace:
    """The bottleneck's service from a Mahimahi delivery trace (path.trace):
    one period's distinct milliseconds as gaps from the one before (the
    first from 0; the last millisecond is the period) and the 1504-byte
    delivery opportunities at each. A run-length form: a run may execute on
    another machine (a Dask worker) that has no copy of the file, and a
    trace repeats a millisecond once per opportunity."""

    ms_gaps: tuple[int, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True)
class PathDynamics:
    """How the path moves and misbehaves (docs/path-dynamics.md); the
    default is the static path: constant rate, delay and independent loss."""

    schedule: tuple[PathStep, ...] = ()  # by at_s, strictly increasing
    gilbert_elliott: GilbertElliott | None = None  # None: independent loss
    jitter: Jitter | None = None
    reorder: Reorder | None = None  # netem's reorder knob
    policer: Policer | None = None
    aggregation: Aggregation | None = None
    trace: Trace | None = None  # None: the bottleneck serves at its rate
    drops: tuple[PathDrop, ...] = ()  # losses at chosen instants

    def is_static(self) -> bool:
        return self == PathDynamics()

    def keys(self) -> list[str]:
        """The spec keys that make this path move (for backends that refuse them)."""
        names = {"schedule": "path.schedule", "gilbert_elliott": "path.loss_model",
                 "jitter": "path.jitter", "reorder": "path.reorder", "policer": "path.policer",
                 "aggregation": "path.aggregation",
                 "trace": "path.trace", "drops": "path.drops"}
        return [key for name, key in names.items() if getattr(self, name) != getattr(PathDynamics(), name)]


@dataclass(frozen=True)
class CrossFlow:
    """Unresponsive cross traffic through the bottleneck (a flow of kind
    "cross", docs/path-dynamics.md "Cross traffic"): each of the group's
    streams is a source sending packet_bytes IP packets at rate_bps (of
    frames on the link) while on."""

    rate_bps: float
    pattern: str = "constant"  # "constant" | "on_off"
    on_s: float | None = None  # on_off: mean on period (Pareto)
    off_s: float | None = None  # on_off: mean off period (Pareto)
    shape: float | None = None  # on_off: the Pareto shape (None: 1.5)
    packet_bytes: int | None = None  # IP packet (None: the path MTU)
    stop_s: float | None = None  # no packet at or after it (None: the run's end)


@dataclass(frozen=True)
class AppStep:
    """A change of an application-limited sender (flows.N.app): from at_s
    (after the run's start; None: at the state change `on`, simulator
    only) each stream writes at rate_bps (None: unlimited, it always has
    data), or, when pause_s is given, writes nothing for pause_s and then
    resumes at the rate in force."""

    at_s: float | None
    rate_bps: float | None = None
    pause_s: float | None = None
    on: StateTrigger | None = None


@dataclass(frozen=True)
class CapturePlan:
    """Packet captures of a run (capturespec.py, docs/captures.md): the
    flow groups (empty: every TCP group), at the sender hosts, the
    receiver or both, the bytes kept per packet, the first duration_s of
    the run (None: all of it), at most max_bytes per file."""

    groups: tuple[int, ...]
    side: str  # "sender" | "receiver" | "both"
    snaplen_bytes: int
    duration_s: float | None
    max_bytes: int


@dataclass(frozen=True)
class TransferPlan:
    """A transfer flow's data sets (transferspec.py, docs/transfers.md):
    each of size_bytes over the group's streams, split "equal" (each stream
    its share) or "chunks" (work stealing, chunk_bytes at a time, a stream
    taking its next chunk at the first application tick (tick_s) after its
    write of the last one returned); data set k starts at starts_s[k], s
    from the run's start, on its own streams k*streams .. (k+1)*streams-1."""

    size_bytes: int
    split: str  # "equal" | "chunks"
    chunk_bytes: int | None
    tick_s: float
    starts_s: tuple[float, ...]


@dataclass(frozen=True)
class AppLimit:
    """A bulk flow whose application writes at a limited rate
    (docs/path-dynamics.md "Application-limited senders"): every tick_s,
    each stream writes the bytes rate_bps owes for the tick (the fraction
    carried to the next), None being unlimited; `steps` change it."""

    rate_bps: float | None
    tick_s: float
    steps: tuple[AppStep, ...] = ()

    def write_rate_steps(self) -> list[tuple[float, float | None]]:
        """Each stream's write rate over the run as (from s, bit/s) steps:
        0 while paused, None while unlimited. Steps on a state change
        (at_s None) have no place here: they happen when the run says."""
        timed = [s for s in self.steps if s.at_s is not None]
        pauses = [(s.at_s, s.at_s + s.pause_s) for s in timed if s.pause_s is not None]
        edges = sorted({0.0, *(s.at_s for s in timed), *(end for _, end in pauses)})
        out: list[tuple[float, float | None]] = []
        for t in edges:
            rate = self.rate_bps
            for s in timed:
                if s.at_s <= t and s.pause_s is None:
                    rate = s.rate_bps
            out.append((t, 0.0 if any(a <= t < b for a, b in pauses) else rate))
        return out


@dataclass(frozen=True)
class FlowPlan:
    """One flow group: `streams` connections from `sender` to the receiver,
    or (kind "cross") `streams` sources of cross traffic, which have no TCP:
    their cc and sender are "" and mss_bytes 0."""

    group: int
    kind: str  # "bulk" | "rpc" | "transfer" | "cross"
    cc: str
    streams: int
    mss_bytes: int  # TCP payload bytes per segment (MSS)
    sender: str
    start_s: float = 0.0
    # RPC flows only: a request travels receiver -> sender, the response
    # (the big part) sender -> receiver through the bottleneck.
    request_bytes: int | None = None
    response_bytes: int | None = None
    concurrency: int | None = None  # closed loop: RPCs in flight per stream
    rate_per_s: float | None = None  # open loop: Poisson arrivals per stream
    ecn: int | None = None  # net.ipv4.tcp_ecn of the sender for this flow (None: its host's)
    cwnd_clamp: int | None = None  # segments: tp->snd_cwnd_clamp of every stream (None: Linux's default)
    pacing_rate_bps: float | None = None  # each stream's SO_MAX_PACING_RATE (None: the host's cap, if any)
    cross: CrossFlow | None = None  # kind "cross" only: its traffic
    app: AppLimit | None = None  # kind "bulk" only: its application's limit (None: it always has data)
    transfer: TransferPlan | None = None  # kind "transfer" only: its data sets


@dataclass(frozen=True)
class RunPlan:
    """One run: a sweep point × repetition on one backend."""

    run_id: str
    backend: str
    rep: int
    seed: int
    duration_s: float
    warmup_s: float
    sample_interval_s: float
    rate_bps: float | None  # bottleneck rate (None: not emulated, the real path's)
    rtt_s: float | None  # base round-trip propagation delay (None: the real path's)
    # Random loss per packet and per-bit corruption (packet lost if hit),
    # combined per flow group by packet_loss_probability(the group's MSS):
    # they act where the bottleneck sits, on data segments travelling
    # sender -> receiver (bulk data, RPC responses); the reverse direction
    # (ACKs, RPC requests) is lossless on every backend.
    loss: float
    corruption: float
    buffer_bytes: int | None  # bottleneck buffer (None: the real path's)
    mtu_bytes: int
    senders: dict[str, HostLimits]
    receiver: HostLimits
    flows: tuple[FlowPlan, ...]
    swept: dict[str, Any] = field(default_factory=dict)  # dotted key -> value
    # The bottleneck's queue discipline (aqm.py Aqm.plan()): {"kind": "droptail"}
    # or {"kind": "ce_threshold", "k_packets" | "k_bytes" | "k_s": K}.
    aqm: dict[str, Any] = field(default_factory=lambda: {"kind": "droptail"})
    # The machines a testbed backend runs on (the study's [testbed], or
    # --testbed FILE); None for backends that build their own path.
    testbed: Testbed | None = None
    # Schedules, bursty loss, jitter, a policer, aggregation (PathDynamics).
    dynamics: PathDynamics = field(default_factory=PathDynamics)
    # The delay line a backend that emulates the path on Linux puts on it
    # (path.emulator): "auto", "linkem" or "netem". The
    # simulator is its own path and ignores it.
    emulator: str = "auto"
    # Packet captures to write into the run's work directory (None: none).
    capture: CapturePlan | None = None

    def asks_for_ecn(self) -> list[str]:
        """The spec keys of this run that ask for ECN or a marking
        discipline (for backends that cannot do them yet)."""
        keys = []
        if self.aqm.get("kind", "droptail") != "droptail":
            keys.append(f"path.aqm = {self.aqm['kind']!r}")
        keys += [f"hosts.{name}.ecn = {h.ecn}" for name, h in self.senders.items() if h.ecn != 2]
        if self.receiver.ecn != 2:
            keys.append(f"hosts.receiver.ecn = {self.receiver.ecn}")
        keys += [f"flows.{f.group}.ecn = {f.ecn}" for f in self.flows if f.ecn is not None]
        return keys

    def cross_keys(self) -> list[str]:
        """The flows of kind "cross" (for backends that cannot run them)."""
        return [f'flows.{f.group}.kind = "cross"' for f in self.flows if f.kind == "cross"]

    def moves(self) -> bool:
        """Whether the path is more than a constant link: its dynamics move,
        or cross traffic shares its bottleneck."""
        return not self.dynamics.is_static() or bool(self.cross_keys())

    def moving_keys(self) -> list[str]:
        """The spec keys that make the path move (dynamics and cross traffic)."""
        return self.dynamics.keys() + self.cross_keys()

    def stream_pacing_cap_bps(self, flow: FlowPlan) -> float | None:
        """Each stream's pacing cap of `flow` (SO_MAX_PACING_RATE on Linux,
        the sender's max pacing rate in the simulator, scenario.rs): the
        lower of its pacing_rate and its host's stream_rate_cap (None: neither)."""
        host = self.senders[flow.sender].stream_rate_cap_bps if flow.sender in self.senders else None
        caps = [c for c in (host, flow.pacing_rate_bps) if c is not None]
        return min(caps) if caps else None

    def packet_loss_probability(self, mss_bytes: int) -> float:
        """Loss per data packet from random loss and per-bit corruption
        (:func:`fatpipe.wire.packet_loss_probability`)."""
        return wire.packet_loss_probability(self.loss, self.corruption, mss_bytes)


@dataclass
class RunOutcome:
    series: dict[str, list] = field(default_factory=lambda: {k: [] for k in SERIES_COLUMNS})
    rpcs: dict[str, list] = field(default_factory=lambda: {k: [] for k in RPC_COLUMNS})
    # schema.TRANSFER_COLUMNS: the transfer flows' data sets that completed.
    transfers: dict[str, list] = field(default_factory=empty_transfers)
    # schema.PATH_SERIES_COLUMNS: the bottleneck per sampling interval (empty
    # when the backend cannot observe it).
    path_series: dict[str, list] = field(default_factory=empty_path_series)
    # schema.EVENT_COLUMNS: the CCAs' state changes (empty when the backend
    # or the CCA records none).
    events: dict[str, list] = field(default_factory=empty_events)
    path: PathReport = field(default_factory=lambda: PathReport(emulator="unknown"))
    # The end hosts' CPU over the measured interval (all None: not measured).
    cpu: CpuReport = field(default_factory=CpuReport)
    facts: dict[str, Any] = field(default_factory=dict)  # for the manifest


class BackendUnavailable(RuntimeError):
    """The backend cannot run on this machine; the message says why."""


class DoctorReport(Protocol):
    """What a backend's ``doctor()`` returns (`fatpipe doctor`)."""

    # Whether the backend can run studies here (on the testbed it was given):
    # `fatpipe doctor --testbed FILE` exits 1 when a backend it asked is not.
    usable: bool

    def render(self) -> str:
        """The lines `fatpipe doctor` prints under the backend's name."""
        ...


class Backend(ABC):
    """The base every backend subclasses; the registry (backends/__init__.py)
    hands out its instances and the generic layers read the capabilities
    below as plain attributes. The class attributes are the defaults of a
    backend that emulates the path itself on the machine fatpipe runs on, in
    real time, one run at a time; a backend overrides what differs."""

    # The name the registry knows it by; also each run's `backend` column.
    name: str

    # The backend works on a testbed of machines (fatpipe.testbed): `fatpipe
    # doctor|clean --testbed FILE` ask only such backends and hand their
    # doctor() and clean() ``testbed=``; a study's runs carry it in
    # RunPlan.testbed. Such a backend runs one run at a time on its testbed,
    # so its runs refuse `--cluster` (fatpipe.cluster).
    takes_testbed: bool = False

    # The backend can run on the real path as it is and measure it: a study
    # may then leave out path.rate/path.rtt (RunPlan.rate_bps, rtt_s and
    # buffer_bytes are None). Every other backend emulates the path and
    # needs them (plan_runs refuses their absence, naming the keys).
    measures_path: bool = False

    # On a cluster (fatpipe.cluster): the Dask resource token each of its
    # runs needs, offered once per machine, so that a worker machine runs one
    # such run at a time; None: its runs need no machine to themselves.
    cluster_resource: str | None = None

    def estimated_wall_s(self, plan: RunPlan, packets: float) -> float | None:  # noqa: ARG002 - no guess
        """The wall time of one run (as if it ran alone) that carries
        `packets` bottleneck packets (fatpipe.estimate). None, the default:
        no guess of its own, the run takes its duration (a backend that runs
        in real time)."""
        return None

    def max_parallel_runs(self, jobs: int) -> int:  # noqa: ARG002 - the default ignores it
        """How many of this backend's runs may run at once when the user
        allows `jobs` (>= 1): a simulator takes `jobs`, a backend that owns
        the machine's network or a testbed's path takes 1. The default is 1,
        which is right for any backend."""
        return 1

    @abstractmethod
    def check(self, plans: list[RunPlan]) -> None:
        """Raise BackendUnavailable (naming what is missing) if these runs
        cannot be carried out here. Called once before a study starts."""

    @abstractmethod
    def facts(self) -> dict[str, Any]:
        """Machine facts for the manifest (kernel, CCAs, qdiscs, tools)."""

    @abstractmethod
    def run(self, plan: RunPlan, workdir: Path) -> RunOutcome:
        """Carry out one run. Raise on failure; the study records the reason."""

    @abstractmethod
    def doctor(self) -> DoctorReport:
        """What this backend can do on this machine (`fatpipe doctor`). A
        ``takes_testbed`` backend takes ``testbed=`` here and in clean()."""

    @abstractmethod
    def clean(self) -> list[str]:
        """Remove what a crashed fatpipe left behind (`fatpipe clean`), and
        only what this backend recorded as its own; returns one line per
        item removed or deliberately left alone ("removed …", "left alone
        …"), empty if there was nothing."""

    @abstractmethod
    def clean_stale(self) -> list[str]:
        """Remove what fatpipe processes that are gone (killed with
        SIGKILL) left behind, as `clean` does, before a study's first run;
        returns one "removed …" line per item (silent about the rest)."""
