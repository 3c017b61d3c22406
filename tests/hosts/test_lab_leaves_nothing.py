"""The test lab itself leaves nothing behind: no sshd, no process, no
namespace, no key directory."""

from __future__ import annotations

import sshlab


def test_a_closed_lab_leaves_no_sshd_namespace_or_files():
    lab = sshlab.build_lab(tag="x")
    pids = [d.proc.pid for d in lab.daemons.values()]
    assert len(pids) >= 4 and all(d.proc.poll() is None for d in lab.daemons.values())
    assert len(sshlab.lab_namespaces(__import__("os").getpid())) >= 3
    lab.close()
    assert lab.leftovers() == []
    assert not lab.dir.exists()
    assert all(not __import__("os").path.exists(f"/proc/{pid}") for pid in pids)
