"""The agent on a host (agent.py through agent_client.py, over real sshd):
whatever ends the controller's hold on it — the connection closed, the sshd
serving it killed, the lease passed, the agent itself SIGKILLed and
`fatpipe clean --testbed` run — nothing of the run is left on the host: no
process of its groups (checked by pgid, not by name), no changed sysctl
(read back in the host's network namespace), no run directory.

The sysctl is net.ipv4.tcp_rmem, per network namespace since Linux 4.15:
the lab's hosts are network namespaces, so the machine's own value is
never touched (each test checks that too)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from conftest import write_testbed
from fatpipe import cli
from fatpipe.backends.hosts import layout, transport
from fatpipe.backends.hosts.agent_client import AgentClient, AgentError
from fatpipe.linuxpath import cmd
from fatpipe.testbed import parse_ssh_target

SYSCTL = "net.ipv4.tcp_rmem"
CHANGED = "4096 65536 3000000"
# A group of two processes: the shell and its background sleep.
LONG_RUNNING = ["sh", "-c", "sleep 300 & sleep 300; wait"]
GONE_WITHIN_S = 20.0


def _endpoint(lab, alias: str, max_sessions: int = 8) -> transport.Endpoint:
    return transport.Endpoint(alias.removeprefix("lab-"), parse_ssh_target(alias), str(lab.ssh_config),
                              max_sessions, connect_timeout_s=5.0, keepalive_s=15.0)


def _run_id(case: str) -> str:
    return f"agent-{os.getpid()}-{case}"


def _ns_sysctl(lab, role: str) -> str:
    path = "/proc/sys/" + SYSCTL.replace(".", "/")
    return " ".join(cmd.run(lab.namespaces[role].exec_args(["cat", path])).split())


def _root_sysctl() -> str:
    return " ".join(Path("/proc/sys/" + SYSCTL.replace(".", "/")).read_text().split())


def _proc_state(pid: int) -> tuple[str, int] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[2])


def _group_processes(pgids: set[int]) -> list[str]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _proc_state(int(entry.name))
            if st and st[1] in pgids and st[0] != "Z":
                with contextlib.suppress(OSError):
                    argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                    out.append(f"process {entry.name} of group {st[1]}: {argv}")
    return out


class Run:
    """What a test started on a host, and what must be gone afterwards."""

    def __init__(self, lab, role: str, run_id: str):
        self.lab, self.role, self.run_dir = lab, role, layout.run_dir(run_id)
        self.pgids: set[int] = set()
        self.agent_pid: int | None = None
        self.sysctl_before = _ns_sysctl(lab, role)
        self.root_sysctl_before = _root_sysctl()

    def leftovers(self) -> list[str]:
        out = _group_processes(self.pgids)
        st = _proc_state(self.agent_pid) if self.agent_pid else None
        if st and st[0] != "Z":
            out.append(f"agent {self.agent_pid} still running")
        now = _ns_sysctl(self.lab, self.role)
        if now != self.sysctl_before:
            out.append(f"{SYSCTL} in {self.role} = {now!r}, was {self.sysctl_before!r}")
        if _root_sysctl() != self.root_sysctl_before:
            out.append(f"{SYSCTL} of the machine itself changed to {_root_sysctl()!r}")
        if os.path.lexists(self.run_dir):
            out.append(f"run directory {self.run_dir}: {sorted(os.listdir(self.run_dir))}")
        return out

    def wait_nothing_left(self, timeout_s: float = GONE_WITHIN_S) -> list[str]:
        deadline = time.monotonic() + timeout_s
        while (left := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return left

    def assert_nothing_left(self, timeout_s: float = GONE_WITHIN_S) -> None:
        left = self.wait_nothing_left(timeout_s)
        if left:
            self.force_clean()
        assert left == []

    def force_clean(self) -> None:
        """After a failed assertion: do not leave the lab dirty for other tests."""
        for pgid in self.pgids:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
        if os.path.isdir(self.run_dir):
            path = "/proc/sys/" + SYSCTL.replace(".", "/")
            cmd.run(self.lab.namespaces[self.role].exec_args(["sh", "-c", f'echo "$0" > {path}',
                                                              self.sysctl_before]), check=False)
            __import__("shutil").rmtree(self.run_dir, ignore_errors=True)


async def _started(run: Run, client: AgentClient) -> None:
    """Change the sysctl and start the long-running group through the agent."""
    run.agent_pid = client.pid
    assert await client.sysctl_set(SYSCTL, CHANGED) == run.sysctl_before
    run.pgids.add(await client.start(LONG_RUNNING, stdout="out.log"))
    assert _ns_sysctl(run.lab, run.role) == CHANGED
    assert _root_sysctl() == run.root_sysctl_before, "the lab's sshd is not in its own network namespace"
    deadline = time.monotonic() + 10
    while len(_group_processes(run.pgids)) < 2:  # sh and its sleep
        assert time.monotonic() < deadline, f"the group did not start: {_group_processes(run.pgids)}"
        await asyncio.sleep(0.02)


def _case(lab, alias: str, role: str, case: str, body, **launch) -> Run:
    run = Run(lab, role, _run_id(case))

    async def go():
        conn = await transport.connect(_endpoint(lab, alias))
        try:
            client = await AgentClient.launch(conn, _run_id(case), **launch)
            await _started(run, client)
            await body(run, conn, client)
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    try:
        asyncio.run(go())
    except BaseException:
        run.force_clean()
        raise
    return run


def test_closed_connection_kills_the_group_and_restores_the_sysctl(lab):
    async def body(_run, conn, _client):
        await conn.close()  # abruptly: the agent sees its stdin close

    run = _case(lab, "lab-s1", "s1", "closed", body)
    run.assert_nothing_left()


def test_orderly_close_reports_what_the_agent_did(lab):
    reports = []

    async def body(_run, _conn, client):
        reports.append(await client.close())

    run = _case(lab, "lab-s1", "s1", "orderly", body)
    run.assert_nothing_left()
    assert reports[0] == {"event": "cleaned", "reason": "stdin closed", "problems": []}


def _serving_sshd(lab, alias: str, agent_pid: int) -> list[int]:
    """The sshd processes between the listener of `alias` and the agent."""
    listener = lab.daemons[alias].proc.pid
    chain, pid = [], agent_pid
    while pid not in (0, 1, listener):
        status = Path(f"/proc/{pid}/status").read_text()
        ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        if ppid != listener and "sshd" not in Path(f"/proc/{ppid}/comm").read_text():
            pid = ppid
            continue
        chain.append(ppid)
        pid = ppid
    assert chain and chain[-1] == listener, f"agent {agent_pid} is not below sshd {listener}: {chain}"
    return chain[:-1]


def test_killed_sshd_makes_the_agent_clean_up(lab):
    async def body(_run, _conn, client):
        serving = _serving_sshd(lab, "lab-s1", client.pid)
        assert serving, "no per-connection sshd found"
        for pid in serving:
            os.kill(pid, signal.SIGKILL)

    run = _case(lab, "lab-s1", "s1", "sshd-killed", body)
    run.assert_nothing_left()
    # The listener lives on: the host can be reached again.
    async def again():
        conn = await transport.connect(_endpoint(lab, "lab-s1"))
        try:
            return (await conn.run(["true"])).ok
        finally:
            await conn.close()
    assert asyncio.run(again())


def test_lease_passing_without_renew_cleans_up(lab):
    seen = []

    async def body(run, _conn, client):
        # The connection stays open; only the lease ends the agent.
        deadline = time.monotonic() + GONE_WITHIN_S
        while run.leftovers() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        seen.append(run.leftovers())
        await client.close()
        seen.append(client.cleaned)

    run = _case(lab, "lab-s1", "s1", "lease", body, lease_s=1.5, renew=False)
    assert seen[0] == []
    assert seen[1]["reason"] == "lease passed without a renew"
    run.assert_nothing_left()


def test_renewed_lease_keeps_the_agent(lab):
    async def body(_run, _conn, client):
        until = time.monotonic() + 4 * client.lease_s
        while time.monotonic() < until:
            status = await client.status()
            assert [g["running"] for g in status["groups"]] == [True]
            await asyncio.sleep(0.2)
        await client.close()

    run = _case(lab, "lab-s1", "s1", "renewed", body, lease_s=1.5)
    run.assert_nothing_left()


def test_sigkilled_agent_is_cleaned_by_fatpipe_clean(lab, tmp_path, capsys):
    async def body(_run, _conn, client):
        os.kill(client.pid, signal.SIGKILL)
        with contextlib.suppress(AgentError):
            await client.close(timeout_s=5)

    run = _case(lab, "lab-s1", "s1", "sigkilled", body)
    try:
        left = run.leftovers()
        # The agent is gone but its group, its sysctl and its directory remain.
        assert any("process" in item for item in left), left
        assert any(SYSCTL in item for item in left), left
        assert any("run directory" in item for item in left), left
        # Both hosts are the s1 namespace (each role needs its own host).
        hosts = {"alpha": {"ssh": "lab-s1", "address": "198.19.1.1", "interface": "eth0", "role": "s1"},
                 "beta": {"ssh": "lab-s1-max4", "address": "198.19.1.1", "interface": "eth0", "role": "receiver"}}
        testbed = write_testbed(lab, tmp_path / "testbed.toml", hosts)
        assert cli.main(["clean", "--testbed", str(testbed)]) == 0, capsys.readouterr()
        assert f"{run.run_dir} (run {_run_id('sigkilled')}, its processes stopped and sysctls restored)" in \
            capsys.readouterr().out
        run.assert_nothing_left()
        assert cli.main(["clean", "--testbed", str(testbed)]) == 0  # idempotent: nothing left to do
    except BaseException:
        run.force_clean()
        raise


def test_paths_escaping_the_run_directory_are_refused(lab):
    errors = []

    async def body(run, _conn, client):
        os.symlink("/etc", os.path.join(run.run_dir, "etc-link"))
        os.symlink("/etc/hostname", os.path.join(run.run_dir, "hostname-link"))
        attempts = [client.get("../fatpipe-owner.json"), client.get("/etc/hostname"), client.get("a/../../x"),
                    client.get("etc-link/hostname"), client.get("hostname-link"),
                    client.put("etc-link/fatpipe-was-here", b"x"), client.put("../escaped", b"x"),
                    client.put(layout.OWNER_FILE, b"{}"), client.start(["true"], cwd="etc-link"),
                    client.start(["true"], cwd=".."), client.sysctl_set("net.ipv4.tcp_congestion_control", "1"),
                    client.sysctl_set(SYSCTL, "1 2 3; reboot")]
        for attempt in attempts:
            try:
                await attempt
                errors.append(None)
            except AgentError as e:
                errors.append(str(e))
        await client.put("sub/dir/ok.txt", b"inside")
        assert await client.get("sub/dir/ok.txt") == b"inside"
        await client.close()

    run = _case(lab, "lab-s1", "s1", "escape", body)
    assert all(e is not None and e.startswith("host s1 (lab-s1): agent in ") and "refused" in e for e in errors), \
        errors
    assert not os.path.exists("/etc/fatpipe-was-here") and not os.path.exists("/tmp/escaped")
    run.assert_nothing_left()


def test_agent_and_ten_commands_on_a_max_sessions_4_host(lab):
    async def body(run, conn, client):
        (first,) = run.pgids

        async def command(i):
            return (await conn.run(["sh", "-c", 'sleep 0.2; echo "$0"', str(i)])).stdout.strip()

        starts = [client.start(["sleep", "300"]) for _ in range(10)]
        results = await asyncio.gather(*starts, *(command(i) for i in range(10)))
        pgids, outputs = results[:10], results[10:]
        run.pgids.update(pgids)
        assert outputs == [str(i) for i in range(10)]
        assert conn.sessions.peak <= 4
        codes = await asyncio.gather(*(client.stop(p, grace_s=1.0) for p in pgids))
        assert codes == [-signal.SIGTERM] * 10
        assert (await client.status())["groups"] == [{"pgid": first, "running": True}]
        await client.close()

    run = _case(lab, "lab-s1-max4", "s1", "max4", body)
    run.assert_nothing_left()

