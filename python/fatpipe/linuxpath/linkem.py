"""fatpipe-linkem, the NFQUEUE delay line: finding or building the binary,
its argument list and its statistics (pure apart from the cargo build).

linkem holds each packet of an NFQUEUE until arrival + one-way delay and
drops TCP data segments with the configured probability, each flow group's
(by its port) with its own (crates/linkem/src/rng.rs); only the sender →
receiver queue is given loss (config.py). A queue with a bottleneck applies its rate,
buffer and, with a CE threshold, marks ECN-capable segments CE. It writes
JSON statistics to a file every second and on SIGTERM.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..schema import SERIES_COLUMNS
from .config import QUEUE_ACK, QUEUE_SENDER_BASE, PathConfig, reverse_delays
from .flows import group_port
from .workspace_binary import build_binary, find_binary

BINARY = "fatpipe-linkem"


def find_linkem() -> Path | None:
    """$FATPIPE_LINKEM, then PATH, then the workspace's release or debug build."""
    return find_binary(BINARY, "FATPIPE_LINKEM", ("release", "debug"))


def build_linkem() -> Path:
    """Build linkem with cargo (release) when the source tree is present."""
    return build_binary(BINARY, "linkem", timeout_s=600)


@dataclass(frozen=True)
class QueueConfig:
    num: int
    name: str
    delay_s: float
    loss: float = 0.0  # data segments of no flow group of group_loss
    rate_bps: float = 0.0  # bottleneck after the delay; 0 = none
    buffer_bytes: int = 0
    ce_threshold: str | None = None  # the bottleneck's CE threshold key (ecn.linkem_threshold), e.g. "ce_k_packets=20"
    # Unit mode (GRO receiver): the split queue, and each flow's segment payload by TCP port.
    split_queue: int | None = None
    mss_by_port: dict[int, int] = field(default_factory=dict)
    default_mss: int = 0
    # Each flow group's loss by its port: port → (group, loss per data
    # segment), drawn from the simulator's stage of that group.
    group_loss: dict[int, tuple[int, float]] = field(default_factory=dict)
    # The direction of the path's dynamics this queue applies ("data" or
    # "ack:K"; crates/linkem/src/moving.rs), None on a static path.
    moves: str | None = None


def linkem_group_loss(cfg: PathConfig) -> dict[int, tuple[int, float]]:
    """The data queue's loss for linkem (pure): group port → (flow group,
    loss), so that each group's data segments draw from the simulator's
    seeded stage of that group; empty on a lossless path that does not
    move (a moving path's loss may start at a step, and linkem finds each
    segment's group by this port map)."""
    if not any(g.loss > 0 for g in cfg.group_loss) and not cfg.moves:
        return {}
    return {group_port(g.group): (g.group, g.loss) for g in cfg.group_loss}


def reverse_queues(cfg: PathConfig, senders: Iterable[str]) -> tuple[list[QueueConfig], dict[str, int]]:
    """The receiver → sender queues (pure): the shared one, and one of each
    of `senders` (in order: sender i's is QUEUE_SENDER_BASE + i) with an
    extra RTT of its own; and those senders' queue numbers. They carry ACKs
    and RPC requests, and no loss: loss acts where the bottleneck sits
    (PathConfig.group_loss)."""
    shared, own = reverse_delays(cfg)
    queues = [QueueConfig(QUEUE_ACK, "ack", shared)]
    numbers = {}
    for i, name in enumerate(senders):
        if name in own:
            numbers[name] = QUEUE_SENDER_BASE + i
            queues.append(QueueConfig(numbers[name], f"ack-{name}", own[name]))
    return queues, numbers


RT_PRIORITY = 50  # SCHED_FIFO of the NAPI threads that take ACKs to the senders in namespaces
# linkem's threads run one step above them: its wake-ups are the delay line's
# clock, while a NAPI thread polls until its ring is empty (running the
# sender's TCP and its next transmissions), and at equal FIFO priority it
# held a linkem thread off its CPU for milliseconds (measured: BBR x4 in unit
# mode at 5 Gbit/s, lateness p99 8-47 ms at 50, 4-7 ms at 60).
LINKEM_RT_PRIORITY = RT_PRIORITY + 1


def dynamics_file(cfg: PathConfig) -> str:
    """What linkem's --dynamics file holds (pure): the plan's dynamics and
    the base path they step from, each flow group's MSS by group index, as
    the simulator builds its Dynamics (scenario.rs); and the flows of kind
    "cross" as the plan writes them (their group is their index in the
    plan's flows), the MTU they are checked against and the sample grid of
    their series rows (crates/linkem/src/moving.rs reads them with the
    simulator's reader)."""
    mss = [g.mss_bytes for g in sorted(cfg.group_loss, key=lambda g: g.group)]
    out = {"dynamics": asdict(cfg.dynamics), "rtt_s": cfg.rtt_s, "loss": cfg.loss,
           "corruption": cfg.corruption, "group_mss_bytes": mss}
    if cfg.cross_flows:
        out.update({"cross_flows": [asdict(f) for f in cfg.cross_flows], "mtu_bytes": cfg.mtu_bytes,
                    "sample_interval_s": cfg.sample_interval_s, "duration_s": cfg.duration_s})
    return json.dumps(out)


def cross_rows(stats: dict) -> list[dict]:
    """The series rows of the cross groups from linkem's final statistics
    (pure): one per source and sample instant, as the simulator writes them
    (engine/moving.rs cross_rows): the IP bytes of its packets that left
    the bottleneck in delivered_bytes, every TCP column 0 or empty."""
    rows = []
    for q in stats.get("queues", []):
        for t_s, group, stream, delivered in q.get("cross", {}).get("series", []):
            row = {k: ("" if kind == "str" else 0) for k, kind in SERIES_COLUMNS.items()}
            row.update(flow_group=group, stream=stream, t_s=float(t_s), delivered_bytes=delivered,
                       srtt_s=0.0, min_rtt_s=0.0, pacing_rate_bps=0.0, delivery_rate_bps=0.0,
                       rwnd_limited_s=0.0, sndbuf_limited_s=0.0, busy_s=0.0)
            rows.append(row)
    return rows


def origin_text(t0_wall_s: float) -> str:
    """What linkem's --origin-file holds (pure): the run's time zero as
    CLOCK_REALTIME ns of the machine linkem runs on (moving.rs turns it into
    its monotonic clock)."""
    return str(round(t0_wall_s * 1e9))


def moving_queues(queues: list[QueueConfig]) -> list[QueueConfig]:
    """The queues of a moving path (pure): the data queue (the first)
    applies the data direction, each reverse queue its ACK path, numbered
    in order."""
    data, *reverse = queues
    return [replace(data, moves="data"), *(replace(q, moves=f"ack:{k}") for k, q in enumerate(reverse))]


def linkem_args(binary: Path, queues: list[QueueConfig], seed: int, stats_path: Path,
                rt_priority: int = LINKEM_RT_PRIORITY, parent_pid: int | None = None,
                dynamics_path: Path | None = None, origin_path: Path | None = None) -> list[str]:
    """Argument list of one linkem process (pure, tested)."""
    args = [str(binary)]
    for q in queues:
        spec = f"num={q.num},delay_s={q.delay_s:.9f},loss={q.loss:.9g},name={q.name}"
        if q.group_loss:
            spec += ",group_loss=" + "/".join(f"{port}:{group}:{loss:.9g}"
                                              for port, (group, loss) in sorted(q.group_loss.items()))
        if q.rate_bps > 0:
            spec += f",rate_bps={q.rate_bps:.0f},buffer_bytes={q.buffer_bytes}"
            if q.ce_threshold:
                spec += f",{q.ce_threshold}"
        if q.split_queue is not None:
            spec += f",units_split={q.split_queue},default_mss={q.default_mss}"
            if q.mss_by_port:
                spec += ",mss=" + "/".join(f"{port}:{mss}" for port, mss in sorted(q.mss_by_port.items()))
        if q.moves:
            spec += f",moves={q.moves}"
        args += ["--queue", spec]
    args += ["--seed", str(seed), "--stats", str(stats_path), "--stats-interval-s", "0.5",
             "--rt-priority", str(rt_priority)]
    if parent_pid is not None:
        args += ["--parent-pid", str(parent_pid)]
    if dynamics_path is not None:
        args += ["--dynamics", str(dynamics_path), "--origin-file", str(origin_path)]
    return args


def summarize(stats: dict) -> dict:
    """Totals over queues of linkem statistics (pure)."""
    qs = stats.get("queues", [])
    return {
        "data_packets": sum(q["data_packets"] for q in qs),
        "dropped": sum(q["dropped"] for q in qs),
        "packets": sum(q["packets"] for q in qs),
        "late_p50_s": max((q["late_p50_s"] for q in qs), default=0.0),
        "late_p99_s": max((q["late_p99_s"] for q in qs), default=0.0),
        "late_max_s": max((q["late_max_s"] for q in qs), default=0.0),
        "max_packet_bytes": max((q["max_packet_bytes"] for q in qs), default=0),
        "gso_packets": sum(q["gso_packets"] for q in qs),
        # The bottleneck's drops and bytes count cross traffic with the flows'
        # packets, as the simulator's do (its bytes: the frames that left by
        # the last sample).
        "queue_drops": sum(q.get("queue_drops", 0) + sum(g["drops"] for g in q.get("cross", {}).get("groups", []))
                           for q in qs),
        "bottleneck_bytes": sum(q.get("bottleneck_bytes", 0)
                                + sum(g["frame_bytes"] for g in q.get("cross", {}).get("groups", [])) for q in qs),
        # Per cross group: IP bytes that left the bottleneck, packets dropped.
        "cross": {str(g["group"]): {"delivered_bytes": g["delivered_bytes"], "drops": g["drops"]}
                  for q in qs for g in q.get("cross", {}).get("groups", [])},
        "ce_marks": sum(q.get("ce_marks", 0) for q in qs),
        "ce_unmarkable": sum(q.get("ce_unmarkable", 0) for q in qs),
        "overflows": sum(q.get("enobufs", 0) + q.get("kernel_queue_dropped", 0) + q.get("kernel_user_dropped", 0)
                         for q in qs),
        # The delay line's CPU use over the measured part (cores: 1.0 = one core busy).
        "cpu_cores": stats["cpu_s"] / stats["wall_s"] if stats.get("wall_s") else None,
        # Unit mode (a GRO receiver): TSO packets carried whole, their
        # segments, those split, split segments that matched no fate, and
        # TSO packets none of whose segments passed (dropped whole).
        "units": sum(q.get("units", 0) for q in qs),
        "unit_segments": sum(q.get("unit_segments", 0) for q in qs),
        "split_units": sum(q.get("split_units", 0) for q in qs),
        "unit_mismatches": sum(q.get("unit_mismatches", 0) for q in qs),
        "dropped_units": sum(q.get("dropped_units", 0) for q in qs),
        # A moving path: data segments the policer dropped, packets that overtook.
        "policer_drops": sum(q.get("policer_drops", 0) for q in qs),
        "reordered": sum(q.get("reordered", 0) for q in qs),
        # Packets of the reverse queues (named "ack", "ack-<sender>"): the receiver's ACKs.
        "ack_packets": sum(q["packets"] for q in qs if q.get("name", "").startswith("ack")),
    }
