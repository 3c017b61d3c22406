"""[[path.drops]] (losses at chosen instants, every backend) and the `on`
form of [[path.schedule]] and [[path.drops]] items (state triggers, the
simulator only): the spec's keys, the run plan they become, what the
simulator makes of them and the Linux backends' refusal of `on`."""

import textwrap

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import BackendUnavailable, PathDrop, PathStep, StateTrigger
from fatpipe.backends.hosts import plan_problems
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.config import dynamics_refusal, path_config
from fatpipe.study import plan_runs

BASE = """
version = 1
[study]
name = "triggers"
duration = "4s"
interval = "100ms"
[path]
rate = "100Mbit"
rtt = "20ms"
[[flows]]
cc = "{cc}"
{rest}
"""


def _write(tmp_path, rest: str, cc: str):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE.format(rest=rest, cc=cc)))
    return p


def plans(tmp_path, rest: str, cc: str = "bbr"):
    spec, raw = spec_mod.load(_write(tmp_path, rest, cc))
    return plan_runs(spec, raw)


def problems(tmp_path, rest: str, cc: str = "bbr") -> dict[str, str]:
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(_write(tmp_path, rest, cc))
    return dict(e.value.problems)


def test_drops_and_triggered_items_become_the_plans(tmp_path):
    (plan,) = plans(tmp_path, """
        [[path.drops]]
        at = "1s"
        count = 3
        [[path.drops]]
        on = "enter:PROBE_RTT"
        nth = 2
        flow = 0
        [[path.schedule]]
        on = "enter:DRAIN"
        after = "5ms"
        rate = "0.9x"
        [[path.schedule]]
        at = "2s"
        loss = 0.01
    """)
    d = plan.dynamics
    assert d.drops == (PathDrop(at_s=1.0, count=3, flow=None),
                       PathDrop(count=1, flow=0, on=StateTrigger(event="enter:PROBE_RTT", nth=2, flow=0)))
    assert d.schedule == (PathStep(rate_bps=0.9e8, on=StateTrigger(event="enter:DRAIN", after_s=0.005)),
                          PathStep(at_s=2.0, loss=0.01))
    assert "path.drops" in d.keys() and not d.is_static()


@pytest.mark.parametrize(("rest", "key", "says"), [
    ('[[path.drops]]\ncount = 2', "path.drops.0", "give at"),
    ('[[path.drops]]\nat = "1s"\non = "enter:DRAIN"', "path.drops.0", "one of them"),
    ('[[path.drops]]\nat = "1s"\ncount = 0', "path.drops.0.count", "greater than or equal to 1"),
    ('[[path.drops]]\nat = "5s"', "path.drops.0.at", "not before study.duration"),
    ('[[path.drops]]\nat = "1s"\nflow = 3', "path.drops.0.flow", "no flow 3"),
    ('[[path.drops]]\nat = "1s"\nnth = 2', "path.drops.0", "only apply with on"),
    ('[[path.schedule]]\nat = "1s"\nflow = 0\nloss = 0.1', "path.schedule.0", "flow only applies with on"),
    ('[[path.schedule]]\non = "during:DRAIN"\nloss = 0.1', "path.schedule.0.on", "'enter:STATE' or 'exit:STATE'"),
    ('[[path.schedule]]\non = "enter:PROBE_UP"\nloss = 0.1', "path.schedule.0.on", "DRAIN, PROBE_BW, PROBE_RTT"),
    ('[[path.schedule]]\non = "enter:DRAIN"\nflow = 1\nloss = 0.1', "path.schedule.0.flow", "no flow 1"),
])
def test_bad_items_are_refused_naming_the_key_and_what_is_allowed(tmp_path, rest, key, says):
    found = problems(tmp_path, rest)
    assert key in found and says in found[key], found


def test_a_trigger_on_a_flow_whose_cca_exposes_no_state_is_refused(tmp_path):
    found = problems(tmp_path, '[[path.drops]]\non = "enter:DRAIN"', cc="cubic")
    assert "cubic exposes no state to watch; bbr and bbr3 do" in found["path.drops.0.on"], found
    (ok,) = plans(tmp_path, '[[path.schedule]]\non = "exit:PROBE_DOWN"\nrate = "0.9x"', cc="bbr3")
    assert ok.dynamics.schedule[0].on.event == "exit:PROBE_DOWN"


def test_only_the_simulator_runs_a_state_trigger_and_every_backend_runs_timed_drops(tmp_path):
    (timed,) = plans(tmp_path, '[[path.drops]]\nat = "1s"\ncount = 2')
    assert dynamics_refusal(path_config(timed), "linkem-nfqueue", "linkem") is None
    (plan,) = plans(tmp_path, '[[path.drops]]\nat = "1s"\n[[path.schedule]]\non = "enter:DRAIN"\nrate = "0.5x"')
    refused = dynamics_refusal(path_config(plan), "linkem-nfqueue", "linkem")
    assert refused.startswith("path.schedule.0.on = 'enter:DRAIN': only the simulator can watch a sender's state"), \
        refused
    with pytest.raises(BackendUnavailable, match=r"path\.schedule\.0\.on = 'enter:DRAIN': only the simulator"):
        KernelBackend().check([plan])
    assert f"run {plan.run_id}: {refused}" in plan_problems(plan, None)
    SimBackend().check([plan])


def test_the_simulator_drops_exactly_the_packets_asked_for(tmp_path):
    (plan,) = plans(tmp_path, '[[path.drops]]\nat = "2s"\ncount = 3\n[[path.drops]]\non = "exit:STARTUP"\ncount = 2')
    out = SimBackend().run(plan, tmp_path)
    assert out.path.random_drops == 5, out.path
