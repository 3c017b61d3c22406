"""A GRO receiver on the kernel backend (`hosts.receiver.gro`): linkem
carries each TSO packet as one unit unless a segment inside it is lost,
dropped or marked, and splits those into segments whose fates were decided
in order (crates/linkem/src/units.rs). Real kernel runs (root)."""

import math
import os

import pytest
from plans import bulk_plan

from fatpipe.backends.base import RunPlan
from fatpipe.backends.kernel import KernelBackend
from fatpipe.linuxpath.linkem import find_linkem

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S, LOSS = 500e6, 0.020, 1e-4
DURATION_S, WARMUP_S = 4.0, 1.0


def plan(gro: bool) -> RunPlan:
    return bulk_plan(f"gro-{gro}", cc="cubic", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=LOSS,
                     duration_s=DURATION_S, warmup_s=WARMUP_S, seed=5, mem_bytes=32 << 20, receiver_gro=gro)


def test_tso_packets_cross_whole_and_the_receiver_acks_once_per_unit(tmp_path):
    if find_linkem() is None:
        pytest.skip("fatpipe-linkem is not built (cargo build --release -p fatpipe-linkem)")
    be = KernelBackend()
    segments = be.run(plan(gro=False), tmp_path / "segments").facts["linkem"]
    units = be.run(plan(gro=True), tmp_path / "units").facts["linkem"]
    seen = (f"per segment: {segments['data_packets']} segments, {segments['ack_packets']} ACKs; units: "
            f"{units['units']} units of {units['unit_segments']} segments, {units['split_units']} split, "
            f"{units['unit_mismatches']} mismatched, {units['data_packets']} segments, {units['ack_packets']} ACKs, "
            f"{units['dropped']} lost, {units['queue_drops']} tail-dropped")
    # Without GRO the kernel segments every TSO packet before linkem, and
    # the receiver ACKs about once per release batch (one quantum, 100 us:
    # ~4 segments at this rate; docs/kernel-path.md).
    assert segments["units"] == 0, seen
    # With it, TSO packets of many segments (tcp_tso_autosize: ~1 ms at the
    # pacing rate, up to 64 KB: ~26 segments measured at the ~270 Mbit/s
    # CUBIC gets here) cross whole, and the
    # receiver ACKs once per unit (more than one full frame arrived): several
    # times fewer ACKs per segment than per release batch (measured: 27 vs
    # 5.4 segments per ACK, the same 6 losses and 269 Mbit/s in both modes).
    assert units["units"] > 0 and units["unit_segments"] / units["units"] > 8, seen
    per_ack_units = units["data_packets"] / units["ack_packets"]
    per_ack_segments = segments["data_packets"] / segments["ack_packets"]
    assert per_ack_units > 2 * per_ack_segments, seen
    # Loss still acts on single segments, in order: a unit with a lost
    # segment is split, and every split segment found its decided fate.
    assert units["unit_mismatches"] == 0, seen
    assert units["split_units"] > 0, seen
    assert units["split_units"] + units["dropped_units"] <= units["dropped"] + units["queue_drops"], seen
    expected = units["data_packets"] * LOSS
    assert abs(units["dropped"] - expected) < 5 * math.sqrt(expected) + 1, f"{seen}; expected {expected:.0f} lost"
