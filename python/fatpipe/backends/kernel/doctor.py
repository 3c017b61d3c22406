"""What can the kernel backend do on this machine? (`fatpipe doctor`)

The verdict is what a run would do: the kernel backend's `check()` refuses a
study with this report's verdict when it is not usable, and builds or starts
exactly the delay line the report names."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from ...linuxpath import cmd, parse, workspace_binary
from ...linuxpath import linkem as delay_line
from ...linuxpath.checks import Check
from ...linuxpath.qdisc import QDISC_CONFIG
from . import privilege
from .netns import Namespace, add_veth, new_prefix
from .ownership import OwnershipRecord
from .path import qdisc_available


@dataclass(frozen=True)
class SystemTool:
    """A program the kernel backend runs, and the Debian package that has it."""

    command: str
    package: str
    use: str
    required: bool


SYSTEM_TOOLS = (
    SystemTool("ip", "iproute2", "network namespaces, veth links, routes", True),
    SystemTool("tc", "iproute2", "the bottleneck (tbf, fq_codel) and netem", True),
    SystemTool("sysctl", "procps", "per-namespace TCP settings", True),
    SystemTool("ethtool", "ethtool", "segmentation offloads of the path's links", True),
    # Needed only without netem: the nfqueue probe decides (required = no netem).
    SystemTool("iptables", "iptables", "NFQUEUE to the delay line when the kernel has no netem", False),
    SystemTool("iperf3", "iperf3", "cross-check of the traffic engine; captures for `fatpipe import iperf3`", False),
    SystemTool("bpftool", "bpftool", "`fatpipe clean` lists struct_ops left by other tools", False),
)

LINKEM = "fatpipe-linkem"
NOT_BUILT = "not built yet"  # the linkem check's detail when a run would build it


def tool_check(tool: SystemTool) -> Check:
    path = cmd.which(tool.command)
    detail = path or f"not found on PATH ({tool.use}): apt-get install {tool.package}"
    return Check(tool.command, bool(path), detail, required=tool.required)


def missing_packages(report: list[Check]) -> list[str]:
    """The Debian packages of the system tools a report found missing (pure)."""
    by_command = {t.command: t.package for t in SYSTEM_TOOLS}
    return sorted({by_command[c.name] for c in report if c.name in by_command and not c.ok})


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
        if by.get("netem") and by["netem"].ok:
            emulator = "netem"
        else:
            emulator = f"{LINKEM} over NFQUEUE"
            if LINKEM in by and by[LINKEM].detail.startswith(NOT_BUILT):
                emulator += " (built with cargo on first use)"
        ccas = by["ccas"].detail if "ccas" in by else "?"
        disciplines = ["droptail"] + [k for k, check in (("ce_threshold", LINKEM), ("fq_codel", "fq_codel"))
                                      if check in by and by[check].ok]
        return f"kernel backend usable: delay/loss by {emulator}; CCAs {ccas}; path.aqm {', '.join(disciplines)}"

    def render(self) -> str:
        lines = [f"  [{'ok' if c.ok else ('MISSING' if c.required else 'no')}] {c.name}: {c.detail}" for c in self]
        packages = missing_packages(self)
        if packages:
            lines.append(f"  system packages to install: apt-get install {' '.join(packages)}")
        return "\n".join(lines + [self.verdict])



def linkem_check(netem: bool) -> Check:
    """The delay line: found (in the installed package, on PATH, in the
    source tree's target/), or buildable from the source tree, or missing.
    Required when the kernel has no netem (the run would need it)."""
    linkem = delay_line.find_linkem()
    if linkem is not None:
        return Check(LINKEM, True, str(linkem), required=not netem)
    why = workspace_binary.unbuildable("linkem")
    if why is None:
        return Check(LINKEM, True, f"{NOT_BUILT}: a run builds it with cargo from the source tree",
                     required=not netem)
    return Check(LINKEM, False, f"missing: {why}; install fatpipe from its wheel (pip install …), "
                                f"which carries it, or set FATPIPE_LINKEM", required=not netem)


def available_ccas() -> list[str]:
    try:
        return parse.available_ccas(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text())
    except OSError:
        return []


def qdisc_checks(ns: Namespace, ifname: str) -> list[Check]:
    """One check per qdisc a path may use (qdisc.QDISC_CONFIG: netem, tbf,
    fq_codel, fq, red): each added to `ifname` and removed again. The
    backend uses what these find (netem or linkem as the delay line;
    fq_codel for path.aqm)."""
    checks = []
    for kind, option in QDISC_CONFIG.items():
        ok = qdisc_available(ns, ifname, kind)
        checks.append(Check(kind, ok, f"tc qdisc {kind}" + ("" if ok else f": not in the running kernel ({option})"),
                            required=False))
    return checks


def _probe_in_namespace(report: DoctorReport) -> None:
    """The qdiscs and NFQUEUE probed in a throw-away fp- namespace."""
    prefix = new_prefix()
    record = OwnershipRecord.for_this_process(prefix)
    ns = Namespace.create(f"{prefix}-doctor", record)
    try:
        peer = Namespace.create(f"{prefix}-doctor2", record)
        try:
            add_veth(ns, "p0", peer, "p1", 1500)
            report.extend(qdisc_checks(ns, "p0"))
            netem = any(c.name == "netem" and c.ok for c in report)
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
    report = DoctorReport()
    root = privilege.is_root()
    report.append(Check("root", root, "running as root" if root else "needs root (network namespaces)"))
    report.append(Check("kernel", True, platform.release(), required=False))
    report.extend(tool_check(t) for t in SYSTEM_TOOLS)
    ccas = available_ccas()
    report.append(Check("ccas", bool(ccas), " ".join(ccas) or "none listed"))
    if root and cmd.which("ip") and cmd.which("tc"):
        try:
            _probe_in_namespace(report)
        except Exception as e:  # noqa: BLE001 - report, don't crash
            report.append(Check("namespaces", False, f"cannot create a test namespace: {e}"))
    netem = any(c.name == "netem" and c.ok for c in report)
    report.append(linkem_check(netem))
    report.append(_bpf_ccas_check(ccas))
    return report
