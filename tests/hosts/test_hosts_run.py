"""Studies on the hosts backend, over the lab's real sshd (sshlab.py): the
same study on `hosts` and on `kernel` gives the same tables and goodput
within 10 % per grid point, and nothing of a run stays on any host."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import fatpipe
from conftest import RUN_HOSTS, write_testbed
from fatpipe.backends.base import RPC_COLUMNS, SERIES_COLUMNS
from fatpipe.backends.hosts import layout

# The emulator's interface is the one toward the receiver (remote_path.py).
AGREEMENT = 0.10  # the bound: goodput per grid point within 10 %
# What the physics fixes, so that a 6 s run can be compared: the bulk flow
# fills the link, and the RPCs arrive open loop (Poisson, 50/s, seeded: the
# same arrivals on both backends), so their goodput is what was offered as
# long as they are not lost. The buffer is 2 BDP: BBR's inflight cap of
# 2 BDP then never overflows it (with 1 BDP it does, the RPCs lose packets
# and stall behind RTOs: 6.0 to 8.7 Mbit/s from run to run, whichever
# backend); CUBIC keeps the link full without loss. With random loss the
# bulk flow is BBR, which holds the link full up to a few % of loss: CUBIC
# sees 0 or 1 drop in a 6 s run under 1e-5 (81-87 Mbit/s) and about 15
# under 1e-3 (goodput ~ 1/sqrt(drops): ±13 %). Measured spread of this
# test: at most 1.8 % between the backends over three runs.


STUDY = """version = 1
[study]
name = "{name}"
backends = ["hosts"]
duration = "{duration}"
warmup = "1s"
interval = "100ms"
repetitions = 1
seed = 3
[path]
rate = "100Mbit"
rtt = "20ms"
buffer = "2bdp"
[hosts.default]
rmem_max = "8MiB"
wmem_max = "8MiB"
[[flows]]
cc = "cubic"
sender = "s1"
[[flows]]
kind = "rpc"
cc = "cubic"
sender = "s1"
request = "1KB"
response = "20KB"
rate = 50
[[sweep.linked]]
"path.loss" = {losses}
"flows.0.cc" = {ccs}
"""


def write_study(path: Path, name: str, duration: str = "6s", losses: str = "[0.0, 1e-4]",
                ccs: str = '["cubic", "bbr"]') -> Path:
    path.write_text(STUDY.format(name=name, duration=duration, losses=losses, ccs=ccs))
    return path


def leftovers_on_hosts(lab) -> list[str]:
    """Run directories of fatpipe in /tmp (every lab host shares this
    machine's file system) and processes started from one."""
    import glob

    import sshlab
    left = [f"run directory {d}" for d in glob.glob(f"{layout.REMOTE_ROOT}/{layout.RUN_DIR_PREFIX}*")]
    left += [f"process {pid}" for pid in sshlab.processes_mentioning(f"{layout.REMOTE_ROOT}/{layout.RUN_DIR_PREFIX}")]
    for role, ns in lab.namespaces.items():
        rules = sshlab.cmd.run(ns.exec_args(["iptables-legacy", "-w", "-S", "FORWARD"]), check=False)
        left += [f"{role}: iptables {line}" for line in rules.splitlines() if "NFQUEUE" in line]
        qdiscs = sshlab.cmd.run(ns.exec_args(["tc", "qdisc", "show"]), check=False)
        left += [f"{role}: {line}" for line in qdiscs.splitlines() if "tbf" in line or "netem" in line]
    return left


@pytest.fixture
def testbed(lab, tmp_path):
    return write_testbed(lab, tmp_path / "testbed.toml", RUN_HOSTS)


def test_hosts_and_kernel_agree_on_goodput_and_columns(lab, testbed, tmp_path):
    study = write_study(tmp_path / "study.toml", "hosts-vs-kernel")
    hosts = fatpipe.run(study, backend="hosts", out=tmp_path / "hosts", testbed=testbed, progress=None)
    kernel = fatpipe.run(study, backend="kernel", out=tmp_path / "kernel", progress=None)
    assert leftovers_on_hosts(lab) == []
    h, k = hosts.runs, kernel.runs
    assert list(h.columns) == list(k.columns)
    assert (h["status"] == "ok").all(), h[["run_id", "status", "reason"]].to_string()
    assert (k["status"] == "ok").all(), k[["run_id", "status", "reason"]].to_string()
    series_h, series_k = hosts.read_series(), kernel.read_series()
    assert [c for c in series_h.columns if c in SERIES_COLUMNS] == [c for c in series_k.columns if c in SERIES_COLUMNS]
    assert list(hosts.rpcs.columns) == list(kernel.rpcs.columns)
    assert set(RPC_COLUMNS) <= set(hosts.rpcs.columns) and len(hosts.rpcs) > 0
    both = pd.merge(h, k, on=["path.loss", "flows.0.cc", "flow_group"], suffixes=("_h", "_k"))
    assert len(both) == 4
    table = both[["path.loss", "flows.0.cc", "flow_group", "kind_h", "goodput_bps_h", "goodput_bps_k"]].to_string()
    print("\nhosts vs kernel goodput:\n" + table)
    for _, row in both.iterrows():
        diff = abs(row["goodput_bps_h"] - row["goodput_bps_k"]) / row["goodput_bps_k"]
        assert diff <= AGREEMENT, f"goodput differs by {diff:.1%} (> {AGREEMENT:.0%}):\n{table}"
    # The hosts' clocks were measured and the run recorded how well.
    assert h["path_clock_uncertainty_s"].notna().all() and (h["path_clock_uncertainty_s"] < 0.01).all()
    assert k["path_clock_uncertainty_s"].isna().all()


def real_path_study(path: Path) -> Path:
    """The study with no path keys: the path is what it is."""
    text = write_study(path, "real-path", duration="3s", losses="[0.0]", ccs='["cubic"]').read_text()
    head, tail = text.split("[path]\n", 1)
    tail = tail.split("[hosts.default]", 1)[1]
    path.write_text(head + "[hosts.default]" + tail.split("[[sweep.linked]]", 1)[0])
    return path


def test_without_an_emulator_the_path_is_what_it_is(lab, tmp_path):
    hosts = {k: v for k, v in RUN_HOSTS.items() if v["role"] != "emulator"}
    testbed = write_testbed(lab, tmp_path / "testbed.toml", hosts)
    study = real_path_study(tmp_path / "study.toml")
    assert "[path]" not in study.read_text() and "rate =" in study.read_text()  # only the RPC flow's rate
    done = fatpipe.run(study, backend="hosts", out=tmp_path / "out", testbed=testbed, progress=None)
    runs = done.runs
    assert list(runs["status"].unique()) == ["ok"], runs["reason"].to_string()
    assert runs["path_emulator"].iloc[0].startswith("none")
    assert runs["rate_bps"].isna().all() and runs["rtt_s"].isna().all()
    # What the run measured: nothing delays the lab's veth path, and its veth carried the bulk flow
    # far above the 100 Mbit/s the emulated studies use.
    assert runs["path_min_rtt_s"].iloc[0] < 0.005
    assert runs["goodput_bps"].iloc[0] > 200e6
    assert leftovers_on_hosts(lab) == []


def test_an_emulator_needs_the_path_and_other_backends_need_it_always(testbed, tmp_path):
    from fatpipe.backends.base import BackendUnavailable
    from fatpipe.spec import SpecError
    study = real_path_study(tmp_path / "study.toml")
    with pytest.raises(BackendUnavailable, match="path.rate and path.rtt are needed: testbed host gamma is the "
                                                 "emulator"):
        fatpipe.run(study, backend="hosts", out=tmp_path / "out", testbed=testbed, progress=None)
    for backend in ("sim", "kernel"):
        with pytest.raises(SpecError, match=f"path.rate: missing: backend '{backend}' emulates the path"):
            fatpipe.run(study, backend=backend, out=tmp_path / "out", progress=None)
    assert not (tmp_path / "out").exists()


def test_hosts_capture_packets_with_tcpdump_through_their_agents(lab, testbed, tmp_path):
    from pcap_reading import data_flows, segments
    text = write_study(tmp_path / "study.toml", "captured", duration="3s", losses="[0.0]", ccs='["cubic"]')
    text.write_text(text.read_text() + '[capture]\nside = "both"\nflows = [0]\n')
    done = fatpipe.run(text, backend="hosts", out=tmp_path / "out", testbed=testbed, progress=None)
    runs = done.runs
    assert list(runs["status"].unique()) == ["ok"], runs["reason"].to_string()
    run_id = runs["run_id"].iloc[0]
    files = {p.name: p for p in done.captures(run_id)}
    assert set(files) == {"capture-sender-s1.pcap", "capture-receiver.pcap"}, files
    for name, path in files.items():
        flows = data_flows(segments(path))
        assert len(flows) == 1, (name, list(flows))  # flow 0's connection only (the RPC port is filtered out)
        (flow,) = flows.values()
        # 3 s at ~95 Mbit/s: tens of MB of payload seen, in thousands of packets.
        assert sum(s.payload_bytes for s in flow) > 10e6, name
    facts = done.run_facts(run_id)["captures"]
    assert all(f["dropped"] == 0 and f["t0_wall_s"] > 0 for f in facts), facts
    assert leftovers_on_hosts(lab) == []


def test_hosts_samples_stream_live_with_json_stream(lab, testbed, tmp_path):
    import json
    import subprocess
    import sys
    import time
    study = write_study(tmp_path / "study.toml", "live", duration="4s", losses="[0.0]", ccs='["cubic"]')
    p = subprocess.Popen([sys.executable, "-m", "fatpipe", "run", str(study), "--backend", "hosts", "--testbed",
                          str(testbed), "--out", str(tmp_path / "out"), "--json-stream", "--no-report"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    received = [(time.monotonic(), json.loads(line)) for line in p.stdout]
    stderr = p.stderr.read()
    assert p.wait(timeout=120) == 0, stderr[-2000:]
    end_at = next(t for t, e in received if e["event"] == "run_end")
    one_s = next(t for t, e in received if e["event"] == "sample" and e["t_s"] >= 1.0)
    # Read through the agents each interval: the sample 1 s into the 4 s run
    # arrived while ~3 s of it remained (1.5 s for the polls and the run's end).
    assert end_at - one_s > 1.5, (end_at - one_s, stderr[-500:])
    stored = fatpipe.load(tmp_path / "out").series
    assert sum(e["event"] == "sample" for _, e in received) == len(stored)
    assert leftovers_on_hosts(lab) == []


def test_a_transfer_completes_on_the_hosts_as_on_the_kernel(lab, testbed, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(name="transfer", duration="4s", losses="[0.0]", ccs='["cubic"]')
                     .split("[[flows]]", 1)[0] + '[[flows]]\nkind = "transfer"\ncc = "cubic"\nsender = "s1"\n'
                     'streams = 2\nsize = "10MB"\nsplit = "chunks"\nchunk = "1MB"\n')
    hosts = fatpipe.run(study, backend="hosts", out=tmp_path / "hosts", testbed=testbed, progress=None)
    kernel = fatpipe.run(study, backend="kernel", out=tmp_path / "kernel", progress=None)
    fct = {}
    for name, done in (("hosts", hosts), ("kernel", kernel)):
        assert list(done.runs["status"].unique()) == ["ok"], done.runs["reason"].to_string()
        assert (done.runs["transfer_done"] == 1).all(), done.runs.to_string()
        fct[name] = float(done.transfers["duration_s"].iloc[0])
    print("completion time:", fct)
    # 10 MB over 100 Mbit/s: 0.83 s of frames at the bottleneck; slow start
    # to the 2-BDP window a few RTTs more. Both backends run the same Linux
    # TCP over the same emulator code: within 15 % (about 6 RTTs).
    assert all(0.83 < t < 0.83 + 0.5 for t in fct.values()), fct
    assert fct["hosts"] == pytest.approx(fct["kernel"], rel=0.15), fct
    assert leftovers_on_hosts(lab) == []
