"""As root, `fatpipe run STUDY --backend auto` runs the kernel backend and
the simulator and prints their comparison (about 6 s of kernel traffic)."""

from __future__ import annotations

import os
import textwrap

import pytest

from fatpipe.cli import main
from fatpipe.results import StudyStore

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

STUDY = """
version = 1
[study]
name = "auto-kernel"
backends = ["kernel", "sim"]
duration = "3s"
warmup = "1s"
repetitions = 2
[path]
rate = "100Mbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
"""


def test_as_root_auto_runs_kernel_and_sim_and_prints_their_comparison(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text(textwrap.dedent(STUDY))
    code = main(["run", str(study), "--backend", "auto", "--out", str(tmp_path / "o"), "--no-report"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "left out" not in out
    assert set(StudyStore(tmp_path / "o").runs_table()["backend"]) == {"kernel", "sim"}
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("sim vs kernel: goodput ratio"))
    assert "kernel Mbit/s" in lines[head + 1] and "sim/kernel" in lines[head + 1]
    assert lines[head + 2].split()[0] == "cubic"
