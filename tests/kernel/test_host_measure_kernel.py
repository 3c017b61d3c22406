"""What a kernel run measures on its machine (root): per-core CPU over the
measured interval, per stream the CCA and MSS its socket reports, the
path's interfaces' offloads; and a stream whose socket runs another CCA
than the one asked for fails the run, naming it (docs/results.md,
"Measured on the hosts")."""

from __future__ import annotations

import dataclasses
import os

import pytest
from plans import bulk_plan

from fatpipe import wire
from fatpipe.backends.base import FlowPlan
from fatpipe.backends.kernel import KernelBackend, traffic
from fatpipe.linuxpath.procstat import STATES
from fatpipe.linuxpath.readback import OFFLOADS
from fatpipe.runcompute import compute_run
from fatpipe.summary import summarize

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 100e6, 0.020
# Two groups with different MSS, so the read-back MSS is seen to follow
# each group's spec rather than the path's MTU.
SMALL_MSS = 1000


def two_group_plan(run_id: str):
    plan = bulk_plan(run_id, cc="cubic", streams=2, rate_bps=RATE_BPS, rtt_s=RTT_S, duration_s=4.0, warmup_s=1.0)
    reno = FlowPlan(group=1, kind="bulk", cc="reno", streams=1, mss_bytes=SMALL_MSS, sender="s1")
    return dataclasses.replace(plan, flows=(*plan.flows, reno))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    plan = two_group_plan("measured")
    backend = KernelBackend()
    backend.check([plan])
    return plan, backend.run(plan, tmp_path_factory.mktemp("measured"))


def test_a_kernel_run_carries_per_core_cpu_of_this_machine(measured):
    plan, out = measured
    cpu = out.facts["cpu"]
    machine = cpu["machines"].get("local")
    assert machine is not None and "error" not in machine, f"no CPU figures: {cpu}"
    # Every namespace runs on this machine's cores: one set of figures for all.
    assert machine["roles"] == ["router", "receiver", "sender s1"]
    cores = machine["cores"]
    assert sorted(cores) == sorted(f"cpu{i}" for i in range(os.cpu_count())), f"cores measured: {sorted(cores)}"
    for name, shares in cores.items():
        # Shares of the ticks the core accounted: each in [0, 1], summing to 1
        # (up to the rounding to 1e-4 of each of the 8 states).
        assert all(0.0 <= shares[f"{s}_frac"] <= 1.0 for s in STATES), f"{name}: {shares}"
        assert sum(shares[f"{s}_frac"] for s in STATES) == pytest.approx(1.0, abs=8e-4), f"{name}: {shares}"
        assert shares["softirq_frac"] <= shares["busy_frac"] <= 1.0, f"{name}: {shares}"
    busiest = max(s["busy_frac"] for s in cores.values())
    # 100 Mbit/s for 3 s through the namespaces and linkem's user-space
    # delay line (or netem) cannot leave every core idle.
    assert busiest > 0, f"no core was busy during the measured interval: {cores}"
    assert out.cpu.busy_max_core_frac == pytest.approx(busiest, abs=1e-4)
    assert out.cpu.softirq_max_core_frac == pytest.approx(max(s["softirq_frac"] for s in cores.values()), abs=1e-4)
    flagged = all("cpu_bound" in row["flags"].split(",") for row in summarize(plan, out))
    assert flagged == cpu["cpu_bound"] == (busiest >= cpu["saturated_frac"]), f"flags vs facts: {cpu}"


def test_each_stream_reads_back_the_cca_and_mss_it_was_asked_for(measured):
    plan, out = measured
    got = {(s["flow_group"], s["stream"]): s for s in out.facts["streams_read_back"]}
    assert sorted(got) == [(0, 0), (0, 1), (1, 0)], f"streams read back: {out.facts['streams_read_back']}"
    for (group, stream), s in got.items():
        flow = plan.flows[group]
        assert s["ccas"] == [flow.cc], f"group {group} stream {stream}: asked {flow.cc}, read back {s['ccas']}"
        # The plan's mss_bytes is the payload (the spec's mss minus the
        # timestamp option); the engine sets TCP_MAXSEG = mss_bytes + 12
        # (wire.tcp_maxseg) and Linux takes the option's 12 bytes off again
        # (tcp_mtu_to_mss() subtracts tcp_header_len - sizeof(tcphdr)), so
        # tcpi_snd_mss (mss_cache) is mss_bytes exactly, unless the MTU
        # clamps it (MTU - 52). Were timestamps off, it would be 12 more.
        want = wire.linux_segment_payload(flow.mss_bytes, plan.mtu_bytes)
        assert s["snd_mss_bytes"] == want, f"group {group} stream {stream}: tcpi_snd_mss {s['snd_mss_bytes']}, " \
                                           f"spec MSS {flow.mss_bytes} on MTU {plan.mtu_bytes} gives {want}"


def test_the_paths_interfaces_offloads_are_what_the_backend_set(measured):
    _, out = measured
    offloads = out.facts["offloads"]
    assert {label: sorted(ifs) for label, ifs in offloads.items()} == {
        "receiver": ["eth0"], "router": ["rcv", "s0"], "sender s1": ["eth0"]}, offloads
    for label, ifs in offloads.items():
        for ifname, got in ifs.items():
            assert set(got) == set(OFFLOADS), f"{label} {ifname}: {got}"
    if out.facts["emulator"] == "netem":
        # netem must see MSS segments: TSO and GSO off on the sender (path.py _add_netem).
        assert not offloads["sender s1"]["eth0"]["tso"] and not offloads["sender s1"]["eth0"]["gso"], offloads
    else:
        # ACKs toward the sender through veth's NAPI ring need TSO off on the
        # router's end (netns.receive_in_rt_napi_thread), GRO on at the
        # sender's end while the RT NAPI thread is in use.
        assert offloads["router"]["s0"]["tso"] is False, offloads
        assert offloads["sender s1"]["eth0"]["gro"] is out.facts["ack_napi"]["s1"], (offloads, out.facts["ack_napi"])


def test_a_stream_running_another_cca_than_asked_fails_the_run_naming_it(tmp_path, monkeypatch):
    """The engine of group 0 is told "reno" while the backend asked for
    "cubic" (as a mis-registered CCA or a tool that sets its own would do):
    its sockets report reno, and the run fails naming each stream."""
    plan = bulk_plan("mismatch", cc="cubic", streams=2, rate_bps=RATE_BPS, rtt_s=RTT_S, duration_s=2.0,
                     warmup_s=0.5)
    real = traffic.sender_config

    def told_reno(*args, **kw):
        return {**real(*args, **kw), "cc": "reno"}

    monkeypatch.setattr(traffic, "sender_config", told_reno)
    result = compute_run(plan, tmp_path, KernelBackend())
    assert result.status == "failed", f"the run did not fail: {result.summary}"
    for stream in (0, 1):
        assert (f"flow group 0, stream {stream}: asked for CCA 'cubic', its socket reports 'reno' "
                "(TCP_CONGESTION)") in result.reason, result.reason
    assert result.reason.startswith("CcaMismatch: "), result.reason
