"""Per-run summary rows, computed the same way for every backend.

A backend returns raw per-stream samples (cumulative counters); this module
turns them into one row per flow group of the runs table, excluding the
warm-up, and adds validity flags for what the path really did. Goodput
follows the one definition in fatpipe.goodput.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .backends.base import PathReport, RunOutcome, RunPlan
from .goodput import interval_goodput_bps, measurement_window, window_goodput_bps
from .schema import cpu_saturated, emulator_late

# A flow counts as limited by an end host when the receive window or send
# buffer limited it for more than this fraction of the measured time.
HOST_LIMIT_FRACTION = 0.10
# Runs whose path deviates from the spec by more than this are flagged.
PATH_TOLERANCE = 0.10
# A run whose flows could have filled the link (rate_short) but got less than
# this fraction of its rate is flagged `rate_short`: the path did not carry
# its configured rate (a kernel path whose machine cannot keep up).
RATE_SHORT_FRACTION = 0.5
# A paced stream (SO_MAX_PACING_RATE, the host's stream_rate_cap) whose
# goodput after the warm-up is above its cap by more than this is flagged
# `pacing_exceeded`: Linux paces the payload (tcp_update_skb_after_send()
# times the skb's data at sk_pacing_rate), so goodput cannot pass it; the
# samples' clock moves the window's ends by well under 1 % of a 1 s window.
PACING_TOLERANCE = 0.02
# Hosts on their own clocks (hosts backend): a run whose clock offsets are
# uncertain by more than this fraction of the sampling interval is flagged
# `clock_uncertain` (its hosts' samples may be misaligned by that much).
CLOCK_FRACTION_OF_INTERVAL = 0.1


def _percentile(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if values.size else None


# The series columns group_metrics reads.
_METRIC_COLUMNS = ("t_s", "delivered_bytes", "retrans_segments", "segs_out", "rwnd_limited_s",
                   "sndbuf_limited_s", "srtt_s", "min_rtt_s")


def _stream_arrays(outcome: RunOutcome, group: int) -> list[dict[str, np.ndarray]]:
    """Each stream of flow group `group`: its samples of _METRIC_COLUMNS in
    time order, in stream order. Each column becomes an array once and the
    group's rows are sorted once (by stream, then time), so the cost grows
    with the rows, not with rows × streams."""
    s = outcome.series
    groups = np.asarray(s["flow_group"], dtype=np.int64)
    rows = np.nonzero(groups == group)[0]
    if not rows.size:
        return []
    streams = np.asarray(s["stream"], dtype=np.int64)[rows]
    cols = {k: np.asarray(s[k])[rows] for k in _METRIC_COLUMNS}
    order = np.lexsort((cols["t_s"], streams))  # by stream, then time (stable within equal times)
    streams = streams[order]
    cols = {k: v[order] for k, v in cols.items()}
    starts = np.flatnonzero(np.r_[True, streams[1:] != streams[:-1]])
    ends = np.r_[starts[1:], streams.size]
    return [{k: v[a:b] for k, v in cols.items()} for a, b in zip(starts, ends, strict=True)]


def group_metrics(plan: RunPlan, outcome: RunOutcome, group: int) -> dict[str, Any]:
    """Goodput, retransmissions, RTT and host-limit fractions of one group."""
    goodput_bps = 0.0
    per_stream_bps = []
    retrans = segs = 0.0
    rwnd_s = sndbuf_s = span_s = 0.0
    srtts, min_rtts = [], []
    for arr in _stream_arrays(outcome, group):
        w = measurement_window(arr["t_s"], plan.warmup_s)
        bps = window_goodput_bps(arr["t_s"], arr["delivered_bytes"], w) if w else None
        if bps is None:
            continue
        a, b = w
        dt = float(arr["t_s"][b] - arr["t_s"][a])
        per_stream_bps.append(bps)
        goodput_bps += bps
        retrans += float(arr["retrans_segments"][b] - arr["retrans_segments"][a])
        segs += float(arr["segs_out"][b] - arr["segs_out"][a])
        rwnd_s += float(arr["rwnd_limited_s"][b] - arr["rwnd_limited_s"][a])
        sndbuf_s += float(arr["sndbuf_limited_s"][b] - arr["sndbuf_limited_s"][a])
        span_s += dt
        srtt = arr["srtt_s"][a : b + 1]
        srtts.append(srtt[srtt > 0])
        mr = arr["min_rtt_s"][a : b + 1]
        if (mr > 0).any():
            min_rtts.append(float(mr[mr > 0].min()))
    srtt_all = np.concatenate(srtts) if srtts else np.array([])
    return {
        "goodput_bps": goodput_bps if per_stream_bps else None,
        "stream_goodput_min_bps": min(per_stream_bps) if per_stream_bps else None,
        "stream_goodput_max_bps": max(per_stream_bps) if per_stream_bps else None,
        "retrans_rate": retrans / segs if segs > 0 else None,
        "retrans_segments": int(retrans),
        "srtt_p50_s": _percentile(srtt_all, 50),
        "srtt_p99_s": _percentile(srtt_all, 99),
        "min_rtt_s": min(min_rtts) if min_rtts else None,
        "rwnd_limited_frac": rwnd_s / span_s if span_s > 0 else None,
        "sndbuf_limited_frac": sndbuf_s / span_s if span_s > 0 else None,
    }


def rpc_metrics(plan: RunPlan, outcome: RunOutcome, group: int) -> dict[str, Any]:
    """Completion-time percentiles, RPC goodput and slowdown of an RPC group."""
    r = outcome.rpcs
    g = np.asarray(r["flow_group"], dtype=np.int64)
    start = np.asarray(r["start_s"], dtype=float)
    mask = (g == group) & (start >= plan.warmup_s)
    dur = np.asarray(r["duration_s"], dtype=float)[mask]
    size = np.asarray(r["response_bytes"], dtype=float)[mask]
    measured_s = plan.duration_s - plan.warmup_s
    ideal_s = ideal_rpc_time_s(plan, group, outcome.path.min_rtt_s)
    out: dict[str, Any] = {
        "rpc_count": int(mask.sum()),
        "rpc_goodput_bps": float(size.sum() * 8 / measured_s) if measured_s > 0 else None,
        "rpc_ideal_s": ideal_s,
    }
    for q, name in ((50, "p50"), (90, "p90"), (99, "p99"), (99.9, "p999")):
        out[f"rpc_{name}_s"] = _percentile(dur, q)
    out["rpc_slowdown_p50"] = out["rpc_p50_s"] / ideal_s if out["rpc_p50_s"] and ideal_s else None
    out["rpc_slowdown_p99"] = out["rpc_p99_s"] / ideal_s if out["rpc_p99_s"] and ideal_s else None
    return out


def transfer_metrics(plan: RunPlan, outcome: RunOutcome, group: int) -> dict[str, Any]:
    """Completion times of a transfer group's data sets in this run: how
    many started (``transfer_count``: those arriving before the run's end)
    and completed, their mean, median, 95th percentile and largest
    completion time, and their mean goodput (size / completion time)."""
    t = outcome.transfers
    mask = np.asarray(t["flow_group"], dtype=np.int64) == group
    dur = np.asarray(t["duration_s"], dtype=float)[mask]
    size = np.asarray(t["size_bytes"], dtype=float)[mask]
    transfer = plan.flows[group].transfer
    return {
        "transfer_count": len(transfer.starts_s) if transfer else 0,
        "transfer_done": int(mask.sum()),
        "transfer_size_bytes": transfer.size_bytes if transfer else None,
        "fct_mean_s": float(dur.mean()) if dur.size else None,
        "fct_p50_s": _percentile(dur, 50),
        "fct_p95_s": _percentile(dur, 95),
        "fct_max_s": float(dur.max()) if dur.size else None,
        "transfer_goodput_bps": float(np.mean(size * 8 / dur)) if dur.size else None,
    }


def ideal_rpc_time_s(plan: RunPlan, group: int, measured_rtt_s: float | None = None) -> float | None:
    """Completion time of one RPC on an empty path with no window limit: one
    round trip plus the response's serialization at the bottleneck rate. On
    a real path (no path.rtt) the round trip is the smallest the run
    measured and the rate unknown (no serialization term); None if neither."""
    flow = plan.flows[group]
    rtt_s = _flow_rtt_s(plan, flow.sender) if plan.rtt_s is not None else measured_rtt_s
    if rtt_s is None:
        return None
    return rtt_s + ((flow.response_bytes or 0) * 8 / plan.rate_bps if plan.rate_bps else 0.0)


def _flow_rtt_s(plan: RunPlan, sender_name: str) -> float:
    """Base round trip of a flow from `sender_name`: the path's RTT plus
    the sender's and the receiver's extra RTT."""
    sender = plan.senders.get(sender_name)
    return plan.rtt_s + (sender.extra_rtt_s if sender else 0.0) + plan.receiver.extra_rtt_s


def path_flags(plan: RunPlan, path: PathReport) -> list[str]:
    """Flags for a path that did not do what the spec asked (± 10 %).

    The bottleneck's throughput alone is not flagged here: a run that
    leaves the link idle (light RPC traffic, a loss-limited CCA) is not a
    faulty path. A late delay line is what makes an emulated link slower
    than its spec, and that is flagged as `emulator_late`; a link that
    carried well below its rate while the flows could have filled it is
    flagged `rate_short` by summarize() (see rate_short())."""
    flags = []
    if plan.rtt_s is None:  # the real path, not emulated: nothing to compare with
        return ["clock_uncertain"] if _clock_uncertain(plan, path) else []
    dyn = plan.dynamics
    # A path that moves: the least RTT a schedule sets, plus what release
    # slots and jitter may add to every packet (docs/path-dynamics.md).
    least_rtt_s = min([plan.rtt_s, *(s.rtt_s for s in dyn.schedule if s.rtt_s is not None)])
    slack_s = (dyn.aggregation.interval_s if dyn.aggregation else 0.0) + (dyn.jitter.deviation_s if dyn.jitter else 0.0)
    if path.min_rtt_s is not None and path.min_rtt_s > least_rtt_s * (1 + PATH_TOLERANCE) + 1e-4 + slack_s:
        flags.append("rtt_inflated")
    tcp = [f for f in plan.flows if f.kind != "cross"]  # cross traffic passes no loss stage
    expected = plan.packet_loss_probability(tcp[0].mss_bytes) if tcp else plan.loss
    # Loss that changes over the run or comes in bursts has no binomial
    # expectation to hold it to: not checked.
    moving_loss = dyn.gilbert_elliott is not None or any(s.loss is not None for s in dyn.schedule)
    if path.packets and expected > 0 and path.loss_rate is not None and not moving_loss:
        # Deviation beyond 10 % that is also beyond 3 standard errors.
        sigma = math.sqrt(expected * (1 - expected) / path.packets)
        if abs(path.loss_rate - expected) > max(PATH_TOLERANCE * expected, 3 * sigma):
            flags.append("loss_off")
    if emulator_late(path.late_p99_s, plan.rtt_s):
        flags.append("emulator_late")
    if _clock_uncertain(plan, path):
        flags.append("clock_uncertain")
    if path.host_drops:
        flags.append("host_drops")
    return flags


def _clock_uncertain(plan: RunPlan, path: PathReport) -> bool:
    return path.clock_uncertainty_s is not None and \
        path.clock_uncertainty_s > CLOCK_FRACTION_OF_INTERVAL * plan.sample_interval_s


def rate_short(plan: RunPlan, rows: list[dict[str, Any]]) -> bool:
    """Whether the link carried well below its configured rate while the
    flows should have kept it saturated: every group is bulk, none was
    limited by its receive window or send buffer, no host rate cap adds up
    to less than the rate, the configured random loss alone allows the
    rate (Mathis et al. 1997: each Reno stream reaches C·MSS/(RTT·√p);
    CUBIC and BBR get at least that), yet the groups' goodput after the
    warm-up adds up to less than RATE_SHORT_FRACTION of the rate. A link
    left idle by the traffic itself (RPCs, a loss-bound CCA, a host limit)
    is not flagged."""
    if not rows or plan.rate_bps is None or any(f.kind != "bulk" for f in plan.flows):
        return False
    if not plan.dynamics.is_static():  # the link's rate over the run is not path.rate
        return False
    if any(r["goodput_bps"] is None or (r.get("rwnd_limited_frac") or 0) > HOST_LIMIT_FRACTION
           or (r.get("sndbuf_limited_frac") or 0) > HOST_LIMIT_FRACTION for r in rows):
        return False
    if sum(r["goodput_bps"] for r in rows) >= RATE_SHORT_FRACTION * plan.rate_bps:
        return False
    capped = sum(f.streams * (plan.senders[f.sender].stream_rate_cap_bps or math.inf)
                 if f.sender in plan.senders else math.inf for f in plan.flows)
    if capped < plan.rate_bps:
        return False
    from .analysis.models import mathis_bps  # heavy package; only for runs already short

    loss_bound = sum(f.streams * mathis_bps(f.mss_bytes, _flow_rtt_s(plan, f.sender),
                                            plan.packet_loss_probability(f.mss_bytes))
                     for f in plan.flows)
    return loss_bound >= plan.rate_bps


def summarize(plan: RunPlan, outcome: RunOutcome) -> list[dict[str, Any]]:
    """One runs-table row per flow group."""
    shared_flags = path_flags(plan, outcome.path)
    if cpu_saturated(outcome.cpu.busy_max_core_frac):
        # A core of a sender's or the receiver's machine was saturated
        # (schema.CPU_SATURATED_FRAC): the hosts, not only the path, may
        # have set the rate.
        shared_flags.append("cpu_bound")
    rows = []
    for group, flow in enumerate(plan.flows):
        row: dict[str, Any] = {
            "flow_group": group,
            "kind": flow.kind,
            "cc": flow.cc,
            "streams": flow.streams,
            "mss_bytes": flow.mss_bytes,
            "sender": flow.sender,
            "start_s": flow.start_s,
        }
        if any(f.cwnd_clamp is not None for f in plan.flows):
            # Only in runs that clamp a flow, so other tables keep their columns.
            row["cwnd_clamp"] = flow.cwnd_clamp
        if any(f.pacing_rate_bps is not None for f in plan.flows):
            row["pacing_rate_bps"] = flow.pacing_rate_bps
        row.update(group_metrics(plan, outcome, group))
        if flow.kind == "rpc":
            row.update(rpc_metrics(plan, outcome, group))
        flags = list(shared_flags)
        if flow.kind == "transfer":
            row.update(transfer_metrics(plan, outcome, group))
            if row["transfer_done"] < row["transfer_count"]:
                flags.append("transfer_incomplete")  # a data set had not arrived by the run's end
        if (row.get("rwnd_limited_frac") or 0) > HOST_LIMIT_FRACTION:
            flags.append("rwnd_limited")
        if (row.get("sndbuf_limited_frac") or 0) > HOST_LIMIT_FRACTION:
            flags.append("sndbuf_limited")
        if row["goodput_bps"] is None:
            flags.append("no_samples")
        cap = plan.stream_pacing_cap_bps(flow) if flow.kind != "cross" else None
        if cap is not None and (row.get("stream_goodput_max_bps") or 0) > cap * (1 + PACING_TOLERANCE):
            flags.append("pacing_exceeded")  # a stream went faster than it was paced
        row["flags"] = flags
        rows.append(row)
    short = rate_short(plan, rows)
    for row in rows:
        row["flags"] = ",".join(row["flags"] + (["rate_short"] if short else []))
    return rows


def series_with_goodput(outcome: RunOutcome) -> dict[str, list]:
    """The series plus `goodput_bps`: delivered bytes per interval per stream."""
    s = {k: list(v) for k, v in outcome.series.items()}
    s["goodput_bps"] = interval_goodput_bps(s)
    return s
