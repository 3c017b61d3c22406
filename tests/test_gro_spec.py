"""`hosts.receiver.gro`: the receiver coalesces with GRO (the simulator's
tcp/receiver/gro.rs). Validation naming the key, the run plan, and the
backends that cannot honour it refusing it by name."""

import textwrap

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.kernel import KernelBackend
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


def test_the_kernel_backend_refuses_a_gro_receiver_by_name(tmp_path):
    (plan,) = _plans(tmp_path, "[hosts.receiver]\ngro = true")
    with pytest.raises(BackendUnavailable, match=r"hosts\.receiver\.gro = true"):
        KernelBackend().check([plan])
