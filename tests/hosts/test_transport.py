"""The SSH transport against real sshd: the server's session limit,
argument lists that reach the host verbatim, errors that name the host."""

from __future__ import annotations

import asyncio

import pytest

from fatpipe.backends.hosts import transport
from fatpipe.testbed import parse_ssh_target


def _endpoint(lab, alias: str, max_sessions: int = 8) -> transport.Endpoint:
    return transport.Endpoint(alias.removeprefix("lab-"), parse_ssh_target(alias), str(lab.ssh_config),
                              max_sessions, connect_timeout_s=5.0, keepalive_s=15.0)


async def _ten_commands(ep: transport.Endpoint):
    conn = await transport.connect(ep)
    try:
        results = await asyncio.gather(*(conn.run(["sh", "-c", 'sleep 0.2; echo "$0"', str(i)])
                                         for i in range(10)))
        return [r.stdout.strip() for r in results], conn.sessions
    finally:
        await conn.close()


@pytest.mark.parametrize("configured", [4, 8])
def test_ten_concurrent_commands_complete_under_max_sessions_4(lab, configured):
    # sshd `MaxSessions 4`. With the default of 8 the server refuses the 5th
    # session and fatpipe lowers its limit to what it accepted; with 4 a
    # refusal can still happen (sshd counts a session until it has reaped
    # its process). Either way every command runs, never more than 4 at once.
    outputs, sessions = asyncio.run(_ten_commands(_endpoint(lab, "lab-s1-max4", configured)))
    assert outputs == [str(i) for i in range(10)]
    assert sessions.peak <= 4
    if configured > 4:
        assert sessions.refusals > 0
    assert sessions.active == 0 and sessions.established == 0


def test_arguments_reach_the_host_verbatim(lab):
    tricky = ["a b", "$HOME", "`id`", "; rm -rf /nonexistent", "'\"", "*"]

    async def echo():
        conn = await transport.connect(_endpoint(lab, "lab-s1"))
        try:
            return await conn.run(["python3", "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", *tricky])
        finally:
            await conn.close()

    assert __import__("json").loads(asyncio.run(echo()).stdout) == tricky


def test_failing_command_error_names_host_command_and_stderr(lab):
    async def fail():
        conn = await transport.connect(_endpoint(lab, "lab-rx"))
        try:
            await conn.run(["sh", "-c", "echo broken >&2; exit 3"])
        finally:
            await conn.close()

    with pytest.raises(transport.HostError, match=r"^host rx \(lab-rx\): `sh -c .*` exited 3: broken"):
        asyncio.run(fail())


def test_command_timeout_names_the_host(lab):
    async def slow():
        conn = await transport.connect(_endpoint(lab, "lab-rx"))
        try:
            await conn.run(["sleep", "5"], timeout_s=0.5)
        finally:
            await conn.close()

    with pytest.raises(transport.HostError, match=r"^host rx .*did not finish within 0.5 s"):
        asyncio.run(slow())


def test_connect_all_closes_the_others_and_names_every_failed_host(lab, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(lab.ssh_config.read_text() + f"\nHost lab-nowhere\n    Hostname 198.19.1.1\n    Port 2999\n"
                      f"    User root\n    UserKnownHostsFile {lab.known_hosts}\n"
                      f"    ProxyCommand ip netns exec {lab.namespaces['s1'].name} nc %h %p\n")
    eps = [transport.Endpoint(name, parse_ssh_target(alias), str(config), 8, 5.0, 15.0)
           for name, alias in (("ok", "lab-s1"), ("gone1", "lab-nowhere"), ("gone2", "lab-nowhere"))]
    with pytest.raises(transport.HostsFailed) as err:
        asyncio.run(transport.connect_all(eps))
    assert sorted(e.host for e in err.value.errors) == ["gone1", "gone2"]
