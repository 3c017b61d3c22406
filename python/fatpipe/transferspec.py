"""Transfers of a given size: a ``[[flows]]`` entry of ``kind = "transfer"``
(docs/transfers.md). A data set of ``size`` bytes moves over the group's
``streams`` connections, and the run records when its last byte reached
the receiver (the transfers table; the runs table's ``fct_*`` columns).

* ``size``: the bytes of one data set (``"2GB"``);
* ``split``: how the application spreads them over its streams, as the
  tools of the field do: ``"equal"`` (the default: each stream writes
  size / streams, the first ones a byte more where it does not divide, as
  iperf3 ``-P`` with ``-n`` or a striped GridFTP transfer) or
  ``"chunks"`` (work stealing: each stream takes the next ``chunk`` bytes
  once its write of the last one has returned, as bbcp and fdt hand out
  blocks to their threads);
* ``count``: data sets in the group (default 1). The first starts at
  ``start``; with more, they arrive as a Poisson process of ``rate``
  arrivals per second (``"0.2/s"``), each on its own ``streams``
  connections. Arrival times are drawn from the run's seed, so the runs of
  one seed on every backend move the same data sets at the same instants;
  a data set arriving after the run's end is not started.

Connections are set up before the run starts, as for every flow kind; a
transfer's completion time runs from its planned start (its streams' first
writes follow within the sender's start spread, as every flow's streams
do) to the instant the receiver has every byte (the handshake is not part
of it).

:func:`flow_problems` checks one flow's keys (FlowSection's validator);
:func:`plan` gives the run plan's TransferPlan for a run's seed.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from .backends import base as run_plan

if TYPE_CHECKING:  # spec.py imports this module
    from .spec import FlowSection

KIND = "transfer"
SPLITS = ("equal", "chunks")
# The keys only a transfer takes.
KEYS = ("size", "split", "chunk", "count")
# The RPC keys a transfer refuses (rate is its arrival rate).
RPC_ONLY_KEYS = ("request", "response", "concurrency")
MAX_COUNT = 10_000
# Connections of one flow group over all its data sets: the most a flow
# group opens (FlowSection.streams), one thread each in the Linux engine.
MAX_CONNECTIONS = 1000


def flow_problems(flow: FlowSection) -> list[str]:
    """What is wrong with one flow's transfer keys, each naming the key."""
    given = flow.model_fields_set
    if flow.kind != KIND:
        extra = [k for k in KEYS if k in given]
        return [f"{', '.join(extra)} only apply to kind = \"{KIND}\""] if extra else []
    out = [f"{k} does not apply to kind = \"{KIND}\" (it is an RPC key)" for k in RPC_ONLY_KEYS if k in given]
    if flow.size is None:
        out.append(f"kind = \"{KIND}\" needs size: the bytes of one data set, such as '2GB'")
    if flow.split == "chunks" and flow.chunk is None:
        out.append("split = \"chunks\" needs chunk: the bytes a stream takes at a time, such as '64MB'")
    if flow.split != "chunks" and flow.chunk is not None:
        out.append("chunk applies to split = \"chunks\" (work stealing); with split = \"equal\" each stream "
                   "writes size / streams")
    count = flow.count or 1
    if count > 1 and flow.rate is None:
        out.append(f"count = {count} needs rate: the data sets' Poisson arrivals per second, such as '0.5/s'")
    if count == 1 and flow.rate is not None:
        out.append("rate is the arrival rate of a flow's data sets; with count = 1 there is one, at start")
    if count * flow.streams > MAX_CONNECTIONS:
        out.append(f"count x streams = {count} x {flow.streams} connections; at most {MAX_CONNECTIONS}")
    return out


def arrivals_s(flow: FlowSection, seed: int, group: int, duration_s: float) -> tuple[float, ...]:
    """When each data set starts, seconds from the run's start: the first at
    `start`, the next after exponential gaps of mean 1/rate (a Poisson
    process) drawn from the run's seed and the group; those at or after
    `duration_s` are left out."""
    starts = [flow.start]
    if (flow.count or 1) > 1:
        draw = random.Random(f"transfer-arrivals:{seed}:{group}")
        while len(starts) < (flow.count or 1):
            t = starts[-1] + draw.expovariate(float(flow.rate))  # type: ignore[arg-type]
            if t >= duration_s:
                break
            starts.append(t)
    return tuple(starts)


def plan(flow: FlowSection, seed: int, group: int, duration_s: float) -> run_plan.TransferPlan | None:
    """The run plan's TransferPlan of a transfer flow (None for the other kinds)."""
    if flow.kind != KIND:
        return None
    from .appspec import TICK_S  # the application's one write period

    return run_plan.TransferPlan(size_bytes=int(flow.size), split=flow.split or "equal",  # type: ignore[arg-type]
                                 chunk_bytes=flow.chunk, tick_s=TICK_S,
                                 starts_s=arrivals_s(flow, seed, group, duration_s))


def stream_shares(size_bytes: int, streams: int) -> list[int]:
    """Each stream's bytes under split = "equal": size // streams, the
    first size % streams streams one byte more (the one definition; the
    simulator's crates/sim/src/transfer.rs splits the same way)."""
    base, extra = divmod(size_bytes, streams)
    return [base + (1 if i < extra else 0) for i in range(streams)]
