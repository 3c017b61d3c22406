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
    (needs,) = [r for r in run_suite(tmp_path, cases=["A.4"], ccs=["bbr3"], progress=None)]
    assert needs.status == "not run" and needs.reason == "not expressible: needs state_trigger"
