"""Windows and quantities of the BBR draft's criteria that span several
rows of a run's tables: PROBE_BW gain cycles after a step, the first loss
the sender detects in PROBE_BW, a loss rate over a window, and PROBE_UP's
rounds and slope (docs/bbr-test-cases.md). Each returns its value (or a
series mask) or None with why the tables cannot give it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

# google/bbr v3's bbr_raise_inflight_hi_slope(): the PROBE_UP slope
# counter is capped at 30 (growth 1 << 30 packets per round).
SLOPE_CAP = 30


class Tables(Protocol):
    series: Mapping[str, np.ndarray]
    events: Mapping[str, np.ndarray]
    schedule_s: tuple[float, ...]
    logged_events: bool


def _t(table: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.asarray(table.get("t_s", []), dtype=float)


def cycle_starts(t: Tables) -> list[float]:
    """When each PROBE_BW gain cycle began: bbr3 enters PROBE_DOWN
    (bbr_start_bw_probe_down() starts a cycle), v1's cycle index returns to
    phase 0 (gain 1.25, bbr_advance_cycle_phase())."""
    ev = t.events
    out = []
    for i in range(len(ev.get("t_s", []))):
        bbr3_cycle = ev["kind"][i] == "cc_state" and ev["to_state"][i] == "probe_bw_down" \
            and ev["from_state"][i] != "probe_bw_down"
        v1_cycle = ev["kind"][i] == "cc_cycle" and ev["cc_cycle_index"][i] == 0
        if bbr3_cycle or v1_cycle:
            out.append(float(ev["t_s"][i]))
    return out


def after_cycles(t: Tables, step: int, cycles: int) -> tuple[np.ndarray | None, str]:
    """Series rows once `cycles` whole gain cycles have passed after
    schedule step `step` (1-based): from the start of the cycle after
    them. The draft's max_bw filter spans 2 cycles (MaxBwFilterLen), so
    after 2 a bandwidth from before the step has aged out."""
    if step > len(t.schedule_s):
        return None, f"the path has no schedule step {step}"
    at = t.schedule_s[step - 1]
    if not t.logged_events:
        return None, "this backend logs no gain-cycle events (its states are read off the samples)"
    starts = [s for s in cycle_starts(t) if s > at]
    if len(starts) <= cycles:
        return None, f"fewer than {cycles + 1} PROBE_BW cycles began after step {step} ({len(starts)})"
    return _t(t.series) >= starts[cycles], f"after step {step} + {cycles} PROBE_BW cycles (from {starts[cycles]:.3f} s)"


def after_first_loss_in_probe_bw(t: Tables) -> tuple[np.ndarray | None, str]:
    """Series rows after the first fast recovery or RTO that began in
    PROBE_BW (the loss the sender detects; with a policer and a deep
    buffer behind it, the policer's drops are the only losses)."""
    ev = t.events
    for i in range(len(ev.get("t_s", []))):
        if ev["kind"][i] in ("recovery_start", "loss_start") and str(ev["to_state"][i]).startswith("probe_bw"):
            at = float(ev["t_s"][i])
            return _t(t.series) > at, f"after the first loss detected in PROBE_BW ({at:.3f} s)"
    return None, "no recovery or RTO began in PROBE_BW (or this backend logs no such events)"


def loss_rate(t: Tables, rows: np.ndarray) -> float | None:
    """Segments retransmitted over segments sent within the window
    (tcpi_total_retrans and tcpi_segs_out differences), the sender's view
    of its loss rate."""
    idx = np.flatnonzero(rows)
    if len(idx) < 2:
        return None
    i0, i1 = max(idx[0] - 1, 0), idx[-1]
    sent = float(t.series["segs_out"][i1]) - float(t.series["segs_out"][i0])
    retrans = float(t.series["retrans_segments"][i1]) - float(t.series["retrans_segments"][i0])
    return retrans / sent if sent > 0 else None


def _probe_up_spans(t: Tables, since_s: float) -> list[tuple[float, float, int, int]]:
    """(enter_s, leave_s, enter_round, leave_round) of each PROBE_UP visit
    after `since_s`, rounds as bbr's round counter (cc_round) reads them."""
    ev = t.events
    spans, enter = [], None
    for i in range(len(ev.get("t_s", []))):
        if ev["kind"][i] != "cc_state" or float(ev["t_s"][i]) <= since_s:
            continue
        if ev["to_state"][i] == "probe_bw_up" and ev["from_state"][i] != "probe_bw_up":
            enter = i
        elif ev["from_state"][i] == "probe_bw_up" and enter is not None:
            spans.append((float(ev["t_s"][enter]), float(ev["t_s"][i]), int(ev["cc_round"][enter]),
                          int(ev["cc_round"][i])))
            enter = None
    return spans


def probe_up_rounds_until(t: Tables, step: int, rate_bps: float, within: float) -> tuple[float | None, str]:
    """Rounds spent in PROBE_UP from schedule step `step` until max_bw
    first reads within `within` of `rate_bps` (sampled per interval: the
    PROBE_UP visit in which it happens counts up to that sample's round)."""
    if step > len(t.schedule_s):
        return None, f"the path has no schedule step {step}"
    at = t.schedule_s[step - 1]
    ts, bw = _t(t.series), t.series["cc_max_bw_bps"]
    hits = [i for i in range(len(ts))
            if ts[i] > at and bw[i] is not None and abs(float(bw[i]) / rate_bps - 1) <= within]
    if not hits:
        return None, f"max_bw never came within {within:.0%} of {rate_bps:.4g} bit/s after step {step}"
    reached_s, reached_round = float(ts[hits[0]]), t.series["cc_round"][hits[0]]
    rounds = 0.0
    for enter_s, leave_s, enter_round, leave_round in _probe_up_spans(t, at):
        if enter_s >= reached_s:
            break
        rounds += (leave_round if leave_s <= reached_s else float(reached_round)) - enter_round
    return rounds, f"reached at {reached_s:.3f} s"


def slope_doubles_each_round(t: Tables, rows: np.ndarray) -> tuple[bool | None, str]:
    """Whether PROBE_UP's growth of inflight_hi doubles every round in the
    window: bbr_raise_inflight_hi_slope() raises bw_probe_up_rounds by one
    at each round start (growth 1 << it packets per round, capped at 30),
    so between two samples of one PROBE_UP visit the counter grows by the
    rounds that passed. It does so only while the flow uses inflight_hi
    (bbr_probe_inflight_hi_upward() returns early unless cwnd-limited with
    cwnd >= inflight_hi): pairs of samples where cwnd < inflight_hi at
    either end are left out."""
    s = t.series

    def using_bound(i: int) -> bool:
        hi = s["cc_inflight_hi_segments"][i]
        return hi is not None and not np.isnan(float(hi)) and float(s["cwnd_segments"][i]) >= float(hi)

    idx = [i for i in np.flatnonzero(rows) if s["cc_state"][i] == "probe_bw_up" and using_bound(i)]
    pairs = [(a, b) for a, b in zip(idx, idx[1:], strict=False) if b == a + 1]
    checked, bad = 0, []  # bad: (t_s, counter growth, growth expected, rounds)
    for a, b in pairs:
        if s["cc_bw_probe_up_rounds"][a] is None or s["cc_round"][a] is None:
            return None, "this CCA has no PROBE_UP slope counter"
        rounds = int(s["cc_round"][b]) - int(s["cc_round"][a])
        slope = int(s["cc_bw_probe_up_rounds"][b]) - int(s["cc_bw_probe_up_rounds"][a])
        expected = min(int(s["cc_bw_probe_up_rounds"][a]) + rounds, SLOPE_CAP) - int(s["cc_bw_probe_up_rounds"][a])
        checked += 1
        if slope != expected:
            bad.append((float(s["t_s"][b]), slope, expected, rounds))
    if not checked:
        return None, "no two consecutive samples in PROBE_UP using inflight_hi in the window"

    def shown(pairs_off: list[tuple[float, int, int, int]]) -> str:
        return ", ".join(f"{t_s:.3f} s: +{slope} over {rounds} rounds" for t_s, slope, _, rounds in pairs_off[:3])

    faster = [x for x in bad if x[1] > x[2]]
    if faster:
        return False, f"{checked} sample pairs in PROBE_UP; faster than doubling: {shown(faster)}"
    if bad:
        # Slower: a round whose start found the flow not cwnd-limited does
        # not raise the slope, and the samples do not tell those rounds.
        return None, (f"{len(bad)} of {checked} sample pairs in PROBE_UP grew slower ({shown(bad)}): "
                      "the rule applies to rounds whose first ACK finds the flow cwnd-limited "
                      "(tcp_is_cwnd_limited()), which the tables do not record")
    return True, f"{checked} sample pairs in PROBE_UP, each +1 per round"
