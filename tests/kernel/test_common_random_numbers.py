"""Common random numbers across backends: for one seed, linkem loses the
same data segments on the kernel path as the simulator does (both draw from
`fatpipe_sim::path::LossStage` on flow group 0's stream), so a seed's
kernel run and sim run pair up. Real kernel runs (root)."""

import math
import os

import numpy as np
import pytest
from plans import bulk_plan

from fatpipe.backends.base import RunPlan
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.compare import paired_ratio_ci, ratio_ci
from fatpipe.goodput import total_goodput_bps
from fatpipe.linuxpath.linkem import find_linkem

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S, LOSS = 100e6, 0.020, 1e-3
DURATION_S, WARMUP_S = 3.0, 0.5
SEEDS = (11, 12, 13, 14, 15, 16)


def plan(seed: int, backend: str) -> RunPlan:
    return bulk_plan(f"crn{seed}", cc="reno", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=LOSS,
                     duration_s=DURATION_S, warmup_s=WARMUP_S, seed=seed, backend=backend)


def test_a_seed_pairs_the_kernel_run_with_the_sim_run(tmp_path):
    if find_linkem() is None:
        pytest.skip("fatpipe-linkem is not built (cargo build --release -p fatpipe-linkem)")
    kernel, sim = KernelBackend(), SimBackend()
    k, s = [], []
    for seed in SEEDS:
        out = kernel.run(plan(seed, "kernel"), tmp_path / f"k{seed}")
        if out.path.emulator != "linkem-nfqueue":
            pytest.skip(f"the path is emulated by {out.path.emulator}, which has its own random numbers")
        k.append(total_goodput_bps(out.series, WARMUP_S))
        s.append(total_goodput_bps(sim.run(plan(seed, "sim"), tmp_path).series, WARMUP_S))
    k_bps, s_bps = np.array(k), np.array(s)
    seen = f"kernel {np.round(k_bps / 1e6, 1)} Mbit/s, sim {np.round(s_bps / 1e6, 1)} Mbit/s"
    # Loss-bound Reno (~1.2·MSS/(RTT·√p) ≈ 22 Mbit/s, ~4 losses a run) varies
    # by tens of % from seed to seed on both backends.
    assert k_bps.std() / k_bps.mean() > 0.05, seen
    # Independent draws would leave the paired interval about as wide as the
    # unpaired one (wider: n − 1 degrees of freedom); shared draws make the
    # pairs move together and the paired interval several times narrower.
    _, plo, phi = paired_ratio_ci(k_bps, s_bps)
    _, ulo, uhi = ratio_ci(k_bps.mean(), k_bps.std(ddof=1), len(k), s_bps.mean(), s_bps.std(ddof=1), len(s))
    widths = f"paired {plo:.2f}–{phi:.2f}, unpaired {ulo:.2f}–{uhi:.2f}"
    assert math.log(phi / plo) < 0.5 * math.log(uhi / ulo), f"{seen}; {widths}"
