"""Pure parts of a hosts run: the delay line's iptables rules, the port
range, the clock's uncertainty over a run, which hosts a run uses, and what
the hosts cannot do of a plan."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import SimpleNamespace

import pytest

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.hosts import plan_problems
from fatpipe.backends.hosts.clock import ClockOffset
from fatpipe.backends.hosts.hostrun import ClockReading, run_hosts
from fatpipe.backends.hosts.remote_path import Interfaces, RemotePath, nfqueue_rule_specs, port_range
from fatpipe.linuxpath.config import path_config
from fatpipe.linuxpath.qdisc import fq_codel_args
from fatpipe.testbed import validate_testbed

TESTBED = validate_testbed({"hosts": {
    "a": {"ssh": "a", "address": "10.0.0.1", "interface": "eth0", "role": "s1"},
    "e": {"ssh": "e", "address": "10.0.1.254", "interface": "eth1", "role": "emulator"},
    "r": {"ssh": "r", "address": "10.0.1.1", "interface": "eth0", "role": "receiver"}}})
HOST = HostLimits(rmem_max_bytes=1 << 20, wmem_max_bytes=1 << 20)


def plan(*flows: FlowPlan, testbed=TESTBED) -> RunPlan:
    return RunPlan(run_id="hosts-p000-r00", backend="hosts", rep=0, seed=1, duration_s=5.0, warmup_s=1.0,
                   sample_interval_s=0.1, rate_bps=1e8, rtt_s=0.02, loss=0.0, corruption=0.0, buffer_bytes=250_000,
                   mtu_bytes=1500, senders={"s1": HOST}, receiver=HOST, flows=flows, testbed=testbed)


BULK = FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1")
RPC = FlowPlan(group=1, kind="rpc", cc="bbr", streams=1, mss_bytes=1448, sender="s1", request_bytes=100,
               response_bytes=1000, concurrency=1)


def test_delay_line_rules_take_only_the_runs_tcp_between_test_addresses():
    rules = nfqueue_rule_specs("eth1", "10.0.1.1", {"10.0.0.1": 1, "10.0.0.2": 3}, "5201:5202")
    assert rules[0] == ["-o", "eth1", "-p", "tcp", "-s", "10.0.0.1", "-d", "10.0.1.1", "-m", "multiport",
                        "--ports", "5201:5202", "-j", "NFQUEUE", "--queue-num", "0"]
    assert rules[1][:8] == ["-i", "eth1", "-p", "tcp", "-s", "10.0.1.1", "-d", "10.0.0.1"]
    assert rules[1][-1] == "1" and rules[3][-1] == "3"  # each sender's ACKs to its own queue
    assert all("--queue-bypass" not in r for r in rules)  # fail-closed


def test_port_range_spans_the_groups_ports():
    assert port_range([0]) == "5201"  # iptables multiport refuses 5201:5201
    assert port_range([2, 0, 1]) == "5201:5203"


def test_clock_uncertainty_covers_the_drift_to_the_reading_after():
    before = ClockOffset(offset_s=1.0, uncertainty_s=0.001, rtt_s=0.002, samples=9)
    assert ClockReading(before).uncertainty_s == 0.001
    steady = ClockOffset(offset_s=1.0002, uncertainty_s=0.0005, rtt_s=0.001, samples=9)
    assert ClockReading(before, steady).uncertainty_s == pytest.approx(0.001)  # within before's bound
    drifted = ClockOffset(offset_s=1.004, uncertainty_s=0.0005, rtt_s=0.001, samples=9)
    assert ClockReading(before, drifted).uncertainty_s == pytest.approx(0.0045)


def test_run_uses_receiver_senders_and_emulator():
    assert run_hosts(plan(BULK)) == {"receiver": "r", "s1": "a", "emulator": "e"}


def _report(ccas_by_host: dict[str, tuple[str, ...]]):
    return SimpleNamespace(host=lambda name: SimpleNamespace(probe=SimpleNamespace(ccas=ccas_by_host[name])))


def test_plan_problems_name_the_host_lacking_a_cca():
    report = _report({"a": ("reno", "cubic"), "r": ("reno", "cubic"), "e": ("reno",)})
    problems = plan_problems(plan(BULK, RPC), report)
    # The RPC group's CCA is needed on its sender and on the receiver (its client's sockets).
    assert problems == ["run hosts-p000-r00: flow group 1: host a (s1) has no CCA 'bbr' (it has: reno cubic)",
                        "run hosts-p000-r00: flow group 1: host r (receiver) has no CCA 'bbr' (it has: reno cubic)"]
    assert plan_problems(plan(BULK), report) == []
    # A bulk group's receiver runs the flow's CCA too (its listener, engine.run_receiver).
    bulk_bbr = FlowPlan(group=0, kind="bulk", cc="bbr", streams=1, mss_bytes=1448, sender="s1")
    assert plan_problems(plan(bulk_bbr), report) == [
        "run hosts-p000-r00: flow group 0: host a (s1) has no CCA 'bbr' (it has: reno cubic)",
        "run hosts-p000-r00: flow group 0: host r (receiver) has no CCA 'bbr' (it has: reno cubic)"]


FQ_CODEL = {"kind": "fq_codel", "target_s": 0.005, "interval_s": 0.1, "limit_packets": 10240,
            "ce_threshold_s": None, "quantum_bytes": 1514, "ecn": True}


def _qdisc_report(emulator_qdiscs: set[str]):
    probes = {name: SimpleNamespace(ccas=("reno", "cubic"), qdiscs={}) for name in "ar"}
    probes["e"] = SimpleNamespace(ccas=("reno",), qdiscs={k: (k in emulator_qdiscs, "probed") for k in
                                                          ("netem", "tbf", "fq_codel", "fq", "red")}, tc="/sbin/tc")
    return SimpleNamespace(host=lambda name: SimpleNamespace(probe=probes[name]))


def test_fq_codel_runs_where_the_emulators_kernel_has_it_and_is_refused_naming_the_host_where_not():
    fq = replace(plan(BULK), aqm=FQ_CODEL)
    assert plan_problems(fq, _qdisc_report({"netem", "tbf", "fq_codel"})) == []
    (problem,) = plan_problems(fq, _qdisc_report({"netem", "tbf"}))
    assert problem.startswith("run hosts-p000-r00: host e (emulator): path.aqm = 'fq_codel': the running kernel "
                              "has no fq_codel qdisc") and "CONFIG_NET_SCH_FQ_CODEL" in problem
    no_emulator = validate_testbed({"hosts": {
        "a": {"ssh": "a", "address": "10.0.0.1", "interface": "eth0", "role": "s1"},
        "r": {"ssh": "r", "address": "10.0.1.1", "interface": "eth0", "role": "receiver"}}})
    (problem,) = plan_problems(replace(plan(BULK, testbed=no_emulator), aqm=FQ_CODEL), _qdisc_report(set()))
    assert "path.aqm = 'fq_codel' needs an emulator host" in problem
    # A CE threshold still needs ECN set up, which the hosts backend does not do.
    ce = replace(plan(BULK), aqm={"kind": "ce_threshold", "k_packets": 20})
    assert "does not set up ECN or a marking bottleneck" in plan_problems(ce, _qdisc_report({"tbf"}))[0]


def test_with_netem_fq_codel_sits_below_netem_so_it_queues_what_the_delay_released():
    changes: list[list[str]] = []

    async def change(do, undo):
        assert undo[:3] == ["tc", "qdisc", "del"]
        changes.append(do)

    emulator = SimpleNamespace(agent=SimpleNamespace(change=change))
    path = RemotePath(path_config(replace(plan(BULK), aqm=FQ_CODEL)), emulator, None, "eth1", True, "10.0.1.1",
                      {"s1": "10.0.0.1"}, [0])
    asyncio.run(path._apply_netem(Interfaces("eth1", {"s1": "eth0"})))
    assert [c[4:9] for c in changes[:3]] == [["eth1", "root", "handle", "1:", "tbf"],
                                             ["eth1", "parent", "1:1", "handle", "10:"],
                                             ["eth1", "parent", "10:1", "handle", "20:"]]
    assert changes[2] == fq_codel_args("eth1", "10:1", FQ_CODEL) and "netem" in changes[1]
    assert path.tbf_bottleneck


def test_flow_groups_of_different_loss_are_refused_where_the_emulator_would_use_netem():
    jumbo = replace(BULK, group=1, mss_bytes=8948)
    lossy = replace(plan(BULK, jumbo), mtu_bytes=9000, loss=1e-4, corruption=1e-7)
    (problem,) = plan_problems(lossy, _qdisc_report({"netem", "tbf"}))
    assert problem.startswith("run hosts-p000-r00: path.corruption > 0 with flow groups of different MSS "
                              "(flows.0.mss = 1448") and "flows.1.mss = 8948" in problem
    assert "netem on host e (emulator) applies one loss probability to every flow group" in problem
    # Without netem the emulator runs linkem, which applies each group's loss.
    assert plan_problems(lossy, _qdisc_report({"tbf"})) == []
    assert plan_problems(replace(lossy, corruption=0.0), _qdisc_report({"netem", "tbf"})) == []


def test_with_netem_loss_acts_toward_the_receiver_only():
    changes: list[list[str]] = []

    async def change(do, undo):  # noqa: ARG001 - the undo is another test's concern
        changes.append(do)

    emulator = SimpleNamespace(agent=SimpleNamespace(change=change))
    path = RemotePath(path_config(replace(plan(BULK), loss=1e-3)), emulator, None, "eth1", True, "10.0.1.1",
                      {"s1": "10.0.0.1"}, [0])
    asyncio.run(path._apply_netem(Interfaces("eth1", {"s1": "eth0"})))
    netem = {c[4]: c[c.index("loss") + 1] for c in changes if "netem" in c}
    assert netem == {"eth1": "0.100000000%", "eth0": "0.000000000%"}, "ACKs and RPC requests are lossless"


def test_a_moving_path_runs_through_the_emulators_delay_line_and_what_it_cannot_move_names_the_host():
    from fatpipe.backends.base import Jitter, PathDynamics, Policer

    moving = replace(plan(BULK), dynamics=PathDynamics(policer=Policer(rate_bps=5e7, burst_bytes=30_000)))
    # Even where the emulator has netem: a moving path takes linkem (hostrun).
    assert plan_problems(moving, _qdisc_report({"netem", "tbf"})) == []
    (problem,) = plan_problems(replace(moving, aqm=FQ_CODEL), _qdisc_report({"netem", "tbf", "fq_codel"}))
    assert problem.startswith("run hosts-p000-r00: host e (emulator): path.policer with path.aqm = 'fq_codel'"), \
        problem
    lossy = replace(moving, dynamics=PathDynamics(jitter=Jitter(deviation_s=0.001)), mtu_bytes=9000, loss=1e-4,
                    corruption=1e-7, flows=(BULK, replace(BULK, group=1, mss_bytes=8948)))
    assert plan_problems(lossy, _qdisc_report({"netem", "tbf"})) == [], "linkem applies each group's loss"


def test_path_emulator_netem_is_refused_naming_the_host_without_netem_or_what_netem_cannot_express():
    from fatpipe.backends.base import GilbertElliott, Jitter, PathDynamics, Policer

    netem = replace(plan(BULK), emulator="netem", loss=0.01,
                    dynamics=PathDynamics(gilbert_elliott=GilbertElliott(r=0.3, bad_loss=1.0), jitter=Jitter(0.001)))
    assert plan_problems(netem, _qdisc_report({"netem", "tbf"})) == []
    (problem,) = plan_problems(netem, _qdisc_report({"tbf"}))
    assert problem.startswith('run hosts-p000-r00: host e (emulator): path.emulator = "netem", but host e has no '
                              "netem qdisc (a kernel built without CONFIG_NET_SCH_NETEM)"), problem
    policed = replace(netem, dynamics=PathDynamics(policer=Policer(rate_bps=5e7, burst_bytes=30_000)))
    (problem,) = plan_problems(policed, _qdisc_report({"netem", "tbf"}))
    assert problem.startswith('run hosts-p000-r00: host e (emulator): path.policer with path.emulator = "netem"'), \
        problem
    # path.emulator = "linkem" takes linkem even for a static path, which applies each group's loss.
    lossy = replace(plan(BULK, replace(BULK, group=1, mss_bytes=8948)), mtu_bytes=9000, loss=1e-4, corruption=1e-7)
    assert plan_problems(replace(lossy, emulator="linkem"), _qdisc_report({"netem", "tbf"})) == []
    assert plan_problems(replace(lossy, emulator="netem"), _qdisc_report({"netem", "tbf"}))


def test_with_netem_a_moving_paths_options_go_on_each_direction():
    from fatpipe.backends.base import Aggregation, GilbertElliott, Jitter, PathDynamics

    changes: list[list[str]] = []

    async def change(do, undo):  # noqa: ARG001 - the undo is another test's concern
        changes.append(do)

    dyn = PathDynamics(gilbert_elliott=GilbertElliott(r=0.5, bad_loss=1.0), jitter=Jitter(0.001, direction="data"),
                       aggregation=Aggregation(direction="ack", interval_s=0.002))
    emulator = SimpleNamespace(agent=SimpleNamespace(change=change))
    path = RemotePath(path_config(replace(plan(BULK), loss=0.01, emulator="netem", dynamics=dyn)), emulator, None,
                      "eth1", True, "10.0.1.1", {"s1": "10.0.0.1"}, [0])
    asyncio.run(path._apply_netem(Interfaces("eth1", {"s1": "eth0"})))
    netem = {c[4]: c[c.index("limit") + 2:] for c in changes if "netem" in c}
    # Jitter toward the receiver, in order (the rate extension); slots toward the sender.
    assert netem["eth1"] == ["delay", "10.000000ms", "1.000000ms", "loss", "gemodel", f"{0.5 * 0.01 / 0.99 * 100:.9f}%",
                             "50.000000000%", "100.000000000%", "0.000000000%", "rate", "32000000000bit"]
    assert netem["eth0"] == ["delay", "10.000000ms", "loss", "0.000000000%", "slot", "2.000000ms", "2.000000ms"]


def test_a_moving_path_gives_the_emulators_linkem_its_dynamics_and_the_origin_on_its_clock():
    from fatpipe.backends.base import PathDynamics, PathStep

    puts: dict[str, bytes] = {}
    signals: list[tuple[int, str]] = []
    started: list[list[str]] = []

    async def put(name, data, mode=0o644):  # noqa: ARG001
        puts[name] = data

    async def start(args, **kw):  # noqa: ARG001
        started.append(args)
        return 4242

    async def noop(*a, **kw):  # noqa: ARG001
        return None

    async def signal(pgid, name):
        signals.append((pgid, name))

    agent = SimpleNamespace(put=put, start=start, wait_line=noop, change=noop, signal=signal, pid=99)
    emulator = SimpleNamespace(name="e", agent=agent, path=lambda n: f"/run/fp/{n}", host_time=lambda t: t + 0.25)
    moving = replace(plan(BULK), dynamics=PathDynamics(schedule=(PathStep(at_s=1.0, rate_bps=1e7),)))
    path = RemotePath(path_config(moving), emulator, None, "eth1", False, "10.0.1.1", {"s1": "10.0.0.1"}, [0])

    async def scenario():
        path._push_linkem = lambda: _value("/run/fp/fatpipe-linkem")
        path._iptables = lambda: _value("iptables")
        await path._apply_linkem()
        await path.set_origin(1000.0)

    asyncio.run(scenario())
    (args,) = started
    assert args[args.index("--dynamics") + 1] == "/run/fp/linkem-dynamics.json"
    assert b'"rate_bps": 10000000.0' in puts["linkem-dynamics.json"]
    assert [a for a in args if a.startswith("num=")][0].endswith("moves=data")
    # The controller's 1000 s is 1000.25 s on the emulator's clock.
    assert puts["linkem-origin"] == b"1000250000000" and signals == [(4242, "USR2")]


async def _value(v):
    return v
