"""iperf3 over the kernel backend's emulated path, imported with `fatpipe
import iperf3`, compared with the simulator on the same path (needs root;
about 6 s of traffic and a few seconds of simulation)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.kernel.iperf import iperf3_json_output
from fatpipe.backends.kernel.path import EmulatedPath
from fatpipe.cli import main
from fatpipe.compare import compare_points
from fatpipe.linuxpath.config import path_config
from fatpipe.results import StudyStore
from fatpipe.study import plan_runs

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
    pytest.mark.skipif(not Path("/usr/bin/iperf3").exists(), reason="iperf3 not installed"),
]

STUDY = """
version = 1
[study]
name = "iperf3-vs-sim"
backends = ["sim"]
duration = "6s"
warmup = "1s"
repetitions = 2
interval = "1s"
[path]
rate = "100Mbit"
rtt = "20ms"
loss = 1e-4
[[flows]]
cc = "cubic"
streams = 2
"""


def test_iperf3_over_the_kernel_path_imports_and_compares_with_the_simulator(tmp_path, capsys):
    study = tmp_path / "sim.toml"
    study.write_text(textwrap.dedent(STUDY))
    spec, raw = spec_mod.load(study)
    cfg = path_config(plan_runs(spec, raw, ["kernel"])[0])
    captured = []
    for rep in range(2):
        work = tmp_path / f"work{rep}"
        work.mkdir()
        with EmulatedPath(cfg, work) as p:
            out = iperf3_json_output(p, "s1", duration_s=5, streams=2, cc="cubic",
                                     mss_bytes=1448, omit_s=1)  # payload; -M gets TCP_MAXSEG 1460
            p.finish()
        f = tmp_path / f"cubic-{rep}.json"
        f.write_text(out)
        captured.append(str(f))
    assert main(["import", "iperf3", *captured, "--path", "rate=100Mbit,rtt=20ms,loss=1e-4",
                 "--out", str(tmp_path / "imported")]) == 0
    assert main(["run", str(study), "--out", str(tmp_path / "sim"), "--no-report"]) == 0
    assert main(["compare", str(tmp_path / "imported"), str(tmp_path / "sim")]) == 0
    assert "comparison:" in capsys.readouterr().out
    imported = StudyStore(tmp_path / "imported").runs_table()
    assert (imported["status"] == "ok").all() and len(imported) == 2
    assert (imported["backend"] == "iperf3").all() and (imported["streams"] == 2).all()
    points = compare_points(imported, StudyStore(tmp_path / "sim").runs_table())
    assert len(points) == 1 and points["matched"].all()
    # Both fill most of a 100 Mbit/s link (goodput ceiling 95.6 Mbit/s).
    assert imported["goodput_bps"].min() > 50e6
    assert 0.6 < points["ratio"].iloc[0] < 1.6
