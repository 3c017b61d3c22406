"""One run of a study on the testbed's hosts (HostsBackend.run).

1. Connect to every host the run uses (the receiver, the senders its flows
   name, the emulator if the testbed has one); one unreachable host fails the
   run before anything starts anywhere.
2. Launch an agent on each (agent_client.py) and measure each host's clock
   offset through it (clock.py).
3. Push the traffic engine, set the sysctls the run needs (tcp_rmem,
   tcp_wmem from the study's host limits; no cached metrics), apply the path
   on the emulator (remote_path.py).
4. Run the traffic (remote_traffic.py), collect the samples, the RPCs and
   what the emulator counted; read every host's /proc/stat after the
   warm-up and at the end, and its test interface's offloads
   (hostmeasure.py); measure the clock offsets again. A stream whose
   socket ran another CCA than the one asked for fails the run.
5. Whatever happens: stop the run's processes and close every agent, which
   restores the sysctls, removes the qdiscs and rules and the run directory.

An end host's own root qdisc is never changed: a sender that asks for fq
(hosts.<name>.qdisc) gets Linux's internal pacing on its sockets instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...linuxpath.config import path_config
from ...linuxpath.flows import asked_max_pacing, flow_specs, rows_to_rpcs, rows_to_series, rows_to_transfers
from ...linuxpath.linkem import cross_rows
from ...linuxpath.procstat import cpu_measurement
from ...linuxpath.qdisc import sender_qdisc
from ...linuxpath.readback import check_ccas
from ...linuxpath.stats import PathStats
from ...schema import emulator_late
from ...testbed import EMULATOR_ROLE, RECEIVER_ROLE, Testbed
from ..base import RunOutcome, RunPlan
from . import clock, hostmeasure, remote_capture, transport
from .agent_client import AgentClient
from .remote_path import RemotePath
from .remote_traffic import RemoteHost, RemoteTraffic, push_engine

CLOCK_ROUNDS = 9
AGENT_CLOSE_S = 20.0


def run_hosts(plan: RunPlan) -> dict[str, str]:
    """role -> host name of every host `plan` uses (pure)."""
    tb = plan.testbed
    assert tb is not None
    roles = [RECEIVER_ROLE] + sorted({f.sender for f in plan.flows if f.kind != "cross"})
    if tb.host_for_role(EMULATOR_ROLE) is not None:
        roles.append(EMULATOR_ROLE)
    out = {}
    for role in roles:
        found = tb.host_for_role(role)
        if found is None:
            raise ValueError(f"run {plan.run_id}: no testbed host has role {role!r}")
        out[role] = found[0]
    return out


@dataclass(frozen=True)
class ClockReading:
    before: clock.ClockOffset
    after: clock.ClockOffset | None = None

    @property
    def uncertainty_s(self) -> float:
        """How far the offset used (the one before the run) may be off during
        it: the true offset lies within before ± its bound at the start and
        within after ± its bound at the end, and (a clock drifting steadily)
        between them in the run: the farthest point of that hull from before."""
        if self.after is None:
            return self.before.uncertainty_s
        drift = abs(self.after.offset_s - self.before.offset_s)
        return max(self.before.uncertainty_s, drift + self.after.uncertainty_s)

    def facts(self) -> dict[str, Any]:
        out = {"offset_s": self.before.offset_s, "uncertainty_s": self.uncertainty_s,
               "measured_uncertainty_s": self.before.uncertainty_s}
        if self.after is not None:
            out["offset_after_s"] = self.after.offset_s
        return out


async def _launch_agents(conns: dict[str, transport.HostConnection], run_id: str, lease_s: float) \
        -> dict[str, AgentClient]:
    """An agent on every host, or none: if one fails, the others are closed."""
    names = list(conns)
    # One directory per run and host: hosts may share a file system.
    results = await asyncio.gather(*(AgentClient.launch(conns[n], f"{run_id}.{n}", lease_s=lease_s) for n in names),
                                   return_exceptions=True)
    agents = {n: r for n, r in zip(names, results, strict=True) if isinstance(r, AgentClient)}
    failed = [r for r in results if not isinstance(r, AgentClient)]
    if failed:
        await _close_agents(agents)
        for r in failed:
            if not isinstance(r, transport.HostError):
                raise r
        raise transport.HostsFailed(failed)
    return agents


async def _close_agents(agents: dict[str, AgentClient]) -> list[str]:
    """Close every agent (each undoes what it did); the problems they report."""
    reports = await asyncio.gather(*(a.close(AGENT_CLOSE_S) for a in agents.values()), return_exceptions=True)
    problems = []
    for name, report in zip(agents, reports, strict=True):
        if isinstance(report, BaseException):
            problems.append(f"host {name}: closing its agent failed: {report}")
        elif report and report.get("problems"):
            problems.append(f"host {name}: {'; '.join(report['problems'])}")
    return problems


async def _clocks(agents: dict[str, AgentClient]) -> dict[str, clock.ClockOffset]:
    # One host after the other: concurrent round trips would queue behind
    # each other in this process and on its CPUs, and only the fastest counts.
    return {name: await clock.measure_offset(agent.clock_ns, CLOCK_ROUNDS) for name, agent in agents.items()}


async def _sysctls(agent: AgentClient, rmem_max: int, wmem_max: int) -> None:
    # As the kernel backend's end hosts (its path.py, _host_sysctls):
    # tcp_rmem[2] / tcp_wmem[2] bound the autotuned buffers; no cached ssthresh/RTT.
    await agent.sysctl_set("net.ipv4.tcp_rmem", f"4096 131072 {rmem_max}")
    await agent.sysctl_set("net.ipv4.tcp_wmem", f"4096 16384 {wmem_max}")
    await agent.sysctl_set("net.ipv4.tcp_no_metrics_save", "1")


async def _sleep_until(t_wall: float) -> None:
    await asyncio.sleep(max(0.0, t_wall - time.time()))


async def run_async(plan: RunPlan, workdir: Path) -> RunOutcome:
    tb: Testbed = plan.testbed  # type: ignore[assignment]
    hosts = run_hosts(plan)
    # No end host's root qdisc is changed: a sender that asked for fq paces
    # every socket itself (qdisc.sender_qdisc; docs/host-model.md, "qdisc").
    qdiscs = {name: sender_qdisc(h.qdisc, None) for name, h in plan.senders.items() if h.qdisc}
    eps = {ep.name: ep for ep in transport.endpoints(tb)}
    conns = await transport.connect_all([eps[name] for name in hosts.values()])
    agents: dict[str, AgentClient] = {}
    traffic: RemoteTraffic | None = None
    cleanup_problems: list[str] = []
    capture_facts: list[dict] = []
    try:
        agents = await _launch_agents(conns, plan.run_id, tb.lease)
        before = await _clocks(agents)

        def remote(role: str) -> RemoteHost:
            name = hosts[role]
            return RemoteHost(name, role, tb.hosts[name].address, agents[name], before[name].offset_s)

        receiver = remote(RECEIVER_ROLE)
        senders = {role: remote(role) for role in hosts if role not in (RECEIVER_ROLE, EMULATOR_ROLE)}
        for h in [receiver, *senders.values()]:
            await push_engine(h)
        await _sysctls(receiver.agent, plan.receiver.rmem_max_bytes, plan.receiver.wmem_max_bytes)
        for role, h in senders.items():
            limits = plan.senders[role]
            if h.name != receiver.name:
                await _sysctls(h.agent, limits.rmem_max_bytes, limits.wmem_max_bytes)
        path: RemotePath | None = None
        if EMULATOR_ROLE in hosts:
            emu_name = hosts[EMULATOR_ROLE]
            # A path that moves takes fatpipe's delay line (its dynamics are
            # the simulator's code; netem draws its own and has no schedule),
            # unless path.emulator = "netem" (checked against the probe
            # before the study: plan_problems).
            netem = plan.emulator == "netem" or (plan.emulator == "auto" and not plan.moves()
                                                 and await _has_netem(conns[emu_name], tb.hosts[emu_name].interface))
            path = RemotePath(path_config(plan), remote(EMULATOR_ROLE), conns[emu_name], tb.hosts[emu_name].interface,
                              netem, receiver.address, {r: h.address for r, h in senders.items()},
                              [f.group for f in plan.flows])
            await path.apply()

        cpu_window = hostmeasure.RemoteCpuWindow(conns)

        async def at_start(t0: float) -> None:
            if path is not None:
                await path.set_origin(t0)
            await _sleep_until(t0)
            if path is not None:
                await path.mark_start()
            await _sleep_until(t0 + max(0.0, plan.warmup_s))
            await asyncio.gather(*([path.end_warmup()] if path is not None else []),
                                 *([cpu_window.read("start")] if plan.warmup_s < plan.duration_s else []))
            await _sleep_until(t0 + plan.duration_s)
            await cpu_window.read("end")

        captures = remote_capture.dumps(plan, receiver, senders, {name: tb.hosts[name].interface for name in conns})
        for d in captures:  # before the engines connect: the handshakes are in the files
            await d.start()
        traffic = RemoteTraffic(receiver, senders)
        specs = flow_specs(plan, frozenset(n for n, q in qdiscs.items() if q.internal_pacing))
        result = await traffic.run(specs, plan.duration_s, plan.sample_interval_s, plan.seed, at_start)
        await traffic.stop_all()
        for d in captures:
            await d.stop()
            # The run's start on the host's clock: the file's times from it.
            capture_facts.append({**await d.fetch(workdir), "t0_wall_s": d.host.host_time(result.t0_wall_s)})
        offloads = await hostmeasure.offloads(conns, {name: tb.hosts[name].interface for name in conns})
        stats = await path.finish() if path is not None else \
            PathStats(emulator="none (the real path)", counts_bottleneck=False)
        if "linkem" in stats.details:  # what the emulator box counted, kept with the run
            (workdir / "linkem-stats.json").write_text(json.dumps(stats.details["linkem"]))
        after = await _clocks(agents)
        clocks = {n: ClockReading(before[n], after.get(n)) for n in agents}
    finally:
        try:
            if traffic is not None:
                with contextlib.suppress(Exception):
                    await traffic.stop_all()
            cleanup_problems = await _close_agents(agents)
        finally:
            await transport.close_all(conns)
    if cleanup_problems:
        raise RuntimeError("the hosts could not undo everything: " + "; ".join(cleanup_problems)
                           + " (`fatpipe clean --testbed FILE` retries)")
    # The name each group's engine was given: a socket reporting another
    # fails the run, naming it (after the hosts are clean again).
    # So does one whose MSS contradicts the plan (a smaller path MTU, no
    # timestamps); the hosts' buffers are their own, so the window scale is
    # recorded, not checked.
    check_ccas(result.streams, {f.group: f.cc for f in specs}, asked_max_pacing(specs),
               mss={f.group: f.mss_bytes for f in specs})
    outcome = _outcome(plan, hosts, result, stats, clocks, cpu_window.readings(), offloads)
    outcome.facts["qdisc"] = {name: q.facts() for name, q in qdiscs.items()}  # per sender that asked
    if capture_facts:
        outcome.facts["captures"] = capture_facts  # the pcap files (remote_capture.py)
    return outcome


async def _has_netem(conn: transport.HostConnection, interface: str) -> bool:
    from . import remote_probe
    from .doctor import parse_probe
    from .layout import script_source
    result = await conn.run(["python3", "-c", script_source(remote_probe.__file__), interface])
    probe = parse_probe(result.stdout)
    return bool(probe.qdiscs.get("netem", (False, ""))[0]) and probe.tc is not None


def _outcome(plan: RunPlan, hosts: dict[str, str], traffic, stats: PathStats, clocks: dict[str, ClockReading],
             cpu_readings: dict[str, tuple[str, str] | str], offloads: dict[str, Any]) -> RunOutcome:
    report = stats.report(traffic.rows, plan.duration_s, max(c.uncertainty_s for c in clocks.values()))
    roles: dict[str, list[str]] = {}
    for role, name in hosts.items():
        roles.setdefault(name, []).append(role)
    # The runs table's CPU figures are the end hosts' (senders, receiver).
    end_hosts = [name for role, name in hosts.items() if role != EMULATOR_ROLE]
    cpu_facts, cpu = cpu_measurement(cpu_readings, roles, end_hosts)
    facts = {"hosts": {role: name for role, name in hosts.items()},
             "clock": {name: c.facts() for name, c in clocks.items()},
             "emulator": stats.emulator, "bottleneck": stats.details.get("bottleneck"),
             "emulator_late": plan.rtt_s is not None and emulator_late(stats.late_p99_s, plan.rtt_s),
             "late_p50_s": stats.late_p50_s,
             "engine_errors": traffic.errors, "linkem": stats.details.get("linkem_summary"),
             # Per bulk flow group: each stream's first send(), seconds after
             # the group's planned start (the engine's start spread).
             "stream_first_send_s": {str(g): v for g, v in traffic.first_send_s.items()},
             "netem_interfaces": stats.details.get("netem_interfaces"),
             # Per sampled stream: TCP_CONGESTION, tcpi_snd_mss, ECN.
             "streams_read_back": [s.facts() for s in traffic.streams],
             "ccas_seen": {str(g): n for g, n in traffic.ccas_seen.items()},
             "offloads": offloads, "cpu": cpu_facts}
    # Cross groups' rows: what the emulator's linkem sent of them, sampled.
    series = rows_to_series(traffic.rows + cross_rows(stats.details.get("linkem", {})))
    return RunOutcome(series=series, rpcs=rows_to_rpcs(traffic.rpcs), transfers=rows_to_transfers(traffic.transfers),
                      path=report, cpu=cpu, facts=facts)


def run(plan: RunPlan, workdir: Path) -> RunOutcome:
    """Carry out `plan` on its testbed (Ctrl-C and SIGTERM unwind through
    the coroutine's ``finally``: the agents are closed, the hosts cleaned)."""
    try:
        return asyncio.run(run_async(plan, Path(workdir)))
    except transport.HostsFailed as e:
        raise RuntimeError(str(e)) from None
    finally:
        sys.stderr.flush()
