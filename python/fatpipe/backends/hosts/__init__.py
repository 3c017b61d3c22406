"""The hosts backend: the same study on real machines reached over SSH.

The testbed (fatpipe.testbed) names the hosts: senders, a receiver and an
optional emulator box. :meth:`HostsBackend.check` reaches every host before
a study starts (`fatpipe doctor --testbed FILE`'s checks, doctor.py) and
refuses, naming the host, what the hosts cannot do; each run then goes
through an agent on every host it uses (hostrun.py: agent_client.py,
remote_path.py, remote_traffic.py) and leaves nothing behind on them.
`fatpipe clean --testbed FILE` (cleanup.py) removes what a run killed with
its controller left.

A backend that works on a testbed sets ``takes_testbed = True``: the CLI
then hands ``testbed=`` to its ``doctor()`` and ``clean()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...linuxpath.config import (
    dynamics_refusal,
    group_losses,
    one_loss_refusal,
    path_config,
    state_trigger_refusal,
)
from ...linuxpath.ecn import qdisc_refusal
from ...linuxpath.netem_map import missing_netem
from ...linuxpath.qdisc import bottleneck_qdiscs
from ...testbed import EMULATOR_ROLE, RECEIVER_ROLE, Testbed
from ..base import Backend, BackendUnavailable, RunOutcome, RunPlan

NO_TESTBED = ("the hosts backend runs on a testbed: add a [testbed] section to the study or pass "
              "`fatpipe run --testbed FILE` (docs/hosts.md)")


class NoTestbedReport:
    """doctor() without a testbed: says what to pass."""

    usable = False
    verdict = "give a testbed to check: fatpipe doctor --testbed FILE (see docs/hosts.md)"

    def render(self) -> str:
        return f"  {self.verdict}"


def plan_problems(plan: RunPlan, report: Any) -> list[str]:
    """What the testbed's hosts (a doctor report) cannot do of `plan` (pure)."""
    problems = []
    qdisc_aqm = bool(bottleneck_qdiscs(plan.aqm))  # fq_codel: a qdisc the emulator applies
    ecn_keys = [k for k in plan.asks_for_ecn() if not (qdisc_aqm and k.startswith("path.aqm"))]
    if ecn_keys:
        problems.append(f"run {plan.run_id}: {', '.join(ecn_keys)}: the hosts backend does not set up ECN or a "
                        "marking bottleneck yet (the sim backend does)")
    if plan.receiver.gro:
        problems.append(f"run {plan.run_id}: hosts.receiver.gro = true: the hosts backend does not set the "
                        "receiver's GRO (its NIC's own setting applies); leave gro out or use the sim backend")
    tb = plan.testbed
    emulator = tb.host_for_role(EMULATOR_ROLE) if tb is not None else None
    if emulator is not None and (plan.rate_bps is None or plan.rtt_s is None):
        problems.append(f"run {plan.run_id}: path.rate and path.rtt are needed: testbed host {emulator[0]} is the "
                        "emulator and applies the path (leave the emulator out of the testbed to run on the path "
                        "as it is)")
    # The emulator's netem applies the path where it has netem, unless the
    # path moves (path.emulator = "auto") or linkem is asked for
    # (hostrun.run_on_hosts); path.emulator = "netem" always.
    may_take_netem = plan.emulator == "netem" or (plan.emulator == "auto" and not plan.moves())
    refused = one_loss_refusal(group_losses(plan), f"netem on host {emulator[0]} (emulator)") \
        if emulator and may_take_netem else None

    def emulator_netem() -> bool | None:
        """Whether the emulator's probe found netem (None: no probe)."""
        probe = report.host(emulator[0]).probe
        return None if probe is None else bool(probe.qdiscs.get("netem", (False, ""))[0] and probe.tc is not None)

    if refused and (plan.emulator == "netem" or emulator_netem()):
        # Where the emulator has netem (hostrun._has_netem) it applies one
        # loss to every flow group; linkem, used otherwise, applies each's.
        problems.append(f"run {plan.run_id}: {refused}")
    if emulator is None and plan.emulator != "auto":
        problems.append(f"run {plan.run_id}: path.emulator = {plan.emulator!r} needs an emulator host in the "
                        "testbed (its delay line)")
    elif plan.emulator == "netem" and emulator_netem() is False:
        problems.append(f"run {plan.run_id}: host {emulator[0]} (emulator): {missing_netem(f'host {emulator[0]}')}")
    if refused := state_trigger_refusal(plan.dynamics, plan.flows):
        problems.append(f"run {plan.run_id}: {refused}")
    elif emulator is None and plan.moves():
        problems.append(f"run {plan.run_id}: {', '.join(plan.moving_keys())}: a path that moves needs an emulator "
                        "host in the testbed (its delay line applies them)")
    elif plan.moves():
        # A path that moves takes fatpipe's delay line on the emulator
        # (hostrun: netem only with path.emulator = "netem", for what its
        # options express); a qdisc discipline is refused with linkem.
        netem = plan.emulator == "netem"
        try:
            refused = dynamics_refusal(path_config(plan), "netem" if netem else "linkem-nfqueue",
                                       "tbf" if netem else "linkem")
        except ValueError as e:  # flows of one sender disagree (refused on their own below)
            refused = str(e)
        if refused:
            problems.append(f"run {plan.run_id}: host {emulator[0]} (emulator): {refused}")
    if qdisc_aqm and emulator is None:
        problems.append(f"run {plan.run_id}: path.aqm = {plan.aqm['kind']!r} needs an emulator host in the testbed "
                        "(it applies the qdisc on its interface toward the receiver)")
    elif qdisc_aqm:
        probe = report.host(emulator[0]).probe
        available = {k for k, (ok, _) in probe.qdiscs.items() if ok} if probe is not None else set()
        refused = qdisc_refusal(plan.aqm, available)
        if refused:
            problems.append(f"run {plan.run_id}: host {emulator[0]} (emulator): {refused}")
    for f in plan.flows:
        if f.kind == "cross":
            continue  # no process: the emulator's linkem offers its packets to its bottleneck
        if f.cwnd_clamp is not None:
            problems.append(f"run {plan.run_id}: flows.{f.group}.cwnd_clamp: the hosts backend does not clamp "
                            "cwnd yet (the sim and kernel backends do)")
        if f.kind not in ("bulk", "rpc", "transfer"):
            problems.append(f"run {plan.run_id}: flow group {f.group}: kind={f.kind!r} is not supported by the "
                            "hosts backend (bulk, rpc, transfer, cross)")
        # The sender's sockets carry the CCA, and so do the receiver's: a bulk
        # receiver's listener and an RPC client (engine.run_receiver, rpc_engine.py).
        for role in (f.sender, RECEIVER_ROLE):
            found = tb.host_for_role(role) if tb is not None else None
            if found is None:
                continue
            probe = report.host(found[0]).probe
            if probe is not None and probe.ccas is not None and f.cc not in probe.ccas:
                problems.append(f"run {plan.run_id}: flow group {f.group}: host {found[0]} ({role}) has no CCA "
                                f"{f.cc!r} (it has: {' '.join(probe.ccas)})")
    return problems


class HostsBackend(Backend):
    name = "hosts"
    takes_testbed = True
    measures_path = True  # without an emulator host the path is what it is

    def __init__(self) -> None:
        self._facts: dict[str, Any] = {}

    def max_parallel_runs(self, jobs: int) -> int:  # noqa: ARG002 - runs share the testbed's path
        return 1

    def check(self, plans: list[RunPlan]) -> None:
        testbeds = {id(p.testbed): p.testbed for p in plans}
        if not plans:
            return
        if None in testbeds.values():
            raise BackendUnavailable(NO_TESTBED)
        from .doctor import doctor
        problems: list[str] = []
        for testbed in testbeds.values():
            report = doctor(testbed)
            if not report.usable:
                raise BackendUnavailable(report.verdict)
            for p in plans:
                if p.testbed is testbed:
                    problems += plan_problems(p, report)
            self._facts = {"testbed": {h.name: h.facts() for h in report.hosts}}
        if problems:
            raise BackendUnavailable("; ".join(dict.fromkeys(problems)))

    def facts(self) -> dict[str, Any]:
        return dict(self._facts)

    def run(self, plan: RunPlan, workdir: Path) -> RunOutcome:
        if plan.testbed is None:
            raise BackendUnavailable(NO_TESTBED)
        from .hostrun import run
        return run(plan, workdir)

    def doctor(self, testbed: Testbed | None = None) -> Any:
        if testbed is None:
            return NoTestbedReport()
        from .doctor import doctor
        return doctor(testbed)

    def clean(self, testbed: Testbed | None = None) -> list[str]:
        if testbed is None:
            return []  # nothing of this backend lives on the controller
        from .cleanup import clean
        return clean(testbed)

    def clean_stale(self) -> list[str]:
        # Leftovers live on the testbed's hosts, which a study reaches only
        # once it runs there; `fatpipe clean --testbed FILE` removes them.
        return []
