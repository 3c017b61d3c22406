"""fatpipe's BPF congestion controls on the kernel backend (root): the loader
registers exactly what it is asked for, under the port's name, and the
kernel forgets them when the loader ends, also when fatpipe is SIGKILLed
in the middle of a run (docs/bpf-ccas.md)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from bpf_skip import bpf_ports_missing

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend, bpfcca
from fatpipe.goodput import total_goodput_bps

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
RATE_BPS, RTT_S = 100e6, 0.020


pytestmark = pytest.mark.skipif(bpf_ports_missing() is not None, reason=bpf_ports_missing() or "")


@pytest.fixture(scope="module")
def loader():
    binary, ports = bpfcca.loader()
    missing = {"fp_reno", "fp_cubic", "htcp", "dctcp"} - set(ports)
    assert not missing, f"ports not built: {missing}"
    return binary, ports


def port_free(name: str) -> bool:
    return name not in bpfcca.kernel_ccas()


def test_each_port_registers_under_its_file_name_with_the_source_hash(loader):
    _, ports = loader
    for name, port in ports.items():
        assert port.file == f"{name}.bpf.c"
        assert port.source_sha256 == bpfcca.source_sha256(name)


def test_registration_lists_exactly_the_requested_ccas_and_ends_with_the_block(loader):
    binary, ports = loader
    names = [n for n in ("fp_reno", "fp_cubic", "htcp", "dctcp") if port_free(n)]
    before = bpfcca.kernel_ccas()
    with bpfcca.Registration(binary, names):
        during = bpfcca.kernel_ccas()
        assert set(during) - set(before) == set(names)
    assert bpfcca.kernel_ccas() == before


def test_a_sigkilled_loader_leaves_nothing_registered(loader):
    binary, _ = loader
    before = bpfcca.kernel_ccas()
    p = subprocess.Popen([str(binary), "fp_reno"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert "fp_reno" in bpfcca.kernel_ccas()
        p.kill()
        p.wait(timeout=10)
        assert bpfcca.wait_until(lambda: bpfcca.kernel_ccas() == before, 10.0), bpfcca.kernel_ccas()
    finally:
        if p.poll() is None:
            p.kill()



def htcp_plan(duration_s: float = 3.0, run_id: str = "htcp") -> RunPlan:
    host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
    return RunPlan(run_id=run_id, backend="kernel", rep=0, seed=3, duration_s=duration_s, warmup_s=1.0,
                   sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=0.0, corruption=0.0,
                   buffer_bytes=int(RATE_BPS * RTT_S / 8), mtu_bytes=1500, senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="bulk", cc="htcp", streams=1, mss_bytes=1448, sender="s1"),))


@pytest.mark.usefixtures("loader")
def test_a_kernel_run_with_the_htcp_port_uses_it_and_unregisters_it(tmp_path):
    if not port_free("htcp"):
        pytest.skip("this kernel has its own htcp: the port is not used")
    before = bpfcca.kernel_ccas()
    backend = KernelBackend()
    backend.check([htcp_plan()])
    out = backend.run(htcp_plan(), tmp_path)
    assert out.facts["ccas_seen"] == {"0": ["htcp"]}  # TCP_CONGESTION of the sampled socket
    assert out.facts["ccas"]["htcp"]["source"] == "fatpipe-bpf"
    assert out.facts["ccas"]["htcp"]["source_sha256"] == bpfcca.source_sha256("htcp")
    assert total_goodput_bps(out.series, 1.0) == pytest.approx(RATE_BPS, rel=0.15)
    assert bpfcca.kernel_ccas() == before


RUNNER = r'''
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_bpf_ccas import htcp_plan
from fatpipe.backends.kernel import KernelBackend
KernelBackend().run(htcp_plan(duration_s=30.0, run_id="sigkill"), Path(sys.argv[1]))
'''


@pytest.mark.usefixtures("loader")
def test_sigkill_of_fatpipe_mid_run_leaves_no_port_registered(tmp_path):
    if not port_free("htcp"):
        pytest.skip("this kernel has its own htcp: the port is not used")
    before = bpfcca.kernel_ccas()
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    p = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path), str(Path(__file__).parent)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert bpfcca.wait_until(lambda: "htcp" in bpfcca.kernel_ccas() or p.poll() is not None, 60.0)
        assert p.poll() is None, p.stderr.read()
        samples = tmp_path / "samples-g0.jsonl"  # mid-run: the flow is sending and being sampled
        assert bpfcca.wait_until(lambda: samples.is_file() and samples.stat().st_size > 0 or p.poll() is not None,
                                 60.0)
        assert p.poll() is None, p.stderr.read()
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        assert bpfcca.wait_until(lambda: bpfcca.kernel_ccas() == before, 10.0), bpfcca.kernel_ccas()
    finally:
        if p.poll() is None:
            p.kill()
        # The killed run's namespaces and linkem: what `fatpipe clean` is for.
        from fatpipe.backends.kernel import clean_stale
        clean_stale()
