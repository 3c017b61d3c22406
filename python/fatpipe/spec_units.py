"""A spec key written with units, as a pydantic validator: parsed to an SI
number, then held to its range, every error naming what is allowed. Its
own module so that spec.py and hostcpu.py, which both declare such keys,
share it without importing each other."""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator

from .units import UnitError


def unit_field(parser, lo: float | None = None, hi: float | None = None, unit: str = "",
               above_zero: bool = False, allowed: str = ""):
    """Parse written units (finite, or a ValueError naming what is allowed),
    then hold the value to [lo, hi] (and > 0 if `above_zero`); `allowed`,
    if given, ends a range error (the whole range, as people write it)."""
    tail = f"; {allowed}" if allowed else ""

    def convert(value: Any) -> Any:
        try:
            x = parser(value)
        except (UnitError, ArithmeticError) as e:
            raise ValueError(str(e)) from None
        if above_zero and x <= 0:
            raise ValueError(f"must be greater than 0, got {_show(x)}{unit}{tail}")
        if lo is not None and x < lo:
            raise ValueError(f"{_show(x)}{unit} is below the minimum of {lo:g}{unit}{tail}")
        if hi is not None and x > hi:
            raise ValueError(f"{_show(x)}{unit} is above the maximum of {hi:g}{unit}{tail}")
        return x
    return BeforeValidator(convert)


def _show(x: float) -> str:
    try:
        return f"{x:g}"
    except OverflowError:  # an integer beyond any float
        return f"{'-' if x < 0 else ''}1e{len(str(abs(x))) - 1}"
