"""The BBR draft's test-case suite (python/fatpipe/bbrsuite): the
catalogue, a study per case, the criteria's evaluation on hand-made
tables, and cases run end to end on the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from fatpipe import spec as spec_mod
from fatpipe.bbrsuite import catalogue, checks, studies
from fatpipe.bbrsuite.catalogue import Criterion
from fatpipe.bbrsuite.suite import events_from_samples, run_suite
from fatpipe.study import plan_runs

CAT = catalogue.load()


def test_the_catalogue_holds_the_drafts_22_cases_in_order():
    assert CAT.draft == "draft-ietf-ccwg-bbr-06"
    assert [c.id for c in CAT.cases] == [f"A.{i}" for i in range(1, 23)]
    assert CAT.ccs == ("bbr3", "bbr")
    assert all(c.criteria for c in CAT.cases)
    with pytest.raises(KeyError, match="no BBR test case 'A.99'; the cases are A.1, A.2"):
        CAT.case("A.99")


@pytest.mark.parametrize("case", [c for c in CAT.cases if c.status != "needs"], ids=lambda c: c.id)
def test_every_expressible_case_is_a_valid_study(case, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(studies.study_toml(CAT, case, "bbr3", "sim"))
    spec, raw = spec_mod.load(path)
    (plan,) = plan_runs(spec, raw)
    assert plan.flows[0].cc == "bbr3"
    for key, value in case.setup.items():
        if key == "path.schedule":
            assert len(plan.dynamics.schedule) == len(value)


def tables(events: dict, series: dict | None = None) -> checks.RunTables:
    series = series or {"t_s": np.arange(0, 3, 0.5), "cc_state": np.asarray(["startup"] * 2 + ["probe_bw_cruise"] * 4),
                        "delivered_bytes": np.arange(6) * 1e6}
    return checks.RunTables(series=series, events=checks.expand_pass_through(events), payload_rate_bps=95.6e6,
                            schedule_s=(), rate_after_steps_bps=(), policer_payload_bps=None, duration_s=3.0)


def event(t, kind, frm, to, **vars_):
    return {"t_s": t, "kind": kind, "from_state": frm, "to_state": to, **vars_}


def columns(rows: list[dict]) -> dict:
    keys = {k for r in rows for k in r}
    return {k: np.asarray([r.get(k) for r in rows], dtype=object) for k in keys}


def test_a_transition_passes_through_drain_within_one_ack():
    # STARTUP -> PROBE_BW logged at one ACK: BBR has no such edge, so DRAIN
    # was entered and left at that ACK.
    t = tables(columns([event(1.0, "cc_state", "startup", "probe_bw_cruise", cc_max_bw_bps=95.0e6)]))
    to_drain = Criterion(step=5, quantity="state", op="transition", when="on:exit:STARTUP", from_state="STARTUP",
                         to_state="DRAIN")
    assert checks.evaluate(to_drain, t).status == "pass"
    out_of_drain = Criterion(step=4, quantity="state", op="transition", when="on:exit:DRAIN", from_state="DRAIN",
                             to_state="PROBE_BW")
    assert checks.evaluate(out_of_drain, t).status == "pass"


def test_a_value_at_an_event_is_judged_with_what_was_measured():
    t = tables(columns([event(1.0, "cc_state", "startup", "drain", cc_max_bw_bps=97.6e6, cc_full_bw_count=3)]))
    within = Criterion(step=3, quantity="max_bw", op="within", threshold=0.02, reference="payload_rate",
                       when="on:exit:STARTUP")
    v = checks.evaluate(within, t)
    assert v.status == "fail" and "+2.1% of payload_rate" in v.measured, v
    count = Criterion(step=4, quantity="full_bw_count", op="==", value=3, when="on:exit:STARTUP")
    assert checks.evaluate(count, t).status == "pass"


def test_what_the_tables_lack_is_not_evaluated_and_a_missing_state_is_not_applicable():
    t = tables(columns([event(1.0, "cc_state", "startup", "drain")]),
               {"t_s": np.asarray([0.0, 1.0]), "cc_state": np.asarray(["startup", "probe_bw"]),
                "delivered_bytes": np.asarray([0.0, 1e6])})
    lossy = Criterion(step=3, quantity="loss_rate_round", op=">", value=0.02, when="on:exit:STARTUP")
    assert checks.evaluate(lossy, t).status == "not evaluated"
    v1 = Criterion(step=5, quantity="state", op="transition", when="on:full_bw_now", from_state="PROBE_UP",
                   to_state="PROBE_DOWN")
    assert checks.evaluate(v1, t).status == "n/a", "bbr v1 has one PROBE_BW state"


def test_a_reference_is_an_expression_over_the_same_row_and_the_runs_constants():
    from fatpipe.bbrsuite import reference
    look = reference.lookup_in({"bdp": 100, "cwnd": 150, "rs_tx_in_flight": 90}, {"mss_bits": 8 * 1448.0})
    assert reference.evaluate("max(rs_tx_in_flight, 0.7 x min(bdp, cwnd))", look) == 90
    assert reference.evaluate("2 x bdp", look) == 200
    with pytest.raises(reference.Unknown, match="inflight_longterm"):
        reference.evaluate("inflight_longterm + 1", look)
    with pytest.raises(reference.Unknown, match="only numbers, names"):
        reference.evaluate("__import__('os')", look)
    assert reference.parts("bw_shortterm, max(a, b)") == ["bw_shortterm", "max(a, b)"]
    t = tables(columns([event(1.0, "cc_state", "startup", "drain", cc_bdp_segments=100, cwnd_segments=230,
                              cc_extra_acked_segments=20, cc_cwnd_gain=2.0)]))
    big = Criterion(step=3, quantity="cwnd", op=">", reference="2 x bdp", when="on:exit:STARTUP")
    assert checks.evaluate(big, t).status == "pass"
    exact = Criterion(step=4, quantity="cwnd", op="==", reference="bdp x cwnd_gain + extra_acked + 10",
                      when="on:exit:STARTUP")
    assert checks.evaluate(exact, t).status == "pass"


def test_sender_events_are_judged_each_time_and_unset_bounds_are_unbounded():
    rows = [event(1.0, "cc_state", "startup", "probe_bw_up", cc_bw_hi_bps=9e7),
            event(2.0, "recovery_start", "probe_bw_up", "probe_bw_up", cc_bw_hi_bps=9e7, cc_inflight_hi_segments=300,
                  cc_undo_inflight_hi_segments=300, cc_bw_lo_bps=None, cc_undo_bw_lo_bps=None),
            event(2.5, "cc_state", "probe_bw_up", "probe_bw_down", cc_bw_hi_bps=9e7),
            event(3.0, "undo", "probe_bw_down", "probe_bw_down", cc_bw_hi_bps=9e7, cc_inflight_hi_segments=280,
                  cc_undo_inflight_hi_segments=300, cc_bw_lo_bps=None, cc_undo_bw_lo_bps=None)]
    t = tables(columns(rows))
    saved = Criterion(step=2, quantity="undo_bw_shortterm, undo_inflight_longterm", op="==",
                      reference="bw_shortterm, inflight_longterm", when="on:recovery_start")
    assert checks.evaluate(saved, t).status == "pass"
    restored = Criterion(step=3, quantity="bw_shortterm, inflight_longterm", op="restored", when="on:spurious_undo")
    v = checks.evaluate(restored, t)
    assert v.status == "fail" and "280" in v.measured, v  # inflight_hi 280 < the 300 saved
    state = Criterion(step=4, quantity="state", op="==", reference="state_before_recovery",
                      when="after:spurious_undo")
    v = checks.evaluate(state, t)
    assert v.status == "fail" and "probe_bw_up -> probe_bw_down" in v.measured, v
    assert checks.evaluate(Criterion(step=2, quantity="undo_bw_shortterm", op="==", reference="bw_shortterm",
                                     when="on:rto"), t).status == "fail", "no RTO happened"


def test_windows_after_gain_cycles_and_a_loss_rate_over_a_window():
    ev = columns([event(t, "cc_state", "probe_bw_cruise", "probe_bw_down", cc_cycle_index=1) for t in (1.5, 3.5, 5.5)])
    ts = np.arange(0, 8, 0.5)
    series = {"t_s": ts, "cc_state": np.asarray(["probe_bw_cruise"] * len(ts)), "delivered_bytes": ts * 1e6,
              "segs_out": ts * 1000, "retrans_segments": ts * 10, "cc_max_bw_bps": np.where(ts >= 5.5, 9.6e6, 9.6e7)}
    t = checks.RunTables(series=series, events=checks.expand_pass_through(ev), payload_rate_bps=9.56e7,
                         schedule_s=(1.0,), rate_after_steps_bps=(9.56e6,), policer_payload_bps=None, duration_s=8.0)
    after = Criterion(step=4, quantity="max_bw", op="within", threshold=0.02, reference="payload_rate_after_step",
                      when="after:step:1+2_probe_bw_cycles")
    v = checks.evaluate(after, t)
    assert v.status == "pass" and "from 5.500 s" in v.measured, v
    lossy = Criterion(step=4, quantity="loss_rate", op="<=", value=0.02, when="window:last_half")
    v = checks.evaluate(lossy, t)
    assert v.status == "pass" and "0.01" in v.measured, v


def test_events_are_read_off_the_samples_where_a_backend_logs_none():
    # The kernel's first sample, before BBR set its gains, reads as probe_rtt.
    ev = events_from_samples({"t_s": np.asarray([0.0, 0.05, 0.1, 0.2, 0.3]),
                              "cc_state": np.asarray(["probe_rtt", "startup", "startup", "drain", "probe_bw"],
                                                     dtype=object),
                              "cc_pacing_gain": np.asarray([1.0, 2.89, 2.89, 0.35, 1.0])})
    assert list(ev["from_state"]) == ["startup", "drain"] and list(ev["to_state"]) == ["drain", "probe_bw"]
    assert list(ev["t_s"]) == [0.2, 0.3] and list(ev["cc_pacing_gain"]) == [0.35, 1.0]


def test_case_a1_passes_with_bbr3_in_the_simulator_and_bbr_runs_for_contrast(tmp_path):
    (b3, v1) = run_suite(tmp_path, backend="sim", cases=["A.1"], progress=None)
    assert (b3.cc, b3.status) == ("bbr3", "pass"), b3.verdicts
    assert all(v.status == "pass" for _, _, v in b3.verdicts), b3.verdicts
    assert v1.status == "contrast"
    table = (tmp_path / "bbr-cases.md").read_text()
    assert "| A.1 | Exiting STARTUP on Bandwidth Plateau | bbr3 | sim | pass | 5 / 0 / 0 / 0 |" in table
    # A trigger on a state bbr v1 lacks (PROBE_REFILL): that case is not run for it, and says why.
    (v1_refill,) = run_suite(tmp_path, cases=["A.22"], ccs=["bbr"], progress=None)
    assert v1_refill.status == "not run" and "not expressible for bbr on sim" in v1_refill.reason
    assert "PROBE_CRUISE\" is not a state" in v1_refill.reason, v1_refill.reason
