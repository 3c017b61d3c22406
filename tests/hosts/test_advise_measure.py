"""`fatpipe advise --testbed`: the path of the lab (s1 → emu → rx over real
sshd) measured with the hosts backend, the lab's emulator namespace holding
a known path (fatpipe-linkem: 50 Mbit/s, 20 ms, 0.5 % data loss) that the
advice is not told about."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import write_testbed
from fatpipe import cli
from fatpipe.advisor.measure import MEASURED_PATH_FILE
from fatpipe.backends.kernel.cleanup import stop_process
from fatpipe.linuxpath.cmd import expect_line
from fatpipe.linuxpath.linkem import QueueConfig, find_linkem, linkem_args
from fatpipe.units import format_rate

RATE_BPS = 50e6
RTT_S = 0.02
LOSS = 5e-3
HOSTS = {
    "alpha": {"ssh": "lab-s1", "address": "198.19.1.1", "interface": "eth0", "role": "s1"},
    "beta": {"ssh": "lab-rx", "address": "198.19.2.1", "interface": "eth0", "role": "receiver"},
}
RULES = [["-o", "to-rx", "-p", "tcp", "-j", "NFQUEUE", "--queue-num", "0"],
         ["-i", "to-rx", "-p", "tcp", "-j", "NFQUEUE", "--queue-num", "1"]]


@pytest.fixture
def known_path(lab, tmp_path):
    """linkem in the emulator namespace: data toward rx delayed RTT/2, lost
    with LOSS, through a RATE_BPS bottleneck of one BDP; ACKs delayed RTT/2."""
    binary = find_linkem()
    if binary is None:
        pytest.skip("fatpipe-linkem is not built (cargo build --release -p fatpipe-linkem)")
    emu = lab.namespaces["emu"]
    queues = [QueueConfig(0, "data", RTT_S / 2, LOSS, RATE_BPS, int(RATE_BPS * RTT_S / 8)),
              QueueConfig(1, "ack", RTT_S / 2, 0.0)]
    proc = emu.popen(linkem_args(binary, queues, 7, tmp_path / "linkem.json", parent_pid=os.getpid()),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    added = []
    try:
        expect_line(proc, "ready", "fatpipe-linkem", stop=stop_process)
        for rule in RULES:
            emu.run("iptables-legacy", "-w", "-A", "FORWARD", *rule)
            added.append(rule)
        yield
    finally:
        for rule in added:
            emu.run("iptables-legacy", "-w", "-D", "FORWARD", *rule, check=False)
        stop_process(proc)


@pytest.mark.usefixtures("known_path")
def test_measured_path_matches_the_emulated_one_within_its_uncertainty(lab, tmp_path, capsys):
    testbed = write_testbed(lab, tmp_path / "testbed.toml", HOSTS)
    code = cli.main(["advise", "--testbed", str(testbed), "--out", str(tmp_path / "advice"), "--ccas", "cubic,bbr",
                     "--max-streams", "2", "--budget", "5s", "--measure-duration", "4s", "--measure-reps", "2"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert (tmp_path / "advice" / "advice.html").exists()
    m = json.loads((tmp_path / "advice" / "measure" / MEASURED_PATH_FILE).read_text())
    seen = f"{m}\n{printed}"
    assert m["probe"] == {"duration_s": 4.0, "warmup_s": 4.0 / 3, "reps": 2}, seen
    assert "probe-rate, 2 runs of 4 s" in printed, seen
    assert 0.85 * RATE_BPS <= m["rate_bps"] <= 1.1 * RATE_BPS, seen
    # linkem releases each held packet up to half its release quantum early
    # (default_batch_ns: 1 % of the shortest one-way delay), so the round
    # trip can read up to 0.5 % under RTT_S.
    assert RTT_S * 0.995 <= m["min_rtt_s"] <= RTT_S * 1.15, seen
    assert m["loss_ci"][0] <= LOSS * 1.5 and m["loss_ci"][1] >= LOSS / 1.5, seen
    # The advice ran on what was measured: its request's rate is the probe's.
    assert f"advise: {format_rate(m['rate_bps'])}," in printed, seen
