"""The hosts backend's pure parts, without SSH: the clock estimator on a
fake channel, the session limiter on a fake server, the remote probe and
clean scripts run locally, the doctor's checks, and the registry's answer."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

from fatpipe import cli
from fatpipe.backends import get_backend
from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.hosts import agent, clock, layout, remote_clean, remote_probe
from fatpipe.backends.hosts.doctor import parse_probe, probe_checks
from fatpipe.backends.hosts.transport import SessionLimiter, remote_command
from fatpipe.linuxpath.qdisc import QDISC_CONFIG
from fatpipe.testbed import validate_testbed

# ---- clock ---------------------------------------------------------------------


def test_offset_comes_from_the_fastest_round_trip():
    samples = [clock.ClockSample(1_000, 5_000_000_600, 1_400),   # rtt 400 ns
               clock.ClockSample(2_000, 5_000_001_100, 2_100),   # rtt 100 ns: the one kept
               clock.ClockSample(3_000, 5_000_002_900, 3_900)]
    est = clock.estimate_offset(samples)
    assert est.offset_s == pytest.approx((5_000_001_100 - 2_050) / 1e9)
    assert est.uncertainty_s == pytest.approx(50e-9)
    assert est.rtt_s == pytest.approx(100e-9) and est.samples == 3


def test_estimator_on_a_fake_channel_with_asymmetric_delays_stays_within_its_bound():
    # A fake host 2.5 s ahead; the way out takes 3 ms, the way back 1..9 ms.
    now = [1_700_000_000_000_000_000]
    true_offset_ns = 2_500_000_000
    back_ns = iter([9_000_000, 5_000_000, 1_000_000, 7_000_000] * 5)

    def now_ns() -> int:
        return now[0]

    async def exchange() -> int:
        now[0] += 3_000_000
        remote = now[0] + true_offset_ns
        now[0] += next(back_ns)
        return remote

    est = asyncio.run(clock.measure_offset(exchange, rounds=8, now_ns=now_ns))
    assert est.samples == 8
    assert est.rtt_s == pytest.approx(4e-3)
    assert est.offset_s == pytest.approx(2.501, abs=1e-9)  # skewed by the asymmetry (3 vs 1 ms)...
    assert abs(est.offset_s - true_offset_ns / 1e9) <= est.uncertainty_s  # ...but within the bound


def test_remote_clock_answers_are_parsed_strictly():
    assert clock.parse_remote_ns("1700000000123456789\n") == 1700000000123456789
    with pytest.raises(ValueError, match="not a time in ns"):
        clock.parse_remote_ns("Traceback (most recent call last):")
    with pytest.raises(ValueError):
        clock.estimate_offset([])


# ---- session limiter ---------------------------------------------------------


class Refused(Exception):
    pass


def test_limiter_lowers_its_limit_to_what_the_server_accepts_and_every_session_runs():
    server_limit, open_now, most = 3, [0], [0]

    async def opener():
        await asyncio.sleep(0.001)
        if open_now[0] >= server_limit:
            raise Refused()
        open_now[0] += 1
        most[0] = max(most[0], open_now[0])
        return "session"

    async def one(lim: SessionLimiter) -> str:
        session = await lim.open(opener, lambda e: isinstance(e, Refused))
        await asyncio.sleep(0.01)
        open_now[0] -= 1
        await lim.release()
        return session

    async def main():
        lim = SessionLimiter(8)
        done = await asyncio.gather(*(one(lim) for _ in range(12)))
        return lim, done

    lim, done = asyncio.run(main())
    assert done == ["session"] * 12 and most[0] <= server_limit
    assert lim.refusals > 0 and lim.active == 0 and lim.established == 0


def test_limiter_raises_a_refusal_when_nothing_else_is_open():
    async def opener():
        raise Refused()

    with pytest.raises(Refused):
        asyncio.run(SessionLimiter(4).open(opener, lambda e: isinstance(e, Refused)))


def test_remote_commands_are_argument_lists_quoted_for_the_shell():
    assert remote_command(["echo", "a b", "$(id)"]) == "echo 'a b' '$(id)'"
    for bad in ("echo hi", [], ["ok", 3]):
        with pytest.raises(TypeError):
            remote_command(bad)


# ---- remote scripts, run here -----------------------------------------------------


@pytest.mark.parametrize("config, expect", [
    ("CONFIG_NET_SCH_NETEM=m\n", (True, "CONFIG_NET_SCH_NETEM=m (a module) in /proc/config.gz")),
    ("CONFIG_NET_SCH_NETEM=y\n", (True, "CONFIG_NET_SCH_NETEM=y (built in) in /proc/config.gz")),
    ("# CONFIG_NET_SCH_NETEM is not set\n", (False, "CONFIG_NET_SCH_NETEM is not set in /proc/config.gz")),
])
def test_qdisc_availability_says_which_method_decided(config, expect):
    got = remote_probe.qdisc_availability("netem", "6.1.0", config=(config, "/proc/config.gz"))
    assert (got["available"], got["how"]) == expect


def test_qdisc_availability_without_config_looks_for_a_loaded_module(tmp_path):
    (tmp_path / "sch_netem").mkdir()
    got = remote_probe.qdisc_availability("netem", "6.1.0", config=(None, None), sys_module_dir=str(tmp_path))
    assert got == {"available": True, "how": f"{tmp_path}/sch_netem (module loaded)"}


def test_probe_of_this_machine_parses_into_checks():
    probe = parse_probe(json.dumps(remote_probe.probe("lo")))
    assert probe.kernel == os.uname().release and probe.mtu_bytes is not None
    host = validate_testbed({"hosts": {
        "a": {"ssh": "a", "address": "127.0.0.1", "interface": "lo", "role": "emulator"},
        "b": {"ssh": "b", "address": "127.0.0.2", "interface": "lo", "role": "receiver"},
        "c": {"ssh": "c", "address": "127.0.0.3", "interface": "lo", "role": "s1"}}}).hosts["a"]
    checks = {c.name: c for c in probe_checks(host, probe)}
    assert {"root", "kernel", "ccas", "interface", "tc", "tbf", "netem", "fq_codel", "fq", "red"} <= set(checks)
    assert not checks["netem"].required and checks["tbf"].required and not checks["fq_codel"].required
    with pytest.raises(ValueError, match="probe answered something else"):
        parse_probe('{"uid": 0}')


def test_clean_script_removes_only_owned_directories_of_dead_agents(tmp_path):
    def run_dir(name, record):
        d = tmp_path / f"{layout.RUN_DIR_PREFIX}{name}"
        d.mkdir()
        if record is not None:
            (d / layout.OWNER_FILE).write_text(json.dumps(record))
        return d

    gone = run_dir("gone", layout.owner_record("gone", None, 60))
    live = run_dir("live", layout.owner_record("live", os.getpid(), 60))
    expired = run_dir("expired", layout.owner_record("expired", os.getpid(), -1))
    foreign = run_dir("foreign", {"tool": "other"})
    unmarked = run_dir("unmarked", None)
    (tmp_path / f"{layout.RUN_DIR_PREFIX}link").symlink_to(gone)
    out = remote_clean.clean(str(tmp_path), layout.RUN_DIR_PREFIX, layout.OWNER_FILE)
    actions = {os.path.basename(e["path"]).removeprefix(layout.RUN_DIR_PREFIX): e["action"] for e in out}
    assert actions == {"gone": "removed", "live": "kept", "expired": "removed"}
    assert not gone.exists() and not expired.exists()
    assert live.exists() and foreign.exists() and unmarked.exists()


def test_run_directories_are_named_from_safe_run_ids():
    assert layout.run_dir("hosts-p000-r01") == "/tmp/fatpipe-run-hosts-p000-r01"
    for bad in ("../etc", "a/b", "", "a b"):
        with pytest.raises(ValueError):
            layout.run_dir(bad)


# ---- the backend in the registry ------------------------------------------------------


def test_hosts_backend_is_registered_and_refuses_runs_without_a_testbed():
    from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
    backend = get_backend("hosts")
    host = HostLimits(rmem_max_bytes=1 << 20, wmem_max_bytes=1 << 20)
    plan = RunPlan(run_id="hosts-p000-r00", backend="hosts", rep=0, seed=1, duration_s=1.0, warmup_s=0.0,
                   sample_interval_s=0.1, rate_bps=1e8, rtt_s=0.02, loss=0.0, corruption=0.0, buffer_bytes=250_000,
                   mtu_bytes=1500, senders={"s1": host}, receiver=host,
                   flows=(FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1"),))
    with pytest.raises(BackendUnavailable, match=r"add a \[testbed\] section to the study or pass"):
        backend.check([plan])
    backend.check([])  # nothing to run: nothing to check
    assert backend.clean() == []
    assert "--testbed" in backend.doctor().render()


def test_doctor_and_clean_with_a_bad_testbed_file_exit_2_naming_the_key(tmp_path, capsys):
    path = tmp_path / "testbed.toml"
    path.write_text('[testbed.hosts.alpha]\nssh = "root@alpha"\npassword = "x"\n')
    for command in ("doctor", "clean"):
        assert cli.main([command, "--testbed", str(path)]) == 2
        err = capsys.readouterr().err
        assert "testbed.hosts.alpha.password: fatpipe never takes passwords" in err


def test_agent_source_parses_as_python_3_7():
    # The agent runs on the host's python3, which may be as old as 3.7.
    import ast
    ast.parse(Path(agent.__file__).read_text(), feature_version=(3, 7))


def test_agent_refuses_paths_that_leave_its_run_directory(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "sub").mkdir(parents=True)
    (run_dir / "link").symlink_to(tmp_path)
    (tmp_path / "outside").write_text("secret")
    for rel in ("../outside", "/etc/hostname", "sub/../../outside", "link/outside", "", agent.OWNER_FILE):
        with pytest.raises(agent.Refused):
            os.close(agent.open_in(str(run_dir), rel, os.O_RDONLY))
    fd = agent.open_in(str(run_dir), "sub/new/file.txt", os.O_WRONLY | os.O_CREAT)
    os.close(fd)
    assert (run_dir / "sub" / "new" / "file.txt").exists()


@pytest.mark.parametrize("value", ["1 2 3; reboot", "", "1 two", "0x10", "1.5"])
def test_agent_sysctl_values_are_integers_only(value):
    with pytest.raises(agent.Refused, match="integers separated by spaces"):
        agent.check_sysctl_value("net.ipv4.tcp_rmem", value)


def test_agent_refuses_sysctls_off_its_allow_list():
    with pytest.raises(agent.Refused, match="net.ipv4.tcp_congestion_control.*allowed: "):
        agent.sysctl_path("net.ipv4.tcp_congestion_control")


def test_cleanup_only_kills_a_dead_agents_marked_group_and_removes_its_directory(tmp_path):
    import subprocess
    import sys
    run_dir = tmp_path / "fatpipe-run-x"
    run_dir.mkdir()
    marker = f"{agent.ENV_MARKER}={run_dir}"
    marked = subprocess.Popen(["sleep", "60"], start_new_session=True,
                              env={**os.environ, agent.ENV_MARKER: str(run_dir)})
    unmarked = subprocess.Popen(["sleep", "60"], start_new_session=True)  # same program, not the run's
    try:
        state = {"boot_id": agent.boot_id(), "netns": agent.netns_id(), "marker": marker,
                 "groups": [marked.pid, unmarked.pid], "sysctls": {}}
        (run_dir / agent.STATE_FILE).write_text(json.dumps(state))
        done = subprocess.run([sys.executable, agent.__file__, "--cleanup-only", str(run_dir)],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["problems"] == []
        assert marked.wait(timeout=10) == -15
        # The unmarked group was never signalled.
        assert unmarked.poll() is None
        assert not run_dir.exists()
    finally:
        for p in (marked, unmarked):
            p.kill()
            p.wait()


def test_the_remote_probe_asks_for_the_qdiscs_the_linux_path_may_use():
    # remote_probe.py runs on the host and imports nothing from fatpipe: its table must equal the model's.
    assert remote_probe.QDISCS == QDISC_CONFIG


# ---- the agent client's renewal loop ----------------------------------------------


def test_closing_ends_the_renewal_loop_even_if_its_cancellation_is_swallowed():
    """close() must not wait forever on a renewer whose cancellation was
    taken for a renewal's own timeout (asyncio.wait_for before 3.12): here
    renew() turns every CancelledError into the AgentError the loop
    suppresses, the worst case of that race."""
    from fatpipe.backends.hosts.agent_client import AgentClient, AgentError

    async def scenario() -> bool:
        client = AgentClient.__new__(AgentClient)
        client.lease_s, client._gone, client._closing, client._proc = 0.03, None, False, None
        renewals = []

        async def renew() -> None:
            renewals.append(1)
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                raise AgentError("h", "t", "renew: no answer") from None

        client.renew = renew
        client._renewer = asyncio.create_task(client._renew_loop())
        await asyncio.sleep(0.02)  # inside the first renewal
        await client.close()
        return client._renewer.done() and len(renewals) >= 1

    # A close() that hangs would hang asyncio.run: run it in a thread that
    # the test waits for a bounded time.
    result: list[bool] = []
    worker = threading.Thread(target=lambda: result.append(asyncio.run(scenario())), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "close() still waits for the renewal loop after 10 s"
    assert result == [True]
