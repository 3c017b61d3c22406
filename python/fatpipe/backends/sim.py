"""The sim backend: the Rust simulator through the PyO3 module fatpipe._native.

The plan is handed over as JSON (the dataclass fields of RunPlan); the
simulator releases the GIL while it runs, so runs spread over threads.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .base import BackendUnavailable, PathReport, RunOutcome, RunPlan


def _native():
    try:
        from .. import _native
    except ImportError as e:  # the extension was not built
        raise BackendUnavailable(
            "the simulator extension fatpipe._native is not built; "
            "run scripts/install.sh (or `pip install -e .`)"
        ) from e
    return _native


class SimBackend:
    name = "sim"

    def check(self, plans: list[RunPlan]) -> None:
        native = _native()
        available = set(native.available_ccas())
        for plan in plans:
            for flow in plan.flows:
                if flow.cc not in available:
                    raise BackendUnavailable(
                        f"flows.{flow.group}.cc = {flow.cc!r} is not implemented by the sim "
                        f"backend; available: {', '.join(sorted(available))}"
                    )

    def facts(self) -> dict[str, Any]:
        native = _native()
        return {
            "sim_version": native.__version__,
            "sim_ccas": list(native.available_ccas()),
            "machine": platform.machine(),
            "python": platform.python_version(),
        }

    def run(self, plan: RunPlan, workdir: Path) -> RunOutcome:
        result = _native().simulate(json.dumps(asdict(plan)))
        return RunOutcome(
            series=result["series"],
            rpcs=result["rpcs"],
            path=PathReport.from_facts(result["path"]),
            facts={"stats": result.get("stats", {})},
        )
