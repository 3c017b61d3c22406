"""The hosts backend's tests run against real OpenSSH servers in network
namespaces (sshlab.py). They need root, sshd, nc and asyncssh, and skip,
saying which is missing, otherwise."""

from __future__ import annotations

import atexit
import sys
from pathlib import Path

import pytest

import fatpipe
from fatpipe.results import StudyStore

sys.path.insert(0, str(Path(__file__).parent))

import sshlab

MISSING = sshlab.missing_requirements()


def pytest_collection_modifyitems(items):
    if MISSING:
        for item in items:
            if Path(str(item.fspath)).parent == Path(__file__).parent:
                item.add_marker(pytest.mark.skip(reason=f"hosts tests: {MISSING}"))


@pytest.fixture(scope="session")
def lab():
    """The three-host lab, shared by the session; torn down at its end
    (and at exit if the session dies first). Teardown checks that no sshd,
    no process and no namespace of the lab is left."""
    sshlab.remove_stale()
    built = sshlab.build_lab()
    atexit.register(built.close)
    yield built
    built.close()
    atexit.unregister(built.close)
    assert built.leftovers() == []


def write_testbed(lab: sshlab.Lab, path: Path, hosts: dict[str, dict], **options: str) -> Path:
    """A testbed file for `lab`: hosts name -> keys (ssh, address, interface, role)."""
    lines = ["[testbed]", f'ssh_config = "{lab.ssh_config}"']
    lines += [f'{k} = "{v}"' for k, v in options.items()]
    for name, keys in hosts.items():
        lines.append(f"[testbed.hosts.{name}]")
        lines += [f"{k} = {v}" if isinstance(v, int) else f'{k} = "{v}"' for k, v in keys.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_one(lab: sshlab.Lab, tmp_path: Path, hosts: dict[str, dict], study: str):
    """Runs the one-run study `study` (TOML text) on the lab's `hosts`: its
    runs-table row and its run facts; fails with the run's reason if not ok."""
    testbed = write_testbed(lab, tmp_path / "testbed.toml", hosts)
    (tmp_path / "study.toml").write_text(study)
    runs = fatpipe.run(tmp_path / "study.toml", backend="hosts", out=tmp_path / "out", testbed=testbed,
                       progress=None).runs
    assert list(runs["status"]) == ["ok"], "\n".join(runs["reason"])
    return runs.iloc[0], StudyStore(tmp_path / "out").run_facts(runs["run_id"].iloc[0])


# The lab's sender, emulator and receiver as a run's testbed hosts.
RUN_HOSTS = {
    "alpha": {"ssh": "lab-s1", "address": "198.19.1.1", "interface": "eth0", "role": "s1"},
    "gamma": {"ssh": "lab-emu", "address": "198.19.2.2", "interface": "to-rx", "role": "emulator"},
    "beta": {"ssh": "lab-rx", "address": "198.19.2.1", "interface": "eth0", "role": "receiver"},
}

THREE_HOSTS = {
    "alpha": {"ssh": "lab-s1", "address": "198.19.1.1", "interface": "eth0", "role": "s1"},
    "gamma": {"ssh": "lab-emu", "address": "198.19.1.2", "interface": "to-s1", "role": "emulator"},
    "beta": {"ssh": "lab-rx", "address": "198.19.2.1", "interface": "eth0", "role": "receiver"},
}
