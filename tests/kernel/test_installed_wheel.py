"""The wheel is the whole of fatpipe: built from this tree (maturin, with
fatpipe-linkem and fatpipe-ccaload inside, build_support/fatpipe_build.py)
and installed into a fresh virtualenv, its `fatpipe doctor` finds the delay
line in the package and a one-run kernel study started from another
directory succeeds. Slow (a release build when target/ is cold; about 30 s
when warm): one wheel for the whole test session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

ONE_RUN = """
version = 1
[study]
name = "one-kernel-run"
backends = ["kernel"]
duration = "4s"
warmup = "1s"
repetitions = 1
[path]
rate = "100Mbit"
rtt = "20ms"
loss = 1e-4
[[flows]]
cc = "cubic"
"""


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: this machine's maturin, and no index needed.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(ROOT)], check=True, timeout=1800)
    (whl,) = out.glob("fatpipe-*.whl")
    return whl


@pytest.fixture(scope="session")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel; its dependencies (pandas, pyarrow,
    …) come from this machine's site-packages, the package itself from the wheel."""
    env_dir = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)], check=True,
                   timeout=300)
    return env_dir


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH or FATPIPE_* override: what the venv's package finds alone."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("FATPIPE_")}


def test_the_wheel_carries_the_delay_line_as_an_executable(wheel):
    with zipfile.ZipFile(wheel) as z:
        info = z.getinfo("fatpipe/_bin/fatpipe-linkem")
    assert (info.external_attr >> 16) & 0o111, "fatpipe-linkem must keep its executable bits"


def test_the_wheel_carries_the_host_profiles(wheel):
    with zipfile.ZipFile(wheel) as z:
        assert z.getinfo("fatpipe/data/host_profiles.toml").file_size > 0


def test_doctor_of_the_installed_wheel_finds_the_packaged_delay_line(venv, tmp_path):
    r = subprocess.run([str(venv / "bin" / "fatpipe"), "doctor"], capture_output=True, text=True, cwd=tmp_path,
                       env=_clean_env(), timeout=120, check=True)
    line = next(ln for ln in r.stdout.splitlines() if "fatpipe-linkem:" in ln)
    assert line.strip().startswith("[ok]"), r.stdout
    # The wheel's binary under the venv: not a path outside the repository.
    assert str(venv) in line and "/_bin/fatpipe-linkem" in line, line


@needs_root
def test_a_one_run_kernel_study_runs_from_another_directory_with_the_installed_wheel(venv, tmp_path):
    (tmp_path / "one.toml").write_text(textwrap.dedent(ONE_RUN))
    r = subprocess.run([str(venv / "bin" / "fatpipe"), "run", "one.toml", "--out", "out", "--no-report"],
                       capture_output=True, text=True, cwd=tmp_path, env=_clean_env(), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kernel-p000-r00 ok" in r.stdout
    assert (tmp_path / "out" / "runs.parquet").is_file()
