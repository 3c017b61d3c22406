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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import episodes, reference
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
    "bw_longterm": "cc_bw_hi_bps",
    "bdp": "cc_bdp_segments",
    "min_rtt": "cc_min_rtt_s",
    "round_count": "cc_round",
    "state": "cc_state",
    "lost_ranges_round": "cc_loss_events_in_round",
    "probe_rtt_min_stamp": "cc_probe_rtt_min_stamp_s",
    "rs_delivery_rate": "cc_rs_delivery_rate_bps",
    "rs_is_app_limited": "cc_rs_is_app_limited",
    "rs_tx_in_flight": "cc_rs_tx_in_flight_segments",
    "rs_lost": "cc_rs_lost_segments",
    "idle_restart": "cc_idle_restart",
    # The sender's window: tcp_info per sample, right after the event in
    # the events table (same column names).
    "cwnd": "cwnd_segments",
    "cwnd_packets": "cwnd_segments",
    "inflight": "inflight_segments",
}
# What the sender, not the CCA, records (the simulator's rate sample and
# PROBE_RTT stamp): missing means the backend does not record it.
SENDER_QUANTITIES = {"rs_delivery_rate", "rs_is_app_limited", "rs_tx_in_flight", "rs_lost", "loss_rate_round",
                     "time_since_probe_rtt_min_stamp_s"}
# bbr3's bounds and their undo copies: null while unset (unbounded).
BOUNDS = ("inflight_longterm", "inflight_shortterm", "bw_shortterm", "undo_bw_shortterm",
          "undo_inflight_shortterm", "undo_inflight_longterm")
# Series-only columns (tcp_info).
SERIES_ONLY: dict[str, str] = {"pacing_rate": "pacing_rate_bps"}
# google/bbr v3 bbr_inflight_with_headroom(): inflight_hi less
# bbr_inflight_headroom = BBR_UNIT * 15 / 100 of it (at least 1), never
# below bbr_cwnd_min_target (4 packets).
INFLIGHT_HEADROOM = (256 * 15 // 100) / 256
CWND_MIN_TARGET = 4


def _derived(values: Mapping[str, Any]) -> dict[str, Any]:
    """Quantities the draft names that are functions of one row.
    loss_rate_round: the rate sample's lost / tx_in_flight, what
    bbr_is_inflight_too_high() compares with bbr_loss_thresh (2 %): Linux
    keeps no loss rate per round, it judges each ACK's sample."""
    out: dict[str, Any] = {}
    lost, tx = values.get("rs_lost"), values.get("rs_tx_in_flight")
    if lost is not None and tx:
        out["loss_rate_round"] = float(lost) / float(tx)
    hi = values.get("inflight_longterm", "absent")
    if hi != "absent":
        if hi is None or math.isinf(float(hi)):
            out["inflight_with_headroom"] = math.inf
        else:
            headroom = max(1, int(float(hi) * INFLIGHT_HEADROOM))
            out["inflight_with_headroom"] = max(float(hi) - headroom, CWND_MIN_TARGET)
    return out


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
    # Run constants a reference may name (reference.py): mss_bits,
    # rtt_s, aggregation.interval, bdp_packets_after_step.
    constants: Mapping[str, float] = field(default_factory=dict)
    # The first flow's application pauses, (from s, until s).
    pauses_s: tuple[tuple[float, float], ...] = ()
    # Bytes its application has written by each series row (None: the
    # flow always has data, or was unlimited for a while).
    app_written_bytes: np.ndarray | None = None

    def names(self) -> dict[str, float | None]:
        """The run's constants by the names references use."""
        return {"payload_rate": self.payload_rate_bps,
                "payload_rate_after_step": self.rate_after_steps_bps[0] if self.rate_after_steps_bps else None,
                "policer_rate_payload": self.policer_payload_bps, **self.constants}


# States BBR crosses on its way from one to another within one ACK: it
# has no direct edge between them. Linux bbr_update_model(): STARTUP leaves
# only for DRAIN (or PROBE_RTT); google/bbr v3's PROBE_UP only for
# PROBE_DOWN (bbr_start_bw_probe_down(), on a plateau or loss), from which
# bbr_update_cycle_phase() may move on at once.
PASSED_THROUGH = {("startup", "probe_bw"): "drain", ("startup", "probe_bw_"): "drain",
                  ("probe_bw_up", "probe_bw_cruise"): "probe_bw_down",
                  ("probe_bw_up", "probe_bw_refill"): "probe_bw_down"}


def expand_pass_through(events: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The events with each state crossed within one ACK made explicit.
    The log compares the state after each ACK, so STARTUP → DRAIN → PROBE_BW
    on one ACK (bbr_check_drain() right after the full-bandwidth exit:
    inflight already at or below the BDP) reads STARTUP → PROBE_BW, and
    PROBE_UP → PROBE_DOWN → PROBE_CRUISE reads PROBE_UP → PROBE_CRUISE.
    BBR's state machine has no such edges (PASSED_THROUGH), so that row
    stands for both steps, at the same instant with the same variables."""
    n = len(events.get("t_s", []))
    rows = []
    for i in range(n):
        frm, to = str(events["from_state"][i]), str(events["to_state"][i])
        via = next((v for (a, b), v in PASSED_THROUGH.items() if frm == a and to.startswith(b)), None) \
            if events["kind"][i] == "cc_state" else None
        if via is not None and to != via:
            rows += [(i, frm, via), (i, via, to)]
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


# The sender's loss-recovery events by the draft's names (crates/sim's
# tcp/cc_log.rs kinds): every occurrence is judged.
SENDER_EVENTS = {"recovery_start": "recovery_start", "rto": "loss_start", "spurious_undo": "undo",
                 "restart_from_idle": "restart_from_idle"}


def _event_rows_at(t: RunTables, when: str) -> tuple[list[int] | None, str]:
    """The events-table rows of an `on:` event (a state's first entry or
    exit, the first full_bw_reached, every sender event), or None and why."""
    what = when.removeprefix("on:")
    if what.startswith(("exit:", "enter:")):
        side, _, state = what.partition(":")
        # STATE#n: the n-th visit (from 1), else the first.
        state, _, nth = state.partition("#")
        n = int(nth or 1)
        states = _states(state)
        if states is None:
            return None, f"unknown state {state}"
        # An exit is the state's own way out: a visit to PROBE_RTT (due
        # every 5 or 10 s, whatever the state) is not one, unless the
        # criterion is about PROBE_RTT.
        rows = [i for i in _event_rows(t, "cc_state", from_states=states)
                if state == "PROBE_RTT" or t.events["to_state"][i] != "probe_rtt"] if side == "exit" else \
            [i for i in _event_rows(t, "cc_state", to_states=states) if t.events["from_state"][i] not in states]
        if len(rows) < n:
            return None, f"the run {'left' if side == 'exit' else 'entered'} {state} {len(rows)} times, not {n}"
        return rows[n - 1:n], ""
    if what in ("full_bw_reached", *SENDER_EVENTS):
        if not t.logged_events:
            return None, f"the event log has no '{what}' event (this backend logs none)"
        kind = SENDER_EVENTS.get(what, what)
        rows = _event_rows(t, kind)
        if what == "full_bw_reached":
            rows = rows[:1]
        return (rows, "") if rows else (None, f"no {what} in the run")
    return None, f"the event log has no '{what}' event"


def _event_at(t: RunTables, when: str) -> tuple[int | None, str]:
    """The first events-table row of an `on:` event, or None and why."""
    rows, why = _event_rows_at(t, when)
    return (rows[0] if rows else None), why


def _cell(v: Any) -> Any:
    """A table cell as a plain value; null and NaN as None."""
    if v is None or (isinstance(v, (float, np.floating)) and math.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def _before(t: RunTables, t_s: float, strictly: bool = False) -> int | None:
    """The last series sample at (or strictly before) `t_s`."""
    ts = np.asarray(t.series["t_s"], dtype=float)
    k = int(np.searchsorted(ts, t_s, side="left" if strictly else "right")) - 1
    return k if k >= 0 else None


def row_values(t: RunTables, table: Mapping[str, np.ndarray], i: int) -> dict[str, Any]:
    """Row `i` of the series or the events by the draft's names; an event
    row takes series-only values (pacing_rate) from the last sample at or
    before it, and the age of the PROBE_RTT timer from the sample before
    (the ACK that enters PROBE_RTT restarts the stamp)."""
    values = {name: _cell(table[col][i]) for name, col in COLUMNS.items() if col in table}
    if table is t.series:
        values |= {name: _cell(table[col][i]) for name, col in SERIES_ONLY.items() if col in table}
    else:
        at = float(table["t_s"][i])
        k = _before(t, at)
        if k is not None:
            values |= {name: _cell(t.series[col][k]) for name, col in SERIES_ONLY.items() if col in t.series}
        k = _before(t, at, strictly=True)
        stamp = None if k is None else _cell(t.series.get("cc_probe_rtt_min_stamp_s", [None] * (k + 1))[k])
        if stamp is not None:
            values["time_since_probe_rtt_min_stamp_s"] = at - float(stamp)
    if values.get("bw_longterm") is None:
        # No bw_hi: a CCA without v3's bounds (v1) has none of them.
        for name in BOUNDS:
            values.pop(name, None)
    else:
        # google/bbr v3 keeps an unset bound as ~0U / ~0UL (null here):
        # it bounds nothing.
        values |= {name: math.inf for name in BOUNDS if name in values and values[name] is None}
    return values | _derived(values)


class _AtEvent(Mapping[str, Any]):
    """A variable's value at an event, named `<var>_on_<enter|exit>_<STATE>`
    (`max_bw_on_enter_PROBE_REFILL`): the first such event's row."""

    def __init__(self, t: RunTables) -> None:
        self.t = t

    def __getitem__(self, name: str) -> Any:
        m = re.fullmatch(r"(\w+?)_on_(enter|exit)_([A-Z_]+)", name)
        if not m:
            raise KeyError(name)
        row, _ = _event_at(self.t, f"on:{m[2]}:{m[3]}")
        if row is None:
            raise KeyError(name)
        return row_values(self.t, self.t.events, row).get(m[1])

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


def _compare(op: str, x: float, y: float) -> bool:
    return {"==": math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-9), "<=": x <= y, ">=": x >= y, "<": x < y,
            ">": x > y}[op]


def _show(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)


def _judge(c: Criterion, t: RunTables, values: list[Any], where: str) -> Verdict:
    """`values` of a quantity computed over the criterion's window, judged
    against its value or a reference from the run's constants."""
    return judge_rows(c, t, [{c.quantity: v} for v in values], where)


def judge_rows(c: Criterion, t: RunTables, rows: list[Mapping[str, Any]], where: str) -> Verdict:
    """The criterion judged on each row (the draft's names -> values): its
    quantities (one, or a list "a, b, c") against its value or its
    reference expression (reference.py) read from the same row, or each
    quantity against its saved undo_ copy ("restored")."""
    quantities = reference.parts(c.quantity)
    refs = reference.parts(c.reference) if c.reference else []
    if refs and len(refs) not in (1, len(quantities)):
        return Verdict("not evaluated", why=f"{len(quantities)} quantities against {len(refs)} references")
    pairs: list[tuple[Any, Any]] = []
    at_events = _AtEvent(t)
    for row in rows:
        lookup = reference.lookup_in(row, t.names(), at_events)
        for k, q in enumerate(quantities):
            x = row.get(q)
            if c.op == "restored":
                # bbr_undo_cwnd() (google/bbr v3): each bound back to at
                # least the copy saved on entering recovery; an unset bound
                # (null) is unbounded.
                if q not in row:
                    continue
                saved = row.get("undo_" + q)
                pairs.append((math.inf if x is None else float(x), math.inf if saved is None else float(saved)))
                continue
            if x is None:
                continue
            if c.op in ("true", "false"):
                pairs.append((x, None))
                continue
            if c.value is not None:
                y: Any = float(c.value)
            elif refs:
                try:
                    y = reference.evaluate(refs[k if len(refs) > 1 else 0], lookup)
                except reference.Unknown as e:
                    return Verdict("not evaluated", why=f"reference '{c.reference}': {e} is not known here")
                if c.op != "within":
                    y *= c.threshold or 1.0
            else:
                return Verdict("not evaluated", why="no value or reference")
            pairs.append((float(x), y))
    if not pairs:
        if SENDER_QUANTITIES.intersection(quantities):
            return Verdict("not evaluated", why=f"{c.quantity} is not recorded by this backend ({where})")
        return Verdict("n/a", why=f"{c.quantity} is not a variable of this CCA ({where})")
    xs = ", ".join(_show(x) for x, _ in pairs[:4]) + (" …" if len(pairs) > 4 else "")
    if c.op in ("true", "false"):
        ok = all(bool(x) == (c.op == "true") for x, _ in pairs)
        return Verdict("pass" if ok else "fail", f"{c.quantity} = {xs} {where}")
    ys = ", ".join(_show(y) for _, y in pairs[:4]) + (" …" if len(pairs) > 4 else "")
    if c.op == "restored":
        ok = all(x >= y for x, y in pairs)
        return Verdict("pass" if ok else "fail", f"{c.quantity} = {xs} against saved {ys} {where}")
    if c.op == "within":
        off = float(np.mean([x / y for x, y in pairs])) - 1 if all(y for _, y in pairs) else math.inf
        ok = abs(off) <= (c.threshold or 0)
        return Verdict("pass" if ok else "fail", f"{c.quantity} {xs} = {off:+.1%} of {c.reference} ({ys}) {where}")
    if c.op in ("==", "<=", ">=", "<", ">"):
        ok = all(_compare(c.op, x, y) for x, y in pairs)
        return Verdict("pass" if ok else "fail", f"{c.quantity} = {xs} {where} ({c.op} {ys})")
    return Verdict("not evaluated", why=f"op {c.op}")


def _window(t: RunTables, when: str) -> tuple[np.ndarray | None, str]:
    """Series rows of `during:`/`after:`/`window:` clauses (all of them,
    comma-separated), or None and why."""
    rows, wheres = None, []
    for clause in when.split(","):
        mask, where = _clause_window(t, clause.strip())
        if mask is None:
            return None, where
        rows = mask if rows is None else rows & mask
        wheres.append(where)
    return rows, ", ".join(wheres)


def _clause_window(t: RunTables, clause: str) -> tuple[np.ndarray | None, str]:
    """Series rows of one `during:`/`after:`/`window:` clause, or None and why."""
    s = t.series
    ts = np.asarray(s["t_s"], dtype=float)
    state = np.asarray([str(x) for x in s.get("cc_state", [None] * len(ts))])
    kind, _, arg = clause.partition(":")
    if kind == "during" and "#" in arg:
        # The n-th visit only: from its entry to the exit after it.
        enter, why = _event_at(t, f"on:enter:{arg}")
        if enter is None:
            return None, why
        t0 = float(t.events["t_s"][enter])
        leaves = [float(t.events["t_s"][i]) for i in _event_rows(t, "cc_state", from_states=_states(arg.split("#")[0]))
                  if float(t.events["t_s"][i]) > t0]
        t1 = leaves[0] if leaves else np.inf
        return (ts > t0) & (ts <= t1), f"during {arg} ({t0:.3f}-{t1:.3f} s)"
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
    if kind == "after" and (m := re.fullmatch(r"step:(\d+)\+(\d+)_probe_bw_cycles", arg)):
        return episodes.after_cycles(t, int(m[1]), int(m[2]))
    if kind == "window" and (m := re.fullmatch(r"end_of_pause(?::(\d+))?", arg)):
        # The last RTT of the n-th pause (1-based): what was in flight
        # when it began has long been delivered.
        n = int(m[1] or 1)
        if n > len(t.pauses_s):
            return None, f"the application has no pause {n}"
        start, end = t.pauses_s[n - 1]
        rtt = float(t.constants.get("rtt_s", 0.0))
        return (ts >= max(start, end - rtt)) & (ts < end), f"in the last RTT of pause {n} ({end - rtt:.3f}-{end:.3f} s)"
    if kind == "before" and re.fullmatch(r"step:\d+", arg):
        k = int(arg.split(":")[1]) - 1
        if k >= len(t.schedule_s):
            return None, f"the path has no schedule step {k + 1}"
        return ts < t.schedule_s[k], f"before step {k + 1}"
    if kind == "after" and arg == "write_queue_empty":
        # tcp_rate_check_app_limited() marks a packet app-limited only when
        # the write queue is empty (and in_flight < cwnd): not while the
        # application's earlier writes wait in the socket (a blocking
        # writer's backlog, built while cwnd was below the application's
        # BDP). Unsent = written - delivered - in flight; once it is below
        # one MSS, every packet sent is marked, and its sample arrives an
        # RTT later.
        if t.app_written_bytes is None:
            return None, "the flow has no application rate"
        mss = float(t.constants["mss_bits"]) / 8
        unsent = t.app_written_bytes - np.asarray(s["delivered_bytes"], dtype=float) \
            - np.asarray(s["inflight_segments"], dtype=float) * mss
        # Before the first write the queue is empty too: not the moment.
        empty = np.flatnonzero((unsent < mss) & (t.app_written_bytes > mss))
        if not len(empty):
            return None, "the write queue never emptied"
        start = ts[empty[0]] + float(t.constants.get("rtt_s", 0.0))
        return ts >= start, f"an RTT after the write queue first emptied ({start:.3f} s)"
    if kind == "after" and arg == "first_loss_in_PROBE_BW":
        return episodes.after_first_loss_in_probe_bw(t)
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
        if "#" in c.when and c.when.startswith("on:exit:"):  # the n-th exit
            rows, why = _event_rows_at(t, c.when)
            if rows is None:
                return Verdict("fail", why=why)
        if not rows:
            return Verdict("fail", why=f"the run never left {c.from_state}")
        to = str(t.events["to_state"][rows[0]])
        ok = to in (_states(c.to_state) or ())
        return Verdict("pass" if ok else "fail", f"{c.from_state} -> {to} at {float(t.events['t_s'][rows[0]]):.3f} s")
    if c.op == "no_transition":
        since, where = 0.0, ""
        if c.when.startswith("on:") and c.when != "on:whole_run":
            rows_at, why = _event_rows_at(t, c.when)
            if rows_at is None:
                return Verdict("not evaluated" if "has no" in why else "fail", why=why)
            since = float(t.events["t_s"][rows_at[0]])
            where = f" after {c.when.removeprefix('on:')} ({since:.3f} s)"
        rows = [i for i in _event_rows(t, "cc_state", from_states=_states(c.from_state))
                if float(t.events["t_s"][i]) >= since]
        if c.to_state:
            # Only a move into `to` counts: the state may change otherwise.
            into = [i for i in rows if t.events["to_state"][i] in (_states(c.to_state) or ())]
            return Verdict("pass" if not into else "fail",
                           f"{c.from_state} -> {c.to_state} at {float(t.events['t_s'][into[0]]):.3f} s" if into
                           else f"never {c.from_state} -> {c.to_state}{where}")
        left = [str(t.events["to_state"][i]) for i in rows if t.events["to_state"][i] != "probe_rtt"]
        return Verdict("pass" if not left else "fail", f"left {c.from_state} for {left[0]}{where}" if left
                       else f"stayed in {c.from_state} (PROBE_RTT visits aside){where}")
    if c.quantity in ("time_in_state_s", "rounds_in_state") and c.when.startswith("on:exit:"):
        state = c.when.removeprefix("on:exit:")
        enter, why = _event_at(t, f"on:enter:{state}")
        leaves = [] if enter is None else [i for i in _event_rows(t, "cc_state",
                                                                  from_states=_states(state.split("#")[0]))
                                           if float(t.events["t_s"][i]) >= float(t.events["t_s"][enter])]
        leave = leaves[0] if leaves else None
        if enter is None or leave is None:
            return Verdict("fail", why=why or f"the run never left {state} after entering it")
        if c.quantity == "time_in_state_s":
            x = float(t.events["t_s"][leave]) - float(t.events["t_s"][enter])
        else:
            r0, r1 = _cell(t.events["cc_round"][enter]), _cell(t.events["cc_round"][leave])
            if r0 is None or r1 is None:
                return Verdict("n/a", why="no round count (this CCA or backend keeps none)")
            x = float(r1) - float(r0)
        return _judge(c, t, [x], f"in {state}")
    if c.quantity == "probe_up_rounds_until_max_bw_within_2pct":
        m = re.search(r"after:step:(\d+)", c.when)
        if not m or not t.rate_after_steps_bps:
            return Verdict("not evaluated", why="needs a rate step (after:step:N)")
        rounds, where = episodes.probe_up_rounds_until(t, int(m[1]), t.rate_after_steps_bps[0], 0.02)
        if rounds is None:
            return Verdict("fail", why=where)
        return _judge(c, t, [rounds], where)
    if c.op == "doubles_each_round":
        rows, where = _window(t, c.when)
        if rows is None:
            return Verdict("not evaluated", why=where)
        ok, what = episodes.slope_doubles_each_round(t, rows)
        if ok is None:
            return Verdict("n/a" if "no PROBE_UP slope" in what else "not evaluated", why=what)
        return Verdict("pass" if ok else "fail", f"bw_probe_up_rounds +1 per round {where}: {what}")
    if c.quantity == "loss_rate":
        rows, where = _window(t, c.when)
        if rows is None:
            return Verdict("not evaluated", why=where)
        rate = episodes.loss_rate(t, rows)
        if rate is None:
            return Verdict("fail", why=f"nothing sent {where}")
        return _judge(c, t, [rate], where + " (retransmitted / sent)")
    if c.quantity == "goodput":
        rows, where = _window(t, c.when)
        if rows is None:
            return Verdict("not evaluated", why=where)
        g = _goodput(t, rows)
        if g is None:
            return Verdict("fail", why=f"too few samples {where}")
        return _judge(c, t, [g], where)
    if c.quantity == "state" and c.reference == "state_before_recovery":
        return _state_after_undo(t)
    known = set(COLUMNS) | set(SERIES_ONLY) | {"loss_rate_round", "inflight_with_headroom",
                                               "time_since_probe_rtt_min_stamp_s"}
    unknown = [q for q in reference.parts(c.quantity) if q not in known]
    if unknown:
        return Verdict("not evaluated", why=f"'{', '.join(unknown)}' is not recorded per interval or per event")
    if c.when.startswith("on:"):
        rows, why = _event_rows_at(t, c.when)
        if rows is None:
            return Verdict("not evaluated" if "has no" in why else "fail", why=why)
        at = ", ".join(f"{float(t.events['t_s'][i]):.3f}" for i in rows[:3]) + (" …" if len(rows) > 3 else "")
        return judge_rows(c, t, [row_values(t, t.events, i) for i in rows],
                          f"at {c.when.removeprefix('on:')} ({at} s)")
    column = COLUMNS.get(c.quantity) or SERIES_ONLY.get(c.quantity)
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
    return judge_rows(c, t, [row_values(t, t.series, i) for i in np.flatnonzero(rows)], where)


def _state_after_undo(t: RunTables) -> Verdict:
    """After each spurious undo, the state the flow was in when its
    recovery (or RTO) began: the draft's undo restores BBR.state; the state
    after the undo is the last one logged at the undo's instant."""
    if not t.logged_events:
        return Verdict("not evaluated", why="the event log has no 'spurious_undo' event (this backend logs none)")
    ev = t.events
    undos = _event_rows(t, "undo")
    if not undos:
        return Verdict("fail", why="no spurious_undo in the run")
    shown, ok = [], True
    for u in undos:
        at = float(ev["t_s"][u])
        starts = [i for i in _event_rows(t, "recovery_start") + _event_rows(t, "loss_start")
                  if float(ev["t_s"][i]) <= at]
        if not starts:
            continue
        before = str(ev["to_state"][max(starts, key=lambda i: float(ev["t_s"][i]))])
        same_instant = [i for i in _event_rows(t, "cc_state") if float(ev["t_s"][i]) == at]
        after = str(ev["to_state"][same_instant[-1]]) if same_instant else str(ev["to_state"][u])
        ok &= after == before
        shown.append(f"{before} -> {after} at {at:.3f} s")
    if not shown:
        return Verdict("fail", why="no undo follows a recovery_start or loss_start")
    return Verdict("pass" if ok else "fail", "state at recovery -> after undo: " + "; ".join(shown[:3])
                   + (" …" if len(shown) > 3 else ""))
