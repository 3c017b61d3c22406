"""Drops at a chosen instant ([[path.drops]]) on the kernel backend:
fatpipe-linkem drops exactly the data packets the simulator would (its
crates/sim/src/path/drops.rs), and real Linux TCP retransmits exactly
those. Real kernel runs (root)."""

import os
from dataclasses import replace

import numpy as np
import pytest
import retransmissions
from plans import bulk_plan

from fatpipe.backends.base import PathDrop, PathDynamics
from fatpipe.backends.kernel import KernelBackend
from fatpipe.linuxpath.linkem import find_linkem

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 50e6, 0.020


@pytest.fixture(autouse=True)
def _linkem():
    if find_linkem() is None:
        pytest.skip("fatpipe-linkem is not built (cargo build --release -p fatpipe-linkem)")


def test_a_burst_of_drops_loses_exactly_count_segments_from_its_instant_and_linux_retransmits_them(tmp_path):
    # Socket buffers of 150 KB hold CUBIC's window below the BDP plus the
    # 1-BDP buffer (2 x 125 KB): the bottleneck never overflows, so every
    # loss and retransmission of the run is the burst's.
    base = bulk_plan("drops", cc="cubic", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, duration_s=5.0, warmup_s=1.0,
                     seed=5, mem_bytes=150_000)
    plan = replace(base, dynamics=PathDynamics(drops=(PathDrop(at_s=3.0, count=3),)), sample_interval_s=0.1)
    out = KernelBackend().run(plan, tmp_path / plan.run_id)
    t = np.asarray(out.series["t_s"], dtype=float)
    retrans = np.asarray(out.series["retrans_segments"], dtype=float)
    seen = (f"emulator {out.path.emulator}, random drops {out.path.random_drops}, queue drops "
            f"{out.path.queue_drops}; retransmissions by 3 s {retrans[t <= 3.0].max():.0f}, at the end "
            f"{retrans[-1]:.0f}, of them spurious (DSACKed) {retransmissions.spurious(out.facts)}")
    assert out.path.emulator == "linkem-nfqueue", seen
    assert (out.path.random_drops, out.path.queue_drops) == (3, 0), seen
    # The segments dropped are the first three at or after 3 s: nothing is
    # retransmitted before (the last sample at or before 3 s) but spurious
    # resends, had the hosts stalled, and Linux (SACK, RACK) retransmits
    # the three once each.
    spurious = retransmissions.spurious(out.facts)
    assert retrans[t <= 3.0].max() <= spurious and retransmissions.caused_by_the_path(out.facts) == 3, seen
