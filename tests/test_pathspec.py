"""Paths that move in the spec (pathspec.py): [[path.schedule]], path.loss_model,
path.jitter, path.policer, path.aggregation — every written form, the errors
(naming the key and what is allowed), the run plan's PathDynamics (units in
SI, multiples resolved, Gilbert-Elliott's mean), sweeps, and the backends
that cannot apply them yet refusing them by key."""

import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import (
    Aggregation,
    BackendUnavailable,
    GilbertElliott,
    Jitter,
    PathDynamics,
    PathStep,
    Policer,
    Reorder,
)
from fatpipe.backends.hosts import plan_problems
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.config import dynamics_refusal, path_config
from fatpipe.study import plan_runs

BASE = """
version = 1
[study]
name = "moving"
duration = "10s"
[path]
rate = "100Mbit"
rtt = "20ms"
{path}
[[flows]]
cc = "cubic"
{rest}
"""


def _write(tmp_path, path: str, rest: str):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE.format(path=path, rest=rest)))
    return p


def plans(tmp_path, path="", rest=""):
    spec, raw = spec_mod.load(_write(tmp_path, path, rest))
    return plan_runs(spec, raw)


def problems(tmp_path, path="", rest="") -> dict[str, str]:
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(_write(tmp_path, path, rest))
    return dict(e.value.problems)


def step(at, rate=None, rtt=None, loss=None) -> str:
    keys = {"at": at, "rate": rate, "rtt": rtt, "loss": loss}
    return "\n".join(["[[path.schedule]]"] + [f"{k} = {v}" for k, v in keys.items() if v is not None]) + "\n"


# ---- the static path -----------------------------------------------------------------


def test_a_path_without_these_keys_is_static(tmp_path):
    (plan,) = plans(tmp_path)
    assert plan.dynamics == PathDynamics() and plan.dynamics.is_static() and plan.dynamics.keys() == []


# ---- [[path.schedule]] -------------------------------------------------------------------


def test_schedule_steps_become_plan_steps_in_si_units(tmp_path):
    (plan,) = plans(tmp_path, rest=step('"2s"', rate='"1Gbit"') + step("4.5", rtt='"40ms"', loss="0.01")
                    + step('"6s"', loss="0"))
    assert plan.dynamics.schedule == (
        PathStep(at_s=2.0, rate_bps=1e9),
        PathStep(at_s=4.5, rtt_s=pytest.approx(0.04), loss=0.01),
        PathStep(at_s=6.0, loss=0.0),
    )
    assert plan.dynamics.keys() == ["path.schedule"]
    assert plan.rate_bps == 1e8 and plan.rtt_s == pytest.approx(0.02), "the path starts as written"


def test_a_ramp_is_a_staircase_from_the_values_in_force_to_the_steps(tmp_path):
    # 100 -> 10 Mbit/s over 1 s from 2 s: 100 steps of 0.9 Mbit/s, 10 ms
    # apart (RAMP_STEP_S), the last at 2.99 s; then the RTT from 20 to
    # 40 ms over 50 ms: 5 steps of 4 ms.
    ramps = ('[[path.schedule]]\nat = "2s"\nrate = "10Mbit"\nramp = "1s"\n'
             '[[path.schedule]]\nat = "5s"\nrtt = "40ms"\nramp = "50ms"\n')
    (plan,) = plans(tmp_path, rest=ramps)
    st = plan.dynamics.schedule
    assert len(st) == 105
    assert st[0] == PathStep(at_s=2.0, rate_bps=pytest.approx(99.1e6))
    assert st[99] == PathStep(at_s=pytest.approx(2.99), rate_bps=pytest.approx(10e6))
    assert [s.rtt_s for s in st[100:]] == pytest.approx([0.024, 0.028, 0.032, 0.036, 0.040])
    assert all(a.at_s < b.at_s for a, b in zip(st, st[1:], strict=False))
    late = ramps.replace('ramp = "1s"', 'ramp = "4s"')
    assert "a ramp ends before the next step" in problems(tmp_path, rest=late)["path.schedule.0.ramp"]
    triggered = '[[path.schedule]]\non = "enter:DRAIN"\nrate = "0.9x"\nramp = "1s"\n'
    assert "happens at once" in problems(tmp_path, rest=triggered)["path.schedule.0"]


def test_a_multiple_is_of_the_paths_own_value_at_each_sweep_point(tmp_path):
    got = plans(tmp_path, rest=step('"2s"', rate='"10x"', rtt='"0.5x"') + step('"5s"', rate='"0.1X"')
                + '[sweep]\n"path.rate" = ["10Mbit", "1Gbit"]\n"path.rtt" = ["10ms", "100ms"]\n')
    resolved = [(p.rate_bps, p.rtt_s, [(s.rate_bps, s.rtt_s) for s in p.dynamics.schedule]) for p in got]
    assert resolved == [
        (1e7, 0.01, [(1e8, 0.005), (1e6, None)]),
        (1e7, 0.1, [(1e8, 0.05), (1e6, None)]),
        (1e9, 0.01, [(1e10, 0.005), (1e8, None)]),
        (1e9, 0.1, [(1e10, 0.05), (1e8, None)]),
    ]


@pytest.mark.parametrize("steps, key, says", [
    (step('"0s"', rate='"1Gbit"'), "path.schedule.0.at", "must be greater than 0"),
    (step('"10s"', rate='"1Gbit"'), "path.schedule.0.at", "not before study.duration (10 s)"),
    (step('"1s"', rate='"1Gbit"') + step('"3s"', loss="0.1") + step('"3s"', rtt='"1ms"'),
     "path.schedule.2.at", "not after path.schedule.1.at (3 s); steps are written in time order"),
    (step('"5s"', rate='"1Gbit"') + step('"4s"', loss="0.1"), "path.schedule.1.at", "not after"),
    (step('"1s"'), "path.schedule.0", "sets at least one of rate, rtt, loss"),
    ("[[path.schedule]]\nrate = \"1Gbit\"\n", "path.schedule.0", "give at (a time such as '3s') or on"),
    (step('"1s"', rate='"fast"'), "path.schedule.0.rate",
     "cannot read 'fast' as a rate; write e.g. '10Gbit', '100Mbit', '1.5Gbps', or a multiple of path.rate such "
     "as '10x'"),
    (step('"1s"', rate='"1bit"'), "path.schedule.0.rate", "below the minimum of 1000 bit/s"),
    (step('"1s"', rate='"0x"'), "path.schedule.0.rate", "a multiple of path.rate is above 0"),
    (step('"1s"', rate='"1e6x"'), "path.schedule.0.rate",
     "1e+06x of path.rate (100 Mbit/s): 1e+14 bit/s is above the maximum of 1e+13 bit/s"),
    (step('"1s"', rtt='"11s"'), "path.schedule.0.rtt", "above the maximum of 10 s"),
    (step('"1s"', rtt='"1000x"'), "path.schedule.0.rtt", "1000x of path.rtt (20 ms): 20 s is above the maximum"),
    (step('"1s"', rtt="0"), "path.schedule.0.rtt", "must be greater than 0"),
    (step('"1s"', loss="1.0"), "path.schedule.0.loss", "got 1.0; input should be less than 1"),
    (step('"1s"', loss='"1%"'), "path.schedule.0.loss", "got '1%'; input should be a valid number"),
    (step('"1s"', rate='"1Gbit"') + "extra = 1\n", "path.schedule.0.extra", "unknown key"),
    ('[path.schedule]\nat = "1s"\nrate = "1Gbit"\n', "path.schedule", "write [[path.schedule]] (double brackets)"),
])
def test_bad_schedule_steps_are_refused_naming_the_step_and_key(tmp_path, steps, key, says):
    found = problems(tmp_path, rest=steps)
    assert key in found and says in found[key], found


# ---- path.loss_model ------------------------------------------------------------------


@pytest.mark.parametrize("written, model", [
    ('"independent"', None),
    ('{kind = "independent"}', None),
    ('{kind = "gilbert_elliott", r = 0.3}', GilbertElliott(r=0.3, bad_loss=1.0, good_loss=0.0)),
    ('{kind = "gilbert_elliott", r = 0.25, bad_loss = 0.5, good_loss = 0.001}',
     GilbertElliott(r=0.25, bad_loss=0.5, good_loss=0.001)),
    ('{kind = "gilbert_elliott", mean_burst = 4}', GilbertElliott(r=0.25, bad_loss=1.0)),
    ('"gilbert_elliott:r=0.3,bad_loss=0.8"', GilbertElliott(r=0.3, bad_loss=0.8)),
    ('"gilbert_elliott:mean_burst=10"', GilbertElliott(r=pytest.approx(0.1), bad_loss=1.0)),
])
def test_loss_model_forms(tmp_path, written, model):
    (plan,) = plans(tmp_path, path=f"loss = 0.01\nloss_model = {written}")
    assert plan.dynamics.gilbert_elliott == model and plan.loss == 0.01
    assert plan.dynamics.keys() == ([] if model is None else ["path.loss_model"])


def test_netems_p_gives_the_mean_loss_and_the_plan_carries_it(tmp_path):
    (plan,) = plans(tmp_path, path='loss_model = {kind = "gilbert_elliott", p = 0.01, r = 0.3, bad_loss = 0.9, '
                                   "good_loss = 0.001}")
    r, p, bad, good = 0.3, 0.01, 0.9, 0.001
    assert plan.loss == pytest.approx((r * good + p * bad) / (p + r))
    ge = plan.dynamics.gilbert_elliott
    # What the simulator derives back from the mean (base.py GilbertElliott): netem's p.
    assert ge.r * (plan.loss - ge.good_loss) / (ge.bad_loss - plan.loss) == pytest.approx(p)
    (explicit_zero,) = plans(tmp_path, path='loss = 0\nloss_model = "gilbert_elliott:p=0.01,r=0.3"')
    assert explicit_zero.loss == pytest.approx(0.01 / 0.31)


@pytest.mark.parametrize("path, key, says", [
    ('loss_model = "bursty"', "path.loss_model", "unknown loss model 'bursty'; write \"independent\""),
    ('loss_model = {kind = "markov"}', "path.loss_model", "the kinds are independent, gilbert_elliott"),
    ("loss_model = 3", "path.loss_model", "got a number"),
    ('loss_model = {kind = "independent", r = 0.3}', "path.loss_model", 'r only apply to kind = "gilbert_elliott"'),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott"}', "path.loss_model", "needs one of r"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", r = 0.3, mean_burst = 3}', "path.loss_model",
     "needs one of r"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", r = 0}', "path.loss_model", "r = 0: netem's r"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", r = "0.3"}', "path.loss_model", "r = '0.3'"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", r = true}', "path.loss_model", "r = the boolean true"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", mean_burst = 0.5}', "path.loss_model",
     "mean_burst = 0.5: the packets spent in the bad state on average (1/r), at least 1"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", r = 0.3, bad_loss = 1.5}', "path.loss_model",
     "bad_loss = 1.5: the loss per packet in the bad state (netem's 1-h), above 0 and at most 1"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", r = 0.3, bad_loss = 0.1, good_loss = 0.2}',
     "path.loss_model", "good_loss = 0.2 must be below bad_loss = 0.1"),
    ('loss_model = {kind = "gilbert_elliott", r = 0.3, p = 0}', "path.loss_model", "p = 0: netem's p"),
    ('loss = 0.01\nloss_model = {kind = "gilbert_elliott", r = 0.3, h = 0.1}', "path.loss_model",
     'unknown key(s) h; kind = "gilbert_elliott" takes kind, r, mean_burst, p, bad_loss, good_loss'),
    ('loss_model = "gilbert_elliott:r"', "path.loss_model", "write key=value pairs"),
    ('loss = 0.01\nloss_model = "gilbert_elliott:p=0.01,r=0.3"', "path.loss",
     "path.loss_model gives netem's p = 0.01, which sets the mean loss (0.0322581); leave path.loss out (or 0)"),
    ('loss_model = "gilbert_elliott:r=0.3"', "path.loss",
     "path.loss = 0 is not a mean loss path.loss_model (gilbert_elliott, r = 0.3, bad_loss = 1, good_loss = 0) "
     "can have: it must lie above good_loss (0) and at most 0.769231"),
    ('loss = 0.8\nloss_model = "gilbert_elliott:r=0.3"', "path.loss", "at most 0.769231"),
    ('loss = 0.001\nloss_model = "gilbert_elliott:r=0.3,good_loss=0.01,bad_loss=0.5"', "path.loss",
     "must lie above good_loss (0.01)"),
])
def test_bad_loss_models_are_refused_naming_the_keys_and_what_is_allowed(tmp_path, path, key, says):
    found = problems(tmp_path, path=path)
    assert key in found and says in found[key], found


def test_every_loss_a_step_sets_is_held_to_the_models_range(tmp_path):
    ok = 'loss = 0.01\nloss_model = "gilbert_elliott:r=0.3"'
    (plan,) = plans(tmp_path, path=ok, rest=step('"1s"', loss="0.05"))
    assert plan.dynamics.schedule[0].loss == 0.05
    found = problems(tmp_path, path=ok, rest=step('"1s"', loss="0.05") + step('"2s"', loss="0.9"))
    assert "path.schedule.1.loss = 0.9 is not a mean loss path.loss_model" in found["path.schedule.1.loss"], found
    found = problems(tmp_path, path='loss_model = "gilbert_elliott:p=0.01,r=0.3"', rest=step('"1s"', loss="0"))
    assert "must lie above good_loss (0)" in found["path.schedule.0.loss"], found


# ---- path.jitter ---------------------------------------------------------------------


@pytest.mark.parametrize("written, reorder", [
    ("0.01", Reorder(probability=0.01)),
    ('"25%:gap=5"', Reorder(probability=0.25, gap=5)),
    ('{probability = 0.5, gap = 3, direction = "both"}', Reorder(probability=0.5, gap=3, direction="both")),
])
def test_reorder_forms(tmp_path, written, reorder):
    (plan,) = plans(tmp_path, path=f"reorder = {written}")
    assert plan.dynamics.reorder == reorder and plan.dynamics.keys() == ["path.reorder"]


@pytest.mark.parametrize("written, key, says", [
    ("0", "path.reorder.probability", "above 0 and at most 1"),
    ("1.5", "path.reorder.probability", "above 0 and at most 1"),
    ('"2 percent"', "path.reorder.probability", "write 0.01 or '1%'"),
    ("{probability = 0.1, gap = 0}", "path.reorder.gap", "greater than or equal to 1"),
    ('{probability = 0.1, direction = "up"}', "path.reorder.direction", "'data', 'ack' or 'both'"),
    ("true", "path.reorder", "a probability such as 0.01"),
])
def test_bad_reorder_is_refused_naming_the_key(tmp_path, written, key, says):
    got = problems(tmp_path, path=f"reorder = {written}")
    assert key in got and says in got[key], got


def test_the_reorder_knob_reorders_in_the_simulator(tmp_path):
    # 2 % of data packets sent at once skip the 10 ms one-way delay and
    # overtake those in flight: the path counts them, nothing is lost.
    # RACK first takes the holes they leave for losses, then the D-SACKs
    # of its needless retransmissions widen its reordering window
    # (tcp_rack_update_reo_wnd()) until it waits for them: under 1 % of
    # segments retransmitted (about 8 % without the widening).
    (plan,) = plans(tmp_path, path="reorder = 0.02")
    out = SimBackend().run(replace(plan, duration_s=3.0), tmp_path / "run")
    assert out.path.reordered > 0, out.path
    assert out.path.random_drops == 0
    retrans, sent = out.series["retrans_segments"][-1], out.series["segs_out"][-1]
    assert retrans < 0.01 * sent, (retrans, sent)


@pytest.mark.parametrize("written, jitter", [
    ('"2ms"', Jitter(deviation_s=pytest.approx(0.002))),
    ('{deviation = "500us"}', Jitter(deviation_s=pytest.approx(5e-4))),
    ('{deviation = "1ms", distribution = "normal", reorder = true, direction = "both"}',
     Jitter(deviation_s=pytest.approx(0.001), distribution="normal", reorder=True, direction="both")),
    ('"3ms:distribution=normal,reorder=true,direction=ack"',
     Jitter(deviation_s=pytest.approx(0.003), distribution="normal", reorder=True, direction="ack")),
    ('"1s"', Jitter(deviation_s=1.0)),
])
def test_jitter_forms(tmp_path, written, jitter):
    (plan,) = plans(tmp_path, path=f"jitter = {written}")
    assert plan.dynamics.jitter == jitter and plan.dynamics.keys() == ["path.jitter"]


@pytest.mark.parametrize("written, key, says", [
    ('"0ms"', "path.jitter.deviation", "must be greater than 0"),
    ('"2s"', "path.jitter.deviation", "above the maximum of 1 s"),
    ('"soon"', "path.jitter.deviation", "cannot read 'soon' as a time"),
    ("true", "path.jitter", "path.jitter is a deviation such as '2ms' or a table"),
    ('{distribution = "normal"}', "path.jitter.deviation", "Field required"),
    ('{deviation = "1ms", distribution = "pareto"}', "path.jitter.distribution", "'uniform' or 'normal'"),
    ('{deviation = "1ms", direction = "up"}', "path.jitter.direction", "'data', 'ack' or 'both'"),
    ('{deviation = "1ms", reorder = 1}', "path.jitter.reorder", "valid boolean"),
    ('{deviation = "1ms", spread = 2}', "path.jitter.spread", "unknown key"),
    ('"1ms:reorder"', "path.jitter", "write key=value pairs such as '2ms:distribution=normal,reorder=true'"),
])
def test_bad_jitter_is_refused_naming_the_key(tmp_path, written, key, says):
    found = problems(tmp_path, path=f"jitter = {written}")
    assert key in found and says in found[key], found


# ---- path.policer --------------------------------------------------------------------


@pytest.mark.parametrize("written", ['{rate = "50Mbit", burst = "100KB"}', '"50Mbps/100KB"', '"50Mbit/s/100KB"',
                                     '{rate = 50e6, burst = 100000}'])
def test_policer_forms(tmp_path, written):
    (plan,) = plans(tmp_path, path=f"policer = {written}")
    assert plan.dynamics.policer == Policer(rate_bps=5e7, burst_bytes=100_000)
    assert plan.dynamics.keys() == ["path.policer"]


@pytest.mark.parametrize("path, key, says", [
    ('policer = {rate = "50Mbit", burst = "1000B"}', "path.policer.burst",
     "1000 bytes is less than one frame of path.mtu = 1500 (1514 bytes with the 14-byte Ethernet header)"),
    ('mtu = 9000\npolicer = "50Mbit/9000B"', "path.policer.burst", "write at least 9014 bytes"),
    ('policer = {rate = "0bit", burst = "100KB"}', "path.policer.rate", "below the minimum of 1000 bit/s"),
    ('policer = {rate = "50Mbit"}', "path.policer.burst", "Field required"),
    ('policer = {rate = "50Mbit", burst = "lots"}', "path.policer.burst", "cannot read 'lots' as a size"),
    ('policer = "50Mbit"', "path.policer", "write rate/burst such as '50Mbit/100KB'"),
    ("policer = 5", "path.policer", "got a number"),
    ('policer = {rate = "50Mbit", burst = "100KB", depth = 3}', "path.policer.depth", "unknown key"),
])
def test_bad_policer_is_refused_naming_the_key(tmp_path, path, key, says):
    found = problems(tmp_path, path=path)
    assert key in found and says in found[key], found


# ---- path.aggregation ---------------------------------------------------------------


@pytest.mark.parametrize("written, aggregation", [
    ('{direction = "ack", interval = "1ms"}', Aggregation(direction="ack", interval_s=pytest.approx(0.001))),
    ('{direction = "data", interval = "4ms", bytes = "64KB"}',
     Aggregation(direction="data", interval_s=pytest.approx(0.004), bytes=64_000)),
    ('"ack:1ms"', Aggregation(direction="ack", interval_s=pytest.approx(0.001))),
    ('"ack:500us:64KiB"', Aggregation(direction="ack", interval_s=pytest.approx(5e-4), bytes=65536)),
])
def test_aggregation_forms(tmp_path, written, aggregation):
    (plan,) = plans(tmp_path, path=f"aggregation = {written}")
    assert plan.dynamics.aggregation == aggregation and plan.dynamics.keys() == ["path.aggregation"]


@pytest.mark.parametrize("written, key, says", [
    ('{direction = "both", interval = "1ms"}', "path.aggregation.direction", "'data' or 'ack'"),
    ('{interval = "1ms"}', "path.aggregation.direction", "Field required"),
    ('{direction = "ack", interval = "0s"}', "path.aggregation.interval", "must be greater than 0"),
    ('{direction = "ack", interval = "2s"}', "path.aggregation.interval", "above the maximum of 1 s"),
    ('{direction = "ack", interval = "1ms", bytes = "1KB"}', "path.aggregation.bytes",
     "1000 bytes is less than one frame of path.mtu = 1500"),
    ('"ack"', "path.aggregation", "write direction:interval[:bytes] such as 'ack:1ms' or 'ack:1ms:64KB'"),
    ('"ack:1ms:64KB:x"', "path.aggregation", "direction:interval[:bytes]"),
    ("[1]", "path.aggregation", "got an array"),
])
def test_bad_aggregation_is_refused_naming_the_key(tmp_path, written, key, says):
    found = problems(tmp_path, path=f"aggregation = {written}")
    assert key in found and says in found[key], found


# ---- a path left to the real one ----------------------------------------------------


@pytest.mark.parametrize("path", ['jitter = "1ms"', 'policer = "50Mbit/100KB"'])
def test_a_real_path_cannot_move_as_specified(tmp_path, path):
    text = BASE.format(path=path, rest="").replace('rate = "100Mbit"\nrtt = "20ms"\n', "")
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(p)
    key = f"path.{path.split()[0]}"
    assert "path.rate and path.rtt are left out" in dict(e.value.problems)[key], e.value.problems


# ---- sweeps ------------------------------------------------------------------------


@pytest.mark.parametrize("key, values, read", [
    ("path.loss_model", '["independent", "gilbert_elliott:r=0.5", "gilbert_elliott:mean_burst=4"]',
     lambda p: p.dynamics.gilbert_elliott and p.dynamics.gilbert_elliott.r),
    ("path.jitter", '["1ms", "2ms:reorder=true"]',
     lambda p: (round(p.dynamics.jitter.deviation_s, 9), p.dynamics.jitter.reorder)),
    ("path.policer", '["10Mbit/20KB", "20Mbit/40KB"]',
     lambda p: (p.dynamics.policer.rate_bps, p.dynamics.policer.burst_bytes)),
    ("path.aggregation", '["ack:1ms", "data:2ms:30KB"]',
     lambda p: (p.dynamics.aggregation.direction, p.dynamics.aggregation.interval_s, p.dynamics.aggregation.bytes)),
])
def test_each_key_is_sweepable_in_its_string_form(tmp_path, key, values, read):
    got = [read(p) for p in plans(tmp_path, path="loss = 0.01", rest=f'[sweep]\n"{key}" = {values}\n')]
    expected = {
        "path.loss_model": [None, 0.5, 0.25],
        "path.jitter": [(0.001, False), (0.002, True)],
        "path.policer": [(1e7, 20_000), (2e7, 40_000)],
        "path.aggregation": [("ack", 0.001, None), ("data", 0.002, 30_000)],
    }[key]
    assert got == expected


def test_schedule_steps_are_sweepable_by_index(tmp_path):
    got = plans(tmp_path, rest=step('"2s"', rate='"10x"') + step('"5s"', loss="0.01")
                + '[sweep]\n"path.schedule.0.rate" = ["10x", "0.1x", "1Gbit"]\n"path.schedule.1.at" = ["3s", "6s"]\n')
    assert [(p.dynamics.schedule[0].rate_bps, p.dynamics.schedule[1].at_s) for p in got] == [
        (1e9, 3.0), (1e9, 6.0), (1e7, 3.0), (1e7, 6.0), (1e9, 3.0), (1e9, 6.0)]
    assert got[2].swept == {"path.schedule.0.rate": "0.1x", "path.schedule.1.at": "3s"}


@pytest.mark.parametrize("sweep, where, says", [
    ('"path.schedule.2.rate" = ["10x"]', 'sweep."path.schedule.2.rate"', "no such step (there are 2)"),
    ('"path.schedule.00.rate" = ["10x"]', 'sweep."path.schedule.00.rate"', "not a step index"),
    ('"path.schedule.0.kind" = ["x"]', 'sweep."path.schedule.0.kind"', "path.schedule.<index>.at|rate|rtt|loss"),
    ('"path.schedule.1.at" = ["1s"]', 'sweep."path.schedule.1.at"[0] (path.schedule.1.at)', "not after"),
    ('"path.schedule.0.rate" = ["fast"]', 'sweep."path.schedule.0.rate"[0] (path.schedule.0.rate)',
     "or a multiple of path.rate"),
    ('"path.jitter" = ["2ms", "5s"]', 'sweep."path.jitter"[1] (path.jitter.deviation)', "above the maximum of 1 s"),
    ('"path.loss" = [0.01, 0.9]', 'sweep."path.loss"[1] (path.loss)', "is not a mean loss path.loss_model"),
    ('"path.mtu" = [1500, 9000]', 'sweep."path.mtu"[1] (path.policer.burst)', "write at least 9014 bytes"),
])
def test_swept_values_are_checked_with_the_rest_of_the_path(tmp_path, sweep, where, says):
    path = 'loss = 0.01\nloss_model = "gilbert_elliott:r=0.3"\npolicer = "50Mbit/2KB"'
    found = problems(tmp_path, path=path, rest=step('"2s"', rate='"10x"') + step('"5s"', loss="0.02")
                     + f"[sweep]\n{sweep}\n")
    assert where in found and says in found[where], found


def test_a_swept_rate_that_takes_a_multiple_out_of_range_names_the_point(tmp_path):
    # Each axis's values are valid alone (checked when the spec loads); one combination is not.
    spec, raw = spec_mod.load(_write(tmp_path, "", step('"2s"', rate='"2x"') + (
        '[sweep]\n"path.rate" = ["1Mbit", "100Gbit"]\n"path.schedule.0.rate" = ["10x", "1000x"]\n')))
    with pytest.raises(spec_mod.SpecError) as e:
        plan_runs(spec, raw)
    assert str(e.value).endswith(
        "sweep (path.rate = '100Gbit', path.schedule.0.rate = '1000x') path.schedule.0.rate: "
        "1000x of path.rate (100 Gbit/s): 1e+14 bit/s is above the maximum of 1e+13 bit/s"), str(e.value)
    found = problems(tmp_path, rest=step('"2s"', rate='"1000x"') + '[sweep]\n"path.rate" = ["1Mbit", "100Gbit"]\n')
    assert "1000x of path.rate (100 Gbit/s)" in found['sweep."path.rate"[1] (path.schedule.0.rate)'], found


# ---- backends ---------------------------------------------------------------------------

MOVING = 'loss = 0.01\nloss_model = "gilbert_elliott:r=0.3"\njitter = "1ms"\npolicer = "50Mbit/100KB"\n' \
         'aggregation = "ack:1ms"'
KEYS = "path.schedule, path.loss_model, path.jitter, path.policer, path.aggregation"


def test_the_kernel_backend_moves_a_path_with_linkem_only_naming_the_keys_it_cannot_apply(tmp_path):
    (plan,) = plans(tmp_path, path=MOVING, rest=step('"1s"', rate='"2x"'))
    cfg = path_config(plan)
    assert dynamics_refusal(cfg, "linkem-nfqueue", "linkem") is None
    assert dynamics_refusal(path_config(plans(tmp_path)[0]), "netem", "tbf") is None, "a static path moves nowhere"
    tbf = dynamics_refusal(cfg, "linkem-nfqueue", "tbf")
    assert tbf.startswith(f"{KEYS} need fatpipe-linkem as delay line and bottleneck (emulator='linkem-nfqueue', "
                          "bottleneck='tbf')"), tbf
    # netem (path.emulator = "netem") refuses only what its options cannot express (test_netem_map.py).
    netem = dynamics_refusal(cfg, "netem", "tbf")
    assert netem.startswith('path.schedule, path.policer with path.emulator = "netem": netem has no option'), netem
    (fq,) = plans(tmp_path, path='jitter = "1ms"\naqm = "fq_codel"')
    with pytest.raises(BackendUnavailable, match=r"path\.jitter with path\.aqm = 'fq_codel': that discipline"):
        KernelBackend().check([fq])
    gro = replace(path_config(plans(tmp_path, path='jitter = "1ms:reorder=true"')[0]), receiver_gro=True)
    assert "reorder = true and hosts.receiver.gro = true" in dynamics_refusal(gro, "linkem-nfqueue", "linkem")


def test_the_hosts_backend_needs_an_emulator_host_for_a_moving_path(tmp_path):
    (plan,) = plans(tmp_path, path=MOVING, rest=step('"1s"', rate='"2x"'))
    assert f"run {plan.run_id}: {KEYS}: a path that moves needs an emulator host in the testbed (its delay line " \
           "applies them)" in plan_problems(plan, None)
    (static,) = plans(tmp_path)
    assert not any("moves" in p for p in plan_problems(static, None))


def test_the_sim_backend_takes_the_plan_as_it_is(tmp_path):
    (plan,) = plans(tmp_path, path=MOVING, rest=step('"1s"', rate='"2x"'))
    SimBackend().check([plan])  # the simulator's own reading of dynamics is tested with it (crates/sim)


# ---- the documentation ------------------------------------------------------------------


def test_the_example_study_of_the_docs_plans_the_steps_it_describes(tmp_path):
    doc = (Path(__file__).resolve().parents[1] / "docs" / "path-dynamics.md").read_text()
    example = doc.split("### Example", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    p = tmp_path / "example.toml"
    p.write_text(example)
    spec, raw = spec_mod.load(p)
    got = plan_runs(spec, raw)
    assert [(p.rate_bps, [s.rate_bps for s in p.dynamics.schedule], p.dynamics.gilbert_elliott is None)
            for p in got] == [(1e7, [1e8, 1e7], True), (1e7, [1e8, 1e7], False),
                              (1e8, [1e9, 1e8], True), (1e8, [1e9, 1e8], False)]
    assert {p.dynamics.aggregation for p in got} == {Aggregation(direction="ack", interval_s=0.001)}


def test_a_rate_ramp_slows_the_flow_step_by_step_in_the_simulator(tmp_path):
    # 100 -> 10 Mbit/s over 2 s from 2 s: CUBIC behind a 1-BDP buffer
    # follows the falling rate, so each half second of the ramp delivers
    # less than the one before, and the ramp's middle second about the
    # mean of its rates there (55 Mbit/s; ~95 % of it is payload).
    ramp = '[[path.schedule]]\nat = "2s"\nrate = "10Mbit"\nramp = "2s"\n'
    (plan,) = plans(tmp_path, rest=ramp)
    out = SimBackend().run(replace(plan, sample_interval_s=0.1), tmp_path / "run")
    t = np.asarray(out.series["t_s"])
    delivered = np.asarray(out.series["delivered_bytes"], dtype=float)

    def mbps(t0, t1):
        return (np.interp(t1, t, delivered) - np.interp(t0, t, delivered)) * 8 / (t1 - t0)

    rates = [mbps(a, a + 0.5) for a in (2.0, 2.5, 3.0, 3.5)]
    assert all(a > b for a, b in zip(rates, rates[1:], strict=False)), rates
    assert 0.8 * 55e6 * 0.95 < mbps(2.5, 3.5) < 1.1 * 55e6, rates
