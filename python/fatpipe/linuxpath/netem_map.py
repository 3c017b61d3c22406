"""A path that moves, as netem options (pure, tested): what
``path.emulator = "netem"`` puts on each direction's netem qdisc, and what
netem cannot express (docs/path-dynamics.md, "With netem").

Each option follows sch_netem.c (Linux 6.x) and tc-netem(8):

* **Gilbert-Elliott** (``path.loss_model``) → ``loss gemodel p r 1-h 1-k``,
  four percentages in that order, all written (tc's defaults for those left
  out: r 100 %, 1-h 100 %, 1-k 0 %; iproute2 sets the kernel's h to
  100 % − the given 1-h). loss_gilb_ell() steps the chain once per packet:
  a packet finds a state, the chain moves (good → bad with p, bad → good
  with r) and the packet is lost with the loss of the state it found (1-k
  in the good state, 1-h in the bad one). netem's p follows from the mean
  loss as the simulator's does (:func:`gemodel_p`).
* **Jitter** (``path.jitter``) → ``delay D J``: tabledist() without a table
  draws uniformly in [D − J, D + J); ``distribution normal`` scales
  iproute2's normal table (16-bit entries at NETEM_DIST_SCALE 8192, so at
  most about ±4 J) by J as the standard deviation. A time to send before
  now sends at once, so the delay never goes below 0. tfifo_enqueue()
  orders packets by their own time to send, so jitter reorders
  (``reorder = true``). With ``reorder = false`` netem's rate extension
  (Linux 3.3+) keeps the order: once a rate is set netem_enqueue() takes
  the last queued packet's time to send as the reference, so a packet
  leaves no earlier than the one before it, plus its transmission time at
  that rate (:data:`IN_ORDER_RATE_BPS`).
* **Reorder** (``path.reorder``) → ``reorder P gap G``: netem_enqueue()
  sends a packet at once (time to send now, at the head of the queue)
  when the last G − 1 packets took their delay and a draw falls below P,
  as the simulator's reorder knob does (crates/sim/src/path/direction.rs),
  with netem's own draws.
* **Aggregation** (``path.aggregation``) → ``slot I I [bytes B]``: netem
  holds due packets until the slot's time; get_slot_next() opens the next
  slot I after the dequeue that found the last one spent (its bytes gone)
  or past; ``bytes`` is the slot's budget (no budget without it).

Each direction has its own netem: ``data`` the senders' (sender →
receiver), ``ack`` the receiver's (receiver → sender); the loss model acts
on the data direction only, where the path's loss acts. A schedule, a
policer, a delivery trace, cross traffic (and any other key that moves the
path) have no netem option: :func:`refusal` names them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..backends.base import GilbertElliott, PathDynamics
from .qdisc import QDISC_CONFIG, netem_percent, netem_time

# The rate of a netem whose jitter keeps packets in order (reorder =
# false): the rate extension then serialises each packet after the one
# before it. 32 Gbit/s fits tc_netem_rate's 32-bit bytes per second (no
# TCA_NETEM_RATE64 needed) and is over 3x the kernel backend's ceiling of
# 10 Gbit/s, so it never limits the path; it adds a 1514-byte frame's
# 0.38 us at most.
IN_ORDER_RATE_BPS = 32e9
DIRECTIONS = ("data", "ack")
# The keys of a moving path that netem options express (PathDynamics.keys()).
EXPRESSED = ("path.loss_model", "path.jitter", "path.reorder", "path.aggregation")


def gemodel_p(mean_loss: float, model: GilbertElliott) -> float:
    """netem's p (chance per packet of entering the bad state) whose chain
    has the long-run loss `mean_loss`: p = r (mean - good) / (bad - mean),
    clamped to [0, 1] as the simulator clamps it (crates/sim/src/path/loss.rs,
    GilbertElliott::enter_bad_probability)."""
    if mean_loss <= model.good_loss:
        return 0.0
    if mean_loss >= model.bad_loss:
        return 1.0
    return min(1.0, max(0.0, model.r * (mean_loss - model.good_loss) / (model.bad_loss - mean_loss)))


def refusal(dynamics: PathDynamics, cross_keys: Sequence[str]) -> str | None:
    """Why netem cannot apply this path's dynamics and cross traffic, naming
    the keys it cannot express (every one but :data:`EXPRESSED`), or None."""
    keys = [key for key in dynamics.keys() if key not in EXPRESSED] + list(cross_keys)
    if not keys:
        return None
    them = "it" if len(keys) == 1 else "them"
    return (f'{", ".join(keys)} with path.emulator = "netem": netem has no option for {them} (its options express '
            f'{", ".join(EXPRESSED)}; a schedule would need `tc qdisc change` from outside, a policer is a tc '
            'action, a trace and cross traffic are linkem\'s own bottleneck); path.emulator = "auto" or "linkem" '
            f"applies {them} in fatpipe-linkem, with the simulator's code and seed")


def direction_options(direction: str, delay_s: float, loss: float, dynamics: PathDynamics) -> list[str]:
    """The netem options (tc-netem(8), after ``limit``) of one direction's
    qdisc: its one-way delay `delay_s`, its loss per packet `loss` (the
    mean of the Gilbert-Elliott chain, on the data direction, when the path
    has one) and what of `dynamics` acts on `direction`. A static path gets
    ``delay D loss L``, what the kernel backend has always put there."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r}: a netem sits on 'data' (the senders') or 'ack' (the receiver's)")
    options = ["delay", netem_time(delay_s)]
    jitter = dynamics.jitter if dynamics.jitter and dynamics.jitter.direction in (direction, "both") else None
    if jitter is not None:
        options.append(netem_time(jitter.deviation_s))
        if jitter.distribution == "normal":
            options += ["distribution", "normal"]
    model = dynamics.gilbert_elliott if direction == "data" else None
    if model is not None:
        options += ["loss", "gemodel", netem_percent(gemodel_p(loss, model)), netem_percent(model.r),
                    netem_percent(model.bad_loss), netem_percent(model.good_loss)]
    else:
        options += ["loss", netem_percent(loss)]
    if jitter is not None and not jitter.reorder:
        options += ["rate", f"{int(IN_ORDER_RATE_BPS)}bit"]
    reorder = dynamics.reorder if dynamics.reorder and dynamics.reorder.direction in (direction, "both") else None
    if reorder is not None:
        options += ["reorder", netem_percent(reorder.probability), "gap", str(reorder.gap)]
    slot = dynamics.aggregation if dynamics.aggregation and dynamics.aggregation.direction == direction else None
    if slot is not None:
        options += ["slot", netem_time(slot.interval_s), netem_time(slot.interval_s)]
        if slot.bytes is not None:
            options += ["bytes", str(slot.bytes)]
    return options


def missing_netem(where: str) -> str:
    """The refusal of path.emulator = "netem" where `where` (the running
    kernel, an emulator host) has no netem qdisc."""
    return (f'path.emulator = "netem", but {where} has no netem qdisc (a kernel built without '
            f'{QDISC_CONFIG["netem"]}); use path.emulator = "auto" or "linkem" (fatpipe-linkem, which needs no '
            "netem)")
