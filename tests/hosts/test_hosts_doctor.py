"""`fatpipe doctor --testbed` against real sshd hosts: what it reports, and
how it refuses unknown host keys and names unreachable hosts."""

from __future__ import annotations

import time

import pytest

from conftest import THREE_HOSTS, write_testbed
from fatpipe import cli
from fatpipe.backends.hosts import doctor, transport
from fatpipe.backends.kernel.doctor import available_ccas
from fatpipe.spec import load_testbed


def _testbed(lab, tmp_path, hosts=THREE_HOSTS, **options):
    return load_testbed(write_testbed(lab, tmp_path / "testbed.toml", hosts, **options))


def test_doctor_reports_each_host_reachable_with_kernel_and_ccas(lab, tmp_path):
    report = doctor.doctor(_testbed(lab, tmp_path))
    assert report.usable, report.render()
    for name in THREE_HOSTS:
        checks = {c.name: c for c in report.host(name).checks}
        assert checks["reachable"].ok
        assert checks["root"].detail == "uid 0"
        assert checks["kernel"].detail == __import__("platform").release()
        assert checks["ccas"].detail.split() == available_ccas()
        assert checks["interface"].ok and "mtu 1500" in checks["interface"].detail
        # The namespaces share this machine's clock: the offset is within its bound.
        offset = report.host(name).offset
        assert offset is not None and abs(offset.offset_s) <= offset.uncertainty_s + 1e-3
    emulator = {c.name: c for c in report.host("gamma").checks}
    assert "tbf" in emulator and "netem" in emulator
    assert "/proc/config.gz" in emulator["tbf"].detail or "modinfo" in emulator["tbf"].detail \
        or "/sys/module" in emulator["tbf"].detail or "/boot/config" in emulator["tbf"].detail
    assert "tbf" not in {c.name for c in report.host("alpha").checks}  # qdiscs matter on the emulator only
    assert "sender s1 on alpha: ready" in report.verdict
    assert "receiver on beta: ready" in report.verdict


def test_doctor_command_prints_the_report_and_exits_0_when_ready(lab, tmp_path, capsys):
    path = write_testbed(lab, tmp_path / "testbed.toml", THREE_HOSTS)
    assert cli.main(["doctor", "--testbed", str(path)]) == 0
    out = capsys.readouterr().out
    assert "hosts backend:" in out and "testbed ready" in out
    assert "kernel backend:" not in out  # --testbed asks the backends that take one


def test_wrong_interface_address_is_reported_for_that_host(lab, tmp_path, capsys):
    hosts = {**THREE_HOSTS, "beta": {**THREE_HOSTS["beta"], "address": "198.19.2.77"}}
    path = write_testbed(lab, tmp_path / "testbed.toml", hosts)
    assert cli.main(["doctor", "--testbed", str(path)]) == 1
    out = capsys.readouterr().out
    assert "does not have 198.19.2.77" in out and "receiver on beta: NOT READY" in out


def test_unknown_host_key_is_refused_naming_the_host(lab, tmp_path):
    # known_hosts without the receiver's key: strict checking refuses it.
    partial = tmp_path / "known_hosts"
    partial.write_text("".join(line + "\n" for line in lab.known_hosts.read_text().splitlines()
                               if not line.startswith("198.19.2.1 ")))
    config = tmp_path / "ssh_config"
    config.write_text(lab.ssh_config.read_text().replace(str(lab.known_hosts), str(partial)))
    tb = _testbed(lab, tmp_path).model_copy(update={"ssh_config": str(config)})
    report = doctor.doctor(tb)
    reach = {c.name: c for c in report.host("beta").checks}["reachable"]
    assert not reach.ok and "host key not verifiable" in reach.detail
    assert "receiver on beta: NOT READY" in report.verdict
    assert all({c.name: c for c in report.host(n).checks}["reachable"].ok for n in ("alpha", "gamma"))
    with pytest.raises(transport.HostError, match=r"^host beta \(lab-rx\): host key not verifiable"):
        __import__("asyncio").run(transport.connect(transport.endpoints(tb)[2]))


def test_changed_host_key_is_refused(lab, tmp_path):
    forged = tmp_path / "known_hosts"
    lines = lab.known_hosts.read_text().splitlines()
    emu_key = next(line.split(" ", 1)[1] for line in lines if line.startswith("198.19.1.2 "))
    forged.write_text("".join((f"198.19.2.1 {emu_key}" if line.startswith("198.19.2.1 ") else line) + "\n"
                              for line in lines))
    config = tmp_path / "ssh_config"
    config.write_text(lab.ssh_config.read_text().replace(str(lab.known_hosts), str(forged)))
    ep = transport.endpoints(_testbed(lab, tmp_path).model_copy(update={"ssh_config": str(config)}))[2]
    with pytest.raises(transport.HostError, match="host beta .*host key not verifiable"):
        __import__("asyncio").run(transport.connect(ep))


def test_ssh_config_that_turns_host_key_checking_off_is_refused(lab, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(lab.ssh_config.read_text().replace(f"UserKnownHostsFile {lab.known_hosts}",
                                                         "UserKnownHostsFile none"))
    ep = transport.endpoints(_testbed(lab, tmp_path).model_copy(update={"ssh_config": str(config)}))[0]
    with pytest.raises(transport.HostError, match="host alpha .*UserKnownHostsFile none"):
        __import__("asyncio").run(transport.connect(ep))


@pytest.mark.parametrize("proxy, why", [
    # sshd is not listening there: the connection is refused at once.
    ("ip netns exec {s1} nc 198.19.1.1 2999", "refused"),
    # nobody owns that address: no answer at all, the connect timeout ends it.
    ("ip netns exec {s1} nc 198.19.1.99 22", "silent"),
])
def test_unreachable_host_is_named_within_the_connect_timeout(lab, tmp_path, proxy, why):
    config = tmp_path / "ssh_config"
    command = proxy.format(s1=lab.namespaces["s1"].name)
    config.write_text(lab.ssh_config.read_text() + f"\nHost lab-gone\n    Hostname 198.19.1.99\n    User root\n"
                      f"    UserKnownHostsFile {lab.known_hosts}\n    ProxyCommand {command}\n")
    hosts = {**THREE_HOSTS, "delta": {"ssh": "lab-gone", "address": "198.19.1.99", "interface": "eth0",
                                      "role": "s2"}}
    tb = _testbed(lab, tmp_path, hosts, connect_timeout="2s").model_copy(update={"ssh_config": str(config)})
    started = time.monotonic()
    report = doctor.doctor(tb)
    elapsed = time.monotonic() - started
    reach = {c.name: c for c in report.host("delta").checks}["reachable"]
    assert not reach.ok, why
    assert "sender s2 on delta: NOT READY (reachable:" in report.verdict
    # Without the connect timeout a silent address fails only when TCP gives
    # up its SYN retries (tcp_syn_retries 6: 127 s); the timeout is 2 s. The
    # other hosts' checks run beside it and take a few seconds more on a
    # loaded 2-core machine (7.0 s seen at load 8), far from 127 s.
    assert elapsed < 2.0 + 20.0, f"doctor took {elapsed:.1f} s with a 2 s connect timeout"
    ep = next(e for e in transport.endpoints(tb) if e.name == "delta")
    with pytest.raises(transport.HostError, match=r"^host delta \(lab-gone\): "):
        __import__("asyncio").run(transport.connect(ep))
