"""`fatpipe doctor`'s verdict is what a run would do: a piece missing (a
system tool, root, the delay line) makes both doctor and the kernel
backend's check say the same thing. No namespace is created: the
namespace probe is replaced where it would run."""

from __future__ import annotations

import importlib
import os
import shutil
import textwrap

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.kernel import KernelBackend, doctor, privilege
from fatpipe.backends.kernel.doctor import SYSTEM_TOOLS, missing_packages
from fatpipe.linuxpath import workspace_binary
from fatpipe.linuxpath.checks import Check
from fatpipe.study import plan_runs

doctor_module = importlib.import_module("fatpipe.backends.kernel.doctor")
delayline = importlib.import_module("fatpipe.linuxpath.linkem")

STUDY = """
version = 1
[study]
name = "doctor-verdict"
backends = ["kernel"]
duration = "2s"
repetitions = 1
[path]
rate = "100Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
"""


def _plans(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(STUDY))
    spec, raw = spec_mod.load(p)
    return plan_runs(spec, raw)


def _path_without(tmp_path, missing: str) -> str:
    """A PATH directory holding every system tool (and cargo) but `missing`."""
    d = tmp_path / "bin"
    d.mkdir()
    for name in {t.command for t in SYSTEM_TOOLS} | {"cargo", "clang"}:
        real = shutil.which(name)
        if real and name != missing:
            (d / name).symlink_to(real)
    return str(d)


@pytest.fixture
def as_root_without_probe(monkeypatch):
    """Doctor as root, with the namespace probe reporting a kernel without
    netem (built without CONFIG_NET_SCH_NETEM) whose iptables NFQUEUE works."""
    monkeypatch.setattr(privilege, "is_root", lambda: True)

    def probe(report):
        report.append(Check("netem", False, "tc qdisc netem: not in the running kernel", required=False))
        report.append(Check("tbf", True, "tc qdisc tbf", required=False))
        report.append(Check("nfqueue", True, "iptables -j NFQUEUE works", required=True))

    monkeypatch.setattr(doctor_module, "_probe_in_namespace", probe)
    monkeypatch.setattr(doctor_module, "available_ccas", lambda: ["reno", "cubic"])
    monkeypatch.setattr("fatpipe.backends.kernel.available_ccas", lambda: ["reno", "cubic"])


def test_a_tool_missing_from_path_is_named_with_its_debian_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _path_without(tmp_path, "tc"))
    report = doctor()
    tc = next(c for c in report if c.name == "tc")
    assert not tc.ok and tc.required
    assert "apt-get install iproute2" in tc.detail
    assert not report.usable
    assert "tc" in report.verdict and report.verdict.startswith("kernel backend unavailable")
    assert "system packages to install: apt-get install iproute2" in report.render()


def test_missing_packages_lists_each_debian_package_once():
    report = [Check("ip", False, ""), Check("tc", False, ""), Check("ethtool", False, ""), Check("ip2", False, "")]
    assert missing_packages(report) == ["ethtool", "iproute2"]


def test_without_root_doctor_and_the_run_refuse_alike(tmp_path, monkeypatch):
    monkeypatch.setattr(privilege, "is_root", lambda: False)
    report = doctor()
    assert not report.usable and "root" in report.verdict
    with pytest.raises(BackendUnavailable, match="needs root"):
        KernelBackend().check(_plans(tmp_path))


@pytest.mark.usefixtures("as_root_without_probe")
def test_no_netem_and_no_delay_line_makes_the_backend_unusable_and_the_run_refused(
        tmp_path, monkeypatch):
    monkeypatch.setattr(delayline, "find_linkem", lambda: None)
    monkeypatch.setattr(workspace_binary, "unbuildable", lambda _crate: "no source tree to build it from")
    report = doctor()
    linkem = next(c for c in report if c.name == "fatpipe-linkem")
    assert not linkem.ok and linkem.required
    assert not report.usable
    assert report.verdict == "kernel backend unavailable: missing fatpipe-linkem"
    assert "delay/loss by" not in report.render()
    with pytest.raises(BackendUnavailable) as refused:
        KernelBackend().check(_plans(tmp_path))
    assert str(refused.value) == report.verdict


@pytest.mark.usefixtures("as_root_without_probe")
def test_a_delay_line_the_source_tree_can_build_is_usable_and_said_to_be_built_on_first_use(
        monkeypatch):
    monkeypatch.setattr(delayline, "find_linkem", lambda: None)
    monkeypatch.setattr(workspace_binary, "unbuildable", lambda _crate: None)
    report = doctor()
    assert report.usable
    assert report.verdict.startswith("kernel backend usable: delay/loss by fatpipe-linkem over NFQUEUE "
                                     "(built with cargo on first use)")


@pytest.mark.usefixtures("as_root_without_probe")
def test_the_delay_line_a_wheel_carries_is_found_first(tmp_path, monkeypatch):
    packaged = tmp_path / "_bin"
    packaged.mkdir()
    binary = packaged / "fatpipe-linkem"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setattr(workspace_binary, "PACKAGED_DIR", packaged)
    monkeypatch.delenv("FATPIPE_LINKEM", raising=False)
    assert delayline.find_linkem() == binary
    report = doctor()
    assert next(c for c in report if c.name == "fatpipe-linkem").detail == str(binary)
    assert report.verdict.startswith("kernel backend usable: delay/loss by fatpipe-linkem over NFQUEUE;")


@pytest.mark.usefixtures("as_root_without_probe")
def test_with_netem_the_delay_line_is_optional(monkeypatch):
    def probe(report):
        report.append(Check("netem", True, "tc qdisc netem", required=False))

    monkeypatch.setattr(doctor_module, "_probe_in_namespace", probe)
    monkeypatch.setattr(delayline, "find_linkem", lambda: None)
    monkeypatch.setattr(workspace_binary, "unbuildable", lambda _crate: "no source tree")
    report = doctor()
    assert report.usable and "delay/loss by netem" in report.verdict


def test_is_root_is_the_effective_uid_test():
    assert privilege.is_root() == (os.geteuid() == 0)
