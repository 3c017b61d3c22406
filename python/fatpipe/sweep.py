"""The sweep section: cartesian axes and linked groups, checked and expanded.

```toml
[sweep]                       # cartesian axes: every combination
"path.buffer" = ["1bdp", "4bdp"]

[[sweep.linked]]              # a linked group: its keys vary together (a zip)
"flows.0.cc" = ["cubic", "bbr", "reno"]
"flows.1.cc" = ["cubic", "bbr", "reno"]
```

A linked group ties two or more keys, each with a list of the same length;
point ``i`` of the group sets every key to its ``i``-th value. The group is
one axis of the product. A key is swept once: in the cartesian sweep or in
one linked group.

Points are the product of the cartesian axes in written order, then of the
linked groups in written order; the last axis varies fastest. A sweep
without linked groups expands exactly as the plain cartesian product (so
its run ids and seeds do not change). The size of a sweep is computed from
the lengths alone (:meth:`Sweep.point_count`), never by expanding it.

This module knows the sweep's structure and the allow-list of sweepable
keys; whether each value is valid on the spec is ``spec.py``'s question.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from .hostcpu import COST_FIELDS
from .units import toml_type

# What a sweep may vary: the keys that describe the experiment. The study's
# identity (name, description, backends, seed, repetitions, version), the
# sampling interval and a flow's kind are fixed for the whole study, and a
# sweep key names one value, never a whole section.
SWEEPABLE = {
    "study": ("duration", "warmup"),
    "path": ("rate", "rtt", "loss", "corruption", "buffer", "mtu", "aqm", "loss_model", "jitter", "reorder", "policer",
             "aggregation", "emulator"),
    "path.schedule.<index>": ("at", "rate", "rtt", "loss", "ramp"),
    "hosts.<host>": ("rmem_max", "wmem_max", "stream_rate_cap", "extra_rtt", "ecn", "processing_jitter",
                      "start_spread", "profile", "cpu_cores", "app_threads", "nic_rate", "rx_ring",
                      "interrupt_coalescing", "interrupt_coalescing_frames", "qdisc", "rtx_queue",
                      *COST_FIELDS),
    "flows.<index>": ("cc", "streams", "mss", "sender", "start", "request", "response",
                      "concurrency", "rate", "ecn", "cwnd_clamp", "pattern", "on", "off", "shape",
                      "packet_size", "stop", "app_rate", "pacing_rate", "size", "split", "chunk", "count"),
    "flows.<index>.app.<index>": ("at", "rate", "pause"),
}
# The key of the sweep table that holds the linked groups ([[sweep.linked]]);
# no dotted key can be named so.
LINKED = "linked"

AxisValues = Annotated[list[Any], Field(min_length=1)]


def _groups(value: Any) -> Any:
    if isinstance(value, dict):
        raise ValueError(
            "linked groups are an array of tables: write [[sweep.linked]] (double brackets) "
            "above each group's keys")
    if not isinstance(value, list):
        raise ValueError(f"linked groups are [[sweep.linked]] tables of dotted keys, got {toml_type(value)}")
    return value


class Sweep(BaseModel):
    """The `[sweep]` table: `axes` (cartesian) and `linked` groups (zipped)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    axes: dict[str, AxisValues] = {}
    linked: Annotated[list[dict[str, AxisValues]], BeforeValidator(_groups)] = []

    @model_validator(mode="before")
    @classmethod
    def _split(cls, data: Any) -> Any:
        """The TOML table holds the cartesian keys and `linked` side by side."""
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {"axes": {k: v for k, v in data.items() if k != LINKED}}
        if LINKED in data:
            out["linked"] = data[LINKED]
        return out

    # ---- size and expansion ---------------------------------------------

    def sizes(self) -> list[str]:
        """Each axis's number of points as people read it: ``5``, ``4 (linked)``."""
        return [str(len(v)) for v in self.axes.values()] + [
            f"{_group_length(g)} (linked)" for g in self.linked]

    def point_count(self) -> int:
        """Sweep points, from the lengths alone."""
        axes = math.prod(len(v) for v in self.axes.values())
        return axes * math.prod(_group_length(g) for g in self.linked)

    def points(self) -> list[dict[str, Any]]:
        """Every point as {dotted key: value}, in the order of the module
        docstring; a sweep of nothing is one point with no overrides."""
        factors: list[list[dict[str, Any]]] = [
            [{key: value} for value in values] for key, values in self.axes.items()]
        factors += [[dict(zip(g, row, strict=True)) for row in zip(*g.values(), strict=True)]
                    for g in self.linked]
        return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*factors)]

    # ---- checks ------------------------------------------------------------

    def entries(self) -> Iterator[tuple[str, str, list[Any]]]:
        """(where, dotted key, values) of every swept key, for error messages."""
        for key, values in self.axes.items():
            yield where(key), key, values
        for i, group in enumerate(self.linked):
            for key, values in group.items():
                yield where(key, i), key, values

    def structure_problems(self) -> list[tuple[str, str]]:
        """Linked groups tie two or more keys of equal length, and no key is
        swept twice."""
        problems = []
        seen = {key: where(key) for key in self.axes}
        for i, group in enumerate(self.linked):
            at = group_where(i)
            if len(group) < 2:
                problems.append((at, (
                    "a linked group ties two or more keys together; a single key belongs "
                    "under [sweep] as a cartesian axis")))
            lengths = {key: len(values) for key, values in group.items()}
            if len(set(lengths.values())) > 1:
                listed = ", ".join(f'"{_short(k)}" has {n}' for k, n in lengths.items())
                problems.append((at, (
                    f"linked lists differ in length ({listed}); every key of a linked group "
                    "needs one value per point")))
            for key in group:
                if key in seen:
                    problems.append((where(key, i), (
                        f"{_short(key)} is already swept at {seen[key]}; a key is swept once, "
                        "in the cartesian sweep or in one linked group")))
                else:
                    seen[key] = where(key, i)
        return problems


def _group_length(group: dict[str, list[Any]]) -> int:
    # Lengths differ only in a sweep validation refuses; count the longest.
    return max((len(v) for v in group.values()), default=1)


# ---- where: how errors name a place in the sweep ------------------------------


def _short(text: str, limit: int = 80) -> str:
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def where(key: str, group: int | None = None) -> str:
    """``sweep."path.loss"``, or ``sweep.linked[0]."flows.0.cc"`` in group 0."""
    head = "sweep" if group is None else group_where(group)
    return f'{head}."{_short(key)}"'


def group_where(group: int) -> str:
    return f"sweep.{LINKED}[{group}]"


def raw_where(parts: tuple | list) -> str:
    """The place of a path inside the raw sweep table (the parts after
    ``sweep``, as TOML nests them), e.g. ``("linked", 0, "flows.0.cc", 2)``
    → ``sweep.linked[0]."flows.0.cc"[2]``."""
    parts = list(parts)
    if parts[:1] == [LINKED]:
        if len(parts) == 1:
            return f"sweep.{LINKED}"
        if not isinstance(parts[1], int):
            return f"sweep.{LINKED}"
        head, rest = (where(str(parts[2]), parts[1]), parts[3:]) if len(parts) > 2 else (group_where(parts[1]), [])
    elif parts:
        head, rest = where(str(parts[0])), parts[1:]
    else:
        return "sweep"
    return head + "".join(f"[{p}]" if isinstance(p, int) else f".{_short(str(p), 40)}" for p in rest)


def model_where(parts: tuple | list) -> str:
    """The place of a validation error of :class:`Sweep` (its loc after
    ``sweep``; the model's `axes` level is not in the TOML)."""
    parts = list(parts)
    return raw_where(parts[1:] if parts[:1] == ["axes"] else parts)


# ---- the allow-list ---------------------------------------------------------------


def sweepable_list() -> str:
    return "; ".join(f"{head}.{'|'.join(leaves)}" for head, leaves in SWEEPABLE.items())


def key_problems(at: str, key: str, values: list, flow_count: int, step_count: int = 0,
                 app_steps: Sequence[int] = ()) -> list[tuple[str, str]]:
    """The key is on the allow-list and names something that exists (of
    `flow_count` flows, `step_count` [[path.schedule]] steps, `app_steps[i]`
    [[flows.app]] steps of flow i); the values are strings or numbers. `at`
    is where the key is written."""
    parts = key.split(".")
    if len(parts) == 2 and parts[0] in ("study", "path"):
        allowed = parts[1] in SWEEPABLE[parts[0]]
    elif len(parts) == 4 and parts[:2] == ["path", "schedule"]:
        allowed = parts[3] in SWEEPABLE["path.schedule.<index>"]
        if allowed and not re.fullmatch(r"0|[1-9][0-9]{0,5}", parts[2]):
            return [(at, f"{_short(parts[2], 20)!r} is not a step index; write path.schedule.0, "
                         "path.schedule.1, …")]
        if allowed and int(parts[2]) >= step_count:
            return [(at, f"path.schedule.{parts[2]}: no such step (there are {step_count}); a sweep varies a "
                         "step written as [[path.schedule]]")]
    elif len(parts) == 3 and parts[0] == "hosts":
        allowed = parts[2] in SWEEPABLE["hosts.<host>"] and bool(re.fullmatch(r"[A-Za-z0-9_]{1,8}", parts[1]))
    elif len(parts) == 3 and parts[0] == "flows":
        allowed = parts[2] in SWEEPABLE["flows.<index>"]
        if allowed and not re.fullmatch(r"0|[1-9][0-9]{0,5}", parts[1]):
            return [(at, f"{_short(parts[1], 20)!r} is not a flow index; write flows.0, flows.1, …")]
        if allowed and int(parts[1]) >= flow_count:
            return [(at, f"flows.{parts[1]}: no such flow (there are {flow_count})")]
    elif len(parts) == 5 and parts[0] == "flows" and parts[2] == "app":
        allowed = parts[4] in SWEEPABLE["flows.<index>.app.<index>"]
        if allowed and not all(re.fullmatch(r"0|[1-9][0-9]{0,5}", p) for p in (parts[1], parts[3])):
            return [(at, f"flows.{_short(parts[1], 20)}.app.{_short(parts[3], 20)}: write whole indices, "
                         "such as flows.0.app.1")]
        if allowed and int(parts[1]) >= flow_count:
            return [(at, f"flows.{parts[1]}: no such flow (there are {flow_count})")]
        if allowed and int(parts[3]) >= (count := (list(app_steps) + [0] * flow_count)[int(parts[1])]):
            return [(at, f"flows.{parts[1]}.app.{parts[3]}: no such step (there are {count}); a sweep varies a "
                         "step written as [[flows.app]]")]
    else:
        allowed = False
    if not allowed:
        return [(at, f"this key cannot be swept; sweepable keys are {sweepable_list()}")]
    problems = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problems.append((f"{at}[{i}]", f"a sweep value is a string or a number, got {toml_type(value)}"))
    return problems
