"""`hosts.receiver.gro`: the receiver coalesces with GRO (the simulator's
tcp/receiver/gro.rs; on the kernel backend linkem's unit mode). Validation
naming the key, the run plan, and the kernel path's configuration."""

import textwrap
from pathlib import Path

import pytest

from fatpipe import spec as spec_mod
from fatpipe.linuxpath.config import QUEUE_DATA, QUEUE_DATA_SPLIT, gro_refusal, path_config
from fatpipe.linuxpath.flows import group_port
from fatpipe.linuxpath.linkem import QueueConfig, linkem_args
from fatpipe.study import plan_runs

BASE = """
version = 1
[study]
name = "gro"
duration = "1s"
[path]
rate = "1Gbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
{hosts}
"""


def _plans(tmp_path, hosts=""):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE.format(hosts=hosts)))
    spec, raw = spec_mod.load(p)
    return plan_runs(spec, raw)


def test_gro_is_off_unless_the_receiver_asks_for_it(tmp_path):
    (plan,) = _plans(tmp_path)
    assert plan.receiver.gro is False
    (plan,) = _plans(tmp_path, "[hosts.receiver]\ngro = true")
    assert plan.receiver.gro is True


def test_gro_that_is_not_a_boolean_is_refused_naming_the_key(tmp_path):
    with pytest.raises(spec_mod.SpecError) as e:
        _plans(tmp_path, '[hosts.receiver]\ngro = "yes"')
    assert any("hosts.receiver.gro" in k for k, _ in e.value.problems)


def test_the_kernel_backend_carries_tso_packets_as_units_for_a_gro_receiver(tmp_path):
    """A GRO receiver on the kernel backend is linkem's unit mode: the data
    queue names its split queue and each flow's segment payload by its
    receiver port (crates/linkem/src/units.rs)."""
    (plan,) = _plans(tmp_path, "[hosts.receiver]\ngro = true")
    cfg = path_config(plan)
    assert cfg.receiver_gro and cfg.mss_by_port == {group_port(0): 1448}, "MTU 1500 - 52 with timestamps"
    data = QueueConfig(QUEUE_DATA, "data", 0.01, 0.0, split_queue=QUEUE_DATA_SPLIT, mss_by_port=cfg.mss_by_port,
                       default_mss=1448)
    (spec,) = [a for a in linkem_args(Path("/bin/linkem"), [data], 1, Path("/tmp/s.json")) if a.startswith("num=")]
    assert spec.endswith(f",units_split={QUEUE_DATA_SPLIT},default_mss=1448,mss={group_port(0)}:1448")
    (plan,) = _plans(tmp_path)
    assert not path_config(plan).receiver_gro


def test_a_gro_receiver_needs_linkem_as_delay_line_and_bottleneck(tmp_path):
    (plan,) = _plans(tmp_path, "[hosts.receiver]\ngro = true")
    cfg = path_config(plan)
    assert gro_refusal(cfg, "linkem-nfqueue", "linkem") is None
    for emulator, bottleneck in (("netem", "tbf"), ("linkem-nfqueue", "tbf")):
        assert "hosts.receiver.gro = true needs fatpipe-linkem" in gro_refusal(cfg, emulator, bottleneck)
