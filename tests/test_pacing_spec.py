"""A flow's `pacing_rate` (each stream's SO_MAX_PACING_RATE): parsed with
units, refused on cross traffic naming the key, carried to the plan and
the runs table, the lower of it and the host's stream_rate_cap on the
kernel path and in the simulator (pure parts; real runs:
tests/kernel/test_pacing_readback.py)."""

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.flows import flow_specs
from fatpipe.summary import summarize
from spec_text import plans_for

STUDY = """
version = 1
[study]
name = "paced"
duration = "3s"
warmup = "1s"
[path]
rate = "100Mbit"
rtt = "20ms"
buffer = "1bdp"
[hosts.s1]
stream_rate_cap = "{cap}"
[[flows]]
cc = "cubic"
streams = 2
pacing_rate = "{rate}"
[[flows]]
cc = "cubic"
"""


def test_pacing_rate_reaches_the_plan_and_the_lower_cap_wins(tmp_path):
    (plan,) = plans_for(STUDY.format(cap="20Mbit", rate="15Mbit"), tmp_path)
    assert plan.flows[0].pacing_rate_bps == 15e6 and plan.flows[1].pacing_rate_bps is None
    assert plan.stream_pacing_cap_bps(plan.flows[0]) == 15e6
    assert plan.stream_pacing_cap_bps(plan.flows[1]) == 20e6  # the host's cap alone
    (plan,) = plans_for(STUDY.format(cap="10Mbit", rate="15Mbit"), tmp_path)
    assert [f.stream_rate_cap_bps for f in flow_specs(plan)] == [10e6, 10e6]


def test_the_simulator_paces_each_stream_and_the_runs_table_says_so(tmp_path):
    (plan,) = plans_for(STUDY.format(cap="1Gbit", rate="15Mbit"), tmp_path)
    out = SimBackend().run(plan, tmp_path)
    rows = summarize(plan, out)
    assert [r["pacing_rate_bps"] for r in rows[:2]] == [15e6, None]
    # Two paced streams after the warm-up: 2 x 15 Mbit/s of payload.
    assert rows[0]["goodput_bps"] == pytest.approx(30e6, rel=0.02)


def test_a_stream_faster_than_its_pacing_rate_is_flagged(tmp_path):
    (held,) = plans_for(STUDY.format(cap="1Gbit", rate="15Mbit"), tmp_path)
    out = SimBackend().run(held, tmp_path)
    assert "pacing_exceeded" not in summarize(held, out)[0]["flags"]
    # The same samples judged against a plan that asked for 10 Mbit/s: the
    # streams ran at 15, so the pacing did not hold.
    (asked,) = plans_for(STUDY.format(cap="1Gbit", rate="10Mbit"), tmp_path)
    rows = summarize(asked, out)
    assert "pacing_exceeded" in rows[0]["flags"] and "pacing_exceeded" not in rows[1]["flags"]


def test_pacing_rate_on_cross_traffic_is_refused_naming_the_key(tmp_path):
    text = STUDY.format(cap="1Gbit", rate="15Mbit") + """
[[flows]]
kind = "cross"
rate = "10Mbit"
pacing_rate = "5Mbit"
"""
    with pytest.raises(spec_mod.SpecError, match=r"flows\.2.*pacing_rate"):
        plans_for(text, tmp_path)
