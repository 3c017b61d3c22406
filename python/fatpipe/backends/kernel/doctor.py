"""What can the kernel backend do on this machine? (`fatpipe doctor`)"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from . import cmd, parse
from .netns import Namespace, add_veth, new_prefix
from .ownership import OwnershipRecord


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True  # the kernel backend cannot run without it


class DoctorReport(list):
    """A list of Check, plus `verdict` and `render()` for the CLI."""

    @property
    def usable(self) -> bool:
        return all(c.ok for c in self if c.required)

    @property
    def verdict(self) -> str:
        if not self.usable:
            missing = ", ".join(c.name for c in self if c.required and not c.ok)
            return f"kernel backend unavailable: missing {missing}"
        by = {c.name: c for c in self}
        emulator = "netem" if by.get("netem") and by["netem"].ok else "fatpipe-linkem over NFQUEUE"
        ccas = by["ccas"].detail if "ccas" in by else "?"
        return f"kernel backend usable: delay/loss by {emulator}; CCAs {ccas}"

    def render(self) -> str:
        lines = [f"  [{'ok' if c.ok else ('MISSING' if c.required else 'no')}] {c.name}: {c.detail}" for c in self]
        return "\n".join(lines + [self.verdict])


def available_ccas() -> list[str]:
    try:
        return parse.available_ccas(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text())
    except OSError:
        return []


def _probe_in_namespace(report: DoctorReport) -> None:
    """netem, tbf and NFQUEUE probed in a throw-away fp- namespace."""
    prefix = new_prefix()
    record = OwnershipRecord.for_this_process(prefix)
    ns = Namespace.create(f"{prefix}-doctor", record)
    try:
        peer = Namespace.create(f"{prefix}-doctor2", record)
        try:
            add_veth(ns, "p0", peer, "p1", 1500)
            netem = cmd.ok(ns.exec_args(["tc", "qdisc", "add", "dev", "p0", "root", "netem", "delay", "1ms"]))
            cmd.ok(ns.exec_args(["tc", "qdisc", "del", "dev", "p0", "root"]))
            report.append(Check("netem", netem, "tc qdisc netem" + ("" if netem else " not in this kernel"),
                                required=False))
            tbf = cmd.ok(ns.exec_args(["tc", "qdisc", "add", "dev", "p0", "root", "tbf", "rate", "1gbit",
                                       "burst", "100000", "limit", "100000"]))
            report.append(Check("tbf", tbf, "tc qdisc tbf", required=False))
            nfq = []
            for binary in ("iptables-legacy", "iptables"):
                if cmd.which(binary) and cmd.ok(ns.exec_args(
                        [binary, "-w", "-A", "FORWARD", "-o", "p0", "-j", "NFQUEUE", "--queue-num", "7"])):
                    nfq.append(binary)
                    cmd.ok(ns.exec_args([binary, "-w", "-F", "FORWARD"]))
            report.append(Check("nfqueue", bool(nfq) or netem,
                                f"iptables -j NFQUEUE works with {', '.join(nfq)}" if nfq else "no iptables NFQUEUE",
                                required=not netem))
        finally:
            peer.delete()
    finally:
        ns.delete()


def _bpf_ccas_check(kernel: list[str]) -> Check:
    """Which CCAs come from where: the kernel's own, and fatpipe's BPF ports
    (docs/bpf-ccas.md) that a run would register for the names the kernel
    lacks. Does not build the loader."""
    from . import bpfcca

    btf = bpfcca.BTF.exists()
    try:
        binary, ports = bpfcca.loader(build=False)
        stale = " (stale: rebuilt on first use)" if bpfcca.is_stale(ports) else ""
        where = f"{binary}{stale}"
    except (OSError, RuntimeError) as e:
        ports, where = {}, f"loader not built ({e})"
    sources = bpfcca.cca_sources(sorted(set(ports)), kernel, ports)
    loadable = sorted(n for n, s in sources.items() if s == bpfcca.FATPIPE_BPF)
    shadowed = sorted(n for n, s in sources.items() if s == bpfcca.KERNEL)
    detail = (f"kernel's own: {' '.join(kernel) or 'none'}; fatpipe BPF ports: {' '.join(loadable) or 'none'}"
              + (f"; kernel's own used instead of the ports {' '.join(shadowed)}" if shadowed else "")
              + f"; BTF {'present' if btf else 'absent'}; {where}")
    return Check("bpf-ccas", btf and bool(ports), detail, required=False)


def doctor() -> DoctorReport:
    """Run every check. Returns a DoctorReport: a ``list[Check]`` (name, ok,
    detail, required) with ``.usable``, ``.verdict`` and ``.render()``."""
    from .delayline import find_linkem

    report = DoctorReport()
    root = os.geteuid() == 0
    report.append(Check("root", root, "running as root" if root else "needs root (network namespaces)"))
    report.append(Check("kernel", True, platform.release(), required=False))
    for tool in ("ip", "tc", "ethtool"):
        path = cmd.which(tool)
        report.append(Check(tool, bool(path), path or f"{tool} not found", required=tool != "ethtool"))
    ccas = available_ccas()
    report.append(Check("ccas", bool(ccas), " ".join(ccas) or "none listed"))
    if root and cmd.which("ip") and cmd.which("tc"):
        try:
            _probe_in_namespace(report)
        except Exception as e:  # noqa: BLE001 - report, don't crash
            report.append(Check("namespaces", False, f"cannot create a test namespace: {e}"))
    linkem = find_linkem()
    report.append(Check("fatpipe-linkem", linkem is not None,
                        str(linkem) if linkem else "not built (cargo build --release -p fatpipe-linkem)",
                        required=False))
    report.append(_bpf_ccas_check(ccas))
    iperf3 = cmd.which("iperf3")
    report.append(Check("iperf3", bool(iperf3), iperf3 or "absent (cross-check unavailable)", required=False))
    return report
