"""ECN and the bottleneck discipline in the spec: `path.aqm`, `ecn` on hosts
and flows — validation naming key and allowed values, sweeps, the run plan
the simulator reads, and the backends' answers."""

import textwrap
from pathlib import Path

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.config import path_config
from fatpipe.linuxpath.ecn import linkem_threshold, path_refusal, qdisc_refusal
from fatpipe.linuxpath.linkem import QueueConfig, linkem_args
from fatpipe.schema import path_columns
from fatpipe.study import plan_runs
from fatpipe.summary import summarize

BASE = """
version = 1
[study]
name = "ecn"
duration = "1s"
[path]
rate = "100Mbit"
rtt = "10ms"
buffer = "4bdp"
{path}
{hosts}
[[flows]]
cc = "{cc}"
{flow}
{sweep}
"""


def _text(path="", hosts="", cc="cubic", flow="", sweep=""):
    return textwrap.dedent(BASE.format(path=path, hosts=hosts, cc=cc, flow=flow, sweep=sweep))


def plans(tmp_path, **parts):
    p = tmp_path / "s.toml"
    p.write_text(_text(**parts))
    spec, raw = spec_mod.load(p)
    return plan_runs(spec, raw)


def problems(tmp_path, **parts):
    p = tmp_path / "s.toml"
    p.write_text(_text(**parts))
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(p)
    return "\n".join(f"{k}: {m}" for k, m in e.value.problems)


@pytest.mark.parametrize("written, planned", [
    ('aqm = "droptail"', {"kind": "droptail"}),
    ('aqm = {kind = "ce_threshold", k = "65pkts"}', {"kind": "ce_threshold", "k_packets": 65}),
    ('aqm = {kind = "ce_threshold", k = "100KB"}', {"kind": "ce_threshold", "k_bytes": 100_000}),
    ('aqm = "ce_threshold:100us"', {"kind": "ce_threshold", "k_s": pytest.approx(100e-6)}),
])
def test_path_aqm_forms_become_the_plans_discipline(tmp_path, written, planned):
    assert plans(tmp_path, path=written)[0].aqm == planned


def test_defaults_are_droptail_and_linux_tcp_ecn_2(tmp_path):
    plan = plans(tmp_path)[0]
    assert plan.aqm == {"kind": "droptail"}
    assert (plan.senders["s1"].ecn, plan.receiver.ecn, plan.flows[0].ecn) == (2, 2, None)
    assert plan.asks_for_ecn() == []


@pytest.mark.parametrize("written, says", [
    ('aqm = "red"', "droptail"),
    ('aqm = {kind = "pie"}', "droptail, ce_threshold"),
    ('aqm = {kind = "ce_threshold"}', "needs k"),
    ('aqm = {kind = "ce_threshold", k = "lots"}', "'65pkts'"),
    ('aqm = {kind = "ce_threshold", k = "6.5pkts"}', "whole number"),
    ('aqm = {kind = "droptail", k = "5pkts"}', "k only applies"),
    ('aqm = {kind = "ce_threshold", k = "5pkts", limit = 3}', "kind and k"),
    ("aqm = 3", "droptail"),
])
def test_bad_path_aqm_is_refused_naming_the_key_and_the_forms(tmp_path, written, says):
    msg = problems(tmp_path, path=written)
    assert "path.aqm" in msg and says in msg, msg


@pytest.mark.parametrize("where", ["hosts", "flow"])
@pytest.mark.parametrize("value", ["3", "true", '"1"', "-1"])
def test_bad_ecn_is_refused_naming_the_key_and_the_tcp_ecn_values(tmp_path, where, value):
    parts = {"hosts": f"[hosts.s1]\necn = {value}"} if where == "hosts" else {"flow": f"ecn = {value}"}
    msg = problems(tmp_path, **parts)
    key = "hosts.s1.ecn" if where == "hosts" else "flows.0.ecn"
    assert key in msg and "0 (off), 1 (request and accept), 2 (accept only" in msg, msg


def test_ecn_and_aqm_are_sweepable(tmp_path):
    got = plans(tmp_path, hosts="[hosts.receiver]\necn = 0", sweep=(
        '[sweep]\n"path.aqm" = ["droptail", "ce_threshold:20pkts"]\n'
        '"flows.0.ecn" = [1, 2]\n"hosts.s1.ecn" = [0, 1]'))
    assert len(got) == 8
    assert {p.aqm["kind"] for p in got} == {"droptail", "ce_threshold"}
    assert {p.flows[0].ecn for p in got} == {1, 2}
    assert {p.senders["s1"].ecn for p in got} == {0, 1}
    assert {p.receiver.ecn for p in got} == {0}


def test_a_bad_swept_value_names_the_sweep_key(tmp_path):
    msg = problems(tmp_path, sweep='[sweep]\n"path.aqm" = ["droptail", "codel"]')
    assert 'sweep."path.aqm"[1]' in msg and "droptail" in msg, msg
    msg = problems(tmp_path, sweep='[sweep]\n"flows.0.ecn" = [1, 5]')
    assert 'sweep."flows.0.ecn"[1]' in msg and "tcp_ecn" in msg, msg


def test_the_sim_marks_ce_for_an_ecn_flow_and_reports_path_ce_marks(tmp_path):
    backend = SimBackend()
    aqm = 'aqm = {kind = "ce_threshold", k = "20pkts"}'
    for flow, marked in (("", False), ("ecn = 1", True)):
        plan = plans(tmp_path, path=aqm, flow=flow)[0]
        backend.check([plan])
        out = backend.run(plan, tmp_path)
        assert (out.path.ce_marks > 0) == marked, flow
        assert path_columns(out.path)["path_ce_marks"] == out.path.ce_marks
        if marked:
            assert out.path.queue_drops == 0
            assert summarize(plan, out)[0]["retrans_segments"] == 0
    plan = plans(tmp_path, path=aqm, cc="dctcp")[0]
    assert backend.run(plan, tmp_path).path.ce_marks > 0, "DCTCP asks for ECN itself"


@pytest.mark.parametrize("parts, sender, receiver", [
    ({}, 2, 2),
    ({"hosts": "[hosts.s1]\necn = 1"}, 1, 2),
    ({"hosts": "[hosts.receiver]\necn = 0"}, 2, 0),
    ({"flow": "ecn = 1"}, 1, 2),
    ({"hosts": "[hosts.s1]\necn = 1", "flow": "ecn = 0"}, 0, 2),
])
def test_the_kernel_path_sets_tcp_ecn_per_namespace_a_flows_value_over_its_hosts(tmp_path, parts, sender, receiver):
    cfg = path_config(plans(tmp_path, **parts)[0])
    assert (cfg.senders["s1"].tcp_ecn, cfg.receiver.tcp_ecn) == (sender, receiver)


def test_the_kernel_path_carries_the_ce_threshold_to_linkems_bottleneck_queue(tmp_path):
    cfg = path_config(plans(tmp_path, path='aqm = {kind = "ce_threshold", k = "20pkts"}')[0])
    assert cfg.aqm == {"kind": "ce_threshold", "k_packets": 20}
    assert linkem_threshold(cfg.aqm) == "ce_k_packets=20"
    assert linkem_threshold({"kind": "ce_threshold", "k_bytes": 30000}) == "ce_k_bytes=30000"
    assert linkem_threshold({"kind": "ce_threshold", "k_s": 1e-4}) == "ce_k_s=0.0001"
    assert linkem_threshold({"kind": "droptail"}) is None
    q = QueueConfig(0, "data", 0.01, 0.0, 1e8, 500_000, "ce_k_packets=20")
    args = linkem_args(Path("/bin/linkem"), [q], 1, Path("/tmp/s.json"))
    assert "num=0,delay_s=0.010000000,loss=0,name=data,rate_bps=100000000,buffer_bytes=500000,ce_k_packets=20" in args


def test_flows_of_one_sender_asking_different_tcp_ecn_are_refused_naming_the_keys(tmp_path):
    two = 'ecn = 1\n[[flows]]\ncc = "cubic"'
    with pytest.raises(BackendUnavailable) as e:
        KernelBackend().check(plans(tmp_path, flow=two))
    msg = str(e.value)
    assert "flows.0.ecn = 1" in msg and "flows.1 (hosts.s1.ecn = 2)" in msg and "net.ipv4.tcp_ecn" in msg, msg
    # On two senders the same values are fine.
    cfg = path_config(plans(tmp_path, flow=two + '\nsender = "s2"')[0])
    assert (cfg.senders["s1"].tcp_ecn, cfg.senders["s2"].tcp_ecn) == (1, 2)


def test_a_ce_threshold_needs_linkem_and_fq_codel_a_tbf_bottleneck_before_the_path_is_built():
    ce = {"kind": "ce_threshold", "k_packets": 20}
    assert path_refusal(ce, "auto", "auto") is None
    assert path_refusal(ce, "linkem-nfqueue", "linkem") is None
    for emulator, bottleneck in (("auto", "tbf"), ("netem", "auto"), ("linkem-nfqueue", "tbf")):
        msg = path_refusal(ce, emulator, bottleneck)
        assert msg and "path.aqm = 'ce_threshold'" in msg and "tbf does not mark" in msg, msg
    assert path_refusal({"kind": "droptail"}, "netem", "tbf") is None
    fq_codel = {"kind": "fq_codel"}
    for emulator, bottleneck in (("auto", "auto"), ("netem", "tbf"), ("linkem-nfqueue", "tbf")):
        assert path_refusal(fq_codel, emulator, bottleneck) is None
    msg = path_refusal(fq_codel, "linkem-nfqueue", "linkem")
    assert msg and "path.aqm = 'fq_codel' is a qdisc below tbf" in msg, msg
    assert "a Linux path takes 'droptail', 'ce_threshold', 'fq_codel'" in path_refusal({"kind": "pie"}, "auto", "auto")


def test_fq_codel_needs_the_qdisc_in_the_running_kernel_as_the_probe_found_it():
    assert qdisc_refusal({"kind": "fq_codel"}, {"tbf", "fq_codel"}) is None
    msg = qdisc_refusal({"kind": "fq_codel"}, {"tbf", "netem"})
    assert "path.aqm = 'fq_codel': the running kernel has no fq_codel qdisc" in msg
    assert "CONFIG_NET_SCH_FQ_CODEL" in msg and "sim backend" in msg
    for other in ({"kind": "droptail"}, {"kind": "ce_threshold", "k_packets": 5}):
        assert qdisc_refusal(other, set()) is None
