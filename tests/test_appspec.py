"""Application-limited bulk senders: app_rate and [[flows.app]] read,
checked (errors naming the key, the value and what is allowed), swept,
planned (a flow without them plans as before), and the Linux traffic
engine's writer (engine.AppWriter) following the simulator's tick rule."""

import copy
import importlib
import json
import sys

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import AppLimit, AppStep
from fatpipe.linuxpath.flows import ENGINE, flow_specs, sender_config
from fatpipe.study import plan_runs

RAW = {
    "version": 1,
    "study": {"name": "app", "duration": "10s"},
    "path": {"rate": "100Mbit", "rtt": "20ms"},
    "flows": [{"cc": "cubic", "app_rate": "20Mbit",
               "app": [{"at": "3s", "pause": "2s"}, {"at": "6s", "rate": "40Mbit"},
                       {"at": "8s", "rate": "unlimited"}]}],
}


def _problems(mutate) -> list[tuple[str, str]]:
    raw = copy.deepcopy(RAW)
    mutate(raw)
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.validate(raw)
    return e.value.problems


def _plans(raw: dict):
    spec = spec_mod.validate(raw)
    return plan_runs(spec, raw)


def test_the_steps_become_the_plans_app_limit():
    (plan,) = _plans(RAW)
    assert plan.flows[0].app == AppLimit(rate_bps=20e6, tick_s=1e-3, steps=(
        AppStep(at_s=3.0, pause_s=2.0), AppStep(at_s=6.0, rate_bps=40e6), AppStep(at_s=8.0, rate_bps=None)))


@pytest.mark.parametrize("flow", [{"cc": "cubic"}, {"cc": "cubic", "app_rate": "unlimited"}])
def test_a_flow_that_always_has_data_plans_as_before(flow):
    raw = copy.deepcopy(RAW)
    raw["flows"] = [flow]
    (plan,) = _plans(raw)
    assert plan.flows[0].app is None


def test_a_pause_alone_limits_an_unlimited_sender():
    raw = copy.deepcopy(RAW)
    raw["flows"] = [{"cc": "bbr", "app": [{"at": "1s", "pause": "500ms"}]}]
    (plan,) = _plans(raw)
    assert plan.flows[0].app == AppLimit(rate_bps=None, tick_s=1e-3, steps=(AppStep(at_s=1.0, pause_s=0.5),))


@pytest.mark.parametrize("mutate, key, words", [
    (lambda r: r["flows"][0]["app"][1].update(pause="1s"), "flows.0.app.1", "exactly one of rate"),
    (lambda r: r["flows"][0]["app"][1].pop("rate"), "flows.0.app.1", "exactly one of rate"),
    (lambda r: r["flows"][0]["app"][0].update(pause="0s"), "flows.0.app.0.pause", "greater than 0"),
    (lambda r: r["flows"][0]["app"][0].pop("at"), "flows.0.app.0", "give at (a time such as '3s') or on"),
    (lambda r: r["flows"][0]["app"][2].update(at="1s"), "flows.0.app.2.at", "not after flows.0.app.1.at"),
    (lambda r: r["flows"][0]["app"][2].update(at="10s"), "flows.0.app.2.at", "not before study.duration"),
    (lambda r: r["flows"][0]["app"][1].update(rate="fast"), "flows.0.app.1.rate", "'fast'"),
    (lambda r: r["flows"][0].update(app_rate="0.5bit"), "flows.0.app_rate", "below the minimum"),
    (lambda r: r["flows"][0].update(app={"at": "1s", "rate": "1Mbit"}), "flows.0.app", "[[flows.app]]"),
    (lambda r: r["flows"][0]["app"][0].update(every="1s"), "flows.0.app.0.every", "unknown key"),
    (lambda r: r["flows"][0].update(kind="rpc", request="1KB", response="1KB", concurrency=1), "flows.0",
     'only apply to kind = "bulk"'),
])
def test_bad_app_keys_are_refused_naming_the_key(mutate, key, words):
    problems = _problems(mutate)
    assert any(k == key and words in m for k, m in problems), problems


def test_app_rate_and_steps_can_be_swept():
    raw = copy.deepcopy(RAW)
    raw["sweep"] = {"flows.0.app_rate": ["10Mbit", "unlimited"], "flows.0.app.1.rate": ["30Mbit", "50Mbit"],
                    "flows.0.app.0.pause": ["1s"]}
    plans = _plans(raw)
    assert [(p.flows[0].app.rate_bps, p.flows[0].app.steps[1].rate_bps) for p in plans] == [
        (10e6, 30e6), (10e6, 50e6), (None, 30e6), (None, 50e6)]
    assert {p.flows[0].app.steps[0].pause_s for p in plans} == {1.0}


@pytest.mark.parametrize("key, words", [("flows.0.app.3.rate", "no such step (there are 3)"),
                                        ("flows.0.app.0.every", "cannot be swept"),
                                        ("flows.2.app.0.rate", "no such flow")])
def test_a_swept_step_must_exist(key, words):
    problems = _problems(lambda r: r.update(sweep={key: ["1Mbit"]}))
    assert any(words in m for _, m in problems), problems


def test_the_engine_is_handed_the_app_limit():
    (plan,) = _plans(RAW)
    (flow,) = flow_specs(plan)
    cfg = sender_config(flow, "10.0.0.1", 0.0, 10.0, 0.1, "x")
    assert json.loads(json.dumps(cfg["app"])) == {"rate_bps": 20e6, "tick_s": 1e-3, "steps": [
        {"at_s": 3.0, "rate_bps": None, "pause_s": 2.0, "on": None},
        {"at_s": 6.0, "rate_bps": 40e6, "pause_s": None, "on": None},
        {"at_s": 8.0, "rate_bps": None, "pause_s": None, "on": None}]}


@pytest.fixture
def engine():
    sys.path.insert(0, str(ENGINE.parent))
    try:
        yield importlib.import_module("engine")
    finally:
        sys.path.remove(str(ENGINE.parent))


def test_the_engines_writer_follows_the_simulators_tick_rule(engine):
    # 12 Mbit/s is 1500 bytes a 1 ms tick; a pause from 10 to 30 ms owes
    # nothing and is not caught up; 8 Mbit/s from 40 ms; unlimited from 50.
    app = {"rate_bps": 12e6, "tick_s": 1e-3, "steps": [
        {"at_s": 0.010, "rate_bps": None, "pause_s": 0.020}, {"at_s": 0.040, "rate_bps": 8e6, "pause_s": None},
        {"at_s": 0.050, "rate_bps": None, "pause_s": None}]}
    w = engine.AppWriter(app, t0_wall_s=100.0, start_wall_s=100.0)
    assert w.run_ticks(100.0) == (1500, False)
    assert w.run_ticks(100.0295) == (9 * 1500, False)  # ticks 1-9; 10-29 paused
    assert w.run_ticks(100.0395) == (10 * 1500, False)  # ticks 30-39
    assert w.run_ticks(100.049) == (10 * 1000, False)  # ticks 40-49 at 8 Mbit/s
    assert w.run_ticks(100.050) == (0, True) and w.next_change() is None


def test_the_engines_writer_carries_the_fraction_and_skips_ticks_spent_blocked(engine):
    w = engine.AppWriter({"rate_bps": 12_004.0, "tick_s": 1e-3, "steps": []}, t0_wall_s=0.0, start_wall_s=0.0)
    assert w.run_ticks(0.0009) == (1, False)  # 1.5005 bytes: 1 written, 0.5005 carried
    assert w.run_ticks(0.0019) == (2, False)
    w.skip_until(0.0101)  # a write blocked until 10.1 ms: ticks 2-10 owe nothing
    assert w.run_ticks(0.0115) == (1, False)  # tick 11 alone: the 0.001 carried + 1.5005


def test_a_step_on_a_sender_state_is_planned_for_the_simulator_and_refused_on_linux():
    from fatpipe.linuxpath.config import state_trigger_refusal

    def triggered(r):
        r["flows"][0]["cc"] = "bbr3"
        r["flows"][0]["app"].append({"on": "enter:PROBE_REFILL", "pause": "100ms"})

    raw = copy.deepcopy(RAW)
    triggered(raw)
    (plan,) = _plans(raw)
    step = plan.flows[0].app.steps[-1]
    assert step.at_s is None and step.on.event == "enter:PROBE_REFILL" and step.pause_s == 0.1
    assert plan.flows[0].app.write_rate_steps()[-1][0] == 8.0, "a triggered step has no place in time"
    refused = state_trigger_refusal(plan.dynamics, plan.flows)
    assert refused.startswith("flows.0.app.3.on = 'enter:PROBE_REFILL': only the simulator"), refused
    problems = _problems(lambda r: r["flows"][0]["app"].append({"on": "enter:PROBE_UP", "rate": "1Mbit"}))
    assert any(k == "flows.0.app.3.on" and "cubic" in m for k, m in problems), problems
