"""path.emulator (pure): the spec key, its way into the run plan and the
Linux path's config, the netem options a moving path maps to
(linuxpath/netem_map.py, exact argument lists and percentages) and what
netem refuses, naming the keys."""

from __future__ import annotations

import textwrap

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import Aggregation, GilbertElliott, Jitter, PathDynamics, PathStep, Policer, Reorder, Trace
from fatpipe.backends.hosts import plan_problems
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import plan_json
from fatpipe.linuxpath.config import dynamics_refusal, path_config
from fatpipe.linuxpath.netem_map import (
    EXPRESSED,
    IN_ORDER_RATE_BPS,
    direction_options,
    gemodel_p,
    missing_netem,
    refusal,
)
from fatpipe.linuxpath.qdisc import netem_args, netem_qdisc_args
from fatpipe.study import plan_runs

BASE = """
version = 1
[study]
name = "netem"
duration = "10s"
[path]
rate = "100Mbit"
rtt = "20ms"
{path}
[[flows]]
cc = "cubic"
{rest}
"""


def plans(tmp_path, path="", rest=""):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE.format(path=path, rest=rest)))
    spec, raw = spec_mod.load(p)
    return plan_runs(spec, raw)


def problems(tmp_path, path="") -> dict[str, str]:
    with pytest.raises(spec_mod.SpecError) as e:
        plans(tmp_path, path)
    return dict(e.value.problems)


# ---- the spec key ---------------------------------------------------------------------


@pytest.mark.parametrize(("written", "planned", "config"), [
    ("", "auto", "auto"), ('emulator = "auto"', "auto", "auto"), ('emulator = "linkem"', "linkem", "linkem-nfqueue"),
    ('emulator = "netem"', "netem", "netem")])
def test_path_emulator_reaches_the_plan_and_the_linux_paths_config(tmp_path, written, planned, config):
    (plan,) = plans(tmp_path, written)
    assert plan.emulator == planned
    assert path_config(plan).emulator == config
    assert f'"emulator": "{planned}"' in plan_json(plan)  # the simulator declares and ignores it (plan.rs)


def test_an_unknown_emulator_is_refused_naming_the_key_the_value_and_what_is_allowed(tmp_path):
    found = problems(tmp_path, 'emulator = "tc"')
    assert found["path.emulator"] == "got 'tc'; input should be 'auto', 'linkem' or 'netem'", found


def test_the_emulator_is_a_sweep_key(tmp_path):
    got = plans(tmp_path, rest='[sweep]\n"path.emulator" = ["linkem", "netem"]\n')
    assert [p.emulator for p in got] == ["linkem", "netem"]
    assert [p.swept for p in got] == [{"path.emulator": "linkem"}, {"path.emulator": "netem"}]


def test_a_real_path_takes_no_emulator(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('version = 1\n[study]\nname = "x"\nduration = "10s"\nbackends = ["hosts"]\n'
                 '[path]\nemulator = "netem"\n[[flows]]\ncc = "cubic"\n')
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(p)
    assert "path.emulator cannot be applied" in dict(e.value.problems)["path.emulator"]


# ---- the options ---------------------------------------------------------------------


def test_a_static_path_gets_the_options_it_always_had():
    static = netem_qdisc_args("eth0", direction_options("data", 0.01, 0.001, PathDynamics()))
    assert static == netem_args("eth0", 0.01, 0.001) == [
        "tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "limit", "1000000",
        "delay", "10.000000ms", "loss", "0.100000000%"]
    assert direction_options("ack", 0.01, 0.0, PathDynamics()) == ["delay", "10.000000ms", "loss", "0.000000000%"]


def test_gilbert_elliott_is_gemodel_p_r_1h_1k_on_the_data_direction_only():
    model = GilbertElliott(r=0.3, bad_loss=0.8, good_loss=0.001)
    dyn = PathDynamics(gilbert_elliott=model)
    # p = r (L - good) / (bad - L) = 0.3 * 0.009 / 0.79 for the mean L = 0.01.
    p = 0.3 * (0.01 - 0.001) / (0.8 - 0.01)
    assert gemodel_p(0.01, model) == pytest.approx(p, rel=1e-15)
    assert direction_options("data", 0.01, 0.01, dyn) == [
        "delay", "10.000000ms", "loss", "gemodel", f"{p * 100:.9f}%", "30.000000000%", "80.000000000%",
        "0.100000000%"]
    assert f"{p * 100:.9f}%" == "0.341772152%"
    # The chain's long-run loss is the mean asked for: (r good + p bad) / (p + r).
    assert (0.3 * 0.001 + p * 0.8) / (p + 0.3) == pytest.approx(0.01, rel=1e-12)
    assert direction_options("ack", 0.01, 0.0, dyn) == ["delay", "10.000000ms", "loss", "0.000000000%"]


@pytest.mark.parametrize(("mean", "p"), [(0.0, 0.0), (0.001, 0.0), (0.8, 1.0), (0.9, 1.0)])
def test_gemodel_p_is_clamped_as_the_simulator_clamps_it(mean, p):
    assert gemodel_p(mean, GilbertElliott(r=0.3, bad_loss=0.8, good_loss=0.001)) == p


@pytest.mark.parametrize(("jitter", "data", "ack"), [
    (Jitter(0.002, "uniform", True, "data"), ["delay", "10.000000ms", "2.000000ms", "loss", "1.000000000%"],
     ["delay", "10.000000ms", "loss", "0.000000000%"]),
    (Jitter(0.002, "normal", True, "ack"), ["delay", "10.000000ms", "loss", "1.000000000%"],
     ["delay", "10.000000ms", "2.000000ms", "distribution", "normal", "loss", "0.000000000%"]),
    (Jitter(0.0005, "normal", False, "both"),
     ["delay", "10.000000ms", "0.500000ms", "distribution", "normal", "loss", "1.000000000%",
      "rate", "32000000000bit"],
     ["delay", "10.000000ms", "0.500000ms", "distribution", "normal", "loss", "0.000000000%",
      "rate", "32000000000bit"]),
])
def test_jitter_is_delay_d_j_per_direction_and_in_order_takes_the_rate_extension(jitter, data, ack):
    dyn = PathDynamics(jitter=jitter)
    assert direction_options("data", 0.01, 0.01, dyn) == data
    assert direction_options("ack", 0.01, 0.0, dyn) == ack


def test_the_in_order_rate_fits_netems_32_bit_rate_and_never_limits_the_kernel_path():
    from fatpipe.backends.kernel.path import MAX_RATE_BPS
    assert IN_ORDER_RATE_BPS / 8 < 2 ** 32 and IN_ORDER_RATE_BPS > 3 * MAX_RATE_BPS


@pytest.mark.parametrize(("aggregation", "direction", "slot"), [
    (Aggregation("ack", 0.001), "ack", ["slot", "1.000000ms", "1.000000ms"]),
    (Aggregation("data", 0.004, 65536), "data", ["slot", "4.000000ms", "4.000000ms", "bytes", "65536"]),
])
def test_aggregation_is_a_slot_of_fixed_interval_and_byte_budget_on_its_direction(aggregation, direction, slot):
    dyn = PathDynamics(aggregation=aggregation)
    other = "data" if direction == "ack" else "ack"
    assert direction_options(direction, 0.01, 0.0, dyn) == ["delay", "10.000000ms", "loss", "0.000000000%", *slot]
    assert "slot" not in direction_options(other, 0.01, 0.0, dyn)


def test_every_feature_at_once_in_the_order_tc_reads_them():
    dyn = PathDynamics(gilbert_elliott=GilbertElliott(r=0.5, bad_loss=1.0),
                       jitter=Jitter(0.001, "uniform", False, "data"), aggregation=Aggregation("data", 0.002, 3028))
    assert netem_qdisc_args("rcv", direction_options("data", 0.005, 0.01, dyn), parent="1:1") == [
        "tc", "qdisc", "replace", "dev", "rcv", "parent", "1:1", "handle", "10:", "netem", "limit", "1000000",
        "delay", "5.000000ms", "1.000000ms", "loss", "gemodel", f"{0.5 * 0.01 / 0.99 * 100:.9f}%", "50.000000000%",
        "100.000000000%", "0.000000000%", "rate", "32000000000bit", "slot", "2.000000ms", "2.000000ms", "bytes", "3028"]


@pytest.mark.parametrize(("reorder", "data", "ack"), [
    (Reorder(0.25, 5), ["reorder", "25.000000000%", "gap", "5"], []),
    (Reorder(0.01, 1, "both"), ["reorder", "1.000000000%", "gap", "1"], ["reorder", "1.000000000%", "gap", "1"]),
    (Reorder(0.5, 2, "ack"), [], ["reorder", "50.000000000%", "gap", "2"]),
])
def test_the_reorder_knob_is_reorder_p_gap_g_on_its_direction(reorder, data, ack):
    dyn = PathDynamics(reorder=reorder)
    base = ["delay", "10.000000ms", "loss", "0.000000000%"]
    assert direction_options("data", 0.01, 0.0, dyn) == base + data
    assert direction_options("ack", 0.01, 0.0, dyn) == base + ack
    assert refusal(dyn, []) is None


def test_a_direction_is_data_or_ack():
    with pytest.raises(ValueError, match="direction 'both'"):
        direction_options("both", 0.01, 0.0, PathDynamics())


# ---- what netem refuses ---------------------------------------------------------------


@pytest.mark.parametrize(("dynamics", "keys"), [
    (PathDynamics(schedule=(PathStep(at_s=1.0, rate_bps=1e7),)), "path.schedule"),
    (PathDynamics(policer=Policer(1e7, 20000)), "path.policer"),
    (PathDynamics(trace=Trace((1,), (1,))), "path.trace"),
    (PathDynamics(schedule=(PathStep(at_s=1.0, loss=0.1),), policer=Policer(1e7, 20000)),
     "path.schedule, path.policer"),
])
def test_netem_refuses_what_it_cannot_express_naming_the_keys_and_linkem(dynamics, keys):
    msg = refusal(dynamics, [])
    them = "them" if "," in keys else "it"
    assert msg.startswith(f'{keys} with path.emulator = "netem": netem has no option for {them} (its options '
                          "express path.loss_model, path.jitter, path.reorder, path.aggregation;"), msg
    assert f'path.emulator = "auto" or "linkem" applies {them} in fatpipe-linkem' in msg


def test_netem_refuses_every_moving_key_it_does_not_express():
    # A key that moves the path and that netem_map does not map is refused, never silently dropped.
    every = PathDynamics(schedule=(PathStep(at_s=1.0, loss=0.1),), gilbert_elliott=GilbertElliott(r=0.3, bad_loss=1.0),
                         jitter=Jitter(0.001), reorder=Reorder(0.01), policer=Policer(1e7, 20000),
                         aggregation=Aggregation("ack", 0.001), trace=Trace((1,), (1,)))
    assert set(EXPRESSED) < set(every.keys())
    assert refusal(every, []).startswith('path.schedule, path.policer, path.trace with path.emulator = "netem"')


def test_netem_takes_loss_model_jitter_and_aggregation():
    dyn = PathDynamics(gilbert_elliott=GilbertElliott(r=0.3, bad_loss=1.0), jitter=Jitter(0.001),
                       aggregation=Aggregation("ack", 0.001))
    assert refusal(dyn, []) is None
    assert refusal(dyn, ['flows.1.kind = "cross"']).startswith('flows.1.kind = "cross" with path.emulator = "netem"')


def test_a_moving_plan_with_netem_is_refused_before_the_run_naming_the_keys(tmp_path):
    (plan,) = plans(tmp_path, 'emulator = "netem"\npolicer = "50Mbit/100KB"\njitter = "1ms"')
    cfg = path_config(plan)
    assert dynamics_refusal(cfg, cfg.emulator, cfg.bottleneck).startswith('path.policer with path.emulator = "netem"')
    with pytest.raises(Exception, match=r'path\.policer with path\.emulator = "netem"'):
        KernelBackend().check([plan])
    (ok,) = plans(tmp_path, 'emulator = "netem"\nloss = 0.01\nloss_model = "gilbert_elliott:r=0.3"\njitter = "1ms"')
    cfg = path_config(ok)
    assert dynamics_refusal(cfg, cfg.emulator, cfg.bottleneck) is None


def test_the_missing_netem_refusal_names_the_key_and_the_kernel_option():
    msg = missing_netem("the running kernel")
    assert msg.startswith('path.emulator = "netem", but the running kernel has no netem qdisc (a kernel built '
                          "without CONFIG_NET_SCH_NETEM)"), msg


def test_the_hosts_backend_needs_an_emulator_host_for_an_asked_emulator(tmp_path):
    (plan,) = plans(tmp_path, 'emulator = "linkem"')
    assert f"run {plan.run_id}: path.emulator = 'linkem' needs an emulator host in the testbed (its delay line)" \
        in plan_problems(plan, None)
    (auto,) = plans(tmp_path)
    assert not any("path.emulator" in p for p in plan_problems(auto, None))
