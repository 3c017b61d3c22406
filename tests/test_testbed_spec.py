"""The testbed spec: strict, errors naming the key and the host, no
passwords anywhere, in a study or in its own file."""

from __future__ import annotations

import pytest

from fatpipe import spec as spec_mod
from fatpipe.spec import SpecError, load_testbed
from fatpipe.testbed import parse_ssh_target, validate_testbed

HOSTS = {
    "alpha": {"ssh": "root@alpha.example.org", "address": "10.1.0.1", "interface": "eth1", "role": "s1"},
    "beta": {"ssh": "fatpipe@10.1.0.2:2222", "address": "10.1.0.2", "interface": "eth1", "role": "receiver"},
}


def _problems(raw) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        validate_testbed(raw)
    return dict(err.value.problems)


def _with(host: str, **keys):
    return {"hosts": {**HOSTS, host: {**HOSTS[host], **keys}}}


def test_valid_testbed_reads_targets_roles_and_defaults():
    tb = validate_testbed({"hosts": HOSTS})
    assert tb.hosts["beta"].ssh == parse_ssh_target("fatpipe@10.1.0.2:2222")
    assert (tb.hosts["beta"].ssh.user, tb.hosts["beta"].ssh.port) == ("fatpipe", 2222)
    assert tb.senders() == {"s1": "alpha"}
    assert tb.max_sessions_of("alpha") == 8 < 10  # below OpenSSH's MaxSessions default
    assert tb.connect_timeout == 10.0


@pytest.mark.parametrize("key, value, message", [
    ("ssh", "root@", "cannot read 'root@' as an SSH target"),
    ("ssh", "root@alpha:70000", "port 70000 is outside 1 … 65535"),
    ("address", "alpha", "is not an IP address"),
    ("interface", "eth/../x", "should match pattern"),
    ("role", "the-router", "a role is \"receiver\", \"emulator\" or a sender name"),
    ("max_sessions", 0, "greater than or equal to 1"),
    ("colour", "red", "unknown key"),
])
def test_host_errors_name_the_key_and_the_host(key, value, message):
    problems = _problems(_with("alpha", **{key: value}))
    assert list(problems) == [f"testbed.hosts.alpha.{key}"]
    assert message in problems[f"testbed.hosts.alpha.{key}"]


@pytest.mark.parametrize("raw, where", [
    (_with("alpha", password="hunter2"), "testbed.hosts.alpha.password"),
    (_with("alpha", passphrase="hunter2"), "testbed.hosts.alpha.passphrase"),
    ({"hosts": HOSTS, "password": "hunter2"}, "testbed.password"),
    (_with("alpha", ssh="root:hunter2@alpha"), "testbed.hosts.alpha.ssh"),
])
def test_passwords_are_refused_everywhere(raw, where):
    problems = _problems(raw)
    assert "fatpipe never takes passwords" in problems[where]
    assert "hunter2" not in str(problems)  # never echoed back


def test_roles_are_checked_across_hosts_naming_them():
    problems = _problems(_with("alpha", role="receiver"))
    assert "role 'receiver' is given to several hosts (alpha, beta)" in problems["testbed"]
    assert "no host is a sender" in problems["testbed"]
    assert "needs one receiver" in _problems({"hosts": {"alpha": HOSTS["alpha"]}})["testbed"]


STUDY = """
version = 1
[study]
name = "on-hosts"
backends = ["hosts"]
duration = "10s"
[path]
rate = "100Mbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
sender = "{sender}"
[testbed]
ssh_config = "lab/ssh_config"
[testbed.hosts.alpha]
ssh = "root@alpha"
address = "10.1.0.1"
interface = "eth1"
role = "s1"
[testbed.hosts.beta]
ssh = "root@beta"
address = "10.1.0.2"
interface = "eth1"
role = "receiver"
"""


def test_study_with_a_testbed_validates_it_against_its_flows(tmp_path):
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(sender="s1"))
    spec, _ = spec_mod.load(path)
    assert spec.testbed is not None and spec.testbed.hosts["alpha"].role == "s1"
    # --testbed accepts the study itself; relative paths are the file's.
    assert load_testbed(path).ssh_config == str(tmp_path / "lab" / "ssh_config")
    path.write_text(STUDY.format(sender="s2"))
    with pytest.raises(SpecError) as err:
        spec_mod.load(path)
    problems = dict(err.value.problems)
    assert "the flows name sender 's2' but no testbed host has role = 's2'" in problems["testbed.hosts"]
    assert "sender 's1' sends no flow" in problems["testbed.hosts.alpha.role"]


def test_testbed_file_holds_only_a_testbed_table(tmp_path):
    path = tmp_path / "testbed.toml"
    path.write_text("[testbed]\nconnect_timeout = \"3s\"\n[testbed.hosts.alpha]\nssh = \"root@alpha\"\n"
                    "address = \"10.1.0.1\"\ninterface = \"eth1\"\nrole = \"s1\"\n"
                    "[testbed.hosts.beta]\nssh = \"beta\"\naddress = \"10.1.0.2\"\ninterface = \"eth1\"\n"
                    "role = \"receiver\"\n")
    assert load_testbed(path).connect_timeout == 3.0
    path.write_text(path.read_text() + "[path]\nrate = \"1Gbit\"\n")
    with pytest.raises(SpecError, match="path: unknown key; a testbed file holds only a"):
        load_testbed(path)
    path.write_text("")
    with pytest.raises(SpecError, match="testbed: missing"):
        load_testbed(path)
