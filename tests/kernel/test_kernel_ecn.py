"""ECN on the kernel path (root, namespaces): the CE threshold of
fatpipe-linkem's bottleneck marks ECN-capable segments of real Linux TCP,
which reacts to the echoed marks instead of losing packets; a flow that
did not negotiate ECN is never marked and loses to overflow instead.

The path: 100 Mbit/s, 20 ms, a 1 BDP buffer (165 frames of 1514 bytes),
K = 20 packets. CUBIC with classic ECN (kernels built without
CONFIG_TCP_CONG_DCTCP have no dctcp).

Why a marked flow cannot overflow this buffer (the margins asserted below):
* Slow start sends two segments per ACK, twice the link rate, so a round
  of W segments queues about W/2 before the pipe is full. The first mark
  comes in the round whose queue passes K, and the sender hears of it one
  round later (ECE), by when W has at most doubled: W <= 4(K + 1). While
  that is below the BDP the queue is at most W, below the buffer.
* After slow start CUBIC grows cwnd by at most half per RTT (bictcp_update:
  cnt >= 2). Marks start when cwnd passes BDP + K; one RTT later cwnd is at
  most 1.5 (BDP + K + 1), i.e. a queue of 1.5 (BDP + K + 1) - BDP, below
  the buffer.
Why an unmarked flow must overflow it within the run: a loss-based flow
that fills the pipe (cwnd >= BDP) grows until cwnd = BDP + buffer = 2 BDP;
CUBIC grows at least as fast as its TCP-friendly estimate, 3(1 - beta) /
(1 + beta) = 0.53 segments per RTT (beta = 0.7), so it gets there within
BDP / 0.53 RTTs (6.2 s), plus slow start.
"""

import os

import pytest
import retransmissions

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel import KernelBackend
from fatpipe.goodput import total_goodput_bps
from fatpipe.wire import frame_bytes, linux_segment_payload

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S, MTU = 100e6, 0.020, 1500
FRAME = frame_bytes(MTU)  # 1514
PAYLOAD_BYTES = linux_segment_payload(1448, MTU)  # payload bytes per segment of the flow below
BDP_FRAMES = RATE_BPS * RTT_S / 8 / FRAME  # 165
BUFFER_BYTES = int(RATE_BPS * RTT_S / 8)  # 1 BDP
K_PACKETS = 20
DURATION_S = 8.0
CUBIC_FRIENDLY_SEGMENTS_PER_RTT = 3 * (1 - 0.7) / (1 + 0.7)


def plan(tcp_ecn: int) -> RunPlan:
    sender = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20, ecn=tcp_ecn)
    receiver = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)  # tcp_ecn 2: accepts
    return RunPlan(run_id=f"ecn{tcp_ecn}", backend="kernel", rep=0, seed=3, duration_s=DURATION_S, warmup_s=1.0,
                   sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=0.0, corruption=0.0,
                   buffer_bytes=BUFFER_BYTES, mtu_bytes=MTU, senders={"s1": sender}, receiver=receiver,
                   flows=(FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1"),),
                   aqm={"kind": "ce_threshold", "k_packets": K_PACKETS})


def test_the_margins_of_this_path_keep_a_marked_cubic_flow_inside_the_buffer():
    buffer_frames = BUFFER_BYTES / FRAME
    slow_start_window = 4 * (K_PACKETS + 1)
    assert slow_start_window < BDP_FRAMES < buffer_frames + 1
    assert 1.5 * (BDP_FRAMES + K_PACKETS + 1) - BDP_FRAMES < buffer_frames
    assert BDP_FRAMES / CUBIC_FRIENDLY_SEGMENTS_PER_RTT * RTT_S < DURATION_S - 1.0


@needs_root
def test_an_ecn_cubic_flow_is_marked_per_segment_reacts_and_loses_nothing(tmp_path):
    out = KernelBackend().run(plan(tcp_ecn=1), tmp_path)
    assert out.path.emulator == "linkem-nfqueue" and out.facts["bottleneck"] == "linkem"
    assert out.path.ce_marks > 0
    assert out.path.queue_drops == 0
    # Per segment: linkem saw no GSO packet and nothing above the MTU.
    linkem = out.facts["linkem"]
    assert linkem["gso_packets"] == 0 and linkem["max_packet_bytes"] <= MTU
    assert linkem["ce_unmarkable"] == 0
    # TCP_INFO: ECN negotiated, CE echoed (segments acked with ECE), cwnd
    # reduced without a single retransmission but spurious ones (a bad IP
    # checksum on a marked segment would have dropped it at the receiver,
    # and its retransmission would not be DSACKed).
    assert out.facts["ecn"][0]["streams"] == 1
    assert out.facts["ecn"][0]["delivered_ce"] > 0
    assert retransmissions.caused_by_the_path(out.facts) == 0, out.facts["streams_read_back"]
    # The echoed marks cut cwnd at least once (tcp_enter_cwr); CUBIC may
    # then grow to its largest window at the very end of the run, so look
    # for any decrease, not one after the peak.
    cwnd = out.series["cwnd_segments"]
    assert any(b < a for a, b in zip(cwnd, cwnd[1:], strict=False)), f"the sender never reduced cwnd: {cwnd}"
    # The marked flow kept going at the pace its window allows: a bulk flow
    # delivers cwnd segments per round trip, and a round trip here lasts at
    # most RTT + a full buffer's drain (BUFFER_BYTES / rate = RTT: 1 BDP).
    # How far CWR cuts hold cwnd below the BDP depends on when marks come
    # (bursts of ACKs and TSO can pass K before the pipe is full), so the
    # window, not the link rate, is the yardstick; 0.8 covers the 100 ms
    # sampling of cwnd.
    after_warmup = [c for t, c in zip(out.series["t_s"], cwnd, strict=True) if t >= 1.0]
    mean_cwnd = sum(after_warmup) / len(after_warmup)
    window_rate_bps = mean_cwnd * PAYLOAD_BYTES * 8 / (RTT_S + BUFFER_BYTES * 8 / RATE_BPS)
    goodput = total_goodput_bps(out.series, 1.0)
    assert goodput > 0.8 * window_rate_bps, (
        f"goodput {goodput / 1e6:.1f} Mbit/s, below 0.8 of the {window_rate_bps / 1e6:.1f} Mbit/s its mean cwnd "
        f"of {mean_cwnd:.0f} segments allows at the longest round trip; cwnd: {cwnd}")


@needs_root
def test_a_flow_without_ecn_is_never_marked_and_loses_to_overflow_instead(tmp_path):
    out = KernelBackend().run(plan(tcp_ecn=0), tmp_path)
    assert out.path.ce_marks == 0
    assert out.path.queue_drops > 0
    assert out.facts["ecn"][0] == {"streams": 0, "delivered_ce": 0}
    assert max(out.series["retrans_segments"]) > 0
