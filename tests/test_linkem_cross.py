"""Cross traffic on the kernel and hosts backends (pure): linkem's
--dynamics file carries the plan's cross flows, no process is started for
them, and their series rows and the bottleneck's counters come from
linkem's statistics as the simulator writes them."""

import json
from dataclasses import replace
from pathlib import Path

from fatpipe.backends.base import CrossFlow, FlowPlan, HostLimits, RunPlan
from fatpipe.linuxpath.config import QUEUE_DATA, path_config
from fatpipe.linuxpath.flows import flow_specs
from fatpipe.linuxpath.linkem import (
    QueueConfig,
    cross_rows,
    dynamics_file,
    linkem_args,
    moving_queues,
    reverse_queues,
    summarize,
)
from fatpipe.schema import SERIES_COLUMNS

HOST = HostLimits(rmem_max_bytes=1 << 20, wmem_max_bytes=1 << 20)
CROSS = CrossFlow(rate_bps=2e7, pattern="on_off", on_s=0.01, off_s=0.03, shape=1.8, packet_bytes=1200, stop_s=8.0)


def cross_plan() -> RunPlan:
    """A CUBIC flow and a cross group of two sources starting at 1 s."""
    flows = (FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1"),
             FlowPlan(group=1, kind="cross", cc="", streams=2, mss_bytes=0, sender="", start_s=1.0, cross=CROSS))
    return RunPlan(run_id="r", backend="kernel", rep=0, seed=3, duration_s=10.0, warmup_s=2.0,
                   sample_interval_s=0.1, rate_bps=5e7, rtt_s=0.02, loss=0.0, corruption=0.0,
                   buffer_bytes=125_000, mtu_bytes=1500, senders={"s1": HOST}, receiver=HOST, flows=flows)


def test_the_dynamics_file_carries_the_cross_flows_as_the_plan_writes_them():
    plan = cross_plan()
    cfg = path_config(plan)
    assert cfg.moves and cfg.moving_keys == ['flows.1.kind = "cross"']
    written = json.loads(dynamics_file(cfg))
    (flow,) = written["cross_flows"]
    # The plan's own field names: linkem reads them with the simulator's plan
    # structs and its reader of a cross flow (scenario::cross_flow).
    assert flow["group"] == 1 and flow["kind"] == "cross" and flow["streams"] == 2 and flow["start_s"] == 1.0
    assert flow["cross"] == {"rate_bps": 2e7, "pattern": "on_off", "on_s": 0.01, "off_s": 0.03, "shape": 1.8,
                             "packet_bytes": 1200, "stop_s": 8.0}
    assert (written["mtu_bytes"], written["sample_interval_s"], written["duration_s"]) == (1500, 0.1, 10.0)
    # Group indices as the simulator's: the cross group's MSS is 0.
    assert written["group_mss_bytes"] == [1448, 0]
    # Without cross traffic the file is what it was.
    static = json.loads(dynamics_file(path_config(replace(plan, flows=plan.flows[:1]))))
    assert "cross_flows" not in static and not path_config(replace(plan, flows=plan.flows[:1])).moves


def test_a_cross_flow_takes_linkem_with_its_dynamics_and_starts_no_process():
    plan = cross_plan()
    cfg = path_config(plan)
    assert [f.group for f in flow_specs(plan)] == [0]
    assert set(cfg.mss_by_port) == {next(iter(cfg.mss_by_port))}, "no receiver port for the cross group"
    reverse, _ = reverse_queues(cfg, cfg.senders)
    queues = moving_queues([QueueConfig(QUEUE_DATA, "data", 0.01, rate_bps=5e7, buffer_bytes=125_000), *reverse])
    args = linkem_args(Path("/bin/linkem"), queues, plan.seed, Path("/tmp/s.json"), dynamics_path=Path("/tmp/d.json"),
                       origin_path=Path("/tmp/o"))
    data = [a for a in args if a.startswith("num=")][0]
    assert data.endswith(",moves=data") and "rate_bps=50000000" in data
    assert args[args.index("--seed") + 1] == "3"


STATS = {"queues": [
    {"name": "data", "queue_drops": 7, "bottleneck_bytes": 1_000_000, "data_packets": 0, "dropped": 0, "packets": 0,
     "late_p50_s": 0.0, "late_p99_s": 0.0, "late_max_s": 0.0, "max_packet_bytes": 0, "gso_packets": 0,
     "cross": {"groups": [{"group": 1, "delivered_bytes": 24_000, "frame_bytes": 24_280, "drops": 5}],
               "series": [[1.1, 1, 0, 6000], [1.1, 1, 1, 4800], [1.2, 1, 0, 12000], [1.2, 1, 1, 12000]]}},
    {"name": "ack", "queue_drops": 0, "bottleneck_bytes": 0, "data_packets": 0, "dropped": 0, "packets": 0,
     "late_p50_s": 0.0, "late_p99_s": 0.0, "late_max_s": 0.0, "max_packet_bytes": 0, "gso_packets": 0}]}


def test_cross_rows_are_the_simulators_rows_from_linkems_series():
    rows = cross_rows(STATS)
    assert len(rows) == 4 and all(set(r) == set(SERIES_COLUMNS) for r in rows)
    assert [(r["flow_group"], r["stream"], r["t_s"], r["delivered_bytes"]) for r in rows] == \
        [(1, 0, 1.1, 6000), (1, 1, 1.1, 4800), (1, 0, 1.2, 12000), (1, 1, 1.2, 12000)]
    # No TCP state: every other column 0 or empty, as the simulator's cross rows.
    assert all(r["cwnd_segments"] == 0 and r["srtt_s"] == 0.0 and r["ca_state"] == "" and r["cc_mode"] == ""
               for r in rows)
    assert cross_rows({"queues": [{"name": "data"}]}) == [] and cross_rows({}) == []


def test_the_bottleneck_counters_count_cross_traffic_with_the_flows():
    s = summarize(STATS)
    assert s["queue_drops"] == 7 + 5 and s["bottleneck_bytes"] == 1_000_000 + 24_280
    assert s["cross"] == {"1": {"delivered_bytes": 24_000, "drops": 5}}
