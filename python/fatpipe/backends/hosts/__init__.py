"""The hosts backend: the same study on real machines reached over SSH.

What exists so far: the testbed description (fatpipe.testbed), the SSH
transport (transport.py), clock offsets (clock.py), `fatpipe doctor
--testbed FILE` (doctor.py), `fatpipe clean --testbed FILE` (cleanup.py),
and the agent on each host (agent.py, driven by agent_client.py). Flows do
not run through the agent yet, so :meth:`HostsBackend.check` refuses every
run, saying so.

A backend that works on a testbed sets ``takes_testbed = True``: the CLI
then hands ``testbed=`` to its ``doctor()`` and ``clean()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...testbed import Testbed
from ..base import BackendUnavailable, RunOutcome, RunPlan

NOT_YET = ("the hosts backend cannot run traffic yet: running flows through the agent on each host is still "
           "to come; `fatpipe doctor --testbed FILE` checks a testbed and `fatpipe clean --testbed FILE` "
           "cleans it")


class NoTestbedReport:
    """doctor() without a testbed: says what to pass."""

    usable = False
    verdict = "give a testbed to check: fatpipe doctor --testbed FILE (see docs/hosts.md)"

    def render(self) -> str:
        return f"  {self.verdict}"


class HostsBackend:
    name = "hosts"
    takes_testbed = True

    def max_parallel_runs(self, jobs: int) -> int:  # noqa: ARG002 - runs share the testbed's path
        return 1

    def check(self, plans: list[RunPlan]) -> None:  # noqa: ARG002 - refuses every run for now
        raise BackendUnavailable(NOT_YET)

    def facts(self) -> dict[str, Any]:
        return {}

    def run(self, plan: RunPlan, workdir: Path) -> RunOutcome:  # noqa: ARG002 - see check()
        raise BackendUnavailable(NOT_YET)

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
