"""The bottleneck's queue discipline as a spec writes it (``path.aqm``) and
as a run plan carries it.

Written as ``"droptail"`` (the default), as a table
``{kind = "ce_threshold", k = "65pkts"}`` (K in packets, a size such as
``"100KB"`` or a queueing delay such as ``"100us"``), or, so that a sweep can
vary it, as the string ``"ce_threshold:65pkts"``. A CE threshold marks an
arriving ECN-capable packet when the instantaneous queue exceeds K (DCTCP's
recommended switch setting); packets that are not ECN-capable are only
tail-dropped.

``{kind = "fq_codel", target = "5ms", interval = "100ms", limit = "10240pkts",
ce_threshold = "1ms", quantum = "1514B", ecn = true}`` is Linux's fq_codel
(every key optional, Linux's defaults shown; ce_threshold is off unless
given); the string form is ``"fq_codel"`` or
``"fq_codel:target=5ms,interval=100ms"``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .units import NUMBER_PATTERN, UnitError, key_values, parse_size_bytes, parse_time_s, toml_type

KINDS = ("droptail", "ce_threshold", "fq_codel")
# fq_codel's keys and Linux's defaults (fq_codel_init); ce_threshold is off
# unless given.
FQ_CODEL_KEYS = ("target", "interval", "limit", "ce_threshold", "quantum", "ecn")
FQ_CODEL_DEFAULTS = {"target_s": 0.005, "interval_s": 0.1, "limit_packets": 10240,
                     "ce_threshold_s": None, "quantum_bytes": 1514, "ecn": True}
MAX_FQ_LIMIT_PACKETS = (1 << 32) - 1
MAX_QUANTUM_BYTES = (1 << 31) - 1
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


def _positive_time(key: str, value: Any) -> float:
    try:
        t = parse_time_s(value) if isinstance(value, str) else None
    except UnitError:
        t = None
    if t is None or t <= 0:
        shown = repr(value) if isinstance(value, str) else toml_type(value)
        raise ValueError(f"{key} = {shown}: write a positive time such as '5ms'")
    return float(t)


def _whole(key: str, value: Any, pattern: str, example: str, most: int) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*" + pattern + r"\s*", value, re.I) if isinstance(value, str) else None
    if m is None and isinstance(value, int) and not isinstance(value, bool):
        n = value
    elif m is not None:
        n = int(m.group(1))
    else:
        shown = repr(value) if isinstance(value, str) else toml_type(value)
        raise ValueError(f"{key} = {shown}: write a whole number such as {example!r}")
    if not 1 <= n <= most:
        raise ValueError(f"{key} = {value!r}: must be 1 to {most}")
    return n


def _fq_codel(value: dict[str, Any]) -> dict[str, Any]:
    """fq_codel's keys as written → the plan's fields (Linux's defaults)."""
    fields: dict[str, Any] = dict(FQ_CODEL_DEFAULTS)
    if "target" in value:
        fields["target_s"] = _positive_time("target", value["target"])
    if "interval" in value:
        fields["interval_s"] = _positive_time("interval", value["interval"])
    if "ce_threshold" in value:
        fields["ce_threshold_s"] = _positive_time("ce_threshold", value["ce_threshold"])
    if "limit" in value:
        fields["limit_packets"] = _whole("limit", value["limit"], r"(?:pkts?|packets?)", "10240pkts",
                                         MAX_FQ_LIMIT_PACKETS)
    if "quantum" in value:
        q = value["quantum"]
        if isinstance(q, str):
            if re.fullmatch(r"\s*\d*\.\d+\s*B\s*", q):
                raise ValueError(f"quantum = {q!r}: must be a whole number of bytes")
            try:
                q = parse_size_bytes(q)
            except UnitError:
                raise ValueError(f"quantum = {q!r}: write a size in bytes such as '1514B'") from None
            if q != int(q):
                raise ValueError(f"quantum = {value['quantum']!r}: must be a whole number of bytes")
            q = int(q)
        fields["quantum_bytes"] = _whole("quantum", q, "", "1514B", MAX_QUANTUM_BYTES)
    if "ecn" in value:
        if not isinstance(value["ecn"], bool):
            raise ValueError(f"ecn = {value['ecn']!r}: write true or false")
        fields["ecn"] = value["ecn"]
    return fields


class Aqm(BaseModel):
    """``path.aqm``: the discipline and, for a CE threshold, K."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    kind: Literal["droptail", "ce_threshold", "fq_codel"] = "droptail"
    k_amount: float | None = Field(default=None, exclude=True)
    k_unit: Literal["packets", "bytes", "s"] | None = Field(default=None, exclude=True)
    fq_codel: dict[str, Any] | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        if isinstance(value, Aqm):
            return value
        if isinstance(value, str):
            kind, sep, k = value.partition(":")
            if kind.strip() not in KINDS:
                raise ValueError(f"unknown queue discipline {value!r}; write \"droptail\", "
                                 "\"ce_threshold:<K>\", \"fq_codel\", \"fq_codel:target=5ms,...\" "
                                 "or a table such as {kind = \"ce_threshold\", k = \"65pkts\"}")
            if kind.strip() == "fq_codel":
                value = {"kind": "fq_codel"} | key_values(value, k, "fq_codel:target=5ms,interval=100ms")
            else:
                value = {"kind": kind.strip()} | ({"k": k} if sep else {})
        if not isinstance(value, dict):
            raise ValueError(f"path.aqm is \"droptail\", \"ce_threshold:<K>\" or a table, got {toml_type(value)}")
        kind = value.get("kind", "droptail")
        if kind not in KINDS:
            raise ValueError(f"kind = {kind!r} is not a queue discipline; the kinds are {', '.join(KINDS)}")
        if kind == "fq_codel":
            unknown = sorted(set(value) - {"kind", *FQ_CODEL_KEYS})
            if unknown:
                raise ValueError(f"unknown key(s) {', '.join(unknown)}; kind = \"fq_codel\" takes "
                                 f"{', '.join(FQ_CODEL_KEYS)}")
            return {"kind": kind, "fq_codel": _fq_codel(value)}
        unknown = sorted(set(value) - {"kind", "k"})
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}; path.aqm takes kind and k "
                             "(kind = \"fq_codel\" takes its own keys)")
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
        if self.kind == "fq_codel":
            return {"kind": "fq_codel"} | (self.fq_codel or FQ_CODEL_DEFAULTS)
        key = {"packets": "k_packets", "bytes": "k_bytes", "s": "k_s"}[self.k_unit or "packets"]
        amount = self.k_amount or 0.0
        return {"kind": self.kind, key: amount if key == "k_s" else int(amount)}


DROPTAIL = Aqm()
