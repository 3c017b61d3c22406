"""hosts.<name>.processing_jitter (docs/host-model.md): the hosts' per-packet
processing jitter, drawn from the run's seeded streams, makes repetitions of
a loss-free run differ as real ones do and keeps each reproducible per seed."""


import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.sim import SimBackend
from fatpipe.summary import summarize
from spec_text import plans_for

# A loss-free CUBIC/Reno mix from two senders, 1 Gbit/s, 10 ms, 1 BDP of
# drop-tail buffer, 3 s: two repetitions are two seeds.
MIX = """
version = 1
[study]
name = "jitter-mix"
backends = ["sim"]
duration = "3s"
warmup = "1s"
repetitions = 2
[path]
rate = "1Gbit"
rtt = "10ms"
buffer = "1bdp"
[hosts.default]
rmem_max = "64MiB"
wmem_max = "64MiB"
{hosts}
[[flows]]
cc = "cubic"
sender = "s1"
[[flows]]
cc = "reno"
sender = "s2"
"""


def cubic_share(plan, outcome) -> float:
    rows = {r["flow_group"]: r["goodput_bps"] for r in summarize(plan, outcome)}
    return rows[0] / (rows[0] + rows[1])


def test_with_processing_jitter_two_seeds_differ_and_one_seed_repeats(tmp_path):
    backend = SimBackend()
    ideal = plans_for(MIX.format(hosts=""), tmp_path)
    noisy = plans_for(MIX.format(hosts='processing_jitter = "20us"'), tmp_path)
    assert [p.seed for p in ideal] == [p.seed for p in noisy] and ideal[0].seed != ideal[1].seed
    assert noisy[0].receiver.processing_jitter_s == noisy[0].senders["s2"].processing_jitter_s == pytest.approx(20e-6)
    first = backend.run(noisy[0], tmp_path)
    assert backend.run(noisy[0], tmp_path).series == first.series, "one seed gave two results"
    shares = [cubic_share(noisy[0], first), cubic_share(noisy[1], backend.run(noisy[1], tmp_path))]
    assert abs(shares[0] - shares[1]) > 0.01, f"two seeds, CUBIC's shares {shares}"
    # The ideal host's repetitions differ only by the streams' start offsets
    # (below 1 ms), which this mix forgets: its shares agree to 0.1 %.
    ideal_shares = [cubic_share(p, backend.run(p, tmp_path)) for p in ideal]
    assert abs(ideal_shares[0] - ideal_shares[1]) < 0.001, ideal_shares


def test_processing_jitter_reaches_the_plan_of_every_host_it_is_set_for(tmp_path):
    hosts = '[hosts.receiver]\nprocessing_jitter = "50us"\n[hosts.s2]\nprocessing_jitter = 0\n'
    (plan, _) = plans_for(MIX.format(hosts=hosts), tmp_path)
    assert plan.receiver.processing_jitter_s == pytest.approx(50e-6)
    assert plan.senders["s1"].processing_jitter_s is None and plan.senders["s2"].processing_jitter_s is None


@pytest.mark.parametrize("value, message", [
    ('"20ms"', "hosts.s1.processing_jitter: 0.02 s is above the maximum of 0.01 s"),
    ('"fast"', "hosts.s1.processing_jitter: cannot read 'fast' as a time"),
    ("true", "hosts.s1.processing_jitter: expected a time like '20ms' or a number, got the boolean true"),
])
def test_a_bad_processing_jitter_is_refused_naming_the_key_and_the_range(tmp_path, value, message):
    hosts = f"[hosts.s1]\nprocessing_jitter = {value}\n"
    with pytest.raises(spec_mod.SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plans_for(MIX.format(hosts=hosts), tmp_path)


def test_processing_jitter_can_be_swept(tmp_path):
    text = MIX.format(hosts="") + '\n[sweep]\n"hosts.default.processing_jitter" = ["0us", "100us"]\n'
    plans = [p for p in plans_for(text, tmp_path) if p.rep == 0]
    assert [p.receiver.processing_jitter_s for p in plans] == [None, pytest.approx(100e-6)]
