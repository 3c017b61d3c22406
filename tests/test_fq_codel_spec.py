"""fq_codel in the spec (`path.aqm = {kind = "fq_codel", ...}`): Linux's
defaults, strict validation naming the key, the sweepable string form, the
sim running it, and the kernel backend taking it where the running kernel
has the qdisc (doctor's probe, faked here) and refusing it where not."""

import importlib
from pathlib import Path

import pytest

from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.kernel import KernelBackend, privilege
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath import linkem
from fatpipe.linuxpath.checks import Check
from fatpipe.linuxpath.config import path_config
from fatpipe.linuxpath.qdisc import QDISC_CONFIG, fq_codel_args, tbf_args, tbf_bottleneck_args
from test_ecn_spec import plans, problems

doctor_module = importlib.import_module("fatpipe.backends.kernel.doctor")

DEFAULTS = {"kind": "fq_codel", "target_s": 0.005, "interval_s": 0.1, "limit_packets": 10240,
            "ce_threshold_s": None, "quantum_bytes": 1514, "ecn": True}


@pytest.mark.parametrize("written, changed", [
    ('aqm = "fq_codel"', {}),
    ('aqm = {kind = "fq_codel"}', {}),
    ('aqm = {kind = "fq_codel", target = "2ms", interval = "50ms", limit = "1000pkts", '
     'ce_threshold = "1ms", quantum = "300B", ecn = false}',
     {"target_s": pytest.approx(0.002), "interval_s": pytest.approx(0.05), "limit_packets": 1000,
      "ce_threshold_s": pytest.approx(0.001), "quantum_bytes": 300, "ecn": False}),
    ('aqm = "fq_codel:target=1ms,ecn=false"', {"target_s": pytest.approx(0.001), "ecn": False}),
])
def test_fq_codel_takes_linux_defaults_for_keys_not_written(tmp_path, written, changed):
    assert plans(tmp_path, path=written)[0].aqm == DEFAULTS | changed


@pytest.mark.parametrize("written, says", [
    ('aqm = {kind = "fq_codel", k = "5pkts"}', "takes target, interval, limit, ce_threshold, quantum, ecn"),
    ('aqm = {kind = "fq_codel", target = "0ms"}', "target = '0ms': write a positive time"),
    ('aqm = {kind = "fq_codel", interval = 5}', "interval = a number: write a positive time"),
    ('aqm = {kind = "fq_codel", limit = "0pkts"}', "limit = '0pkts': must be 1 to"),
    ('aqm = {kind = "fq_codel", limit = "lots"}', "limit = 'lots': write a whole number"),
    ('aqm = {kind = "fq_codel", quantum = "1.5B"}', "quantum = '1.5B': must be a whole number of bytes"),
    ('aqm = {kind = "fq_codel", ecn = 1}', "ecn = 1: write true or false"),
    ('aqm = "fq_codel:target"', "key=value pairs"),
    ('aqm = "fq_codel:tarqet=5ms"', "unknown key(s) tarqet"),
])
def test_bad_fq_codel_keys_are_refused_naming_the_key(tmp_path, written, says):
    msg = problems(tmp_path, path=written)
    assert "path.aqm" in msg and says in msg, msg


def test_fq_codel_is_sweepable_as_its_string_form(tmp_path):
    got = plans(tmp_path, sweep='[sweep]\n"path.aqm" = ["droptail", "fq_codel", "fq_codel:target=1ms"]')
    assert [p.aqm.get("target_s") for p in got] == [None, 0.005, pytest.approx(0.001)]


def test_the_sim_runs_fq_codel_and_codel_drops_show_as_queue_drops(tmp_path):
    backend = SimBackend()
    plan = plans(tmp_path, path='aqm = "fq_codel:target=1ms,interval=20ms"')[0]
    backend.check([plan])
    out = backend.run(plan, tmp_path)
    assert out.path.queue_drops > 0 and out.path.ce_marks == 0
    ecn = plans(tmp_path, path='aqm = "fq_codel:target=1ms,interval=20ms"', flow="ecn = 1")[0]
    out = backend.run(ecn, tmp_path)
    assert out.path.ce_marks > 0, "ECT packets are marked instead of dropped"


def _fake_probe(monkeypatch, qdiscs: set[str]) -> None:
    """Doctor as root on a kernel whose namespace probe finds `qdiscs`
    (and a working NFQUEUE), with the delay line already built."""
    monkeypatch.setattr(privilege, "is_root", lambda: True)

    def probe(report):
        report.extend(Check(kind, kind in qdiscs, f"tc qdisc {kind}", required=False) for kind in QDISC_CONFIG)
        report.append(Check("nfqueue", True, "iptables -j NFQUEUE works"))

    monkeypatch.setattr(doctor_module, "_probe_in_namespace", probe)
    monkeypatch.setattr(doctor_module, "available_ccas", lambda: ["reno", "cubic"])
    monkeypatch.setattr("fatpipe.backends.kernel.available_ccas", lambda: ["reno", "cubic"])
    monkeypatch.setattr(linkem, "find_linkem", lambda: Path("/usr/bin/fatpipe-linkem"))


def test_a_kernel_with_fq_codel_takes_an_fq_codel_study(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, {"tbf", "fq_codel"})
    KernelBackend().check(plans(tmp_path, path='aqm = {kind = "fq_codel"}'))
    assert "path.aqm droptail, ce_threshold, fq_codel" in doctor_module.doctor().verdict


def test_a_kernel_without_fq_codel_refuses_it_naming_the_key_and_the_kernel_option(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, {"tbf", "netem", "fq", "red"})
    with pytest.raises(BackendUnavailable, match="the running kernel has no fq_codel qdisc") as e:
        KernelBackend().check(plans(tmp_path, path='aqm = {kind = "fq_codel"}'))
    assert "path.aqm = 'fq_codel'" in str(e.value) and "CONFIG_NET_SCH_FQ_CODEL" in str(e.value)
    KernelBackend().check(plans(tmp_path))  # droptail needs no qdisc beyond tbf


def test_the_bottleneck_is_tbf_with_fq_codel_in_its_child_slot_with_the_plans_parameters(tmp_path):
    cfg = path_config(plans(tmp_path, path='aqm = "fq_codel:target=1ms,interval=20ms"')[0])
    tbf = tbf_args("rcv", cfg.rate_bps, 12500, cfg.buffer_bytes)
    assert tbf_bottleneck_args("rcv", cfg.rate_bps, 12500, cfg.buffer_bytes, cfg.aqm) == [tbf, [
        "tc", "qdisc", "replace", "dev", "rcv", "parent", "1:1", "handle", "20:", "fq_codel",
        "target", "1000us", "interval", "20000us", "limit", "10240", "quantum", "1514", "ecn"]]
    every_key = ('aqm = {kind = "fq_codel", target = "2ms", interval = "50ms", limit = "1000pkts", '
                 'ce_threshold = "1ms", quantum = "300B", ecn = false}')
    cfg = path_config(plans(tmp_path, path=every_key)[0])
    assert fq_codel_args("rcv", "1:1", cfg.aqm)[10:] == [
        "target", "2000us", "interval", "50000us", "limit", "1000", "quantum", "300", "noecn",
        "ce_threshold", "1000us"]
    assert tbf_bottleneck_args("rcv", cfg.rate_bps, 12500, cfg.buffer_bytes, {"kind": "droptail"}) == [tbf]


def test_a_gro_receiver_with_fq_codel_is_refused_before_the_study_naming_both_keys(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, {"tbf", "fq_codel"})
    with pytest.raises(BackendUnavailable, match="hosts.receiver.gro = true needs fatpipe-linkem as bottleneck, "
                                                 "and path.aqm = 'fq_codel' is a qdisc below tbf"):
        KernelBackend().check(plans(tmp_path, path='aqm = "fq_codel"', hosts="[hosts.receiver]\ngro = true"))
