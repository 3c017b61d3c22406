"""RPC flows and per-sender extra RTT on the kernel backend.

Pure functions are tested on constructed input; the real runs (root only)
use a 100 Mbit/s, 40 ms path and check behaviour, never timing of the host."""

import json
import os
import random
from dataclasses import replace
from pathlib import Path

import pytest

from fatpipe.backends.base import RPC_COLUMNS, FlowPlan, HostLimits, RunPlan
from fatpipe.backends.kernel.path import nfqueue_rules
from fatpipe.linuxpath.config import HostConfig, PathConfig, path_config, reverse_delays
from fatpipe.linuxpath.flows import FlowSpec, client_config, parse_rpcs, receiver_config, rows_to_rpcs, server_config
from fatpipe.linuxpath.rpc_engine import newly_done, poisson_gap_s, stream_rng

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 100e6, 0.040
HOST = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)


# -- pure -------------------------------------------------------------------
def test_newly_done_counts_whole_units_in_order():
    # Responses of 10,000 B arriving in arbitrary read sizes.
    assert newly_done(9_999, 0, 10_000) == 0
    assert newly_done(10_000, 0, 10_000) == 1
    assert newly_done(25_000, 1, 10_000) == 1  # the second is done, the third not yet
    assert newly_done(30_000, 2, 10_000) == 1
    assert newly_done(30_000, 3, 10_000) == 0
    assert newly_done(5, 3, 100) == 0  # never negative


def test_poisson_gaps_have_the_configured_mean_and_are_seeded():
    rng = random.Random(1)
    gaps = [poisson_gap_s(rng, 50.0) for _ in range(20_000)]
    # Mean 1/rate within 5 standard errors (sd of an exponential = its mean).
    assert abs(sum(gaps) / len(gaps) - 0.02) < 5 * 0.02 / len(gaps) ** 0.5
    a = [poisson_gap_s(stream_rng(7, 1, 0), 5.0) for _ in range(1)]
    assert a == [poisson_gap_s(stream_rng(7, 1, 0), 5.0)]
    assert stream_rng(7, 1, 0).random() != stream_rng(7, 1, 1).random()


CLIENT_OUTPUT = """{"stream": 0, "start_s": 0.0012, "duration_s": 0.0413}
{"stream": 1, "start_s": 0.0013, "duration_s": 0.0421}

{"stream": 0, "start_s": 0.0425, "duration_s": 0.0409}
"""


def test_parse_rpcs_gives_rpc_columns():
    rows = parse_rpcs(CLIENT_OUTPUT, group=3, response_bytes=10_000)
    assert len(rows) == 3
    assert all(set(r) == set(RPC_COLUMNS) for r in rows)
    assert rows[2] == {"flow_group": 3, "stream": 0, "start_s": 0.0425, "duration_s": 0.0409,
                       "response_bytes": 10_000}
    cols = rows_to_rpcs(rows)
    assert list(cols) == list(RPC_COLUMNS)
    assert cols["stream"] == [0, 0, 1] and cols["start_s"] == [0.0012, 0.0425, 0.0013]


def test_engine_configs_route_rpc_groups_to_server_and_client():
    bulk = FlowSpec(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1")
    rpc = FlowSpec(group=1, kind="rpc", cc="bbr", streams=2, mss_bytes=1448, sender="s2", start_s=1.0,
                   request_bytes=100, response_bytes=10_000, rate_per_s=20.0)
    rx = receiver_config("198.19.0.1", [bulk, rpc], 99.0)
    assert [g["group"] for g in rx["groups"]] == [0]  # RPC groups listen on the sender side
    assert rx["groups"][0]["cc"] == "cubic"  # the listener runs the flow's CCA (engine.run_receiver)
    srv = server_config(rpc, "198.18.2.1", 10.0, 5.0, 0.1, Path("/tmp/s"))
    assert (srv["addr"], srv["port"], srv["cc"], srv["mss_bytes"], srv["response_bytes"]) == \
        ("198.18.2.1", 5202, "bbr", 1448, 10_000)
    cli = client_config(rpc, "198.18.2.1", 3, 10.0, 5.0, Path("/tmp/r"))
    assert (cli["dst"], cli["rate_per_s"], cli["concurrency"], cli["start_s"], cli["seed"]) == \
        ("198.18.2.1", 20.0, None, 1.0, 3)


def test_extra_rtt_gets_its_own_reverse_queue_and_delay():
    cfg = PathConfig(rate_bps=RATE_BPS, rtt_s=RTT_S, group_loss=(), buffer_bytes=500_000, mtu_bytes=1500,
                     senders={"s1": HostConfig(1, 1), "s2": HostConfig(1, 1, 0.020), "s3": HostConfig(1, 1, 0.005)},
                     receiver=HostConfig(1, 1, 0.001))
    shared, own = reverse_delays(cfg)
    # As the sim: RTT/2 + receiver extra (+ sender extra) on the reverse path.
    assert shared == pytest.approx(0.021)
    assert own == {"s2": pytest.approx(0.041), "s3": pytest.approx(0.026)}
    rules = nfqueue_rules("iptables-legacy", {"198.18.2.1": 3, "198.18.3.1": 4})
    nums = [r[r.index("--queue-num") + 1] for r in rules]
    assert nums == ["0", "3", "4", "1"]  # per-sender rules precede the shared ACK rule
    assert rules[1][rules[1].index("-d") + 1] == "198.18.2.1/32"


def test_path_config_carries_extra_rtt():
    plan = rpc_plan()
    plan = replace(plan, senders={"s1": HOST, "s2": replace(HOST, extra_rtt_s=0.02)})
    cfg = path_config(plan)
    assert cfg.senders["s2"].extra_rtt_s == 0.02 and cfg.senders["s1"].extra_rtt_s == 0.0


# -- real runs ----------------------------------------------------------------
def rpc_plan(duration_s: float = 4.0, **rpc) -> RunPlan:
    rpc = rpc or {"concurrency": 1}
    flows = (FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1"),
             FlowPlan(group=1, kind="rpc", cc="cubic", streams=1, mss_bytes=1448, sender="s2",
                      request_bytes=100, response_bytes=10_000, **rpc))
    return RunPlan(run_id="rpc", backend="kernel", rep=0, seed=5, duration_s=duration_s, warmup_s=0.5,
                   sample_interval_s=0.1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=0.0, corruption=0.0,
                   buffer_bytes=int(RATE_BPS * RTT_S / 8), mtu_bytes=1500, senders={"s1": HOST, "s2": HOST},
                   receiver=HOST, flows=flows)


def group_rows(columns: dict, group: int) -> list[dict]:
    rows = [dict(zip(columns, vals, strict=True)) for vals in zip(*columns.values(), strict=True)]
    return [r for r in rows if r["flow_group"] == group]


@needs_root
def test_closed_loop_rpcs_complete_beside_a_bulk_flow(tmp_path):
    from fatpipe.backends.kernel import KernelBackend
    out = KernelBackend().run(rpc_plan(), tmp_path)
    rpcs = group_rows(out.rpcs, 1)
    assert len(rpcs) >= 10
    # Every RPC takes at least one round trip (request out, response back).
    assert min(r["duration_s"] for r in rpcs) >= RTT_S * 0.98
    assert all(r["response_bytes"] == 10_000 and r["stream"] == 0 for r in rpcs)
    # Closed loop, one in flight: the next starts when the previous ended.
    rpcs.sort(key=lambda r: r["start_s"])
    for a, b in zip(rpcs, rpcs[1:], strict=False):
        assert b["start_s"] >= a["start_s"] + a["duration_s"] - 1e-3
    # The server side of the RPC flow is sampled like a bulk flow.
    # delivered_bytes counts bytes the server saw acknowledged; the ACK of the
    # last response may still be in flight (half an RTT) at the final sample.
    series = group_rows(out.series, 1)
    assert series and max(r["delivered_bytes"] for r in series) >= 10_000 * (len(rpcs) - 1)
    assert group_rows(out.series, 0)


@needs_root
def test_open_loop_arrivals_follow_the_rate(tmp_path):
    from fatpipe.backends.kernel import KernelBackend
    rate, duration = 20.0, 5.0
    plan = rpc_plan(duration, rate_per_s=rate)
    plan = replace(plan, flows=(replace(plan.flows[1], group=0, start_s=0.5),))  # RPCs alone: all complete
    out = KernelBackend().run(plan, tmp_path)
    rpcs = group_rows(out.rpcs, 0)
    expected = rate * (duration - 0.5)
    # Poisson count: within 4 standard deviations (sqrt of the mean), less
    # the few still in flight at the end.
    assert abs(len(rpcs) - expected) < 4 * expected ** 0.5 + 2
    assert min(r["start_s"] for r in rpcs) >= 0.5  # the flow's start is respected


@needs_root
def test_extra_rtt_adds_to_the_min_rtt_of_that_sender(tmp_path):
    from fatpipe.backends.kernel import KernelBackend
    plan = rpc_plan(3.0)
    plan = replace(plan, senders={"s1": HOST, "s2": replace(HOST, extra_rtt_s=0.020)},
                   flows=(plan.flows[0], replace(plan.flows[0], group=1, sender="s2")))
    out = KernelBackend().run(plan, tmp_path)
    base = min(r["min_rtt_s"] for r in group_rows(out.series, 0) if r["min_rtt_s"] > 0)
    extra = min(r["min_rtt_s"] for r in group_rows(out.series, 1) if r["min_rtt_s"] > 0)
    assert base == pytest.approx(RTT_S, abs=2e-3)
    assert extra == pytest.approx(RTT_S + 0.020, abs=2e-3)


@needs_root
def test_loss_spares_the_requests_on_their_way_to_the_server(tmp_path):
    """path.loss acts where the bottleneck sits (sender → receiver): RPC
    responses meet it, requests (receiver → sender) do not. Requests of
    14 segments and 1-segment responses make the request direction carry
    most of the RPC data segments."""
    from fatpipe.backends.kernel import KernelBackend
    loss = 0.01
    plan = rpc_plan(4.0, concurrency=4)
    rpc = replace(plan.flows[1], group=0, sender="s1", request_bytes=20_000, response_bytes=100)
    plan = replace(plan, loss=loss, senders={"s1": HOST}, flows=(rpc,))
    out = KernelBackend().run(plan, tmp_path)
    if out.path.emulator != "linkem-nfqueue":
        pytest.skip(f"the path is emulated by {out.path.emulator}; linkem's per-queue counts are what this reads")
    queues = {q["name"]: q for q in json.loads((tmp_path / "linkem-stats.json").read_text())["queues"]}
    requests, responses = queues["ack"]["data_packets"], queues["data"]["data_packets"]
    seen = (f"{len(out.rpcs['stream'])} RPCs; request segments {requests}, dropped {queues['ack']['dropped']}; "
            f"response segments {responses}, dropped {queues['data']['dropped']}")
    # The test has teeth: were loss applied to requests too, all of them
    # would pass with probability (1 - loss)^requests, under 1e-3 here
    # (≥ 700 segments: ≥ 50 RPCs of 14 segments in 3.5 s at 4 in flight).
    assert (1 - loss) ** requests < 1e-3, seen
    assert queues["ack"]["dropped"] == 0, seen
    # The responses' direction does lose (its count is small, so only the
    # stage's probability is checked: linkem drew for every data segment).
    assert responses > 0 and out.path.random_drops == queues["data"]["dropped"], seen
