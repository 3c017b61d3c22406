"""`fatpipe run STUDY --backend auto`: each of the study's backends that can
run here, compared side by side, else the simulator with one line saying
why; never an error for a user without root. Not-root is played through
the one privilege test doctor and the kernel backend's check use."""

from __future__ import annotations

import textwrap

import pytest

from fatpipe.backends import register_backend, unregister_backend
from fatpipe.backends.kernel import privilege
from fatpipe.backends.sim import SimBackend
from fatpipe.cli import main
from fatpipe.results import StudyStore

STUDY = """
version = 1
[study]
name = "auto"
backends = {backends}
duration = "2s"
warmup = "0.5s"
repetitions = 2
[path]
rate = "50Mbit"
rtt = "10ms"
loss = 1e-4
[[flows]]
cc = "cubic"
[sweep]
"flows.0.streams" = [1, 2]
"""


def _study(tmp_path, backends: str):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(STUDY.format(backends=backends)))
    return str(p)


@pytest.fixture
def not_root(monkeypatch):
    monkeypatch.setattr(privilege, "is_root", lambda: False)


@pytest.mark.usefixtures("not_root")
def test_without_root_the_kernel_is_left_out_in_one_line_and_the_simulator_runs(tmp_path, capsys):
    code = main(["run", _study(tmp_path, '["kernel", "sim"]'), "--backend", "auto", "--out", str(tmp_path / "o"),
                 "--no-report"])
    out = capsys.readouterr()
    assert code == 0, out.err
    said = [ln for ln in out.out.splitlines() if "kernel backend left out" in ln]
    assert len(said) == 1 and "needs root" in said[0] and "running on sim only" in said[0]
    assert set(StudyStore(tmp_path / "o").runs_table()["backend"]) == {"sim"}
    assert "goodput ratio" not in out.out


@pytest.mark.usefixtures("not_root")
def test_a_kernel_only_study_falls_back_to_the_simulator_without_root(tmp_path, capsys):
    code = main(["run", _study(tmp_path, '["kernel"]'), "--backend", "auto", "--out", str(tmp_path / "o"),
                 "--no-report"])
    assert code == 0
    assert "kernel backend left out" in capsys.readouterr().out
    assert set(StudyStore(tmp_path / "o").runs_table()["backend"]) == {"sim"}


@pytest.mark.usefixtures("not_root")
def test_without_auto_the_same_study_is_refused_for_a_user_without_root(tmp_path, capsys):
    code = main(["run", _study(tmp_path, '["kernel", "sim"]'), "--out", str(tmp_path / "o"), "--no-report"])
    assert code == 2 and "needs root" in capsys.readouterr().err


def test_backends_that_all_run_are_compared_point_by_point(tmp_path, capsys):
    register_backend("sim-twin", SimBackend)
    try:
        code = main(["run", _study(tmp_path, '["sim", "sim-twin"]'), "--backend", "auto",
                     "--out", str(tmp_path / "o"), "--no-report"])
    finally:
        unregister_backend("sim-twin")
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("sim-twin vs sim: goodput ratio"))
    table = lines[head + 1: head + 4]
    assert "sim Mbit/s" in table[0] and "sim-twin/sim" in table[0]
    # Same simulator, same seeds: every grid point's ratio is exactly 1.
    assert all(row.split()[-2] == "1.00-1.00" or "1.00" in row.split() for row in table[1:])
    assert len(table[1:]) == 2  # streams 1 and 2


def test_auto_goes_alone(tmp_path, capsys):
    code = main(["run", _study(tmp_path, '["sim"]'), "--backend", "auto", "--backend", "sim",
                 "--out", str(tmp_path / "o")])
    assert code == 2 and "give it alone" in capsys.readouterr().err
