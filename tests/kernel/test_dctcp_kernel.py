"""DCTCP end to end on the kernel backend (root): two DCTCP streams through
fatpipe-linkem's CE-threshold bottleneck negotiate ECN, are marked, keep
the queue near K without a single drop and fill the link; the simulator
agrees on the same point. Where the kernel has no dctcp, fatpipe's BPF
port (bpf/cca/dctcp.bpf.c) is registered for the run and gone after it.

Both ends run DCTCP: the bulk receiver's listener carries the flow's CCA
(engine.run_receiver). A DCTCP SYN is ECT (tcp_ecn_send_syn), and Linux
accepts ECN on an ECT SYN only when the listener's CCA needs ECN
(tcp_ecn_create_request: tcp_ca_needs_ecn(listen_sk)); otherwise the
sender's dctcp_init() falls back to Reno and nothing is marked.

The path: 100 Mbit/s, 20 ms, a 1 BDP buffer (165 frames), K = 30 packets,
2 streams, 8 s (goodput after 1 s). Why no packet can be dropped:
* Slow start: bursts at twice the rate queue half a round's window, so the
  first mark comes at an aggregate window near 2(K + 1) and the senders
  hear of it one round later, at most 4(K + 1) = 124 < BDP: the queue stays
  below the window, below the buffer (as in test_kernel_ecn.py).
* Afterwards each stream grows by at most one segment per RTT
  (tcp_reno_cong_avoid) and cuts by alpha/2 once per window of marks
  (dctcp_ssthresh); alpha moves by g = 1/16 of the marked fraction per
  window (dctcp_update_alpha), so it covers the N segments of growth per
  RTT within a window or two: the queue rises a few segments per stream
  above K, far below the buffer.
Why the link stays busy (Alizadeh et al., SIGCOMM 2010, section 3.3): the
queue swings by A = 1/2 sqrt(2 N (BDP + K)) = 14 packets below its peak
K + N, so it never empties (K + N - A > 0). The pipe is full once the
aggregate window, at least K + 1 after slow start's halving (alpha starts
at 1), has grown by N per RTT to the BDP.
"""

import math
import os
from pathlib import Path

import pytest
import retransmissions
from bpf_skip import bpf_ports_missing

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend, bpfcca
from fatpipe.backends.sim import SimBackend
from fatpipe.goodput import total_goodput_bps
from fatpipe.wire import frame_bytes

RATE_BPS, RTT_S, MTU, MSS = 100e6, 0.020, 1500, 1448
FRAME = frame_bytes(MTU)  # 1514
BDP_FRAMES = RATE_BPS * RTT_S / 8 / FRAME  # 165
BUFFER_BYTES = int(RATE_BPS * RTT_S / 8)  # 1 BDP
BUFFER_FRAMES = BUFFER_BYTES / FRAME
K_PACKETS, STREAMS = 30, 2
DURATION_S, WARMUP_S = 8.0, 1.0
SLOW_START_S = 4 * RTT_S  # 2 x IW to 4 (K + 1): under 3 rounds, plus the echo
EMULATOR_SLACK = 0.95  # linkem's rate and the end hosts (docs/kernel-path.md)


def _toolchain_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, BPF struct_ops)"
    if "dctcp" in bpfcca.kernel_ccas():
        return None  # the kernel's own dctcp
    missing = bpf_ports_missing()
    return f"no dctcp in this kernel, and its BPF port cannot load: {missing}" if missing else None


def plan(backend: str) -> RunPlan:
    host = HostLimits(rmem_max_bytes=32 << 20, wmem_max_bytes=32 << 20)  # tcp_ecn 2: DCTCP asks by itself
    return RunPlan(run_id=f"dctcp-{backend}", backend=backend, rep=0, seed=3, duration_s=DURATION_S,
                   warmup_s=WARMUP_S, sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=0.0,
                   corruption=0.0, buffer_bytes=BUFFER_BYTES, mtu_bytes=MTU, senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="bulk", cc="dctcp", streams=STREAMS, mss_bytes=MSS,
                                   sender="s1"),),
                   aqm={"kind": "ce_threshold", "k_packets": K_PACKETS})


def time_to_fill_s() -> float:
    """When the pipe is full at the latest: slow start, then N segments per
    RTT from an aggregate window of K + 1 to the BDP."""
    return SLOW_START_S + (BDP_FRAMES - (K_PACKETS + 1)) / STREAMS * RTT_S


def goodput_floor_bps() -> float:
    """The link busy from time_to_fill_s() on, carrying MSS per frame."""
    busy = (DURATION_S - max(time_to_fill_s(), WARMUP_S)) / (DURATION_S - WARMUP_S)
    return EMULATOR_SLACK * RATE_BPS * MSS / FRAME * busy


def test_the_margins_of_this_path_keep_dctcp_inside_the_buffer_and_the_link_busy():
    assert 4 * (K_PACKETS + 1) < BDP_FRAMES <= BUFFER_FRAMES + 1  # slow start cannot overflow
    assert K_PACKETS + 4 * STREAMS < BUFFER_FRAMES / 2  # K well below the buffer
    swing = 0.5 * math.sqrt(2 * STREAMS * (BDP_FRAMES + K_PACKETS))
    assert K_PACKETS + STREAMS - swing > 0  # the queue never empties
    assert time_to_fill_s() < DURATION_S / 4
    assert goodput_floor_bps() > 0.8 * RATE_BPS


@pytest.mark.skipif(_toolchain_missing() is not None, reason=_toolchain_missing() or "")
def test_dctcp_streams_are_marked_keep_the_queue_below_the_buffer_and_fill_the_link(tmp_path):
    port = "dctcp" not in bpfcca.kernel_ccas()
    backend = KernelBackend()
    backend.check([plan("kernel")])
    out = backend.run(plan("kernel"), tmp_path)
    assert out.facts["ccas_seen"] == {"0": ["dctcp"]}  # TCP_CONGESTION: no fallback to reno
    assert out.facts["ccas"]["dctcp"]["source"] == ("fatpipe-bpf" if port else "kernel")
    # ECN negotiated on both streams (the receiver's DCTCP accepted the ECT
    # SYN), CE marked by the bottleneck and echoed (segments acked with ECE).
    assert out.facts["ecn"][0]["streams"] == STREAMS
    assert out.path.ce_marks > 0 and out.facts["ecn"][0]["delivered_ce"] > 0
    assert out.path.queue_drops == 0 and out.path.random_drops == 0
    # The path dropped nothing, so a retransmission can only be spurious
    # (seen once in a full test run: 1 retransmission, no drop).
    assert retransmissions.caused_by_the_path(out.facts) == 0, out.facts["streams_read_back"]
    assert total_goodput_bps(out.series, WARMUP_S) >= goodput_floor_bps()
    if port:
        # Only our own name: another process may register other CCAs meanwhile.
        assert "dctcp" not in bpfcca.kernel_ccas(), "the dctcp port is still registered after the run"


def test_the_simulator_marks_and_fills_the_link_on_the_same_point():
    out = SimBackend().run(plan("sim"), Path("."))
    assert out.path.ce_marks > 0 and out.path.queue_drops == 0
    assert max(out.series["retrans_segments"]) == 0
    assert total_goodput_bps(out.series, WARMUP_S) >= goodput_floor_bps()
