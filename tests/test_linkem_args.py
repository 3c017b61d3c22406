"""linkem's command line as the kernel and hosts backends build it (pure),
and where the path's loss acts."""

from dataclasses import replace
from pathlib import Path

import pytest

from fatpipe import wire
from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.linuxpath.config import QUEUE_DATA, one_loss, one_loss_refusal, path_config
from fatpipe.linuxpath.flows import BASE_PORT
from fatpipe.linuxpath.linkem import (
    LINKEM_RT_PRIORITY,
    RT_PRIORITY,
    QueueConfig,
    linkem_args,
    linkem_group_loss,
    reverse_queues,
)


def test_linkem_runs_above_the_ack_napi_threads_real_time_priority():
    # At equal SCHED_FIFO priority a NAPI thread polling its ring held
    # linkem's threads off the CPU for milliseconds (delayline.py).
    args = linkem_args(Path("/bin/linkem"), [QueueConfig(0, "data", 0.01, 0.0)], 1, Path("/tmp/s.json"))
    prio = int(args[args.index("--rt-priority") + 1])
    assert prio == LINKEM_RT_PRIORITY > RT_PRIORITY


# -- where loss acts: sender → receiver, each flow group its own --------------
HOST = HostLimits(rmem_max_bytes=1 << 20, wmem_max_bytes=1 << 20)
LOSS, CORRUPTION = 1e-3, 1e-7


def two_group_plan(mss_bytes: tuple[int, int] = (1448, 8948), corruption: float = CORRUPTION) -> RunPlan:
    """A bulk group on s1 and an RPC group on s2 (which has an extra RTT, so
    a reverse queue of its own), MTU 9000."""
    flows = (FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=mss_bytes[0], sender="s1"),
             FlowPlan(group=1, kind="rpc", cc="cubic", streams=1, mss_bytes=mss_bytes[1], sender="s2",
                      request_bytes=20_000, response_bytes=100, concurrency=1))
    return RunPlan(run_id="loss", backend="kernel", rep=0, seed=1, duration_s=5.0, warmup_s=1.0,
                   sample_interval_s=0.1, rate_bps=1e8, rtt_s=0.02, loss=LOSS, corruption=corruption,
                   buffer_bytes=250_000, mtu_bytes=9000, senders={"s1": HOST, "s2": replace(HOST, extra_rtt_s=0.01)},
                   receiver=HOST, flows=flows)


def queue_specs(cfg) -> dict[str, str]:
    """name → --queue spec of the queues the backends build for `cfg`."""
    data = QueueConfig(QUEUE_DATA, "data", cfg.rtt_s / 2, group_loss=linkem_group_loss(cfg))
    reverse, _ = reverse_queues(cfg, cfg.senders)
    args = linkem_args(Path("/bin/linkem"), [data, *reverse], 1, Path("/tmp/s.json"))
    specs = [args[i + 1] for i, a in enumerate(args) if a == "--queue"]
    return {dict(kv.split("=", 1) for kv in s.split(","))["name"]: s for s in specs}


def test_each_flow_group_meets_its_own_loss_toward_the_receiver_as_in_the_simulator():
    cfg = path_config(two_group_plan())
    # The simulator's rule (SimConfig.group_loss): loss and corruption of each group's own MSS.
    expected = [wire.packet_loss_probability(LOSS, CORRUPTION, mss) for mss in (1448, 8948)]
    assert [g.loss for g in cfg.group_loss] == expected and expected[0] < expected[1]
    data = queue_specs(cfg)["data"]
    assert f",group_loss={BASE_PORT}:0:{expected[0]:.9g}/{BASE_PORT + 1}:1:{expected[1]:.9g}" in data
    assert "loss=0," in data, "the data segments of no flow group pass"


def test_the_receiver_to_sender_queues_carry_acks_and_requests_without_loss():
    specs = queue_specs(path_config(two_group_plan()))
    assert set(specs) == {"data", "ack", "ack-s2"}
    for name in ("ack", "ack-s2"):
        assert "loss=0," in specs[name] and "group_loss" not in specs[name], specs[name]


def test_a_lossless_path_gives_linkem_no_group_loss():
    cfg = path_config(replace(two_group_plan(), loss=0.0, corruption=0.0))
    assert linkem_group_loss(cfg) == {} and "group_loss" not in queue_specs(cfg)["data"]


def test_one_loss_for_all_groups_is_refused_naming_the_keys_when_the_groups_differ():
    cfg = path_config(two_group_plan())
    refused = one_loss_refusal(cfg.group_loss, "netem")
    assert refused is not None
    assert refused.startswith("path.corruption > 0 with flow groups of different MSS (flows.0.mss = 1448")
    assert "flows.1.mss = 8948" in refused and "netem applies one loss probability" in refused
    with pytest.raises(ValueError, match="flows.1.mss = 8948"):
        one_loss(cfg, "netem")
    # One MSS, or no corruption: one probability serves every group.
    same = path_config(two_group_plan(mss_bytes=(1448, 1448)))
    assert one_loss_refusal(same.group_loss, "netem") is None
    assert one_loss(same, "netem") == wire.packet_loss_probability(LOSS, CORRUPTION, 1448)
    plain = path_config(two_group_plan(corruption=0.0))
    assert one_loss(plain, "netem") == pytest.approx(LOSS, rel=1e-12)


def test_a_netem_path_for_groups_of_different_loss_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    from fatpipe.backends.kernel import path as kernel_path
    monkeypatch.setattr(kernel_path.Namespace, "create", lambda *_a, **_k: pytest.fail("a namespace was created"))
    cfg = replace(path_config(two_group_plan()), emulator="netem")
    with pytest.raises(ValueError, match=r"flows\.1\.mss = 8948.*netem applies one loss"):
        kernel_path.EmulatedPath(cfg, tmp_path).build()


# -- a path that moves: linkem applies the simulator's dynamics -----------------
def test_a_moving_path_gives_linkem_its_dynamics_the_base_path_and_each_queues_direction():
    import json

    from fatpipe.backends.base import PathDynamics, PathStep, Policer
    from fatpipe.linuxpath.linkem import dynamics_file, moving_queues

    dyn = PathDynamics(schedule=(PathStep(at_s=2.0, rate_bps=1e7),), policer=Policer(rate_bps=5e6, burst_bytes=30_000))
    plan = replace(two_group_plan(), dynamics=dyn)
    cfg = path_config(plan)
    written = json.loads(dynamics_file(cfg))
    assert written["dynamics"]["schedule"] == [{"at_s": 2.0, "rate_bps": 1e7, "rtt_s": None, "loss": None, "on": None}]
    assert written["dynamics"]["policer"] == {"rate_bps": 5e6, "burst_bytes": 30_000}
    # The simulator's inputs: base RTT, loss and corruption, each group's MSS by group index.
    assert (written["rtt_s"], written["loss"], written["corruption"]) == (plan.rtt_s, LOSS, CORRUPTION)
    assert written["group_mss_bytes"] == [1448, 8948]
    reverse, _ = reverse_queues(cfg, cfg.senders)
    queues = moving_queues([QueueConfig(QUEUE_DATA, "data", 0.01), *reverse])
    assert [q.moves for q in queues] == ["data", "ack:0", "ack:1"]
    args = linkem_args(Path("/bin/linkem"), queues, 1, Path("/tmp/s.json"), dynamics_path=Path("/tmp/d.json"),
                       origin_path=Path("/tmp/o"))
    assert args[args.index("--dynamics") + 1] == "/tmp/d.json" and args[args.index("--origin-file") + 1] == "/tmp/o"
    assert [a for a in args if a.startswith("num=")][1].endswith(",moves=ack:0")
    # A lossless path that moves still maps each group's port: a loss step
    # may start its losses later.
    lossless = path_config(replace(plan, loss=0.0, corruption=0.0))
    assert linkem_group_loss(lossless) == {BASE_PORT: (0, 0.0), BASE_PORT + 1: (1, 0.0)}
    assert linkem_group_loss(replace(lossless, dynamics=PathDynamics())) == {}
    static = linkem_args(Path("/bin/linkem"), [QueueConfig(QUEUE_DATA, "data", 0.01)], 1, Path("/tmp/s.json"))
    assert "--dynamics" not in static and not any("moves=" in a for a in static)
