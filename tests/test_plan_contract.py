"""The run plan is one contract across the language boundary: every field
of RunPlan, HostLimits and FlowPlan (python/fatpipe/backends/base.py) and
every key of each aqm kind's table (python/fatpipe/aqm.py, Aqm.plan()) is
declared by the simulator (crates/sim/src/plan.rs: read, or ignored on
purpose), and the simulator declares nothing Python does not send.
tests/test_schema.py does the same for the outputs."""

import dataclasses
import json
import re
import textwrap
import typing

import pytest

from fatpipe import _native
from fatpipe import spec as spec_mod
from fatpipe.aqm import KINDS, Aqm
from fatpipe.backends.base import (
    Aggregation,
    AppLimit,
    AppStep,
    CrossFlow,
    FlowPlan,
    GilbertElliott,
    HostCpu,
    HostLimits,
    Jitter,
    PathDynamics,
    PathStep,
    Policer,
    RunPlan,
    Trace,
    TransferPlan,
)
from fatpipe.backends.sim import SimBackend, plan_json
from fatpipe.study import plan_runs

# struct -> (fields read, fields ignored on purpose), as the simulator declares them.
RUST = {name: (set(read), set(ignored)) for name, read, ignored in _native.plan_fields()}


@pytest.mark.parametrize("cls", [RunPlan, HostLimits, HostCpu, FlowPlan, CrossFlow, AppLimit, AppStep, PathDynamics,
                                 PathStep, GilbertElliott, Jitter, Policer, Aggregation, Trace, TransferPlan],
                         ids=lambda c: c.__name__)
def test_every_dataclass_field_is_declared_by_the_simulator_and_nothing_else(cls):
    read, ignored = RUST[cls.__name__]
    python = {f.name for f in dataclasses.fields(cls)}
    assert not read & ignored, f"{cls.__name__}: declared both read and ignored"
    assert python - read - ignored == set(), f"{cls.__name__}: Python sends fields the simulator does not know"
    assert (read | ignored) - python == set(), f"{cls.__name__}: the simulator declares fields Python does not send"


def _threshold_units() -> tuple[str, ...]:
    """The units Aqm declares for a CE threshold's K (its k_unit Literal)."""
    annotation = Aqm.model_fields["k_unit"].annotation
    return next(typing.get_args(a) for a in typing.get_args(annotation) if typing.get_origin(a) is typing.Literal)


def _plan_tables(kind: str) -> list[dict]:
    """Every shape of table Aqm.plan() gives for `kind`."""
    if kind == "ce_threshold":
        return [Aqm.model_construct(kind=kind, k_amount=1.0, k_unit=unit).plan() for unit in _threshold_units()]
    return [Aqm.model_validate(kind).plan()]


def test_the_simulator_has_exactly_pythons_aqm_kinds():
    assert {name.removeprefix("aqm.") for name in RUST if name.startswith("aqm.")} == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_aqm_plan_key_is_declared_by_the_simulator_and_nothing_else(kind):
    read, ignored = RUST[f"aqm.{kind}"]
    keys = set().union(*_plan_tables(kind))
    assert keys - read - ignored == set(), f"aqm.{kind}: Python sends keys the simulator does not know"
    assert (read | ignored) - keys == set(), f"aqm.{kind}: the simulator declares keys Python does not send"


def test_ce_threshold_tables_cover_each_unit():
    assert {next(iter(set(t) - {"kind"})) for t in _plan_tables("ce_threshold")} == {"k_packets", "k_bytes", "k_s"}


# One run that sets every optional field: an RPC flow beside a bulk one,
# per-flow ECN and cwnd clamp, GRO, a rate cap, processing jitter, a CPU model
# with every cost on a machine both hosts share, a NIC ceiling, fq_codel with a CE
# threshold, a path that moves (a schedule step, Gilbert-Elliott loss, jitter,
# a policer, aggregation), an application-limited bulk flow (a rate, a pause),
# a sweep and a testbed (which the simulator ignores).
STUDY = """
version = 1
[study]
name = "contract"
backends = ["sim"]
duration = "1s"
[path]
rate = "10Mbit"
rtt = "20ms"
aqm = {kind = "fq_codel", ce_threshold = "1ms"}
loss = 0.01
loss_model = {kind = "gilbert_elliott", r = 0.3, bad_loss = 0.9, good_loss = 0.001}
jitter = {deviation = "1ms", distribution = "normal", reorder = true, direction = "both"}
policer = {rate = "9Mbit", burst = "30KB"}
aggregation = {direction = "ack", interval = "1ms", bytes = "10KB"}
[[path.schedule]]
at = "0.5s"
rate = "2x"
rtt = "40ms"
loss = 0.02
[hosts.default]
stream_rate_cap = "8Mbit"
processing_jitter = "20us"
start_spread = "5ms"
cpu_cores = 2
app_threads = 1
machine = "box"
rx_ring = 512
cost_send_packet = "1us"
cost_send_byte = "0.1ns"
cost_receive_packet = "0.5us"
cost_receive_unit = "2us"
cost_receive_byte = "0.2ns"
cost_ack = "1us"
cost_sack_block = "0.2us"
cost_timer = "1us"
rtx_queue = "list"
cost_rtx_walk = "5ns"
interrupt_coalescing = "50us"
interrupt_coalescing_frames = 16
qdisc = "fq"
[hosts.s1]
nic_rate = "9Mbit"
[hosts.receiver]
gro = true
[[flows]]
cc = "cubic"
ecn = 1
cwnd_clamp = 100
app_rate = "5Mbit"
[[flows.app]]
at = "0.3s"
pause = "0.1s"
[[flows.app]]
at = "0.6s"
rate = "unlimited"
[[flows]]
kind = "rpc"
cc = "reno"
request = "100B"
response = "10KB"
concurrency = 1
[sweep]
"path.loss" = [0.01]
[testbed.hosts.alpha]
ssh = "root@alpha"
address = "10.1.0.1"
interface = "eth1"
role = "s1"
[testbed.hosts.beta]
ssh = "root@beta"
address = "10.1.0.2"
interface = "eth1"
role = "receiver"
"""


@pytest.fixture
def full_plan(tmp_path) -> RunPlan:
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(STUDY))
    spec, raw = spec_mod.load(path)
    (plan,) = plan_runs(spec, raw)
    assert plan.testbed is not None and plan.aqm["ce_threshold_s"] == 0.001 and plan.flows[1].kind == "rpc"
    assert plan.receiver.processing_jitter_s == plan.senders["s1"].processing_jitter_s == pytest.approx(20e-6)
    assert plan.senders["s1"].start_spread_s == pytest.approx(5e-3)
    assert plan.senders["s1"].cpu.machine == plan.receiver.cpu.machine == "box"
    assert plan.senders["s1"].nic_rate_bps == 9e6 and plan.receiver.cpu.timer_s == pytest.approx(1e-6)
    assert plan.dynamics.keys() == ["path.schedule", "path.loss_model", "path.jitter", "path.policer",
                                    "path.aggregation"]
    assert plan.dynamics.schedule[0].rate_bps == 2e7 and plan.dynamics.aggregation.bytes == 10_000
    assert plan.flows[0].app.rate_bps == 5e6 and plan.flows[0].app.steps[0].pause_s == pytest.approx(0.1)
    return plan


def test_a_plan_with_every_field_runs_on_the_simulator(full_plan, tmp_path):
    outcome = SimBackend().run(full_plan, tmp_path)
    assert len(set(outcome.series["flow_group"])) == 2 and outcome.rpcs["flow_group"]


@pytest.mark.parametrize("where", ["plan", "flow", "host", "aqm", "step", "policer", "app", "app_step"])
def test_the_simulator_refuses_a_field_it_does_not_know_naming_it(full_plan, where):
    plan = json.loads(plan_json(full_plan))
    table, path = {"plan": (plan, ""), "flow": (plan["flows"][1], "flows[1]."),
                   "host": (plan["receiver"], "receiver."), "aqm": (plan["aqm"], "aqm."),
                   "step": (plan["dynamics"]["schedule"][0], "dynamics.schedule[0]."),
                   "policer": (plan["dynamics"]["policer"], "dynamics.policer."),
                   "app": (plan["flows"][0]["app"], "flows[0].app."),
                   "app_step": (plan["flows"][0]["app"]["steps"][1], "flows[0].app.steps[1].")}[where]
    table["jitter_s"] = 0.001
    with pytest.raises(ValueError, match="^" + re.escape(f"{path}jitter_s: unknown field `jitter_s`")):
        _native.simulate(json.dumps(plan))


# A run with cross traffic (every CrossFlow field) and a trace, on a FIFO
# bottleneck (cross traffic does not pass fq_codel; a trace replaces the rate
# a schedule step would set).
CROSS_STUDY = """
version = 1
[study]
name = "contract-cross"
backends = ["sim"]
duration = "1s"
[path]
rate = "10Mbit"
rtt = "20ms"
trace = "t.trace"
[[flows]]
cc = "cubic"
[[flows]]
kind = "cross"
rate = "2Mbit"
pattern = "on_off"
on = "10ms"
off = "20ms"
shape = 1.6
packet_size = "1000B"
streams = 2
start = "0.1s"
stop = "0.9s"
"""


@pytest.fixture
def cross_plan(tmp_path) -> RunPlan:
    (tmp_path / "t.trace").write_text("1\n")
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(CROSS_STUDY))
    spec, raw = spec_mod.load(path)
    (plan,) = plan_runs(spec, raw)
    assert all(v is not None for v in dataclasses.asdict(plan.flows[1].cross).values())
    return plan


def test_a_plan_with_cross_traffic_and_a_trace_runs_on_the_simulator(cross_plan, tmp_path):
    outcome = SimBackend().run(cross_plan, tmp_path)
    assert set(outcome.series["flow_group"]) == {0, 1}


@pytest.mark.parametrize("where", ["cross", "trace"])
def test_the_simulator_refuses_an_unknown_cross_or_trace_field_naming_it(cross_plan, where):
    plan = json.loads(plan_json(cross_plan))
    table, path = {"cross": (plan["flows"][1]["cross"], "flows[1].cross."),
                   "trace": (plan["dynamics"]["trace"], "dynamics.trace.")}[where]
    table["jitter_s"] = 0.001
    with pytest.raises(ValueError, match="^" + re.escape(f"{path}jitter_s: unknown field `jitter_s`")):
        _native.simulate(json.dumps(plan))
