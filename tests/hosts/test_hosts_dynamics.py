"""A path that moves on the hosts backend (the lab's real sshd,
sshlab.py): the emulator host's fatpipe-linkem applies the simulator's
dynamics and cross traffic from the run's origin on its own clock
(docs/path-dynamics.md)."""

from __future__ import annotations

import numpy as np

import fatpipe
from conftest import RUN_HOSTS, run_one, write_testbed
from fatpipe.results import StudyStore

RATE_BPS = 50e6
PAYLOAD = 1448 / 1514  # goodput per bit on the wire (1514-byte frames)

STUDY = f"""version = 1
[study]
name = "moving"
backends = ["hosts"]
duration = "6s"
warmup = "1s"
interval = "250ms"
seed = 3
[path]
rate = "{int(RATE_BPS / 1e6)}Mbit"
rtt = "20ms"
policer = "40Mbit/30KB"
[[path.schedule]]
at = "3s"
rate = "0.2x"
[hosts.default]
rmem_max = "8MiB"
wmem_max = "8MiB"
[[flows]]
cc = "cubic"
sender = "s1"
"""


def test_a_rate_step_and_a_policer_act_on_the_emulator_host(lab, tmp_path):
    row, _ = run_one(lab, tmp_path, RUN_HOSTS, STUDY)
    assert row["path_emulator"] == "linkem-nfqueue", row["path_emulator"]
    series = StudyStore(tmp_path / "out").load().series
    t, b = series["t_s"].to_numpy(), series["delivered_bytes"].to_numpy(dtype=float)

    def goodput(t0: float, t1: float) -> float:
        i0, i1 = int(np.argmin(abs(t - t0))), int(np.argmin(abs(t - t1)))
        return (b[i1] - b[i0]) * 8 / (t[i1] - t[i0])

    before, after = goodput(1.5, 3.0), goodput(4.0, 6.0)
    seen = f"before the step {before / 1e6:.2f} Mbit/s, after {after / 1e6:.2f}, " \
           f"policer drops {row['path_policer_drops']}"
    # Before: the policer's 40 Mbit/s (below the link's 50) bounds it, with
    # its 30 KB burst; after: the link's 10 Mbit/s does. Each window may
    # also count bytes that crossed before it and were held out of order
    # (SACKed) until a hole filled: at most a window of data, the BDP plus
    # the buffer at 50 Mbit/s (2 x 125 KB).
    held_bits = 2 * RATE_BPS * 0.020
    assert 0.6 * 40e6 * PAYLOAD < before < (40e6 + 30_000 * 8 / 1.5) * PAYLOAD * 1.01 + held_bits / 1.5, seen
    assert 0.8 * 10e6 * PAYLOAD < after < 10e6 * PAYLOAD * 1.01 + held_bits / 2.0, seen
    assert row["path_policer_drops"] > 0, seen


CROSS_STUDY = STUDY.replace('policer = "40Mbit/30KB"\n[[path.schedule]]\nat = "3s"\nrate = "0.2x"\n', "") \
    .replace('duration = "6s"', 'duration = "8s"').replace('warmup = "1s"', 'warmup = "2s"') + """
[[flows]]
kind = "cross"
rate = "20Mbit"
"""


def test_cross_traffic_shares_the_emulator_hosts_bottleneck(lab, tmp_path):
    # 20 Mbit/s of constant cross traffic (1500-byte packets) beside one
    # CUBIC flow on 50 Mbit/s: linkem on the emulator offers the cross
    # packets to its bottleneck; the TCP flow gets the rest.
    testbed = write_testbed(lab, tmp_path / "testbed.toml", RUN_HOSTS)
    (tmp_path / "study.toml").write_text(CROSS_STUDY)
    runs = fatpipe.run(tmp_path / "study.toml", backend="hosts", out=tmp_path / "out", testbed=testbed,
                       progress=None).runs
    assert list(runs["status"]) == ["ok", "ok"], "\n".join(runs["reason"])
    tcp, cross = (runs[runs["flow_group"] == g].iloc[0] for g in (0, 1))
    seen = f"TCP {tcp['goodput_bps'] / 1e6:.2f} Mbit/s, cross {cross['goodput_bps'] / 1e6:.2f} Mbit/s"
    assert cross["kind"] == "cross" and tcp["path_emulator"] == "linkem-nfqueue", seen
    assert 0.85 * 30e6 * PAYLOAD < tcp["goodput_bps"] < 1.03 * 30e6 * PAYLOAD, seen
    assert 0.95 * 20e6 * 1500 / 1514 < cross["goodput_bps"] <= 1.001 * 20e6 * 1500 / 1514, seen


STATIC_STUDY = STUDY.replace('policer = "40Mbit/30KB"\n[[path.schedule]]\nat = "3s"\nrate = "0.2x"\n', "")
APP_STUDY = STATIC_STUDY + """app_rate = "10Mbit"
[[flows.app]]
at = "3s"
pause = "1s"
[[flows.app]]
at = "4s"
rate = "20Mbit"
"""


def test_an_application_limited_sender_writes_at_its_rates_on_the_sending_host(lab, tmp_path):
    # The sending host's engine writes 10 Mbit/s, nothing from 3 to 4 s,
    # then 20 Mbit/s, its steps timed from the run's origin on its own
    # clock; the 50 Mbit/s path never limits it.
    run_one(lab, tmp_path, RUN_HOSTS, APP_STUDY)
    series = StudyStore(tmp_path / "out").load().series
    t, b = series["t_s"].to_numpy(), series["delivered_bytes"].to_numpy(dtype=float)
    i = {s: int(np.argmin(abs(t - s))) for s in (1.0, 3.0, 3.25, 3.75, 4.75, 6.0)}
    seen = {f"{t[i0]:.2f}-{t[i1]:.2f} s": b[i1] - b[i0] for i0, i1 in
            ((i[1.0], i[3.0]), (i[3.25], i[3.75]), (i[4.75], i[6.0]))}
    # Bytes acknowledged in a window are the writes of as long a window,
    # give or take two 1 ms ticks and 20 ms of a thread's lateness per edge
    # (as tests/kernel/test_app_limited_kernel.py).
    for (t0, t1), rate in (((1.0, 3.0), 10e6), ((4.75, 6.0), 20e6)):
        got, want = b[i[t1]] - b[i[t0]], rate / 8 * (t[i[t1]] - t[i[t0]])
        assert abs(got - want) <= rate / 8 * 2 * 0.022 + 1448, seen
    assert b[i[3.75]] == b[i[3.25]], seen
