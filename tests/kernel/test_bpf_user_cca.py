"""One source, both backends (docs/bpf-ccas.md): a user's congestion
control written here as a .bpf.c runs in the simulator and on the kernel
backend from one study file; on the kernel the socket runs it under its
own name and nothing stays registered afterwards (root, BPF struct_ops)."""

import sys
from pathlib import Path

import pytest
from bpf_skip import bpf_ports_missing

from fatpipe.backends.kernel import KernelBackend, bpfcca
from fatpipe.backends.sim import SimBackend
from fatpipe.goodput import total_goodput_bps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from spec_text import plans_for
from test_bpf_sim import USER_CCA

pytestmark = pytest.mark.skipif(bpf_ports_missing() is not None, reason=bpf_ports_missing() or "")

RATE_BPS, MSS_BYTES, MTU_BYTES = 100e6, 1448, 1500
WARMUP_S = 1.0
GONE_DEADLINE_S = 10.0
STUDY = """
version = 1
[study]
name = "mine-on-both"
backends = ["sim", "kernel"]
duration = "3s"
warmup = "1s"
[path]
rate = "100Mbit"
rtt = "20ms"
buffer = "1bdp"
[hosts.s1]
rmem_max = "16MiB"
wmem_max = "16MiB"
[hosts.receiver]
rmem_max = "16MiB"
wmem_max = "16MiB"
[[flows]]
cc = "bpf:mine.bpf.c"
streams = 1
"""
# Reno's increase and a 0.7 decrease alone on a 1-BDP drop-tail buffer:
# cwnd at a loss is ~2 BDP (BDP in flight + BDP queued), 0.7 of it is 1.4
# BDP, so the link never idles after the first recovery; 10 % for that
# recovery falling into the 2 s window. The bottleneck carries at most
# MSS/MTU of its rate as payload; 2 % for the sampling clock.
FLOOR_BPS = 0.90 * RATE_BPS * MSS_BYTES / MTU_BYTES
CEILING_BPS = 1.02 * RATE_BPS * MSS_BYTES / MTU_BYTES


def test_a_users_cca_runs_on_the_simulator_and_the_kernel_from_one_study(tmp_path):
    (tmp_path / "mine.bpf.c").write_text(USER_CCA)
    plans = {p.backend: p for p in plans_for(STUDY, tmp_path)}
    assert set(plans) == {"sim", "kernel"}
    before = bpfcca.kernel_ccas()
    assert "mine" not in before
    seen = {}
    for name, backend in (("sim", SimBackend()), ("kernel", KernelBackend())):
        backend.check([plans[name]])
        out = backend.run(plans[name], tmp_path / name)
        seen[name] = total_goodput_bps(out.series, WARMUP_S)
        facts = out.facts["ccas"]
        assert any(f.get("kind") == "source" and f.get("name") == "mine" for f in facts.values()), facts
        if name == "kernel":
            assert out.facts["ccas_seen"] == {"0": ["mine"]}, out.facts["ccas_seen"]
    print(f"goodput: sim {seen['sim'] / 1e6:.1f}, kernel {seen['kernel'] / 1e6:.1f} Mbit/s "
          f"(floor {FLOOR_BPS / 1e6:.1f}, ceiling {CEILING_BPS / 1e6:.1f})")
    for name, goodput in seen.items():
        assert FLOOR_BPS <= goodput <= CEILING_BPS, (name, goodput)
    assert bpfcca.wait_until(lambda: bpfcca.kernel_ccas() == before, GONE_DEADLINE_S), bpfcca.kernel_ccas()
