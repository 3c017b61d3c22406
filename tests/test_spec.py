import textwrap

import pytest

from fatpipe import spec as spec_mod
from fatpipe.study import plan_runs

GOOD = """
version = 1
[study]
name = "t"
duration = "10s"
warmup = "2s"
repetitions = 2
[path]
rate = "1Gbit"
rtt = "20ms"
loss = 1e-4
buffer = "1bdp"
[hosts.default]
rmem_max = "6MiB"
[hosts.s2]
wmem_max = "1MB"
extra_rtt = "10ms"
[[flows]]
cc = "cubic"
streams = 2
[[flows]]
cc = "bbr"
sender = "s2"
mss = 1000
[sweep]
"path.loss" = [0.0, 1e-3]
"flows.0.cc" = ["reno", "cubic"]
"""


def load(text, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    return spec_mod.load(p)


def problems(text, tmp_path):
    with pytest.raises(spec_mod.SpecError) as e:
        load(text, tmp_path)
    return dict(e.value.problems)


def test_good_spec_expands_to_sweep_times_repetitions(tmp_path):
    spec, raw = load(GOOD, tmp_path)
    plans = plan_runs(spec, raw)
    assert len(plans) == 2 * 2 * 2
    assert len({p.run_id for p in plans}) == len(plans)
    assert {p.swept["flows.0.cc"] for p in plans} == {"reno", "cubic"}
    p = plans[0]
    assert p.buffer_bytes == 2_500_000  # 1 BDP of 1 Gbit/s x 20 ms
    assert p.flows[0].mss_bytes == 1448  # mtu 1500 - 40 - 12 (timestamps), as Linux
    assert p.flows[1].mss_bytes == 988
    assert p.senders["s1"].rmem_max_bytes == 6291456
    assert p.senders["s2"].wmem_max_bytes == 1_000_000
    assert p.senders["s2"].extra_rtt_s == pytest.approx(0.01)
    assert p.senders["s1"].wmem_max_bytes == spec_mod.LINUX_WMEM_MAX_BYTES


def test_seeds_are_shared_across_backends_and_differ_across_reps(tmp_path):
    spec, raw = load(GOOD, tmp_path)
    plans = plan_runs(spec, raw, ["sim", "kernel"])
    by = {(p.backend, p.swept["path.loss"], p.swept["flows.0.cc"], p.rep): p.seed for p in plans}
    assert by[("sim", 0.0, "reno", 0)] == by[("kernel", 0.0, "reno", 0)]
    assert by[("sim", 0.0, "reno", 0)] != by[("sim", 0.0, "reno", 1)]


def test_per_repetition_seeds_give_every_point_the_same_seed_per_repetition(tmp_path):
    spec, raw = load(GOOD.replace("repetitions = 2", 'repetitions = 2\nseeds = "per-repetition"'), tmp_path)
    plans = plan_runs(spec, raw)
    by_rep = {r: {p.seed for p in plans if p.rep == r} for r in (0, 1)}
    assert len(by_rep[0]) == 1 and len(by_rep[1]) == 1 and by_rep[0] != by_rep[1]
    per_run = plan_runs(*load(GOOD, tmp_path))
    assert len({p.seed for p in per_run if p.rep == 0}) == 4


def test_seeds_names_what_is_allowed(tmp_path):
    p = problems(GOOD.replace("repetitions = 2", 'repetitions = 2\nseeds = "shared"'), tmp_path)
    assert "per-run" in p["study.seeds"] and "per-repetition" in p["study.seeds"]


def test_unknown_key_is_named_with_its_path(tmp_path):
    p = problems(GOOD.replace('rtt = "20ms"', 'rtt = "20ms"\ncolour = 1'), tmp_path)
    assert p["path.colour"] == "unknown key"


def test_bad_unit_names_key_and_examples(tmp_path):
    p = problems(GOOD.replace('"1Gbit"', '"1Gbt"'), tmp_path)
    assert "path.rate" in p and "e.g." in p["path.rate"]


def test_warmup_must_be_shorter_than_duration(tmp_path):
    p = problems(GOOD.replace('warmup = "2s"', 'warmup = "10s"'), tmp_path)
    assert "warmup" in p["study"]


def test_mss_must_fit_the_mtu(tmp_path):
    p = problems(GOOD.replace("mss = 1000", "mss = 8960"), tmp_path)
    assert any("mss" in m and "mtu" in m for m in p.values())


def test_sweep_of_missing_flow_is_rejected(tmp_path):
    p = problems(GOOD + '"flows.7.cc" = ["bbr"]\n', tmp_path)
    assert "no such flow" in p['sweep."flows.7.cc"']


def test_sweep_values_are_validated_before_running(tmp_path):
    p = problems(GOOD.replace('"path.loss" = [0.0, 1e-3]', '"path.loss" = [0.0, 2.0]'), tmp_path)
    assert any(k.startswith('sweep."path.loss"[1]') for k in p)


def test_hosts_section_must_name_a_sender(tmp_path):
    p = problems(GOOD.replace("[hosts.s2]", "[hosts.s9]"), tmp_path)
    assert any("s9" in m for m in p.values())


def test_rpc_flow_needs_sizes_and_one_of_concurrency_or_rate(tmp_path):
    base = GOOD.split("[sweep]")[0]
    p = problems(base + '[[flows]]\nkind = "rpc"\ncc = "cubic"\nrequest = "100B"\n', tmp_path)
    assert "request and response" in p["flows.2"]
    p = problems(base + '[[flows]]\nkind = "rpc"\ncc = "cubic"\nrequest = "100B"\nresponse = "1MB"\n', tmp_path)
    assert "exactly one of concurrency" in p["flows.2"]
    p = problems(base + '[[flows]]\ncc = "cubic"\nconcurrency = 2\n', tmp_path)
    assert "only apply" in p["flows.2"]


def test_unsupported_version_is_rejected(tmp_path):
    p = problems(GOOD.replace("version = 1", "version = 7"), tmp_path)
    assert "version" in p


def test_buffer_forms(tmp_path):
    for text, expected in (('"0.5bdp"', 1_250_000), ('"100pkts"', 150_000), ('"1.5MB"', 1_500_000)):
        spec, raw = load(GOOD.replace('"1bdp"', text), tmp_path)
        assert spec.buffer_bytes() == expected


def test_path_keys_left_out_mean_the_real_path_and_nothing_else_can_be_applied(tmp_path):
    import re
    bare = re.sub(r"\[path\]\n(?:[a-z]+ = [^\n]*\n)*", "", GOOD).replace('"path.loss" = [0.0, 1e-3]\n', "")
    assert "[path]" not in bare and "path.loss" not in bare
    s, _ = load(bare, tmp_path)
    assert s.path_unset() == ["path.rate", "path.rtt"] and s.buffer_bytes() is None
    # Without rate and rtt there is no emulated path to put a buffer, loss or AQM on.
    p = problems(bare.replace("[hosts.default]", '[path]\nloss = 0.01\nbuffer = "1MB"\n[hosts.default]'), tmp_path)
    assert "path.rtt are left out" in p["path.loss"] and "path.buffer" in p
