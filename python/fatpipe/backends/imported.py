"""A backend that runs nothing: it names results made elsewhere and imported
into a study directory (`fatpipe import iperf3`, fatpipe.importers), so their
runs carry their origin in the `backend` column and their study.toml stays
a valid spec. Running such a study is refused with the command that imports it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Backend, BackendUnavailable, RunOutcome, RunPlan


@dataclass(frozen=True)
class ImportedDoctorReport:
    detail: str
    usable: bool = True

    def render(self) -> str:
        return f"  [ok] {self.detail}"


class ImportedBackend(Backend):
    def __init__(self, name: str, command: str) -> None:
        self.name = name
        self.command = command  # how its results get in, e.g. "fatpipe import iperf3 FILE… --path …"

    def _refuse(self) -> BackendUnavailable:
        return BackendUnavailable(f"the {self.name} backend holds imported results and runs nothing; "
                                  f"import them with `{self.command}`")

    def check(self, plans: list[RunPlan]) -> None:  # noqa: ARG002 - nothing of a plan matters
        raise self._refuse()

    def facts(self) -> dict[str, Any]:
        return {"imported_by": self.command}

    def run(self, plan: RunPlan, workdir: Path) -> RunOutcome:  # noqa: ARG002
        raise self._refuse()

    def max_parallel_runs(self, jobs: int) -> int:  # noqa: ARG002
        return 1

    def doctor(self) -> ImportedDoctorReport:
        return ImportedDoctorReport(f"imports results, runs nothing: {self.command}")

    def clean(self) -> list[str]:
        return []

    def clean_stale(self) -> list[str]:
        return []
