"""`fatpipe clean --testbed` removes the run directories fatpipe's agent
marks as its own, and nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import THREE_HOSTS, write_testbed
from fatpipe import cli
from fatpipe.backends.hosts import cleanup, layout
from fatpipe.spec import load_testbed


def _run_dir(root, run_id, agent_pid=None, lease_s=600.0, owner=True):
    path = root / f"{layout.RUN_DIR_PREFIX}{run_id}"
    path.mkdir()
    (path / "flows.log").write_text("left by a crashed run\n")
    if owner:
        (path / layout.OWNER_FILE).write_text(json.dumps(layout.owner_record(run_id, agent_pid, lease_s)))
    return path


def test_clean_removes_marked_run_directories_only(lab, tmp_path):
    root = tmp_path / "remote-tmp"
    root.mkdir()
    crashed = _run_dir(root, "crashed-p000-r00")
    dead_agent = _run_dir(root, "dead-p001-r00", agent_pid=2**22 + 12345)
    unmarked = _run_dir(root, "someone-else", owner=False)
    other = root / "not-fatpipe"
    other.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        running = _run_dir(root, "running-p002-r00", agent_pid=live.pid)
        tb = load_testbed(write_testbed(lab, tmp_path / "testbed.toml", THREE_HOSTS))
        with pytest.raises(cleanup.CleanIncomplete, match=r"kept .*running-p002-r00: its agent \(pid \d+\) is "
                                                          "running"):
            cleanup.clean(tb, root=str(root))
        assert not crashed.exists() and not dead_agent.exists()
        assert unmarked.exists() and other.exists() and running.exists()
    finally:
        live.kill()
        live.wait()
    # The agent is gone now: the next clean removes its directory, and a
    # clean with nothing left removes nothing.
    assert any("running-p002-r00" in item for item in cleanup.clean(tb, root=str(root)))
    assert cleanup.clean(tb, root=str(root)) == []
    assert sorted(os.listdir(root)) == sorted(["not-fatpipe", f"{layout.RUN_DIR_PREFIX}someone-else"])


def test_clean_command_uses_the_hosts_default_directory(lab, tmp_path, capsys):
    run_id = f"lab-{os.getpid()}-p000-r00"
    path = layout.run_dir(run_id)
    os.mkdir(path)
    with open(os.path.join(path, layout.OWNER_FILE), "w") as f:
        json.dump(layout.owner_record(run_id, None, 60.0), f)
    testbed = write_testbed(lab, tmp_path / "testbed.toml", THREE_HOSTS)
    assert cli.main(["clean", "--testbed", str(testbed)]) == 0
    out = capsys.readouterr().out
    assert f"{path} (run {run_id})" in out
    assert not os.path.exists(path)
