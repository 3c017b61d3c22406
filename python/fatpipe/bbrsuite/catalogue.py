"""The BBR draft's example test cases as data (python/fatpipe/data/
bbr_cases.toml): the base setup every case starts from, and each case's
setup, status and criteria, read and checked once."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

STATUSES = ("expressible", "partly", "needs")
OPS = ("==", "<=", ">=", "<", ">", "within", "true", "false", "transition", "no_transition",
       "doubles_each_round", "decreases", "restored")


@dataclass(frozen=True)
class Criterion:
    """One checkable statement of a case (the TOML's [[cases.criteria]])."""

    step: int
    quantity: str
    op: str
    when: str
    value: float | None = None
    threshold: float | None = None
    reference: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    note: str = ""

    def text(self) -> str:
        """The criterion in one line (the suite's table)."""
        if self.op in ("transition", "no_transition"):
            what = f"{self.from_state} -> {self.to_state}" if self.op == "transition" else f"stays {self.from_state}"
            return f"state {what} ({self.when})"
        rhs = self.reference if self.value is None else f"{self.value:g}"
        if self.op == "within":
            rhs = f"{self.reference} ±{self.threshold:.0%}"
        elif self.threshold is not None and self.reference:
            rhs = f"{self.threshold:g} x {self.reference}"
        return f"{self.quantity} {self.op} {rhs or ''} ({self.when})".replace("  ", " ")


@dataclass(frozen=True)
class Case:
    id: str
    slug: str
    title: str
    status: str
    setup: dict[str, Any]
    criteria: tuple[Criterion, ...]
    needs: tuple[str, ...] = ()
    linux_differs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Catalogue:
    draft: str  # e.g. "draft-ietf-ccwg-bbr-06"
    base_setup: dict[str, Any]
    ccs: tuple[str, ...]
    cases: tuple[Case, ...] = field(default_factory=tuple)

    def case(self, case_id: str) -> Case:
        for c in self.cases:
            if c.id == case_id or c.slug == case_id:
                return c
        raise KeyError(f"no BBR test case {case_id!r}; the cases are {', '.join(c.id for c in self.cases)}")


def _criterion(case_id: str, raw: dict[str, Any]) -> Criterion:
    if raw.get("op") not in OPS:
        raise ValueError(f"case {case_id}: criterion op {raw.get('op')!r} is not one of {', '.join(OPS)}")
    return Criterion(step=int(raw["step"]), quantity=str(raw["quantity"]), op=raw["op"], when=str(raw.get("when", "")),
                     value=raw.get("value"), threshold=raw.get("threshold"), reference=raw.get("reference"),
                     from_state=raw.get("from"), to_state=raw.get("to"), note=str(raw.get("note", "")))


def load(text: str | None = None) -> Catalogue:
    """The catalogue (the bundled file unless `text` is given)."""
    if text is None:
        text = resources.files("fatpipe").joinpath("data/bbr_cases.toml").read_text()
    raw = tomllib.loads(text)
    cases = []
    for c in raw["cases"]:
        if c["status"] not in STATUSES:
            raise ValueError(f"case {c['id']}: status {c['status']!r} is not one of {', '.join(STATUSES)}")
        cases.append(Case(id=c["id"], slug=c["slug"], title=c["title"], status=c["status"],
                          setup=dict(c.get("setup", {})),
                          criteria=tuple(_criterion(c["id"], x) for x in c.get("criteria", [])),
                          needs=tuple(c.get("needs", [])), linux_differs=tuple(c.get("linux_differs", []))))
    d = raw["draft"]
    return Catalogue(draft=f"{d['name']}-{d['revision']}", base_setup=dict(raw["base"]["setup"]),
                     ccs=tuple(raw["base"]["cc"]), cases=tuple(cases))
