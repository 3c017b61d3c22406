"""Parsing of written-out units: rates, times, sizes.

Every parser takes a string (or a bare number where the unit is obvious) and
returns an SI number: bits per second, seconds, bytes. Errors say what was
given and show examples of what is allowed.
"""

from __future__ import annotations

import re

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

# Networking convention: K/M/G/T are powers of ten for rates.
_RATE_UNITS = {
    "bit": 1.0, "bps": 1.0,
    "kbit": 1e3, "kbps": 1e3,
    "mbit": 1e6, "mbps": 1e6,
    "gbit": 1e9, "gbps": 1e9,
    "tbit": 1e12, "tbps": 1e12,
}

_TIME_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
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


def _split(text: str) -> tuple[float, str] | None:
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-zµ/]*)", text.strip())
    if not m:
        return None
    return float(m.group(1)), m.group(2)


def parse_rate_bps(value: str | int | float) -> float:
    """'10Gbit' -> 1e10. Bare numbers are bits per second."""
    if isinstance(value, bool):
        raise UnitError(f"expected a rate like '10Gbit', got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    parts = _split(value)
    if parts:
        number, unit = parts
        unit = unit.lower().removesuffix("/s")
        if unit in _RATE_UNITS:
            return number * _RATE_UNITS[unit]
    raise UnitError(
        f"cannot read {value!r} as a rate; write e.g. '10Gbit', '100Mbit', '1.5Gbps'"
    )


def parse_time_s(value: str | int | float) -> float:
    """'20ms' -> 0.02. Bare numbers are seconds."""
    if isinstance(value, bool):
        raise UnitError(f"expected a time like '20ms', got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    parts = _split(value)
    if parts:
        number, unit = parts
        key = unit if unit in _TIME_UNITS else unit.lower()
        if key in _TIME_UNITS:
            return number * _TIME_UNITS[key]
    raise UnitError(f"cannot read {value!r} as a time; write e.g. '20ms', '70s', '500us'")


def parse_size_bytes(value: str | int | float) -> int:
    """'6MB' -> 6000000, '6MiB' -> 6291456. Bare numbers are bytes."""
    if isinstance(value, bool):
        raise UnitError(f"expected a size like '6MB', got {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    parts = _split(value)
    if parts:
        number, unit = parts
        if unit.lower() in _SIZE_UNITS:
            return int(round(number * _SIZE_UNITS[unit.lower()]))
    raise UnitError(f"cannot read {value!r} as a size; write e.g. '1500B', '6MB', '6MiB'")


def parse_per_second(value: str | int | float) -> float:
    """'200/s' -> 200.0 (an event rate)."""
    if isinstance(value, bool):
        raise UnitError(f"expected an event rate like '200/s', got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    m = re.fullmatch(_NUMBER + r"\s*/\s*s", value.strip())
    if m:
        return float(m.group(1))
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
