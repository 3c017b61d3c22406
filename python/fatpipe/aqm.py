"""The bottleneck's queue discipline as a spec writes it (``path.aqm``) and
as a run plan carries it.

Written as ``"droptail"`` (the default), as a table
``{kind = "ce_threshold", k = "65pkts"}`` (K in packets, a size such as
``"100KB"`` or a queueing delay such as ``"100us"``), or, so that a sweep can
vary it, as the string ``"ce_threshold:65pkts"``. A CE threshold marks an
arriving ECN-capable packet when the instantaneous queue exceeds K (DCTCP's
recommended switch setting); packets that are not ECN-capable are only
tail-dropped.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .units import NUMBER_PATTERN, UnitError, parse_size_bytes, parse_time_s, toml_type

KINDS = ("droptail", "ce_threshold")
# K as written: packets, bytes or seconds of queueing delay.
K_UNITS = ("packets", "bytes", "s")
MAX_K_PACKETS = 1 << 31


def _parse_k(value: Any) -> tuple[float, str]:
    """K as written → (amount, unit); raises ValueError naming the forms."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*" + NUMBER_PATTERN + r"\s*(pkts?|packets?)\s*", value, re.I)
        if m:
            return float(m.group(1)), "packets"
        for parse, unit in ((parse_size_bytes, "bytes"), (parse_time_s, "s")):
            try:
                return float(parse(value)), unit
            except UnitError:
                pass
    shown = repr(value) if isinstance(value, str) else toml_type(value)
    raise ValueError(f"cannot read {shown} as a threshold K; write packets ('65pkts'), "
                     "bytes ('100KB') or a queueing delay ('100us')")


class Aqm(BaseModel):
    """``path.aqm``: the discipline and, for a CE threshold, K."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    kind: Literal["droptail", "ce_threshold"] = "droptail"
    k_amount: float | None = Field(default=None, exclude=True)
    k_unit: Literal["packets", "bytes", "s"] | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        if isinstance(value, Aqm):
            return value
        if isinstance(value, str):
            kind, sep, k = value.partition(":")
            if kind.strip() not in KINDS:
                raise ValueError(f"unknown queue discipline {value!r}; write \"droptail\", "
                                 "\"ce_threshold:<K>\" or {kind = \"ce_threshold\", k = \"65pkts\"}")
            value = {"kind": kind.strip()} | ({"k": k} if sep else {})
        if not isinstance(value, dict):
            raise ValueError(f"path.aqm is \"droptail\", \"ce_threshold:<K>\" or a table, got {toml_type(value)}")
        unknown = sorted(set(value) - {"kind", "k"})
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}; path.aqm takes kind and k")
        kind = value.get("kind", "droptail")
        if kind not in KINDS:
            raise ValueError(f"kind = {kind!r} is not a queue discipline; the kinds are {', '.join(KINDS)}")
        if kind == "droptail":
            if "k" in value:
                raise ValueError('k only applies to kind = "ce_threshold"')
            return {"kind": kind}
        if "k" not in value:
            raise ValueError('kind = "ce_threshold" needs k: packets (\'65pkts\'), bytes (\'100KB\') '
                             "or a queueing delay ('100us')")
        amount, unit = _parse_k(value["k"])
        if unit == "packets" and (amount != int(amount) or amount > MAX_K_PACKETS):
            raise ValueError(f"k = {value['k']!r}: a packet threshold is a whole number up to {MAX_K_PACKETS}")
        return {"kind": kind, "k_amount": amount, "k_unit": unit}

    def plan(self) -> dict[str, Any]:
        """The discipline as RunPlan.aqm (what crates/sim/src/scenario.rs reads)."""
        if self.kind == "droptail":
            return {"kind": "droptail"}
        key = {"packets": "k_packets", "bytes": "k_bytes", "s": "k_s"}[self.k_unit or "packets"]
        amount = self.k_amount or 0.0
        return {"kind": self.kind, key: amount if key == "k_s" else int(amount)}


DROPTAIL = Aqm()
