"""Packet captures on the kernel backend: tcpdump in the namespaces writes
headers-only pcaps that a pcap reader opens, and a sim run and a kernel run
of the same small study, one seed, draw the same random losses (the delay
line applies the simulator's loss stage), so their sender captures show
the same loss events. Root: network namespaces."""

import os

import pytest

import fatpipe
from pcap_reading import data_flows, retransmissions, segments

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

LOSS = 2e-3
STUDY = f"""
version = 1
[study]
name = "captured"
duration = "4s"
backends = ["sim", "kernel"]
seed = 4
seeds = "per-repetition"
[path]
rate = "20Mbit"
rtt = "20ms"
loss = {LOSS}
buffer = "4bdp"
[hosts.receiver]
rmem_max = "200KB"   # a 2-BDP window: the 4-BDP buffer never overflows, every loss is the seeded one
[[flows]]
cc = "cubic"
[capture]
side = "both"
"""


def test_sim_and_kernel_captures_show_the_same_loss_events(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(STUDY)
    study = fatpipe.run(spec, out=tmp_path / "out", progress=None)
    runs = study.runs.set_index("backend")
    assert (runs["status"] == "ok").all(), runs["reason"].tolist()
    seen = {}
    for backend, run_id in runs["run_id"].items():
        files = {p.name: p for p in study.captures(run_id)}
        assert set(files) == {"capture-sender-s1.pcap", "capture-receiver.pcap"}, (backend, files)
        (flow,) = data_flows(segments(files["capture-sender-s1.pcap"])).values()
        seen[backend] = (retransmissions(flow), int(runs.loc[backend, "path_random_drops"]),
                         int(runs.loc[backend, "path_queue_drops"]), len(flow))
        if backend == "kernel":
            facts = study.run_facts(run_id)["captures"]
            assert all(f["dropped"] == 0 and not f["truncated"] for f in facts), facts
    print("retransmissions, random drops, queue drops, data packets:", seen)
    for backend, (retrans, drops, queue, _) in seen.items():
        assert queue == 0, (backend, seen)
        # Each seeded drop is retransmitted once; a tail loss probe may
        # resend one more segment.
        assert drops <= retrans <= drops + 2, (backend, seen)
    # One seed, one loss stage: the drops fall on the same packet indices,
    # so the counts differ only by the drops among the packets one backend
    # sent beyond the other (~p x the difference, < 1 here), and by a TLP.
    assert abs(seen["sim"][0] - seen["kernel"][0]) <= 2, seen
