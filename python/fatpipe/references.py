"""A study's reference numbers: what a talk's table or a paper's figure
reports for the same experiment, kept in the study file beside the spec.

``[[references]]`` is a list of tables; each names its source and one
metric, and holds values, each for the runs its ``where`` selects::

    [[references]]
    title = "BBRv1 vs CUBIC, 70 ms"        # how the report names the table
    source = "Welzl, IETF 121 HP-WAN BoF, slide 12"
    metric = "goodput"
    values = [
      { where = { "flows.0.cc" = "bbr", "flows.0.streams" = 1, "path.loss" = 1e-3 }, value = "14Gbit" },
      { where = { "flows.0.cc" = "cubic", "flows.0.streams" = 1, "path.loss" = 1e-2 }, value = "0bit",
        note = "~0" },
    ]

``where`` names columns of the runs table: swept keys as written in
``[sweep]`` and the flow group's own columns (``flow_group``, ``cc``,
``streams``, ``mss_bytes``, ``kind``), plus ``backend``. The metric says how
the selected rows become fatpipe's number (analysis/references.py); the
value is written in the metric's unit. References change nothing a run
does: a study's runs are the same with or without them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .units import UnitError, parse_rate_bps, toml_type


@dataclass(frozen=True)
class Metric:
    """One kind of number a reference can give."""

    unit: Literal["rate", "fraction", "number"]  # how `value` is written
    what: str  # how fatpipe computes its number from the selected rows


# The one list of reference metrics; analysis/references.py computes each.
METRICS: dict[str, Metric] = {
    "goodput": Metric("rate", "mean goodput over repetitions of the one grid point and flow group selected"),
    "share": Metric("fraction", "mean share of the run's goodput (all flow groups) of the one grid "
                                "point and flow group selected"),
    "improvement_factor": Metric("number", "the improvement factor from parallel streams (the largest "
                                           "stream count vs 1) of the one CCA selected; `stat` says "
                                           "avg, max or min over the conditions selected"),
    "collapse_fraction": Metric("fraction", "the fraction of the selected runs in which a selected flow "
                                            "group's goodput collapsed (below 10 % of the run's median "
                                            "for ≥ 1 s)"),
}
# Columns of the runs table a `where` may name besides swept keys.
WHERE_COLUMNS = ("backend", "flow_group", "kind", "cc", "streams", "mss_bytes")
MAX_REFERENCE_TABLES = 64
MAX_VALUES_PER_TABLE = 1000


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) \
        else toml_type(value)


def parse_fraction(value: Any) -> float:
    """A fraction from 0 to 1, written as a number (0.5) or a percentage ('50%')."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*%\s*", value)
        if not m:
            raise ValueError(f"cannot read {value!r} as a fraction; write a number from 0 to 1 or a "
                             "percentage such as '50%'")
        x = float(m.group(1)) / 100
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
    else:
        raise ValueError(f"got {toml_type(value)}; write a number from 0 to 1 or a percentage such as '50%'")
    if not (math.isfinite(x) and 0 <= x <= 1):
        raise ValueError(f"got {_show(value)}; a fraction is from 0 to 1 (0 % to 100 %)")
    return x


def parse_value(metric: str, value: Any) -> float:
    """`value` of a reference of `metric` as an SI number (bit/s for rates)."""
    unit = METRICS[metric].unit
    if unit == "rate":
        try:
            if isinstance(value, bool) or not isinstance(value, str):
                raise UnitError(f"got {_show(value)}")
            x = parse_rate_bps(value)
        except UnitError as e:
            raise ValueError(f"{e}; a goodput reference is a rate with its unit, e.g. '14Gbit' or "
                             "'8.6Mbit' ('0bit' for a talk's ~0)") from None
        if x < 0:
            raise ValueError(f"got {_show(value)}; a rate is at least 0")
        return x
    if unit == "fraction":
        return parse_fraction(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise ValueError(f"got {_show(value)}; {metric} is a plain number of at least 0 (no unit)")
    return float(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _where(value: Any) -> Any:
    if not isinstance(value, dict) or not value:
        raise ValueError(f"got {toml_type(value)}; where is a table of column = value, e.g. "
                         "{ \"flows.0.cc\" = \"bbr\", streams = 1 }")
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, str)) or \
                (isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(f"{k}: got {toml_type(v)}; a where value is a number or a string")
    return value


class ReferenceValue(_Strict):
    where: Annotated[dict[str, Any], BeforeValidator(_where)]
    value: Any  # checked against the table's metric (ReferenceTable)
    note: Annotated[str, Field(max_length=200)] = ""  # shown beside the value, e.g. "~0"


class ReferenceTable(_Strict):
    title: Annotated[str, Field(min_length=1, max_length=200)]
    source: Annotated[str, Field(min_length=1, max_length=500)]
    metric: str
    stat: Literal["avg", "max", "min"] | None = None  # improvement_factor only
    values: Annotated[list[ReferenceValue], Field(min_length=1, max_length=MAX_VALUES_PER_TABLE)]

    def si_values(self) -> list[float]:
        return [parse_value(self.metric, v.value) for v in self.values]


References = Annotated[list[ReferenceTable], Field(max_length=MAX_REFERENCE_TABLES)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)


def problems(tables: list[ReferenceTable], swept: dict[str, list[Any]]) -> list[tuple[str, str]]:
    """What the models alone cannot check, each with its key path: titles
    differ, the metric is known, `stat` is given for improvement_factor and only then,
    each value is written in the metric's unit, each `where` key is a swept key or a column of WHERE_COLUMNS, and a
    swept key's value is one of the values the sweep gives it. `swept` maps
    each swept key to its values as written."""
    problems = []
    titles: dict[str, int] = {}
    for t, table in enumerate(tables):
        if table.title in titles:
            problems.append((f"references.{t}.title", (
                f"{table.title!r} is also the title of references.{titles[table.title]}; each table's title "
                "is its name in the report, so titles differ")))
        titles.setdefault(table.title, t)
        if table.metric not in METRICS:
            problems.append((f"references.{t}.metric",
                             f"got {_show(table.metric)}; the metrics are {', '.join(METRICS)}"))
            continue
        if (table.stat is None) == (table.metric == "improvement_factor"):
            problems.append((f"references.{t}.stat", (
                "give stat (avg, max or min) with metric = \"improvement_factor\"" if table.stat is None
                else f"stat applies only to metric = \"improvement_factor\", not {table.metric!r}")))
        for i, v in enumerate(table.values):
            try:
                parse_value(table.metric, v.value)
            except ValueError as e:
                problems.append((f"references.{t}.values.{i}.value", str(e)))
            for key, value in v.where.items():
                at = f"references.{t}.values.{i}.where." + (f'"{key}"' if "." in key else key)
                if key in swept:
                    if not any(_same(value, s) for s in swept[key]):
                        allowed = ", ".join(_show(s) for s in swept[key][:20])
                        problems.append((at, f"got {_show(value)}; the sweep gives {key} the values "
                                             f"{allowed}"))
                elif key not in WHERE_COLUMNS:
                    names = ", ".join([*swept, *WHERE_COLUMNS])
                    problems.append((at, f"unknown column; where names a swept key or a flow group's "
                                         f"column: {names}"))
    return problems
