"""hosts.<name>.start_spread (docs/host-model.md): how far apart a sender's
application starts its streams, in the simulator."""


import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.sim import SimBackend
from spec_text import plans_for

# 96 small windows from 3 senders on a lossless 100 Mbit/s, 10 ms path with
# a 1-BDP buffer: their initial windows overflow the buffer together.
MANY = """
version = 1
[study]
name = "many"
backends = ["sim"]
duration = "12s"
warmup = "2s"
[path]
rate = "100Mbit"
rtt = "10ms"
buffer = "1bdp"
{hosts}
[[flows]]
cc = "cubic"
sender = "s1"
streams = 32
[[flows]]
cc = "cubic"
sender = "s2"
streams = 32
[[flows]]
cc = "cubic"
sender = "s3"
streams = 32
"""


def streams_never_acked(plan, tmp_path) -> int:
    series = SimBackend().run(plan, tmp_path).series
    delivered = {}
    for g, s, d in zip(series["flow_group"], series["stream"], series["delivered_bytes"], strict=True):
        delivered[(g, s)] = max(delivered.get((g, s), 0), d)
    return sum(1 for d in delivered.values() if d == 0)


def test_streams_started_in_step_time_out_in_step_and_a_spread_pulls_them_apart(tmp_path):
    # docs/fidelity.md, "Many flows": started within 1 ms (the default),
    # streams that lost their whole initial window retransmit in the same
    # millisecond every time and stay stuck; spread over 20 ms they do not.
    (in_step,) = plans_for(MANY.format(hosts=""), tmp_path)
    (spread,) = plans_for(MANY.format(hosts='[hosts.default]\nstart_spread = "20ms"'), tmp_path)
    assert spread.senders["s1"].start_spread_s == pytest.approx(0.02) and in_step.senders["s1"].start_spread_s is None
    stuck_in_step = streams_never_acked(in_step, tmp_path / "a")
    stuck_spread = streams_never_acked(spread, tmp_path / "b")
    assert stuck_in_step >= 10 and stuck_spread <= stuck_in_step // 3, (stuck_in_step, stuck_spread)


@pytest.mark.parametrize("value, message", [
    ('"11s"', "hosts.s1.start_spread: 11 s is above the maximum of 10 s"),
    ('"-1ms"', "hosts.s1.start_spread"),
])
def test_a_bad_start_spread_is_refused_naming_the_key(tmp_path, value, message):
    with pytest.raises(spec_mod.SpecError, match=message):
        plans_for(MANY.format(hosts=f"[hosts.s1]\nstart_spread = {value}\n"), tmp_path)
