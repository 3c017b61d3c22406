"""Transfers on the kernel backend (docs/transfers.md): real Linux TCP moves
two data sets of a given size, the receiver's record gives their
completion times, and they match the simulator's run of the same plan
(same arrivals) within what slow start and the loss episodes at a
one-BDP buffer leave. Root: network namespaces."""

import os
from dataclasses import replace
from pathlib import Path

import pytest

from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan, TransferPlan
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from fatpipe.summary import summarize

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S, SIZE_BYTES, STREAMS = 50e6, 0.020, 4_000_000, 2
# Two data sets that do not overlap: each alone on the path.
STARTS_S = (0.0, 2.5)
# One retransmission timeout on this path: Linux's __tcp_set_rto() gives
# srtt + max(4 rttvar, TCP_RTO_MIN = 200 ms) (include/net/tcp.h,
# tcp_rtt_estimator()), the srtt at most 2 RTTs with a full 1-BDP buffer.
RTO_S = 2 * RTT_S + 0.200


def plan(backend: str, split: str) -> RunPlan:
    host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
    transfer = TransferPlan(size_bytes=SIZE_BYTES, split=split, chunk_bytes=500_000 if split == "chunks" else None,
                            tick_s=1e-3, starts_s=STARTS_S)
    return RunPlan(run_id=f"transfer-{backend}", backend=backend, rep=0, seed=5, duration_s=5.0, warmup_s=0.0,
                   sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=0.0, corruption=0.0,
                   buffer_bytes=int(RATE_BPS * RTT_S / 8), mtu_bytes=1500, senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="transfer", cc="cubic", streams=STREAMS, mss_bytes=1448,
                                   sender="s1", transfer=transfer),))


@pytest.mark.parametrize("split", ["equal", "chunks"])
def test_the_kernel_moves_each_data_set_and_times_it_as_the_simulator_does(tmp_path: Path, split):
    fct = {}
    for name, backend in (("sim", SimBackend()), ("kernel", KernelBackend())):
        p = plan(name, split)
        backend.check([p])
        out = backend.run(p, tmp_path / name)
        (row,) = summarize(p, out)
        assert (row["transfer_count"], row["transfer_done"]) == (2, 2), (name, out.transfers)
        assert list(out.transfers["start_s"]) == list(STARTS_S)
        fct[name] = list(out.transfers["duration_s"])
        # The streams' acked bytes (each data set's 2 streams) cover it.
        last = {}
        for s, b in zip(out.series["stream"], out.series["delivered_bytes"], strict=True):
            last[s] = b
        for k in range(len(STARTS_S)):
            got = sum(last[k * STREAMS + i] for i in range(STREAMS))
            assert got >= SIZE_BYTES, (name, k, got)
    print(f"{split}: completion sim {fct['sim']}, kernel {fct['kernel']} s")
    # The least a data set can take: its frames at the bottleneck rate
    # (1448 payload bytes per 1514-byte frame) plus a one-way delay.
    floor_s = SIZE_BYTES / 1448 * 1514 * 8 / RATE_BPS + RTT_S / 2
    for name, times in fct.items():
        # Slow start from IW 10 to the 86-segment BDP takes ~4 RTTs, and
        # CUBIC's exit at a one-BDP buffer costs a recovery of a few more:
        # well under 20 RTTs. A retransmission lost again at the tail of a
        # stream (nothing sent after it for RACK to notice) waits for an
        # RTO, and the kernel's drops at the full buffer are not the
        # seeded simulator's: seen once in a full test run (1.094 s against
        # 0.87 s in 8 runs, +0.22 s), so the kernel may take one RTO more.
        rto = RTO_S if name == "kernel" else 0.0
        assert all(floor_s < t < floor_s + 20 * RTT_S + rto for t in times), (name, times, floor_s)
    # Both run Linux's slow start and CUBIC on the same path. Measured: with
    # chunks the kernel took 8-9 % (3 RTTs) longer than the simulator in
    # every run, so 15 % (~6 RTTs of a ~0.7 s completion) holds it. An
    # equal split ends with its slowest stream: on the kernel the two
    # streams share the path unevenly after slow start's losses (cwnd ~55
    # and ~90), so the slower one finishes alone, below the BDP: 22-24 %
    # (8-9 RTTs) longer in every run seen; 30 % allows two RTTs more.
    margin = 0.15 if split == "chunks" else 0.30
    for s, k in zip(fct["sim"], fct["kernel"], strict=True):
        assert s * (1 - margin) <= k <= s * (1 + margin) + RTO_S, (fct, split)


def test_a_data_set_still_moving_at_the_end_is_not_counted(tmp_path: Path):
    p = replace(plan("kernel", "equal"), duration_s=1.0)
    p = replace(p, flows=(replace(p.flows[0], transfer=replace(p.flows[0].transfer, size_bytes=50_000_000,
                                                               starts_s=(0.0,))),))
    backend = KernelBackend()
    backend.check([p])
    out = backend.run(p, tmp_path)
    (row,) = summarize(p, out)
    assert (row["transfer_count"], row["transfer_done"]) == (1, 0), out.transfers
    assert "transfer_incomplete" in row["flags"]
