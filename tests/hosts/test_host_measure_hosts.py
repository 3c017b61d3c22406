"""What a hosts run measures on its machines, over the lab's real sshd
(sshlab.py): per host its cores' CPU over the measured interval (read
through SSH), per stream the CCA and MSS its socket reports, each host's
test interface's offloads; the runs table's CPU columns come from the end
hosts (docs/results.md, "Measured on the hosts")."""

from __future__ import annotations

import os

import pytest

from conftest import RUN_HOSTS, run_one
from fatpipe import wire
from fatpipe.linuxpath.procstat import STATES
from fatpipe.linuxpath.readback import OFFLOADS

# The emulator's interface is the one toward the receiver (remote_path.py).

STUDY = """version = 1
[study]
name = "measured"
backends = ["hosts"]
duration = "3s"
warmup = "1s"
interval = "100ms"
repetitions = 1
seed = 3
[path]
rate = "100Mbit"
rtt = "20ms"
buffer = "1bdp"
[hosts.default]
rmem_max = "8MiB"
wmem_max = "8MiB"
[[flows]]
cc = "cubic"
streams = 2
mss = 1200
sender = "s1"
"""


@pytest.fixture
def measured(lab, tmp_path):
    return run_one(lab, tmp_path, RUN_HOSTS, STUDY)


def test_a_hosts_run_carries_each_hosts_cores_and_the_end_hosts_figures(measured):
    row, facts = measured
    machines = facts["cpu"]["machines"]
    assert {name: m["roles"] for name, m in machines.items()} == {
        "alpha": ["s1"], "beta": ["receiver"], "gamma": ["emulator"]}, machines
    for name, m in machines.items():
        assert "error" not in m, f"{name}: {m}"
        # The lab's hosts are namespaces of this machine: its cores.
        assert sorted(m["cores"]) == sorted(f"cpu{i}" for i in range(os.cpu_count())), f"{name}: {m['cores']}"
        for core, shares in m["cores"].items():
            assert all(0.0 <= shares[f"{s}_frac"] <= 1.0 for s in STATES), f"{name} {core}: {shares}"
            assert sum(shares[f"{s}_frac"] for s in STATES) == pytest.approx(1.0, abs=8e-4), f"{name} {core}"
    # The runs table's figures are the end hosts' (sender and receiver), not the emulator's.
    assert row["cpu_busy_max_core_frac"] == pytest.approx(
        max(machines[h]["busy_max_core_frac"] for h in ("alpha", "beta")), abs=1e-9), machines
    assert row["cpu_softirq_max_core_frac"] == pytest.approx(
        max(machines[h]["softirq_max_core_frac"] for h in ("alpha", "beta")), abs=1e-9), machines
    assert ("cpu_bound" in str(row["flags"]).split(",")) == facts["cpu"]["cpu_bound"], (row["flags"], facts["cpu"])


def test_a_hosts_run_reads_back_each_streams_cca_and_mss_and_the_interfaces_offloads(measured):
    row, facts = measured
    streams = facts["streams_read_back"]
    assert [(s["flow_group"], s["stream"]) for s in streams] == [(0, 0), (0, 1)], streams
    # The spec's mss = 1200 is the MSS option (TCP_MAXSEG); the timestamp
    # option takes 12 bytes of it (tcp_mtu_to_mss), so a full segment
    # carries 1188 bytes: the runs table's mss_bytes, and tcpi_snd_mss
    # (mss_cache) of every socket. Were timestamps off, it would read 1200.
    assert row["mss_bytes"] == 1200 - wire.TIMESTAMP_OPTION_BYTES
    for s in streams:
        assert s["ccas"] == ["cubic"], s
        want = wire.linux_segment_payload(row["mss_bytes"], row["mtu_bytes"])
        assert s["snd_mss_bytes"] == want, f"tcpi_snd_mss {s['snd_mss_bytes']}, expected {want}: {s}"
    assert facts["ccas_seen"] == {"0": ["cubic"]}
    offloads = facts["offloads"]
    assert {name: sorted(ifs) for name, ifs in offloads.items()} == {
        name: [h["interface"]] for name, h in RUN_HOSTS.items()}, offloads
    for name, ifs in offloads.items():
        for ifname, got in ifs.items():
            assert set(got) == set(OFFLOADS), f"{name} {ifname}: {got}"
