"""How a study or testbed file's problems are reported: SpecError and the
(key path, message) pairs made from a pydantic ValidationError. Its own
module so that spec.py and testbed.py, which both validate, share it
without importing each other."""

from __future__ import annotations

import re

from pydantic import ValidationError

from . import sweep as sweep_mod
from .units import toml_type


class SpecError(ValueError):
    """The spec is invalid. ``problems`` lists (key path, message) pairs."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "") -> None:
        self.problems = problems
        head = f"invalid study spec{f' {source}' if source else ''}:"
        super().__init__("\n".join([head] + [f"  {k}: {m}" for k, m in problems]))


def short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def printable(text: str) -> str:
    """Keys as the user can read them: control characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def key_path(loc: tuple) -> str:
    return short(printable(".".join(str(p) for p in loc if not str(p).startswith("function-"))))


# Parts of an error location that pydantic adds for its validators
# (``function-after[...]``, ``nullable[...]``), not keys of the spec.
_PYDANTIC_TAG = re.compile(r"[a-z]+(?:-[a-z]+)*\[.*\]\Z", re.S)


def validation_problems(err: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    """Each error of `err` as (key path, message), the key path under `prefix`."""
    out = []
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not isinstance(p, str) or not _PYDANTIC_TAG.match(p))
        path = sweep_mod.model_where(loc[1:]) if loc[:1] == ("sweep",) and not prefix else key_path(loc)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "literal_error":
            msg = f"got {short(repr(e.get('input')))}; {msg.lower()}"
        elif e["type"].endswith("_type") or e["type"] == "int_from_float":
            msg = f"{msg} (got {toml_type(e.get('input'))})"
        out.append((prefix + path if path else (prefix.rstrip(".") or "spec"), short(msg, 400)))
    return out
