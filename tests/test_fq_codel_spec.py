"""fq_codel in the spec (`path.aqm = {kind = "fq_codel", ...}`): Linux's
defaults, strict validation naming the key, the sweepable string form, the
sim running it and the kernel backend refusing it."""

import pytest

from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from test_ecn_spec import plans, problems

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


def test_the_kernel_backend_refuses_fq_codel_naming_the_key(tmp_path):
    with pytest.raises(BackendUnavailable, match="this kernel has no fq_codel") as e:
        KernelBackend().check(plans(tmp_path, path='aqm = "fq_codel"'))
    assert "path.aqm = 'fq_codel'" in str(e.value)
