"""`fatpipe run --json-stream` on the kernel backend sends each sample while
its run goes on (the engine flushes each interval, linuxpath/tail.py reads
it), and what it sent is the run's stored series. Root: network namespaces."""

import json
import os
import subprocess
import sys
import time

import pandas as pd
import pytest

import fatpipe

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

DURATION_S = 4.0
STUDY = f"""
version = 1
[study]
name = "live"
duration = "{DURATION_S}s"
backends = ["kernel"]
[path]
rate = "20Mbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
streams = 2
"""


def test_kernel_samples_arrive_during_the_run_and_match_the_stored_series(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(STUDY)
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "fatpipe", "run", str(spec), "--out", str(out), "--json-stream",
                          "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    received = []  # (wall time it was read, event)
    for line in p.stdout:
        received.append((time.monotonic(), json.loads(line)))
    stderr = p.stderr.read()
    assert p.wait(timeout=120) == 0, stderr[-2000:]
    end_at = next(t for t, e in received if e["event"] == "run_end")
    one_s = next(t for t, e in received if e["event"] == "sample" and e["t_s"] >= 1.0)
    # The sample taken 1 s into the 4 s run was read while the run still had
    # ~3 s to go; 1.5 s allows for the tail's one-interval poll, the
    # engines' exit and the run's summary.
    assert end_at - one_s > 1.5, (end_at - one_s, stderr[-500:])
    sent = pd.DataFrame([e for _, e in received if e["event"] == "sample"])
    stored = fatpipe.load(out).series
    key = ["flow_group", "stream", "t_s"]
    assert len(sent) == len(stored) > 2 * DURATION_S / 0.1
    assert sent.sort_values(key)[[*key, "delivered_bytes", "cwnd_segments"]].values.tolist() == \
        stored.sort_values(key)[[*key, "delivered_bytes", "cwnd_segments"]].values.tolist()
