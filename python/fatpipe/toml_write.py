"""TOML values written from Python values (the studies fatpipe writes for
itself: the advisor's stages, the BBR suite's cases)."""

from __future__ import annotations

import json
from typing import Any


def toml_value(v: Any) -> str:
    """A TOML value: booleans, numbers, strings, inline tables, arrays."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")
