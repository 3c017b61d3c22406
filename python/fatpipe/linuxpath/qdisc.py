"""`tc` argument lists of the path's qdiscs (pure, tested)."""

from __future__ import annotations

from dataclasses import dataclass

from ..wire import frame_bytes


def tbf_burst_bytes(rate_bps: float, mtu_bytes: int) -> int:
    """tbf bucket: 1 ms at the rate, at least 4 frames (tbf needs burst ≥
    the largest packet, and at high rates a timer tick's worth)."""
    return int(max(rate_bps / 8 * 1e-3, 4 * frame_bytes(mtu_bytes)))


def tbf_args(ifname: str, rate_bps: float, burst_bytes: int, limit_bytes: int) -> list[str]:
    """`tc` arguments of the bottleneck (pure, tested)."""
    return ["tc", "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "tbf",
            "rate", f"{int(rate_bps)}bit", "burst", str(burst_bytes), "limit", str(limit_bytes)]


def netem_args(ifname: str, delay_s: float, loss: float, parent: str | None = None) -> list[str]:
    """`tc` arguments of a netem delay (and loss) stage (pure, tested):
    the root qdisc of `ifname`, or the child of `parent` (below a tbf)."""
    return netem_qdisc_args(ifname, ["delay", netem_time(delay_s), "loss", netem_percent(loss)], parent)


def netem_qdisc_args(ifname: str, options: list[str], parent: str | None = None) -> list[str]:
    """`tc` arguments of a netem qdisc with `options` (tc-netem(8), after
    the limit): the root qdisc of `ifname`, or the child of `parent`."""
    where = ["parent", parent, "handle", "10:"] if parent else ["root"]
    return ["tc", "qdisc", "replace", "dev", ifname, *where, "netem", "limit", "1000000", *options]


def netem_time(seconds: float) -> str:
    """A time as netem's options take it, in milliseconds to the nanosecond."""
    return f"{seconds * 1e3:.6f}ms"


def netem_percent(probability: float) -> str:
    """A probability as netem's options take it: a percentage to 1e-9 %,
    finer than the kernel's 32-bit scale (iproute2's get_percent(): the
    fraction times 0xffffffff, about 2.3e-8 % a step)."""
    return f"{probability * 100:.9f}%"


# The qdiscs a Linux path may use and the kernel option that builds each
# (net/sched/Kconfig). Most distributions' kernels build all of them as
# modules; a kernel built without one has no such qdisc (`tc qdisc add`
# fails with "Specified qdisc kind is unknown"), so doctor probes each and
# a backend uses what the probe found.
QDISC_CONFIG = {
    "netem": "CONFIG_NET_SCH_NETEM",
    "tbf": "CONFIG_NET_SCH_TBF",
    "fq_codel": "CONFIG_NET_SCH_FQ_CODEL",
    "fq": "CONFIG_NET_SCH_FQ",
    "red": "CONFIG_NET_SCH_RED",
}
# A small valid instance of each, for the probe (tc parses these options
# before it asks the kernel, so only a missing qdisc makes the probe fail).
_PROBE_OPTIONS = {
    "netem": ["delay", "1ms"],
    "tbf": ["rate", "1gbit", "burst", "100000", "limit", "100000"],
    "fq_codel": [],
    "fq": [],
    "red": ["limit", "400000", "min", "30000", "max", "90000", "avpkt", "1000", "burst", "55",
            "bandwidth", "1gbit"],
    # A sender's root qdisc (HOST_QDISC_PACES); pfifo_fast has no config
    # option (net/sched/sch_generic.c builds it in), but is probed all the same.
    "pfifo_fast": [],
}
# Where the bottleneck's discipline sits below tbf: tbf grafts its one
# child on class 1 (tbf_graft), in place of its own byte-limited bfifo.
TBF_CHILD = "1:1"


def probe_args(kind: str, ifname: str) -> list[str]:
    """`tc` arguments that add a small `kind` qdisc as the root of `ifname`
    (a probe: the caller removes it again)."""
    return ["tc", "qdisc", "add", "dev", ifname, "root", "handle", "9:", kind, *_PROBE_OPTIONS[kind]]


def _tc_time(seconds: float) -> str:
    """A time as tc reads it, in whole microseconds (tc's time unit)."""
    return f"{round(seconds * 1e6)}us"


def fq_codel_args(ifname: str, parent: str, aqm: dict) -> list[str]:
    """`tc` arguments of fq_codel with the plan's parameters (RunPlan.aqm
    of kind "fq_codel", aqm.Aqm.plan) as the child of `parent` (pure,
    tested): target, interval, limit (packets), quantum (bytes), ecn or
    noecn, and ce_threshold when the plan sets one (tc-fq_codel(8))."""
    args = ["tc", "qdisc", "replace", "dev", ifname, "parent", parent, "handle", "20:", "fq_codel",
            "target", _tc_time(aqm["target_s"]), "interval", _tc_time(aqm["interval_s"]),
            "limit", str(int(aqm["limit_packets"])), "quantum", str(int(aqm["quantum_bytes"])),
            "ecn" if aqm["ecn"] else "noecn"]
    if aqm.get("ce_threshold_s") is not None:
        args += ["ce_threshold", _tc_time(aqm["ce_threshold_s"])]
    return args


def bottleneck_qdiscs(aqm: dict) -> list[str]:
    """The qdiscs (beyond tbf) the discipline `aqm` needs on the path (pure)."""
    return ["fq_codel"] if aqm.get("kind") == "fq_codel" else []


def tbf_bottleneck_args(ifname: str, rate_bps: float, burst_bytes: int, limit_bytes: int, aqm: dict) \
        -> list[list[str]]:
    """The `tc` commands of a tbf bottleneck on `ifname` with discipline
    `aqm` (pure, tested): tbf (rate, burst; `limit_bytes` is its bfifo's
    tail-drop buffer), and for fq_codel that qdisc in tbf's child slot,
    which replaces the bfifo: fq_codel's packet limit is then the buffer and
    tbf only paces what fq_codel hands it (as the simulator's fq_codel path
    does)."""
    commands = [tbf_args(ifname, rate_bps, burst_bytes, limit_bytes)]
    if aqm.get("kind") == "fq_codel":
        commands.append(fq_codel_args(ifname, TBF_CHILD, aqm))
    return commands


# -- the sending host's root qdisc (spec hosts.<name>.qdisc) ----------------
# Whether each root qdisc a sender may ask for paces every flow at its
# sk_pacing_rate (the simulator's table: crates/sim/src/host_plan.rs QDISCS).
# fq does: it marks each socket it sees SK_PACING_FQ (fq_enqueue()) and
# holds every packet to its flow's departure time (fq_dequeue()). fq_codel
# and pfifo_fast do not: only a socket that is SK_PACING_NEEDED (BBR asks
# for it in bbr_init()) is paced, by TCP itself (tcp_needs_internal_pacing()).
HOST_QDISC_PACES = {"fq": True, "fq_codel": False, "pfifo_fast": False}


@dataclass(frozen=True)
class SenderQdisc:
    """What a sending host got for the root qdisc it asked for."""

    asked: str
    tc_kind: str | None  # the root qdisc put on the sender's interface (None: its own is left)
    internal_pacing: bool  # every socket of the sender is set SK_PACING_NEEDED (SO_MAX_PACING_RATE)
    applied: str  # what the run's facts record

    def facts(self) -> dict[str, str]:
        return {"asked": self.asked, "applied": self.applied}


def sender_qdisc(asked: str, in_kernel: bool | None) -> SenderQdisc:
    """The decision for a sender that asked for root qdisc `asked` (pure,
    tested). `in_kernel`: what the probe found (probe_args on the sender's
    interface), or None where fatpipe leaves the host's root qdisc as it is
    (a real host: the hosts backend changes no qdisc of an end host).

    * in the kernel: that qdisc, as the interface's root (`root_qdisc_args`);
    * fq otherwise: Linux's internal pacing for every socket of the sender
      (the engine sets SO_MAX_PACING_RATE: engine.py's ``internal_pacing``),
      which paces each at its sk_pacing_rate as fq would
      (docs/host-model.md, "qdisc", says how far that reproduces fq);
    * fq_codel or pfifo_fast otherwise: nothing, since neither paces a flow
      (HOST_QDISC_PACES) and neither does the interface's own qdisc (a
      veth's default is noqueue)."""
    if asked not in HOST_QDISC_PACES:
        raise ValueError(f"qdisc {asked!r}: allowed are {', '.join(HOST_QDISC_PACES)}")
    if in_kernel:
        return SenderQdisc(asked, asked, False, asked)
    why = f"no sch_{asked} in this kernel" if in_kernel is False else "the host's root qdisc is left as it is"
    if HOST_QDISC_PACES[asked]:
        return SenderQdisc(asked, None, True, f"internal pacing ({why})")
    return SenderQdisc(asked, None, False, f"none ({why}; {asked} paces no flow, nor does the default)")


def root_qdisc_args(ifname: str, kind: str) -> list[str]:
    """`tc` arguments that make `kind` (with its defaults) the root qdisc of
    `ifname` (pure, tested)."""
    return ["tc", "qdisc", "replace", "dev", ifname, "root", kind]
