"""A run plan as the Linux path sees it (pure): the path's rate, delay,
loss, buffer and discipline, each end host's TCP settings, and the
NFQUEUE numbers of the delay line's queues."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..backends.base import FlowPlan, PathDynamics
from ..wire import linux_segment_payload
from . import netem_map
from .ecn import LINUX_TCP_ECN, sender_tcp_ecn
from .flows import group_port
from .qdisc import bottleneck_qdiscs

if TYPE_CHECKING:
    from ..backends.base import RunPlan

QUEUE_DATA = 0  # NFQUEUE of the sender → receiver direction
QUEUE_ACK = 1  # NFQUEUE of the receiver → sender direction
QUEUE_SENDER_BASE = 2  # + sender index: reverse direction of a sender with extra RTT
QUEUE_DATA_SPLIT = 65000  # with a GRO receiver: where units with a lost, dropped or marked segment are segmented
# path.emulator (RunPlan.emulator) -> PathConfig.emulator.
EMULATORS = {"auto": "auto", "linkem": "linkem-nfqueue", "netem": "netem"}


@dataclass(frozen=True)
class HostConfig:
    rmem_max_bytes: int
    wmem_max_bytes: int
    extra_rtt_s: float = 0.0  # added round-trip delay of this host's access link
    cwnd_clamp_segments: int | None = None  # a sender's tp->snd_cwnd_clamp (a locked route metric)
    tcp_ecn: int = LINUX_TCP_ECN  # net.ipv4.tcp_ecn of this host (ecn.py)
    qdisc: str | None = None  # a sender's asked root qdisc (qdisc.sender_qdisc; None: its interface's own)


@dataclass(frozen=True)
class GroupLoss:
    """The random loss of one flow group's data segments."""

    group: int
    mss_bytes: int
    loss: float  # per data packet: RunPlan.packet_loss_probability(mss_bytes)


@dataclass(frozen=True)
class PathConfig:
    rate_bps: float
    rtt_s: float
    # Each flow group's loss, applied to its data segments travelling sender
    # → receiver (where the bottleneck sits: bulk data, RPC responses), as
    # the simulator applies it; the receiver → sender direction (ACKs, RPC
    # requests) is lossless.
    group_loss: tuple[GroupLoss, ...]
    buffer_bytes: int
    mtu_bytes: int
    senders: dict[str, HostConfig]
    receiver: HostConfig
    seed: int = 1
    emulator: str = "auto"  # "auto" | "netem" | "linkem-nfqueue"
    bottleneck: str = "auto"  # "auto" | "tbf" | "linkem" (linkem only with the linkem emulator)
    burst_bytes: int | None = None
    # The bottleneck's discipline (RunPlan.aqm): droptail, ce_threshold or fq_codel.
    aqm: dict[str, Any] = field(default_factory=lambda: {"kind": "droptail"})
    # A GRO receiver (hosts.receiver.gro): the delay line carries each TSO
    # packet as one unit (linkem's unit mode), which needs each flow's
    # segment payload by its receiver port.
    receiver_gro: bool = False
    mss_by_port: dict[int, int] = field(default_factory=dict)
    # How the path moves (RunPlan.dynamics, docs/path-dynamics.md): only
    # linkem applies it, with the simulator's own code (crates/linkem/src/moving.rs).
    dynamics: PathDynamics = field(default_factory=PathDynamics)
    loss: float = 0.0  # the path's random loss and per-bit corruption, which the dynamics step from
    corruption: float = 0.0
    # Flows of kind "cross" (RunPlan.flows): linkem offers their packets to
    # its bottleneck, and samples what left it every sample_interval_s up
    # to duration_s, as the simulator does.
    cross_flows: tuple[FlowPlan, ...] = ()
    sample_interval_s: float = 0.0
    duration_s: float = 0.0

    @property
    def moves(self) -> bool:
        """Whether the path moves (dynamics) or carries cross traffic."""
        return not self.dynamics.is_static() or bool(self.cross_flows)

    @property
    def cross_keys(self) -> list[str]:
        """The flows of kind "cross" (for refusals)."""
        return [f'flows.{f.group}.kind = "cross"' for f in self.cross_flows]

    @property
    def moving_keys(self) -> list[str]:
        """The spec keys that make the path move (for refusals)."""
        return self.dynamics.keys() + self.cross_keys


class ClampedFlow(Protocol):
    group: int
    sender: str
    cwnd_clamp: int | None


def sender_cwnd_clamps(flows: Iterable[ClampedFlow]) -> dict[str, int]:
    """The clamp of each sender namespace (pure). Raises ValueError naming
    the flows when flows of one sender ask for different clamps (one
    clamped, one not, counts as different): the route metric is per
    sender, not per flow."""
    flows = list(flows)
    wanted: dict[str, set[int | None]] = {}
    for f in flows:
        wanted.setdefault(f.sender, set()).add(f.cwnd_clamp)
    for sender, clamps in wanted.items():
        if len(clamps) > 1:
            keys = ", ".join(f"flows.{f.group}.cwnd_clamp = {f.cwnd_clamp if f.cwnd_clamp is not None else 'none'}"
                             for f in flows if f.sender == sender)
            raise ValueError(f"sender {sender!r}: {keys}: the kernel backend clamps cwnd with a route metric of the "
                             "sender's namespace, so all flows of one sender share one clamp; give each clamp its "
                             "own sender (the sim backend clamps per flow)")
    return {s: next(iter(c)) for s, c in wanted.items() if next(iter(c)) is not None}


def path_config(plan: RunPlan) -> PathConfig:
    """RunPlan → PathConfig (pure). ValueError if flows of one sender ask
    for different cwnd clamps (sender_cwnd_clamps) or tcp_ecn values
    (ecn.sender_tcp_ecn)."""
    clamps = sender_cwnd_clamps(plan.flows)
    tcp_ecn = sender_tcp_ecn(plan.flows, {name: h.ecn for name, h in plan.senders.items()})
    if plan.emulator not in EMULATORS:
        raise ValueError(f"path.emulator = {plan.emulator!r} is not a delay line; allowed are "
                         f"{', '.join(repr(e) for e in EMULATORS)}")
    return PathConfig(
        rate_bps=plan.rate_bps,
        rtt_s=plan.rtt_s,
        group_loss=group_losses(plan),
        buffer_bytes=plan.buffer_bytes,
        mtu_bytes=plan.mtu_bytes,
        senders={name: HostConfig(h.rmem_max_bytes, h.wmem_max_bytes, h.extra_rtt_s, clamps.get(name),
                                  tcp_ecn.get(name, h.ecn), h.qdisc)
                 for name, h in plan.senders.items()},
        receiver=HostConfig(plan.receiver.rmem_max_bytes, plan.receiver.wmem_max_bytes, plan.receiver.extra_rtt_s,
                            tcp_ecn=plan.receiver.ecn),
        seed=plan.seed,
        emulator=EMULATORS[plan.emulator],
        aqm=dict(plan.aqm),
        receiver_gro=plan.receiver.gro,
        mss_by_port={group_port(f.group): linux_segment_payload(f.mss_bytes, plan.mtu_bytes) for f in plan.flows
                     if f.kind != "cross"},
        dynamics=plan.dynamics,
        loss=plan.loss,
        corruption=plan.corruption,
        cross_flows=tuple(f for f in plan.flows if f.kind == "cross"),
        sample_interval_s=plan.sample_interval_s,
        duration_s=plan.duration_s,
    )


def group_losses(plan: RunPlan) -> tuple[GroupLoss, ...]:
    """Each flow group's loss per data packet (pure): random loss and
    corruption of the group's own MSS, the simulator's rule (scenario.rs,
    SimConfig.group_loss)."""
    return tuple(GroupLoss(f.group, f.mss_bytes, plan.packet_loss_probability(f.mss_bytes)) for f in plan.flows)


def gro_refusal(cfg: PathConfig, emulator: str, bottleneck: str) -> str | None:
    """Why a GRO receiver cannot be had with this delay line and
    bottleneck, or None (pure): only linkem carries TSO packets as units,
    and a qdisc discipline (fq_codel) takes the tbf bottleneck."""
    if cfg.receiver_gro and (emulator == "netem" or bottleneck == "tbf"):
        return (f"hosts.receiver.gro = true needs fatpipe-linkem as delay line and bottleneck (emulator={emulator!r}, "
                f"bottleneck={bottleneck!r} were asked for): netem and tbf handle every segment on its own")
    if cfg.receiver_gro and bottleneck_qdiscs(cfg.aqm):
        return (f"hosts.receiver.gro = true needs fatpipe-linkem as bottleneck, and path.aqm = "
                f"{cfg.aqm.get('kind')!r} is a qdisc below tbf, which handles every segment on its own")
    return None


def dynamics_refusal(cfg: PathConfig, emulator: str, bottleneck: str) -> str | None:
    """Why this path cannot move as its dynamics ask with this delay line
    and bottleneck, or None (pure): fatpipe-linkem applies them (the
    simulator's code, so one seed pairs), as delay line and bottleneck;
    netem (path.emulator = "netem") what its options express."""
    if not cfg.moves:
        return None
    if refused := state_trigger_refusal(cfg.dynamics):
        return refused
    if emulator == "netem":  # path.emulator = "netem": what its options express (netem_map.py)
        return netem_map.refusal(cfg.dynamics, cfg.cross_keys)
    keys = ", ".join(cfg.moving_keys)
    if bottleneck == "tbf":
        return (f"{keys} need fatpipe-linkem as delay line and bottleneck (emulator={emulator!r}, "
                f"bottleneck={bottleneck!r}): linkem applies them with the simulator's own code, so a seed "
                "meets the same losses and delays on both backends")
    if bottleneck_qdiscs(cfg.aqm):
        return (f"{keys} with path.aqm = {cfg.aqm.get('kind')!r}: that discipline is a qdisc below tbf, and "
                "only linkem's own bottleneck moves")
    jitter = cfg.dynamics.jitter
    reordering = ("path.jitter with reorder = true" if jitter is not None and jitter.reorder else
                  "path.reorder" if cfg.dynamics.reorder is not None else None)
    if cfg.receiver_gro and reordering:
        return (f"{reordering} and hosts.receiver.gro = true: linkem carries a GRO receiver's "
                "TSO packets as units, which cannot overtake each other segment by segment")
    return None


def state_trigger_refusal(dynamics: PathDynamics, flows: Sequence[FlowPlan] = ()) -> str | None:
    """Why a Linux path cannot apply the items of `dynamics` and of the
    flows' applications that wait for a sender's state (`on`), naming the
    first (`path.schedule.1.on = 'enter:DRAIN'`), or None (pure)."""
    items = [("path.schedule", dynamics.schedule), ("path.drops", dynamics.drops),
             *((f"flows.{f.group}.app", f.app.steps) for f in flows if f.app is not None)]
    watched = [f"{key}.{i}.on = {item.on.event!r}" for key, group in items for i, item in enumerate(group)
               if item.on is not None]
    if not watched:
        return None
    return (f"{watched[0]}: only the simulator can watch a sender's state (Linux shows BBR's mode only to "
            "polling, TCP_CC_INFO); give the item a time (at), or run the study on the sim backend")


def one_loss_refusal(group_loss: Sequence[GroupLoss], emulator: str) -> str | None:
    """Why `emulator` (a qdisc such as netem, one loss probability for every
    packet it sees) cannot apply the flow groups' `group_loss`, or None
    (pure): flow groups of different MSS on a path with corruption lose
    packets with different probabilities (each its (MSS + 40)·8 bits),
    which only linkem applies per group."""
    if len({g.loss for g in group_loss}) <= 1:
        return None
    groups = ", ".join(f"flows.{g.group}.mss = {g.mss_bytes} (loss {g.loss:.3g} per packet)" for g in group_loss)
    return (f"path.corruption > 0 with flow groups of different MSS ({groups}): {emulator} applies one loss "
            "probability to every flow group, the simulator each group's own; use fatpipe-linkem as the delay "
            "line (it applies each group's), or give the groups one MSS")


def one_loss(cfg: PathConfig, emulator: str) -> float:
    """The loss probability every packet of the sender → receiver direction
    meets under `emulator` (one qdisc for all groups); ValueError when the
    groups' differ (one_loss_refusal)."""
    refused = one_loss_refusal(cfg.group_loss, emulator)
    if refused:
        raise ValueError(refused)
    return cfg.group_loss[0].loss if cfg.group_loss else 0.0


def reverse_delays(cfg: PathConfig) -> tuple[float, dict[str, float]]:
    """One-way delay of the shared receiver → sender queue and of each
    sender that needs its own (pure). As the simulator: RTT/2 + the
    receiver's extra RTT + the sender's extra RTT, all on this direction."""
    shared = cfg.rtt_s / 2 + cfg.receiver.extra_rtt_s
    own = {name: shared + h.extra_rtt_s for name, h in cfg.senders.items() if h.extra_rtt_s > 0}
    return shared, own
