"""`fatpipe doctor --testbed FILE`: what each host of a testbed offers.

Per host, over its SSH connection (all hosts at once): reachable? root?
kernel, Python, CCAs, the interface's MTU and whether it carries the
host's test address, netem and tbf on the emulator (with the method that
decided, remote_probe.py), and the clock offset with its uncertainty
(clock.py). Then a verdict per role. Nothing on a host is changed.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from ...linuxpath.checks import Check
from ...linuxpath.qdisc import QDISC_CONFIG
from ...testbed import EMULATOR_ROLE, RECEIVER_ROLE, Testbed, TestbedHost
from . import clock, layout, remote_probe, transport

PROBE_TIMEOUT_S = 30.0
# What remote_probe.py reports beyond the checks: the host's facts for the manifest.
FACT_KEYS = ("machine", "cpu_model", "cpus", "driver", "offloads", "tcp_rmem", "tcp_wmem")


@dataclass(frozen=True)
class Probe:
    """What remote_probe.py reported (parsed by :func:`parse_probe`)."""

    uid: int
    kernel: str
    python: str
    ccas: tuple[str, ...] | None
    allowed_ccas: tuple[str, ...] | None
    mtu_bytes: int | None
    addresses: tuple[str, ...] | None  # None: `ip` is missing on the host
    tc: str | None
    qdiscs: dict[str, tuple[bool | None, str]]  # kind -> (available, how it was decided)
    facts: dict = field(default_factory=dict)  # machine, cpu_model, driver, offloads, tcp_rmem, ... (manifest)


def parse_probe(text: str) -> Probe:
    """remote_probe.py's JSON → Probe (pure); ValueError if malformed."""
    try:
        d = json.loads(text)
        return Probe(
            uid=int(d["uid"]), kernel=str(d["kernel"]), python=str(d["python"]),
            ccas=tuple(d["ccas"]) if d["ccas"] is not None else None,
            allowed_ccas=tuple(d["allowed_ccas"]) if d["allowed_ccas"] is not None else None,
            mtu_bytes=d["mtu"], addresses=tuple(d["addresses"]) if d["addresses"] is not None else None,
            tc=d["tc"],
            qdiscs={k: (v["available"], str(v["how"])) for k, v in d["qdiscs"].items()},
            facts={k: d.get(k) for k in FACT_KEYS if k in d})
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"the host's probe answered something else than expected ({e}): {text[:200]!r}") from None


def probe_checks(host: TestbedHost, probe: Probe) -> list[Check]:
    """The checks one probe answers (pure)."""
    checks = [
        Check("root", probe.uid == 0, "uid 0" if probe.uid == 0 else
              f"uid {probe.uid}: the agent changes sysctls and qdiscs and needs root (ssh as root, or a user "
              "whose commands run as root)"),
        Check("kernel", True, probe.kernel, required=False),
        Check("python3", True, probe.python, required=False),
        Check("ccas", bool(probe.ccas), " ".join(probe.ccas) if probe.ccas else
              "tcp_available_congestion_control unreadable"),
    ]
    if probe.mtu_bytes is None:
        checks.append(Check("interface", False, f"{host.interface}: no such interface on this host"))
    elif probe.addresses is None:
        checks.append(Check("interface", True, f"{host.interface}: mtu {probe.mtu_bytes} (no `ip`: its "
                                               "addresses are not checked)"))
    else:
        has = host.address in probe.addresses
        checks.append(Check("interface", has, f"{host.interface}: mtu {probe.mtu_bytes}, "
                            + (f"has {host.address}" if has else
                               f"does not have {host.address} (has {', '.join(probe.addresses) or 'none'})")))
    if host.role == EMULATOR_ROLE:
        checks.append(Check("tc", probe.tc is not None, probe.tc or "tc (iproute2) not found"))
        for kind in QDISC_CONFIG:
            available, how = probe.qdiscs.get(kind, (None, "not probed"))
            word = {True: "present", False: "absent", None: "unknown"}[available]
            # tbf is the bottleneck; without netem fatpipe's delay line
            # adds delay and loss instead, as in the kernel backend;
            # fq_codel is needed by path.aqm = "fq_codel" only.
            stand_in = {"netem": "; fatpipe's delay line would stand in",
                        "fq_codel": "; path.aqm = 'fq_codel' is refused"}.get(kind, "")
            checks.append(Check(kind, bool(available), f"{word}: {how}" + ("" if available else stand_in),
                                required=kind == "tbf"))
    return checks


@dataclass
class HostReport:
    name: str
    host: TestbedHost
    checks: list[Check] = field(default_factory=list)
    offset: clock.ClockOffset | None = None
    probe: Probe | None = None

    def facts(self) -> dict:
        """What the study's manifest records of this host."""
        p = self.probe
        out: dict = {"role": self.host.role, "ssh": str(self.host.ssh), "address": self.host.address,
                     "interface": self.host.interface}
        if p is not None:
            out.update({"kernel": p.kernel, "python": p.python, "ccas": list(p.ccas or ()), "mtu": p.mtu_bytes,
                        "qdiscs": {k: v[0] for k, v in p.qdiscs.items()}, **p.facts})
        if self.offset is not None:
            out["clock_offset_s"], out["clock_uncertainty_s"] = self.offset.offset_s, self.offset.uncertainty_s
        return out

    @property
    def ready(self) -> bool:
        return all(c.ok for c in self.checks if c.required)

    def verdict(self) -> str:
        role = f"sender {self.host.role}" if self.host.is_sender else self.host.role
        if self.ready:
            return f"{role} on {self.name}: ready"
        missing = "; ".join(f"{c.name}: {c.detail}" for c in self.checks if c.required and not c.ok)
        return f"{role} on {self.name}: NOT READY ({missing})"

    def render(self) -> str:
        lines = [f"  host {self.name} ({self.host.ssh}), role {self.host.role}:"]
        lines += [f"    [{'ok' if c.ok else ('MISSING' if c.required else 'no')}] {c.name}: {c.detail}"
                  for c in self.checks]
        return "\n".join(lines)


@dataclass
class HostsDoctorReport:
    """Per host checks and a verdict per role; ``render()`` for the CLI."""

    hosts: list[HostReport]

    @property
    def usable(self) -> bool:
        return all(h.ready for h in self.hosts)

    @property
    def verdict(self) -> str:
        lines = [h.verdict() for h in sorted(self.hosts, key=_role_order)]
        head = "testbed ready" if self.usable else "testbed NOT ready"
        return "\n".join([f"{head}:"] + [f"  {line}" for line in lines])

    def host(self, name: str) -> HostReport:
        return next(h for h in self.hosts if h.name == name)

    def render(self) -> str:
        return "\n".join([h.render() for h in self.hosts] + [self.verdict])


def _role_order(h: HostReport) -> tuple[int, str]:
    return ({RECEIVER_ROLE: 2, EMULATOR_ROLE: 1}.get(h.host.role, 0), h.host.role)


async def _check_host(ep: transport.Endpoint, host: TestbedHost) -> HostReport:
    report = HostReport(ep.name, host)
    started = time.monotonic()
    try:
        conn = await transport.connect(ep)
    except transport.HostError as e:
        report.checks.append(Check("reachable", False, e.problem))
        return report
    try:
        report.checks.append(Check("reachable", True, f"SSH in {time.monotonic() - started:.2f} s"))
        result = await conn.run(["python3", "-c", layout.script_source(remote_probe.__file__), host.interface],
                                timeout_s=PROBE_TIMEOUT_S, check=False)
        if not result.ok:
            report.checks.append(Check("python3", False, f"the probe did not run (exit {result.exit_status}): "
                                       f"{result.stderr.strip()[-300:] or 'no stderr'}; fatpipe's agent needs "
                                       "python3 on every host"))
        else:
            try:
                report.probe = parse_probe(result.stdout)
                report.checks += probe_checks(host, report.probe)
            except ValueError as e:
                report.checks.append(Check("probe", False, str(e)))
        try:
            report.offset = await clock.measure_host(conn)
            report.checks.append(Check("clock", True, report.offset.render(), required=False))
        except (ValueError, transport.HostError) as e:
            report.checks.append(Check("clock", False, str(e), required=False))
    except transport.HostError as e:
        report.checks.append(Check("connection", False, e.problem))
    finally:
        await conn.close()
    return report


async def doctor_async(testbed: Testbed) -> HostsDoctorReport:
    eps = transport.endpoints(testbed)
    reports = await asyncio.gather(*(_check_host(ep, testbed.hosts[ep.name]) for ep in eps))
    return HostsDoctorReport(list(reports))


def doctor(testbed: Testbed) -> HostsDoctorReport:
    transport.asyncssh_module()  # BackendUnavailable when the extra is missing
    return asyncio.run(doctor_async(testbed))
