"""hosts.<name>.qdisc = "fq" on the hosts backend (the lab's real sshd,
sshlab.py): no end host's root qdisc is changed; the sender's sockets are
paced by TCP itself (SO_MAX_PACING_RATE, read back as tcpi_max_pacing_rate)
and the run's facts say so (docs/host-model.md, "qdisc")."""

from __future__ import annotations

from conftest import RUN_HOSTS, run_one

RATE_BPS = 100e6

STUDY = f"""version = 1
[study]
name = "paced"
backends = ["hosts"]
duration = "2s"
warmup = "500ms"
interval = "100ms"
repetitions = 1
seed = 3
[path]
rate = "{int(RATE_BPS / 1e6)}Mbit"
rtt = "20ms"
buffer = "1bdp"
[hosts.default]
rmem_max = "8MiB"
wmem_max = "8MiB"
[hosts.s1]
qdisc = "fq"
[[flows]]
cc = "cubic"
streams = 2
sender = "s1"
"""


def test_fq_asked_paces_the_senders_sockets_and_leaves_its_qdisc(lab, tmp_path):
    s1 = lab.namespaces["s1"]
    before = s1.run("tc", "qdisc", "show", "dev", "eth0")
    _, facts = run_one(lab, tmp_path, RUN_HOSTS, STUDY)
    assert facts["qdisc"] == {"s1": {"asked": "fq",
                                     "applied": "internal pacing (the host's root qdisc is left as it is)"}}
    streams = facts["streams_read_back"]
    assert len(streams) == 2, streams
    # Paced, never capped: the max pacing rate is far above the path's.
    assert all(s["max_pacing_rate_bps"] is not None and s["max_pacing_rate_bps"] > 1e3 * RATE_BPS
               for s in streams), streams
    assert s1.run("tc", "qdisc", "show", "dev", "eth0") == before
