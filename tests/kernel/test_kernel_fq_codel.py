"""fq_codel on the kernel path (root, namespaces), decided by what the
running kernel has: doctor probes the qdisc, the backend takes an fq_codel
study where the probe found it and refuses it, naming the key and the
kernel option, where not; the tc argument list fatpipe builds is one tc
parses (where the qdisc is missing, the kernel refuses it, not tc)."""

import os

import pytest

from fatpipe.backends.base import BackendUnavailable, FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend, doctor
from fatpipe.backends.kernel.cleanup import fatpipe_namespaces
from fatpipe.backends.kernel.netns import Namespace, add_veth, new_prefix
from fatpipe.backends.kernel.ownership import OwnershipRecord
from fatpipe.backends.kernel.path import EmulatedPath
from fatpipe.linuxpath.cmd import CommandFailed
from fatpipe.linuxpath.config import path_config
from fatpipe.linuxpath.qdisc import QDISC_CONFIG, TBF_CHILD, fq_codel_args, tbf_args

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

AQM = {"kind": "fq_codel", "target_s": 0.002, "interval_s": 0.05, "limit_packets": 1000,
       "ce_threshold_s": 0.001, "quantum_bytes": 300, "ecn": False}


def plan() -> RunPlan:
    host = HostLimits(rmem_max_bytes=4 << 20, wmem_max_bytes=4 << 20)
    return RunPlan(run_id="fq", backend="kernel", rep=0, seed=1, duration_s=2.0, warmup_s=0.5,
                   sample_interval_s=0.1, rate_bps=100e6, rtt_s=0.02, loss=0.0, corruption=0.0,
                   buffer_bytes=250_000, mtu_bytes=1500, senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1"),),
                   aqm=AQM)


def test_doctor_probes_every_qdisc_a_path_may_use():
    report = doctor()
    assert report.usable, report.render()
    probed = {c.name: c for c in report if c.name in QDISC_CONFIG}
    assert set(probed) == set(QDISC_CONFIG)
    assert probed["tbf"].ok  # the bottleneck of every tbf path
    for kind, check in probed.items():
        assert check.ok or QDISC_CONFIG[kind] in check.detail, check


def test_the_backend_takes_fq_codel_exactly_where_the_kernel_has_it(tmp_path):
    has_fq_codel = next(c.ok for c in doctor() if c.name == "fq_codel")
    before = set(fatpipe_namespaces())
    if has_fq_codel:
        KernelBackend().check([plan()])
        with EmulatedPath(path_config(plan()), tmp_path) as path:
            shown = path.router.run("tc", "qdisc", "show", "dev", "rcv")
        assert "qdisc fq_codel 20: parent 1:1 limit 1000p" in shown and "noecn" in shown, shown
    else:
        with pytest.raises(BackendUnavailable, match="the running kernel has no fq_codel qdisc") as e:
            KernelBackend().check([plan()])
        assert "path.aqm = 'fq_codel'" in str(e.value) and "CONFIG_NET_SCH_FQ_CODEL" in str(e.value)
        with pytest.raises(ValueError, match="the running kernel has no fq_codel qdisc"):
            with EmulatedPath(path_config(plan()), tmp_path):
                pass
    assert set(fatpipe_namespaces()) == before  # nothing left behind either way


def test_tc_parses_the_fq_codel_arguments_fatpipe_builds():
    prefix = new_prefix()
    record = OwnershipRecord.for_this_process(prefix)
    ns = Namespace.create(f"{prefix}-fq", record)
    peer = Namespace.create(f"{prefix}-fq2", record)
    try:
        add_veth(ns, "p0", peer, "p1", 1500)
        ns.run(*tbf_args("p0", 100e6, 12500, 250_000))
        try:
            ns.run(*fq_codel_args("p0", TBF_CHILD, AQM))
        except CommandFailed as e:
            # tc read every option and asked the kernel, which has no such qdisc.
            assert "Specified qdisc kind is unknown" in e.stderr, e.stderr
            assert not next(c.ok for c in doctor() if c.name == "fq_codel")
        else:
            shown = ns.run("tc", "qdisc", "show", "dev", "p0")
            for part in ("fq_codel 20: parent 1:1", "limit 1000p", "quantum 300", "target 2ms", "interval 50ms",
                         "ce_threshold 1ms"):
                assert part in shown, shown
    finally:
        peer.delete()
        ns.delete()
        record.discard()
