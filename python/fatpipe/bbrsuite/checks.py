"""A BBR test case's criteria evaluated from a run's tables: the series
(the CCA's variables per sampling interval, cc_* columns) and the events
table (each state change with the variables right after it), as the
draft's checks read BBR's own variables (docs/bbr-test-cases.md).

Each criterion gets a verdict: "pass" or "fail" with the value measured,
"n/a" (the CCA has no such state or variable: BBR v1 has no PROBE_UP, no
inflight_longterm), or "not evaluated" with what the tables lack (the
draft reads per-ACK values — a round's loss rate, the rate sample's
app-limited bit — that fatpipe does not record, or an event it does not
log)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .catalogue import Criterion

# The draft's states -> the simulator's cc_state values (crates/sim's
# CcVars::state): v1 has one PROBE_BW state, bbr3 its four phases.
STATES: dict[str, tuple[str, ...]] = {
    "STARTUP": ("startup",),
    "DRAIN": ("drain",),
    "PROBE_BW": ("probe_bw", "probe_bw_down", "probe_bw_cruise", "probe_bw_refill", "probe_bw_up"),
    "PROBE_DOWN": ("probe_bw_down",),
    "PROBE_CRUISE": ("probe_bw_cruise",),
    "PROBE_REFILL": ("probe_bw_refill",),
    "PROBE_UP": ("probe_bw_up",),
    "PROBE_RTT": ("probe_rtt",),
}

# The draft's variables -> the tables' columns (series and events alike).
COLUMNS: dict[str, str] = {
    "max_bw": "cc_max_bw_bps",
    "full_bw_count": "cc_full_bw_count",
    "full_bw_now": "cc_full_bw_now",
    "full_bw_reached": "cc_full_bw_reached",
    "pacing_gain": "cc_pacing_gain",
    "cwnd_gain": "cc_cwnd_gain",
    "inflight_longterm": "cc_inflight_hi_segments",
    "inflight_shortterm": "cc_inflight_lo_segments",
    "bw_shortterm": "cc_bw_lo_bps",
    "extra_acked": "cc_extra_acked_segments",
    "undo_bw_shortterm": "cc_undo_bw_lo_bps",
    "undo_inflight_shortterm": "cc_undo_inflight_lo_segments",
    "undo_inflight_longterm": "cc_undo_inflight_hi_segments",
}
# Series-only columns (tcp_info).
SERIES_ONLY: dict[str, str] = {"cwnd": "cwnd_segments", "cwnd_packets": "cwnd_segments",
                               "pacing_rate": "pacing_rate_bps", "inflight": "inflight_segments"}


@dataclass(frozen=True)
class Verdict:
    status: str  # "pass" | "fail" | "n/a" | "not evaluated"
    measured: str = ""
    why: str = ""


@dataclass(frozen=True)
class RunTables:
    """One run's tables, as columns (one stream), and the path it ran on."""

    series: Mapping[str, np.ndarray]
    events: Mapping[str, np.ndarray]
    payload_rate_bps: float  # the bottleneck's rate in payload terms (wire.goodput_ceiling_bps)
    schedule_s: tuple[float, ...]  # the instants of the path's schedule steps
    rate_after_steps_bps: tuple[float, ...]  # the payload rate after each step
    policer_payload_bps: float | None
    duration_s: float
    # The events come from the backend's log (False: read off the samples,
    # which show state changes only: no full_bw_reached or cycle events).
    logged_events: bool = True


def expand_pass_through(events: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The events with each DRAIN crossed within one ACK made explicit.
    The log compares the state after each ACK, so STARTUP → DRAIN → PROBE_BW
    on one ACK (bbr_check_drain() right after the full-bandwidth exit:
    inflight already at or below the BDP) reads STARTUP → PROBE_BW. BBR's
    state machine has no such edge (Linux bbr_update_model: STARTUP leaves
    only for DRAIN or PROBE_RTT), so that row stands for both steps, at the
    same instant with the same variables."""
    n = len(events.get("t_s", []))
    rows = []
    for i in range(n):
        if events["kind"][i] == "cc_state" and events["from_state"][i] == "startup" \
                and str(events["to_state"][i]).startswith("probe_bw"):
            rows += [(i, "startup", "drain"), (i, "drain", str(events["to_state"][i]))]
        else:
            rows.append((i, str(events["from_state"][i]), str(events["to_state"][i])))
    out = {k: np.asarray([v[i] for i, _, _ in rows], dtype=object) for k, v in events.items()}
    if n:
        out["from_state"] = np.asarray([f for _, f, _ in rows], dtype=object)
        out["to_state"] = np.asarray([t for _, _, t in rows], dtype=object)
        out["cc_state"] = out["to_state"].copy() if "cc_state" in out else out["to_state"]
    return out


def _states(name: str | None) -> tuple[str, ...] | None:
    return STATES.get((name or "").upper())


def _exists(t: RunTables, draft_state: str) -> bool:
    """Whether the run's CCA has the draft's state at all (seen or known)."""
    seen = {str(s) for s in t.series.get("cc_state", []) if s is not None}
    if not seen:
        return False
    v1 = "probe_bw" in seen or ("startup" in seen and not any(s.startswith("probe_bw_") for s in seen))
    return not (v1 and draft_state in ("PROBE_DOWN", "PROBE_CRUISE", "PROBE_REFILL", "PROBE_UP"))


def _event_rows(t: RunTables, kind: str, *, from_states=None, to_states=None) -> list[int]:
    ev = t.events
    out = []
    for i in range(len(ev.get("t_s", []))):
        if ev["kind"][i] != kind:
            continue
        if from_states is not None and ev["from_state"][i] not in from_states:
            continue
        if to_states is not None and ev["to_state"][i] not in to_states:
            continue
        out.append(i)
    return out


def _event_at(t: RunTables, when: str) -> tuple[int | None, str]:
    """The events-table row of an `on:` event, or None and why."""
    what = when.removeprefix("on:")
    if what.startswith(("exit:", "enter:")):
        side, _, state = what.partition(":")
        states = _states(state)
        if states is None:
            return None, f"unknown state {state}"
        rows = _event_rows(t, "cc_state", from_states=states) if side == "exit" else \
            [i for i in _event_rows(t, "cc_state", to_states=states) if t.events["from_state"][i] not in states]
        return (rows[0], "") if rows else (None, f"the run never {'left' if side == 'exit' else 'entered'} {state}")
    if what == "full_bw_reached":
        if not t.logged_events:
            return None, "the event log has no 'full_bw_reached' event (this backend logs none)"
        rows = _event_rows(t, "full_bw_reached")
        return (rows[0], "") if rows else (None, "full_bw_reached never became true")
    return None, f"the event log has no '{what}' event"


def _reference(t: RunTables, c: Criterion) -> float | None:
    ref = (c.reference or "").strip()
    if ref == "payload_rate":
        return t.payload_rate_bps
    if ref == "payload_rate_after_step" and t.rate_after_steps_bps:
        return t.rate_after_steps_bps[0]
    if ref == "policer_rate_payload":
        return t.policer_payload_bps
    return None


def _compare(op: str, x: float, y: float) -> bool:
    return {"==": math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-9), "<=": x <= y, ">=": x >= y, "<": x < y,
            ">": x > y}[op]


def _judge(c: Criterion, t: RunTables, values: list[Any], where: str) -> Verdict:
    """`values` of the criterion's quantity at its event or over its window."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return Verdict("n/a", why=f"{c.quantity} is not a variable of this CCA ({where})")
    shown = ", ".join(f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v) for v in vals[:4])
    shown += " …" if len(vals) > 4 else ""
    if c.op in ("true", "false"):
        ok = all(bool(v) == (c.op == "true") for v in vals)
        return Verdict("pass" if ok else "fail", f"{c.quantity} = {shown} {where}")
    if c.op == "within":
        ref = _reference(t, c)
        if ref is None:
            return Verdict("not evaluated", why=f"reference '{c.reference}' is not computed")
        x = float(np.mean(vals))
        off = x / ref - 1
        ok = abs(off) <= (c.threshold or 0)
        return Verdict("pass" if ok else "fail", f"{c.quantity} {x:.4g} = {off:+.1%} of {c.reference} {where}")
    if c.op in ("==", "<=", ">=", "<", ">"):
        if c.value is not None:
            y = float(c.value)
        else:
            ref = _reference(t, c)
            if ref is None:
                return Verdict("not evaluated", why=f"reference '{c.reference}' is not computed")
            y = ref * (c.threshold or 1.0)
        ok = all(_compare(c.op, float(v), y) for v in vals)
        return Verdict("pass" if ok else "fail", f"{c.quantity} = {shown} {where} ({c.op} {y:.4g})")
    return Verdict("not evaluated", why=f"op {c.op}")


def _window(t: RunTables, when: str) -> tuple[np.ndarray | None, str]:
    """Series rows of a `during:`/`after:`/`window:` clause, or None and why."""
    s = t.series
    ts = np.asarray(s["t_s"], dtype=float)
    state = np.asarray([str(x) for x in s.get("cc_state", [None] * len(ts))])
    clause = when.split(",")[0]
    kind, _, arg = clause.partition(":")
    if kind == "during":
        states = _states(arg)
        if states is None:
            return None, f"unknown state {arg}"
        return np.isin(state, states), f"during {arg}"
    if kind == "window" and arg == "whole_run":
        return ts >= 0, "over the run"
    if kind == "window" and arg == "last_half":
        return ts >= t.duration_s / 2, "over the last half"
    if kind == "after" and arg.startswith(("exit:", "enter:")):
        row, why = _event_at(t, "on:" + arg)
        if row is None:
            return None, why
        return ts > float(t.events["t_s"][row]), f"after {arg}"
    if kind == "after" and re.fullmatch(r"step:\d+", arg):
        k = int(arg.split(":")[1]) - 1
        if k >= len(t.schedule_s):
            return None, f"the path has no schedule step {k + 1}"
        return ts > t.schedule_s[k], f"after step {k + 1}"
    return None, f"no window '{clause}'"


def _goodput(t: RunTables, rows: np.ndarray) -> float | None:
    idx = np.flatnonzero(rows)
    if len(idx) < 2:
        return None
    ts = np.asarray(t.series["t_s"], dtype=float)
    b = np.asarray(t.series["delivered_bytes"], dtype=float)
    i0, i1 = max(idx[0] - 1, 0), idx[-1]
    return float((b[i1] - b[i0]) * 8 / (ts[i1] - ts[i0])) if ts[i1] > ts[i0] else None


def evaluate(c: Criterion, t: RunTables) -> Verdict:
    """The verdict of criterion `c` on run `t`."""
    for state in filter(None, (c.from_state, c.to_state, *re.findall(r"(?:exit|enter|during):([A-Z_]+)", c.when))):
        if not _exists(t, state):
            return Verdict("n/a", why=f"this CCA has no {state} state")
    if c.op == "transition":
        # A visit to PROBE_RTT (every 5 or 10 s, whatever the state) is not
        # the exit the criterion is about, unless it names PROBE_RTT.
        rows = [i for i in _event_rows(t, "cc_state", from_states=_states(c.from_state))
                if c.to_state == "PROBE_RTT" or c.from_state == "PROBE_RTT" or t.events["to_state"][i] != "probe_rtt"]
        if not rows:
            return Verdict("fail", why=f"the run never left {c.from_state}")
        to = str(t.events["to_state"][rows[0]])
        ok = to in (_states(c.to_state) or ())
        return Verdict("pass" if ok else "fail", f"{c.from_state} -> {to} at {float(t.events['t_s'][rows[0]]):.3f} s")
    if c.op == "no_transition":
        rows = _event_rows(t, "cc_state", from_states=_states(c.from_state))
        left = [str(t.events["to_state"][i]) for i in rows if t.events["to_state"][i] != "probe_rtt"]
        return Verdict("pass" if not left else "fail", f"left {c.from_state} for {left[0]}" if left
                       else f"stayed in {c.from_state} (PROBE_RTT visits aside)")
    if c.quantity in ("time_in_state_s", "rounds_in_state") and c.when.startswith("on:exit:"):
        state = c.when.removeprefix("on:exit:")
        enter, why = _event_at(t, f"on:enter:{state}")
        leaves = [] if enter is None else [i for i in _event_rows(t, "cc_state", from_states=_states(state))
                                           if float(t.events["t_s"][i]) >= float(t.events["t_s"][enter])]
        leave = leaves[0] if leaves else None
        if enter is None or leave is None:
            return Verdict("fail", why=why or f"the run never left {state} after entering it")
        if c.quantity == "time_in_state_s":
            x = float(t.events["t_s"][leave]) - float(t.events["t_s"][enter])
        else:
            r0, r1 = t.events["cc_round"][enter], t.events["cc_round"][leave]
            if r0 is None or r1 is None:
                return Verdict("n/a", why="this CCA counts no rounds")
            x = float(r1) - float(r0)
        return _judge(c, t, [x], f"in {state}")
    if c.quantity == "goodput":
        rows, where = _window(t, c.when)
        if rows is None:
            return Verdict("not evaluated", why=where)
        g = _goodput(t, rows)
        if g is None:
            return Verdict("fail", why=f"too few samples {where}")
        return _judge(c, t, [g], where)
    column = COLUMNS.get(c.quantity) or SERIES_ONLY.get(c.quantity)
    if column is None:
        return Verdict("not evaluated", why=f"'{c.quantity}' is not recorded per interval or per event")
    if c.when.startswith("on:"):
        if c.quantity in SERIES_ONLY:
            return Verdict("not evaluated", why=f"{c.quantity} is sampled per interval, not logged per event")
        row, why = _event_at(t, c.when)
        if row is None:
            return Verdict("not evaluated" if "has no" in why else "fail", why=why)
        return _judge(c, t, [t.events[column][row]], f"at {c.when.removeprefix('on:')} "
                      f"({float(t.events['t_s'][row]):.3f} s)")
    if c.op == "decreases":
        rows, where = _window(t, c.when)
        if rows is None:
            return Verdict("not evaluated", why=where)
        # An unset bound (bbr3's bw_lo before any loss: ~0U) reads as null
        # or NaN: it stands for +infinity here.
        column_values = [math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
                         for v in t.series[column]]
        vals = [v for v, r in zip(column_values, rows, strict=True) if r]
        before = [v for v, r in zip(column_values, rows, strict=True) if not r]
        if not vals or not before or all(math.isinf(v) for v in column_values):
            return Verdict("n/a", why=f"{c.quantity} is never set by this CCA")
        ok = min(vals) < before[-1]
        return Verdict("pass" if ok else "fail", f"{c.quantity} {before[-1]:.4g} before, least {min(vals):.4g} {where}")
    rows, where = _window(t, c.when)
    if rows is None:
        return Verdict("not evaluated", why=where)
    if not rows.any():
        return Verdict("fail", why=f"no sample {where}")
    return _judge(c, t, [v for v, r in zip(t.series[column], rows, strict=True) if r], where)
