"""The bottleneck buffer as a spec writes it (`path.buffer`, the advisor's
`buffer`): bytes, packets or a multiple of the bandwidth-delay product."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .units import NUMBER_PATTERN, UnitError, parse_size_bytes, toml_type
from .window import bdp_bytes


class Buffer(BaseModel):
    """Bottleneck buffer as written: bytes, packets or a multiple of the BDP."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    amount: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    unit: Literal["bytes", "packets", "bdp"]

    def nominal_bytes(self, rate_bps: float, rtt_s: float, mtu_bytes: int) -> float:
        """The size as written, in bytes (not rounded, not clamped)."""
        per_unit = {"bdp": bdp_bytes(rate_bps, rtt_s), "packets": mtu_bytes, "bytes": 1}[self.unit]
        return self.amount * per_unit

    def to_bytes(self, rate_bps: float, rtt_s: float, mtu_bytes: int) -> int:
        if self.unit == "bdp":
            return max(mtu_bytes, int(self.amount * bdp_bytes(rate_bps, rtt_s)))
        if self.unit == "packets":
            return int(self.amount * mtu_bytes)
        return int(self.amount)


def parse_buffer(value: Any) -> Any:
    if isinstance(value, Buffer) or isinstance(value, dict):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"amount": value, "unit": "bytes"}
    if isinstance(value, str):
        m = re.fullmatch(r"\s*" + NUMBER_PATTERN + r"\s*(bdp|pkts?|packets?)\s*", value, re.I)
        if m:
            unit = "bdp" if m.group(2).lower() == "bdp" else "packets"
            return {"amount": float(m.group(1)), "unit": unit}
        try:
            return {"amount": parse_size_bytes(value), "unit": "bytes"}
        except UnitError:
            pass
    shown = repr(value) if isinstance(value, str) else toml_type(value)
    raise ValueError(
        f"cannot read {shown} as a buffer; write bytes ('1.5MB'), packets ('1000pkts') "
        "or a multiple of the bandwidth-delay product ('1bdp', '0.5bdp')"
    )
