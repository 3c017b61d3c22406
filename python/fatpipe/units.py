"""Parsing of written-out units: rates, times, sizes.

Every parser takes a string (or a bare number where the unit is obvious) and
returns an SI number: bits per second, seconds, bytes. Errors say what was
given and show examples of what is allowed.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

# A written number: ASCII digits, optional fraction and exponent, no sign.
NUMBER_PATTERN = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_NUMBER = NUMBER_PATTERN

# Networking convention: K/M/G/T are powers of ten for rates.
_RATE_UNITS = {
    "bit": 1.0, "bps": 1.0,
    "kbit": 1e3, "kbps": 1e3,
    "mbit": 1e6, "mbps": 1e6,
    "gbit": 1e9, "gbps": 1e9,
    "tbit": 1e12, "tbps": 1e12,
}

_TIME_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
    "min": 60.0, "h": 3600.0,
}

# Sizes: KB/MB/GB are decimal, KiB/MiB/GiB binary (as tcp_rmem's 6 MB on
# CentOS 7 is really 6 MiB = 6291456 bytes, users can write either).
_SIZE_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9,
    "kib": 2**10, "mib": 2**20, "gib": 2**30,
    "k": 10**3, "m": 10**6, "g": 10**9,
}


class UnitError(ValueError):
    """A value could not be parsed; the message names what is allowed."""


def key_values(form: str, rest: str, example: str, numbers: bool = False) -> dict[str, Any]:
    """The ``"key=value,key=value"`` tail `rest` of a spec's string form
    `form` → {key: value}: true/false as booleans, numbers as floats when
    `numbers`, the rest as text (units); a part without "=" is refused,
    naming `form` and showing `example`."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, val = part.partition("=")
        if not eq:
            raise ValueError(f"cannot read {part!r} in {form!r}; write key=value pairs such as {example!r}")
        val = val.strip()
        if numbers and re.fullmatch(NUMBER_PATTERN, val):
            out[key.strip()] = float(val)
        else:
            out[key.strip()] = {"true": True, "false": False}.get(val.lower(), val)
    return out


def toml_type(value: object) -> str:
    """The TOML name of a parsed value's type, for messages."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return "a date/time"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _number_or_text(value: object, what: str, example: str) -> float | str:
    """A bare finite number (as float), or the text to parse; anything else
    (boolean, array, table, date, inf, nan) is a UnitError."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise UnitError(f"expected a {what} like {example!r} or a finite number, got {value!r}")
        return number
    raise UnitError(f"expected a {what} like {example!r} or a number, got {toml_type(value)}")


def _finite(number: float, value: str, what: str) -> float:
    if not math.isfinite(number):
        raise UnitError(f"{value!r} overflows; write a {what} within range")
    return number


def _split(text: str) -> tuple[float, str] | None:
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-zµμ/]*)", text.strip())
    if not m:
        return None
    return float(m.group(1)), m.group(2)


def parse_rate_bps(value: str | int | float) -> float:
    """'10Gbit' -> 1e10. Bare numbers are bits per second."""
    value = _number_or_text(value, "rate", "10Gbit")
    if isinstance(value, float):
        return value
    parts = _split(value)
    if parts:
        number, unit = parts
        unit = unit.lower().removesuffix("/s")
        if unit in _RATE_UNITS:
            return _finite(number * _RATE_UNITS[unit], value, "rate")
    raise UnitError(
        f"cannot read {value!r} as a rate; write e.g. '10Gbit', '100Mbit', '1.5Gbps'"
    )


def parse_time_s(value: str | int | float) -> float:
    """'20ms' -> 0.02. Bare numbers are seconds."""
    value = _number_or_text(value, "time", "20ms")
    if isinstance(value, float):
        return value
    parts = _split(value)
    if parts:
        number, unit = parts
        key = unit if unit in _TIME_UNITS else unit.lower()
        if key in _TIME_UNITS:
            return _finite(number * _TIME_UNITS[key], value, "time")
    raise UnitError(f"cannot read {value!r} as a time; write e.g. '20ms', '70s', '500us'")


def parse_size_bytes(value: str | int | float) -> int:
    """'6MB' -> 6000000, '6MiB' -> 6291456. Bare numbers are bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    value = _number_or_text(value, "size", "6MB")
    if isinstance(value, float):
        return int(value)
    parts = _split(value)
    if parts:
        number, unit = parts
        if unit.lower() in _SIZE_UNITS:
            return int(round(_finite(number * _SIZE_UNITS[unit.lower()], value, "size")))
    raise UnitError(f"cannot read {value!r} as a size; write e.g. '1500B', '6MB', '6MiB'")


def parse_per_second(value: str | int | float) -> float:
    """'200/s' -> 200.0 (an event rate)."""
    value = _number_or_text(value, "event rate", "200/s")
    if isinstance(value, float):
        return value
    m = re.fullmatch(_NUMBER + r"\s*/\s*s", value.strip())
    if m:
        return _finite(float(m.group(1)), value, "event rate")
    raise UnitError(f"cannot read {value!r} as an event rate; write e.g. '200/s'")


def format_rate(bps: float) -> str:
    """1.25e9 -> '1.25 Gbit/s'."""
    for scale, name in ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(bps) >= scale:
            return f"{bps / scale:.3g} {name}"
    return f"{bps:.3g} bit/s"


def format_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"
