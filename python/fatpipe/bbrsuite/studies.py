"""A case of the BBR draft's suite as a fatpipe study (TOML text): the
catalogue's base setup, the case's own keys over it, one CCA, one
backend. Setup keys are dotted spec keys ("path.rate",
"hosts.s1.wmem_max", "flows.0.cc", "study.duration"); `path.schedule` and
`flows.0.app` are lists of step tables and `path.policer`, `path.jitter`, `path.aggregation`
inline tables, in the spec's own key names."""

from __future__ import annotations

from typing import Any

from ..toml_write import toml_value
from .catalogue import Case, Catalogue

# The run's seed: one for every case, so a case's bbr and bbr3 runs meet
# the same path (and the same random draws, where a case has any).
SEED = 1


def setup_of(catalogue: Catalogue, case: Case, cc: str) -> dict[str, Any]:
    """The case's keys over the base setup, with the flow's CCA."""
    setup = {**catalogue.base_setup, **case.setup}
    setup["flows.0.cc"] = cc
    return setup


def study_toml(catalogue: Catalogue, case: Case, cc: str, backend: str) -> str:
    """The study that runs `case` with `cc` on `backend`."""
    setup = setup_of(catalogue, case, cc)
    tables: dict[str, dict[str, Any]] = {}
    schedule: list[dict[str, Any]] = []
    app_steps: list[dict[str, Any]] = []
    for key, value in setup.items():
        if key == "path.schedule":
            schedule = list(value)
            continue
        if key == "flows.0.app":
            app_steps = list(value)
            continue
        section, _, name = key.rpartition(".")
        if section.startswith("flows."):
            section = "flows"
        tables.setdefault(section, {})[name] = value
    study = {"name": f"bbr-{case.id.replace('.', '')}-{case.slug}-{cc}", "backends": [backend], "seed": SEED,
             **tables.pop("study", {})}
    lines = ["version = 1", "", "[study]", *(f"{k} = {toml_value(v)}" for k, v in study.items())]
    flows = tables.pop("flows", {})
    for section in sorted(tables):
        lines += ["", f"[{section}]", *(f"{k} = {toml_value(v)}" for k, v in tables[section].items())]
    for step in schedule:
        lines += ["", "[[path.schedule]]", *(f"{k} = {toml_value(v)}" for k, v in step.items())]
    lines += ["", "[[flows]]", *(f"{k} = {toml_value(v)}" for k, v in flows.items())]
    for step in app_steps:
        lines += ["", "[[flows.app]]", *(f"{k} = {toml_value(v)}" for k, v in step.items())]
    return "\n".join(lines) + "\n"
