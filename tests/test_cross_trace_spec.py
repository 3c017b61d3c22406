"""Cross traffic (crossspec.py: flows of kind = "cross") and path.trace
(pathtrace.py) in the spec: written forms, errors naming the key, the run
plan (CrossFlow; the trace in run-length form), a run on the simulator
and the kernel and hosts backends refusing them by key where their delay
line cannot apply them (netem, tbf, no emulator host)."""

import textwrap
from pathlib import Path

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import CrossFlow, Trace
from fatpipe.backends.hosts import plan_problems
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.config import dynamics_refusal, path_config
from fatpipe.study import plan_runs
from fatpipe.summary import summarize

BASE = """
version = 1
[study]
name = "cross"
duration = "4s"
[path]
rate = "12Mbit"
rtt = "20ms"
{path}
[[flows]]
cc = "cubic"
[[flows]]
{cross}
"""

CROSS = 'kind = "cross"\nrate = "3Mbit"'


def _write(tmp_path, cross: str = CROSS, path: str = ""):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE.format(path=path, cross=cross)))
    return p


def plans(tmp_path, cross: str = CROSS, path: str = ""):
    spec, raw = spec_mod.load(_write(tmp_path, cross, path))
    return plan_runs(spec, raw)


def problems(tmp_path, cross: str = CROSS, path: str = "") -> dict[str, str]:
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(_write(tmp_path, cross, path))
    return dict(e.value.problems)


# ---- cross traffic ---------------------------------------------------------------------


def test_a_cross_flow_becomes_a_group_without_tcp_and_its_cross_plan(tmp_path):
    cross = CROSS + '\npattern = "on_off"\non = "10ms"\noff = "30ms"\nshape = 1.8\npacket_size = "1000B"\n' \
                    'streams = 3\nstart = "1s"\nstop = "3s"'
    (plan,) = plans(tmp_path, cross)
    flow = plan.flows[1]
    assert (flow.kind, flow.cc, flow.sender, flow.streams, flow.start_s) == ("cross", "", "", 3, 1.0)
    assert flow.cross == CrossFlow(rate_bps=3e6, pattern="on_off", on_s=0.01, off_s=0.03, shape=1.8,
                                   packet_bytes=1000, stop_s=3.0)
    assert set(plan.senders) == {"s1"}
    assert plan.cross_keys() == ['flows.1.kind = "cross"']
    (constant,) = plans(tmp_path)
    assert constant.flows[1].cross == CrossFlow(rate_bps=3e6)


def test_rate_is_a_bit_rate_for_cross_traffic_and_arrivals_per_second_for_rpc(tmp_path):
    assert problems(tmp_path, 'kind = "cross"\nrate = "200/s"')["flows.1.rate"].startswith("cannot read '200/s'")
    rpc = 'kind = "rpc"\ncc = "reno"\nrequest = "100B"\nresponse = "10KB"\nrate = "200/s"'
    (plan,) = plans(tmp_path, rpc)
    assert plan.flows[1].rate_per_s == 200.0


@pytest.mark.parametrize("cross, key, message", [
    ('kind = "cross"', "flows.1", "needs rate"),
    (CROSS + '\ncc = "reno"', "flows.1", "cc does not apply to kind = \"cross\""),
    (CROSS + '\nsender = "s2"', "flows.1", "sender does not apply"),
    (CROSS + '\non = "10ms"', "flows.1", "on only apply to pattern = \"on_off\""),
    (CROSS + '\npattern = "on_off"\non = "10ms"', "flows.1", "needs off"),
    (CROSS + '\npattern = "on_off"\non = "1ms"\noff = "1ms"\nshape = 1.0', "flows.1", "Pareto shape above 1"),
    (CROSS + '\npattern = "poisson"', "flows.1.pattern", "'constant' or 'on_off'"),
    (CROSS + '\nstart = "2s"\nstop = "1s"', "flows.1", "is not after start"),
    (CROSS + '\npacket_size = "9000B"', "flows.1.packet_size", "to path.mtu = 1500"),
    ('cc = "reno"\npattern = "on_off"', "flows.1", "only apply to kind = \"cross\""),
    ('streams = 2', "flows.1", "cc is missing"),
])
def test_cross_flow_errors_name_the_key_and_what_is_allowed(tmp_path, cross, key, message):
    found = problems(tmp_path, cross)
    assert key in found and message in found[key], found


def test_cross_traffic_needs_a_fifo_bottleneck_and_a_tcp_flow(tmp_path):
    found = problems(tmp_path, path='aqm = "fq_codel"')
    assert "not modelled through path.aqm = fq_codel" in found["flows.1.kind"], found
    p = tmp_path / "only.toml"
    p.write_text(textwrap.dedent(BASE.format(path="", cross=CROSS)).replace('cc = "cubic"', CROSS))
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(p)
    assert "at least one TCP flow" in dict(e.value.problems)["flows"]


def test_a_cross_group_runs_on_the_simulator_and_gets_a_goodput(tmp_path):
    (plan,) = plans(tmp_path)
    SimBackend().check([plan])
    outcome = SimBackend().run(plan, tmp_path)
    rows = {r["flow_group"]: r for r in summarize(plan, outcome)}
    # 3 Mbit/s of frames: 3e6 * 1500/1514 bit/s of IP packets.
    assert rows[1]["kind"] == "cross" and rows[1]["goodput_bps"] == pytest.approx(3e6 * 1500 / 1514, rel=0.02)
    assert rows[0]["goodput_bps"] < 9.5e6 * 1448 / 1514, "the TCP flow shares the 12 Mbit/s link"


def test_cross_traffic_needs_linkem_as_delay_line_and_bottleneck_naming_the_flow(tmp_path):
    # linkem offers the cross packets to its bottleneck (the simulator's
    # code); netem and tbf cannot, and a hosts testbed needs an emulator.
    (plan,) = plans(tmp_path)
    assert plan.moves() and plan.moving_keys() == ['flows.1.kind = "cross"']
    cfg = path_config(plan)
    assert dynamics_refusal(cfg, "linkem-nfqueue", "linkem") is None
    refused = dynamics_refusal(cfg, "linkem-nfqueue", "tbf")
    assert refused.startswith('flows.1.kind = "cross" need fatpipe-linkem as delay line and bottleneck'), refused
    refused = dynamics_refusal(cfg, "netem", "tbf")  # path.emulator = "netem"
    assert refused.startswith('flows.1.kind = "cross" with path.emulator = "netem": netem has no option'), refused
    assert (f'run {plan.run_id}: flows.1.kind = "cross": a path that moves needs an emulator host '
            "in the testbed (its delay line applies them)") in plan_problems(plan, None)
    assert not any("not yet supported" in p for p in plan_problems(plan, None))


# ---- path.trace ------------------------------------------------------------------------

BULK = 'cc = "reno"'


def test_a_trace_file_relative_to_the_spec_becomes_its_run_length_form(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.trace").write_text("0\n3\n3\n3\n8\n")
    for path in ('trace = "traces/t.trace"', 'trace = {file = "traces/t.trace", direction = "data"}'):
        (plan,) = plans(tmp_path, BULK, path)
        assert plan.dynamics.trace == Trace(ms_gaps=(0, 3, 5), counts=(1, 3, 1))
        assert plan.dynamics.keys() == ["path.trace"]


@pytest.mark.parametrize("text, message", [
    ("", "has no delivery opportunity"),
    ("0\n0\n", "lasts no time"),
    ("5\n3\n", "line 2: 3 ms is before the line above (5 ms)"),
    ("1\n\n2\n", "line 2: '' is not a whole number"),
    ("1.5\n", "line 1: '1.5' is not a whole number"),
])
def test_a_bad_trace_file_is_refused_naming_the_line(tmp_path, text, message):
    (tmp_path / "t.trace").write_text(text)
    found = problems(tmp_path, BULK, 'trace = "t.trace"')
    assert message in found["path.trace"], found


def test_trace_errors_name_the_key(tmp_path):
    assert "cannot read trace file" in problems(tmp_path, BULK, 'trace = "missing.trace"')["path.trace"]
    assert "write the trace file's name" in problems(tmp_path, BULK, "trace = 5")["path.trace"]
    (tmp_path / "t.trace").write_text("1\n")
    found = problems(tmp_path, BULK, 'trace = {file = "t.trace", direction = "ack"}')
    assert "'data'" in found["path.trace.direction"], found
    step = '[[path.schedule]]\nat = "1s"\nrate = "2x"'
    found = problems(tmp_path, BULK, 'trace = "t.trace"\n' + step)
    assert "replaces the bottleneck's rate" in found["path.schedule.0.rate"], found


def test_a_trace_serves_the_bottleneck_on_the_simulator(tmp_path):
    # Two opportunities each millisecond: 2000 packets a second of 1500-byte
    # IP packets (MSS 1448 with timestamps), twice path.rate's 12 Mbit/s.
    (tmp_path / "t.trace").write_text("1\n1\n")
    (plan,) = plans(tmp_path, BULK, 'trace = "t.trace"')
    outcome = SimBackend().run(plan, tmp_path)
    total = sum(r["goodput_bps"] for r in summarize(plan, outcome))
    assert total == pytest.approx(2000 * 1448 * 8, rel=0.05)
    assert dynamics_refusal(path_config(plan), "linkem-nfqueue", "linkem") is None
    assert dynamics_refusal(path_config(plan), "linkem-nfqueue", "tbf").startswith("path.trace need fatpipe-linkem")
    assert dynamics_refusal(path_config(plan), "netem", "tbf").startswith('path.trace with path.emulator = "netem"')


def test_the_cross_traffic_example_of_the_docs_plans_what_it_says(tmp_path):
    doc = (Path(__file__).resolve().parents[1] / "docs" / "path-dynamics.md").read_text()
    example = doc.split("### Cross traffic", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    p = tmp_path / "s.toml"
    study = textwrap.dedent(BASE.format(path="", cross='cc = "reno"')).replace('duration = "4s"', 'duration = "30s"')
    p.write_text(study + example)
    spec, raw = spec_mod.load(p)
    (plan,) = plan_runs(spec, raw)
    assert plan.flows[2].cross == CrossFlow(rate_bps=2e7, pattern="on_off", on_s=0.01, off_s=0.04, shape=1.5,
                                            packet_bytes=1500, stop_s=25.0)
    assert (plan.flows[2].streams, plan.flows[2].start_s) == (4, 5.0)
