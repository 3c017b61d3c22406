"""Bad RPC flow specs are rejected with messages naming the key."""

import textwrap

import pytest

from fatpipe import spec as spec_mod
from fatpipe.study import plan_runs

BASE = """
version = 1
[study]
name = "t"
duration = "10s"
[path]
rate = "100Mbit"
rtt = "40ms"
[[flows]]
cc = "cubic"
sender = "s1"
"""

RPC = """
[[flows]]
kind = "rpc"
cc = "cubic"
sender = "s2"
request = "100B"
response = "10KB"
"""


def problems(text, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(p)
    return dict(e.value.problems)


def load(text, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    return spec_mod.load(p)


@pytest.mark.parametrize("key", ["request", "response"])
def test_zero_sizes_are_rejected_naming_the_key(tmp_path, key):
    text = BASE + RPC.replace(f'{key} = "', f'{key} = "0B" #') + "concurrency = 1\n"
    p = problems(text, tmp_path)
    assert f"flows.1.{key}" in p
    assert "greater than 0" in p[f"flows.1.{key}"]


def test_zero_concurrency_is_rejected(tmp_path):
    p = problems(BASE + RPC + "concurrency = 0\n", tmp_path)
    assert "flows.1.concurrency" in p


@pytest.mark.parametrize("rate", ['"200"', '"200/min"', '"fast"'])
def test_rate_without_per_second_is_rejected(tmp_path, rate):
    p = problems(BASE + RPC + f"rate = {rate}\n", tmp_path)
    assert "flows.1.rate" in p
    assert "'200/s'" in p["flows.1.rate"]


@pytest.mark.parametrize("rate", ['"0/s"', "-5"])
def test_non_positive_rate_is_rejected(tmp_path, rate):
    p = problems(BASE + RPC + f"rate = {rate}\n", tmp_path)
    assert "flows.1.rate" in p


def test_both_concurrency_and_rate_is_rejected(tmp_path):
    p = problems(BASE + RPC + 'concurrency = 1\nrate = "5/s"\n', tmp_path)
    assert "exactly one of concurrency" in p["flows.1"]


def test_host_section_of_unknown_sender_is_rejected(tmp_path):
    p = problems(BASE + RPC + 'concurrency = 1\n[hosts.s7]\nextra_rtt = "20ms"\n', tmp_path)
    assert "hosts.s7 names no sender" in " ".join(p.values())


def test_bad_sender_name_is_rejected(tmp_path):
    p = problems(BASE + RPC.replace('"s2"', '"not a host"') + "concurrency = 1\n", tmp_path)
    assert "flows.1.sender" in p


def test_start_after_duration_is_rejected(tmp_path):
    p = problems(BASE + RPC + 'concurrency = 1\nstart = "12s"\n', tmp_path)
    assert any("flows.1.start" in m for m in p.values())


def test_good_rpc_spec_reaches_the_plan_with_si_units(tmp_path):
    spec, raw = load(BASE + RPC + 'rate = "50/s"\nstart = "1s"\n[hosts.s2]\nextra_rtt = "20ms"\n', tmp_path)
    (plan,) = plan_runs(spec, raw)
    f = plan.flows[1]
    assert (f.kind, f.request_bytes, f.response_bytes, f.rate_per_s, f.concurrency, f.start_s) == \
        ("rpc", 100, 10_000, 50.0, None, 1.0)
    assert plan.senders["s2"].extra_rtt_s == pytest.approx(0.020)
    assert plan.senders["s1"].extra_rtt_s == 0.0


def test_bundled_size_fairness_studies_sweep_every_flows_cca_together():
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "studies"
    for name, ccas, runs in (("netesto-size-fairness", {"cubic", "reno", "bbr", "htcp"}, 20),
                             ("netesto-size-fairness-10g", {"cubic", "reno", "bbr", "htcp"}, 4),
                             ("netesto-size-fairness-kernel", {"cubic", "reno", "bbr"}, 15)):
        spec, raw = spec_mod.load(root / f"{name}.toml")
        plans = plan_runs(spec, raw)
        assert len(plans) == runs
        for plan in plans:
            assert len({f.cc for f in plan.flows}) == 1  # one CCA per run, all nine flows
        assert {p.flows[0].cc for p in plans} == ccas
