"""The keys that make a study's path move (docs/path-dynamics.md, "The
spec"), as spec.py's PathSection holds them, and the run plan's
PathDynamics they become (backends/base.py):

* ``[[path.schedule]]``: steps that set ``rate``, ``rtt`` and/or ``loss``
  ``at`` a time after the run's start, or ``on`` a sender's state change
  (the simulator only); a rate or RTT may be a multiple of the path's own
  (``"10x"``, ``"0.1x"``), resolved at each sweep point.
* ``[[path.drops]]``: ``count`` data packets dropped from ``at`` (or
  ``on``), of one flow or any.

Every item that happens at an instant takes it as :class:`Timed` does:
``at``, or ``on`` = ``"enter:STATE"``/``"exit:STATE"`` with ``nth``,
``flow`` and ``after`` (the run plan's StateTrigger).
* ``path.loss_model``: ``"independent"`` (the default) or Gilbert-Elliott
  bursts, ``{kind = "gilbert_elliott", r = 0.3, bad_loss = 1, good_loss =
  0}`` (``mean_burst`` instead of r; netem's ``p`` instead of path.loss);
  a sweep writes ``"gilbert_elliott:r=0.3,bad_loss=1"``.
* ``path.jitter``: ``"2ms"`` or ``{deviation, distribution, reorder,
  direction}``; a sweep writes ``"2ms:distribution=normal,reorder=true"``.
* ``path.policer``: ``{rate, burst}``, or ``"50Mbit/100KB"``.
* ``path.aggregation``: ``{direction, interval, bytes}``, or
  ``"ack:1ms"`` / ``"ack:1ms:64KB"``.

Each model checks what its own keys can; :func:`problems` checks what needs
the rest of the spec (the study's duration; the path's rate, RTT, loss and
MTU); :func:`plan_dynamics` and :func:`plan_loss` give the run plan's values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from .backends import base as run_plan
from .units import NUMBER_PATTERN, format_rate, format_time, key_values, toml_type
from .wire import ETH_HEADER_BYTES

if TYPE_CHECKING:  # spec.py imports this module
    from .spec import PathSection, Spec

# The path keys of this module.
KEYS = ("schedule", "loss_model", "jitter", "reorder", "policer", "aggregation", "drops")
# Longest jitter deviation and aggregation interval: far beyond any real
# path's, short of what would stall a run.
MAX_JITTER_S = 1.0
MAX_AGGREGATION_INTERVAL_S = 1.0
LOSS_MODEL_KINDS = ("independent", "gilbert_elliott")
GILBERT_ELLIOTT_KEYS = ("r", "mean_burst", "p", "bad_loss", "good_loss")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else toml_type(value)


# ---- values held to spec.py's types ---------------------------------------------


def _spec_type(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A converter to a type spec.py defines (its units, limits and clock),
    built by `make(spec module)` on first use: spec.py imports this module,
    so its types are read when a spec is validated, not when this loads."""
    adapter: list[TypeAdapter] = []

    def convert(value: Any) -> Any:
        if not adapter:
            from . import spec
            adapter.append(TypeAdapter(make(spec)))
        try:
            return adapter[0].validate_python(value, strict=True)
        except ValidationError as e:
            error = e.errors()[0]
            msg = error["msg"].removeprefix("Value error, ")
            if error["type"] != "value_error":
                msg = f"got {_shown(error.get('input'))}; {msg[:1].lower()}{msg[1:]}"
            raise ValueError(msg) from None
    return convert


_at = _spec_type(lambda spec: spec.DurationS)
_after = _spec_type(lambda spec: spec._time())
_rate = _spec_type(lambda spec: spec.RateBps)
_rtt = _spec_type(lambda spec: spec.RttS)
_loss = _spec_type(lambda spec: spec.Probability)
_size = _spec_type(lambda spec: spec.SizeBytes)
_jitter = _spec_type(lambda spec: spec._time(hi=MAX_JITTER_S, above_zero=True))
_interval = _spec_type(lambda spec: spec._time(hi=MAX_AGGREGATION_INTERVAL_S, above_zero=True))


def _unknown(value: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(map(str, unknown))}; {where} takes {', '.join(allowed)}")


# ---- [[path.schedule]] ----------------------------------------------------------------

_MULTIPLE = re.compile(r"\s*" + NUMBER_PATTERN + r"\s*[xX]\s*")


class Multiple(_Strict):
    """A step's rate or RTT as a multiple of the path's own (``"10x"``)."""

    factor: float

    def __str__(self) -> str:
        return f"{self.factor:g}x"


def _or_multiple(base: str, convert: Callable[[Any], Any]) -> BeforeValidator:
    """A value as `convert` reads it, or a multiple of the path key `base`."""
    def parse(value: Any) -> Any:
        m = _MULTIPLE.fullmatch(value) if isinstance(value, str) else None
        if m is not None:
            factor = float(m.group(1))
            if not (math.isfinite(factor) and factor > 0):
                raise ValueError(f"{value!r}: a multiple of {base} is above 0 and finite, such as '10x' or '0.1x'")
            return Multiple(factor=factor)
        try:
            return convert(value)
        except ValueError as e:
            if isinstance(value, str) and str(e).startswith("cannot read"):
                raise ValueError(f"{e}, or a multiple of {base} such as '10x' or '0.1x'") from None
            raise
    return BeforeValidator(parse)


# ---- at, or on a sender's state change ----------------------------------------------

_ON = re.compile(r"(enter|exit):([A-Za-z][A-Za-z0-9_]*)")


def _on(value: Any) -> str:
    if not isinstance(value, str) or _ON.fullmatch(value.strip()) is None:
        raise ValueError(f"got {_shown(value)}; write 'enter:STATE' or 'exit:STATE' with a state of the flow's "
                         "congestion control, such as 'enter:DRAIN' or 'exit:PROBE_DOWN'")
    return value.strip()


class Timed(_Strict):
    """When an item happens: ``at`` a time after the run's start, or ``on``
    the ``nth`` time flow ``flow``'s first stream enters or leaves a state
    of its congestion control, ``after`` that (a state trigger; bbr and
    bbr3 expose states, and only the simulator watches them:
    crates/sim/src/path/trigger.rs reads the state's name)."""

    at: Annotated[float, BeforeValidator(_at)] | None = None
    on: Annotated[str, BeforeValidator(_on)] | None = None
    nth: Annotated[int, Field(ge=1)] = 1
    flow: Annotated[int, Field(ge=0)] = 0
    after: Annotated[float, BeforeValidator(_after)] = 0.0

    @model_validator(mode="after")
    def _at_or_on(self) -> Timed:
        if (self.at is None) == (self.on is None):
            raise ValueError("give at (a time such as '3s') or on (a sender's state change such as 'enter:DRAIN'), "
                             "one of them")
        if self.on is None:
            given = sorted({"nth", "after"} & self.model_fields_set)
            if given:
                raise ValueError(f"{', '.join(given)} only apply with on (a state trigger), not with at")
        return self

    def plan_trigger(self) -> run_plan.StateTrigger | None:
        """The run plan's StateTrigger, or None for an item at a time."""
        if self.on is None:
            return None
        return run_plan.StateTrigger(event=self.on, nth=self.nth, flow=self.flow, after_s=self.after)

    def trigger_problems(self, where: str, spec: Spec) -> list[tuple[str, str]]:
        """What `on` needs of the rest of `spec`: a TCP flow to watch whose
        congestion control has the state named (the simulator's own check,
        fatpipe._native.state_trigger_problem)."""
        if self.on is None:
            return []
        if self.flow >= len(spec.flows):
            return [(f"{where}.flow", f"no flow {self.flow}: the spec has {len(spec.flows)} [[flows]] "
                                      f"(0 to {len(spec.flows) - 1})")]
        flow = spec.flows[self.flow]
        if flow.kind == "cross":
            return [(f"{where}.flow", f"flows.{self.flow} is cross traffic, which has no sender state to watch")]
        try:
            from . import _native
        except ImportError:  # no simulator: the backends that can run `on` need it anyway
            return []
        msg = _native.state_trigger_problem(self.on, flow.cc)
        return [(f"{where}.on", f"flows.{self.flow} runs {flow.cc}: {msg}")] if msg else []


class ScheduleStep(Timed):
    """One ``[[path.schedule]]`` entry: from `at` (or `on`) on, the values
    it gives replace the path's (the others stay as they are)."""

    rate: Annotated[float | Multiple, _or_multiple("path.rate", _rate)] | None = None
    rtt: Annotated[float | Multiple, _or_multiple("path.rtt", _rtt)] | None = None
    loss: Annotated[float, BeforeValidator(_loss)] | None = None
    # A linear change from the values in force before `at` to the step's,
    # over this long: a staircase of RAMP_STEPS steps (ramp_steps()).
    ramp: Annotated[float, BeforeValidator(_after)] | None = None

    @model_validator(mode="after")
    def _sets_something(self) -> ScheduleStep:
        if self.rate is None and self.rtt is None and self.loss is None:
            raise ValueError("a step sets at least one of rate, rtt, loss (besides at or on)")
        if self.ramp is not None and (self.on is not None or self.ramp <= 0):
            raise ValueError("ramp is a time above 0 over which a step at a time (at) changes the path linearly; "
                             "a step on a state change (on) happens at once")
        if self.on is None and "flow" in self.model_fields_set:
            raise ValueError("flow only applies with on (the flow whose state a step waits for): a step at a time "
                             "changes the path for every flow")
        return self


def _steps(value: Any) -> Any:
    if isinstance(value, dict):
        raise ValueError("the schedule is an array of tables: write [[path.schedule]] (double brackets) above "
                         "each step's keys")
    return value


Schedule = Annotated[list[ScheduleStep], BeforeValidator(_steps)]


class DropItem(Timed):
    """One ``[[path.drops]]`` entry: from the first data packet reaching
    the bottleneck at or after `at` (or `on`), `count` consecutive data
    packets are dropped; of flow `only_flow` alone when the item writes
    ``flow`` (with ``on``, ``flow`` is also the watched flow), else of any
    TCP flow (never cross traffic)."""

    count: Annotated[int, Field(ge=1)] = 1

    @property
    def only_flow(self) -> int | None:
        return self.flow if "flow" in self.model_fields_set else None


Drops = Annotated[list[DropItem], BeforeValidator(_steps)]


def _resolved(value: float | Multiple | None, base: float | None) -> float | None:
    if isinstance(value, Multiple):
        return value.factor * (base or 0.0)
    return value


# ---- path.loss_model ------------------------------------------------------------------


def _number(key: str, value: Any, lo: float, hi: float, lo_open: bool, what: str) -> float:
    """`value` as a number in (lo, hi] (lo_open) or [lo, hi), else a ValueError naming the key."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not ((lo < value <= hi) if lo_open else (lo <= value < hi)):
        raise ValueError(f"{key} = {_shown(value)}: {what}")
    return float(value)


def _gilbert_elliott(value: dict[str, Any]) -> dict[str, Any]:
    """The Gilbert-Elliott keys as written → the model's fields."""
    _unknown(value, ("kind", *GILBERT_ELLIOTT_KEYS), 'kind = "gilbert_elliott"')
    if ("r" in value) == ("mean_burst" in value):
        raise ValueError('kind = "gilbert_elliott" needs one of r (netem\'s r: the chance per packet of leaving '
                         "the bad state) or mean_burst (packets in the bad state on average, 1/r)")
    if "r" in value:
        r = _number("r", value["r"], 0, 1, True, "netem's r is a chance per packet above 0 and at most 1")
    else:
        n = _number("mean_burst", value["mean_burst"], 1, math.inf, False,
                    "the packets spent in the bad state on average (1/r), at least 1")
        r = 1 / n
    bad = _number("bad_loss", value.get("bad_loss", 1.0), 0, 1, True,
                  "the loss per packet in the bad state (netem's 1-h), above 0 and at most 1")
    good = _number("good_loss", value.get("good_loss", 0.0), 0, 1, False,
                   "the loss per packet in the good state (netem's 1-k), from 0 up to below bad_loss")
    if good >= bad:
        raise ValueError(f"good_loss = {good:g} must be below bad_loss = {bad:g}: the bad state loses more")
    p = None
    if "p" in value:
        p = _number("p", value["p"], 0, 1, True, "netem's p is a chance per packet above 0 and at most 1")
    return {"kind": "gilbert_elliott", "r": r, "bad_loss": bad, "good_loss": good, "p": p}


class LossModel(_Strict):
    """``path.loss_model``: independent loss per packet (path.loss), or a
    Gilbert-Elliott chain whose long-run mean is path.loss (or follows from
    netem's p, when given)."""

    kind: Literal["independent", "gilbert_elliott"] = "independent"
    r: float | None = None  # chance per packet of leaving the bad state
    bad_loss: float = 1.0  # loss per packet in the bad state (netem's 1-h)
    good_loss: float = 0.0  # loss per packet in the good state (netem's 1-k)
    p: float | None = None  # netem's p (chance per packet of entering the bad state), if given

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        if isinstance(value, LossModel):
            return value
        forms = ('"independent", "gilbert_elliott:r=0.3,bad_loss=1" or a table such as '
                 '{kind = "gilbert_elliott", r = 0.3}')
        if isinstance(value, str):
            kind, sep, rest = value.partition(":")
            kind = kind.strip()
            if kind not in LOSS_MODEL_KINDS:
                raise ValueError(f"unknown loss model {value!r}; write {forms}")
            value = {"kind": kind} | key_values(value, rest, "gilbert_elliott:r=0.3,bad_loss=1", numbers=True)
        if not isinstance(value, dict):
            raise ValueError(f"path.loss_model is {forms}, got {toml_type(value)}")
        kind = value.get("kind", "independent")
        if kind not in LOSS_MODEL_KINDS:
            raise ValueError(f"kind = {_shown(kind)} is not a loss model; the kinds are {', '.join(LOSS_MODEL_KINDS)}")
        if kind == "independent":
            given = sorted(set(value) - {"kind"})
            if given:
                raise ValueError(f"{', '.join(map(str, given))} only apply to kind = \"gilbert_elliott\"")
            return {"kind": kind}
        return _gilbert_elliott(value)

    def given_mean(self) -> float | None:
        """The long-run mean loss netem's p gives: the chain is in the bad
        state a fraction p/(p + r) of packets, so the mean is
        (r·good_loss + p·bad_loss)/(p + r); None without p."""
        if self.p is None or self.r is None:
            return None
        return (self.r * self.good_loss + self.p * self.bad_loss) / (self.p + self.r)

    def highest_mean(self) -> float:
        """The largest mean loss the chain reaches, where p is 1:
        (bad_loss + r·good_loss)/(1 + r)."""
        r = self.r or 0.0
        return (self.bad_loss + r * self.good_loss) / (1 + r)

    def mean_problem(self, key: str, loss: float) -> str | None:
        """Why `loss`, written at `key`, cannot be this chain's long-run mean
        (p = r·(loss - good_loss)/(bad_loss - loss) must be a chance above 0)."""
        if self.good_loss < loss <= self.highest_mean():
            return None
        return (f"{key} = {loss:g} is not a mean loss path.loss_model (gilbert_elliott, r = {self.r:g}, "
                f"bad_loss = {self.bad_loss:g}, good_loss = {self.good_loss:g}) can have: it must lie above "
                f"good_loss ({self.good_loss:g}) and at most {self.highest_mean():.6g} "
                "((bad_loss + r·good_loss)/(1 + r), where netem's p reaches 1)")

    def plan(self) -> run_plan.GilbertElliott | None:
        if self.kind == "independent" or self.r is None:
            return None
        return run_plan.GilbertElliott(r=self.r, bad_loss=self.bad_loss, good_loss=self.good_loss)


INDEPENDENT = LossModel()


# ---- path.jitter, path.policer, path.aggregation -------------------------------------------


class JitterSpec(_Strict):
    """``path.jitter``: per-packet delay variation of the one-way delay."""

    deviation: Annotated[float, BeforeValidator(_jitter)]
    distribution: Literal["uniform", "normal"] = "uniform"
    reorder: bool = False
    direction: Literal["data", "ack", "both"] = "data"

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        if isinstance(value, str):
            deviation, _, rest = value.partition(":")
            example = "2ms:distribution=normal,reorder=true"
            return {"deviation": deviation.strip()} | key_values(value, rest, example, numbers=True)
        if not isinstance(value, (dict, JitterSpec)):
            raise ValueError("path.jitter is a deviation such as '2ms' or a table such as "
                             f'{{deviation = "2ms", distribution = "normal", reorder = true}}, got {toml_type(value)}')
        return value

    def plan(self) -> run_plan.Jitter:
        return run_plan.Jitter(deviation_s=self.deviation, distribution=self.distribution, reorder=self.reorder,
                           direction=self.direction)


def _share(value: Any) -> float:
    """A probability above 0 and at most 1, written 0.25 or "25%" (as tc
    writes netem's percentages)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise ValueError(f"cannot read {value!r} as a probability; write 0.01 or '1%'") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        share = float(value)
    else:
        raise ValueError(f"a probability such as 0.01 or '1%', got {toml_type(value)}")
    if not 0 < share <= 1:
        raise ValueError(f"{value!r} is not a probability above 0 and at most 1 (leave path.reorder out for none)")
    return share


class ReorderSpec(_Strict):
    """``path.reorder``: netem's reorder knob (``reorder P gap G``): after
    `gap` - 1 packets taken with their delay, the next is sent at once,
    skipping the one-way delay, with `probability` (else it waits its
    delay and the count goes on)."""

    probability: Annotated[float, BeforeValidator(_share)]
    gap: Annotated[int, Field(ge=1, le=2**32 - 1)] = 1
    direction: Literal["data", "ack", "both"] = "data"

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        if isinstance(value, (str, float, int)) and not isinstance(value, bool):
            if not isinstance(value, str):
                return {"probability": value}
            probability, _, rest = value.partition(":")
            keys = key_values(value, rest, "25%:gap=5", numbers=True)
            if isinstance(keys.get("gap"), float) and keys["gap"].is_integer():
                keys["gap"] = int(keys["gap"])  # the string form's numbers are read as floats
            return {"probability": probability.strip()} | keys
        if not isinstance(value, (dict, ReorderSpec)):
            raise ValueError("path.reorder is a probability such as 0.01 or '1%', or a table such as "
                             f'{{probability = 0.25, gap = 5}}, got {toml_type(value)}')
        return value

    def plan(self) -> run_plan.Reorder:
        return run_plan.Reorder(probability=self.probability, gap=self.gap, direction=self.direction)


class PolicerSpec(_Strict):
    """``path.policer``: a token bucket in front of the bottleneck."""

    rate: Annotated[float, BeforeValidator(_rate)]
    burst: Annotated[int, BeforeValidator(_size)]

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        if isinstance(value, str):
            rate, sep, burst = value.rpartition("/")
            if not sep or not rate.strip():
                raise ValueError(f"cannot read {value!r} as a policer; write rate/burst such as '50Mbit/100KB'")
            return {"rate": rate.strip(), "burst": burst.strip()}
        if not isinstance(value, (dict, PolicerSpec)):
            raise ValueError("path.policer is a table such as {rate = \"50Mbit\", burst = \"100KB\"} or the string "
                             f"'50Mbit/100KB', got {toml_type(value)}")
        return value

    def plan(self) -> run_plan.Policer:
        return run_plan.Policer(rate_bps=self.rate, burst_bytes=self.burst)


class AggregationSpec(_Strict):
    """``path.aggregation``: a link that releases packets in bursts."""

    direction: Literal["data", "ack"]
    interval: Annotated[float, BeforeValidator(_interval)]
    bytes: Annotated[int, BeforeValidator(_size)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        if isinstance(value, str):
            parts = [p.strip() for p in value.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError(f"cannot read {value!r} as an aggregation; write direction:interval[:bytes] "
                                 "such as 'ack:1ms' or 'ack:1ms:64KB'")
            return dict(zip(("direction", "interval", "bytes"), parts, strict=False))
        if not isinstance(value, (dict, AggregationSpec)):
            raise ValueError('path.aggregation is a table such as {direction = "ack", interval = "1ms"} or the '
                             f"string 'ack:1ms:64KB', got {toml_type(value)}")
        return value

    def plan(self) -> run_plan.Aggregation:
        return run_plan.Aggregation(direction=self.direction, interval_s=self.interval, bytes=self.bytes)


# ---- checks across the spec, and the plan ----------------------------------------------


def problems(spec: Spec) -> list[tuple[str, str]]:
    """What these keys need of the rest of `spec`: steps in
    time order within the run, multiples that land within the path's
    limits, a loss the loss model can have, bursts of at least one frame.
    A path left to the real one is refused by spec.py (it names these keys)."""
    path, duration = spec.path, spec.study.duration
    if spec.path_unset():
        return []
    out: list[tuple[str, str]] = []
    timed = [(i, s) for i, s in enumerate(path.schedule) if s.at is not None]
    for k, (i, step) in enumerate(timed):
        where = f"path.schedule.{i}"
        if step.at >= duration:
            out.append((f"{where}.at", f"{format_time(step.at)} is not before study.duration "
                                       f"({format_time(duration)}); a step happens during the run"))
        if step.ramp is not None:
            end = step.at + step.ramp
            nxt = timed[k + 1] if k + 1 < len(timed) else None
            if end > duration:
                out.append((f"{where}.ramp", f"the ramp ends at {format_time(end)}, after study.duration "
                                             f"({format_time(duration)})"))
            elif nxt is not None and end > nxt[1].at:
                out.append((f"{where}.ramp", f"the ramp ends at {format_time(end)}, after path.schedule.{nxt[0]}.at "
                                             f"({format_time(nxt[1].at)}); a ramp ends before the next step"))
        if k and step.at <= timed[k - 1][1].at:
            j, before = timed[k - 1]
            out.append((f"{where}.at", f"{format_time(step.at)} is not after path.schedule.{j}.at "
                                       f"({format_time(before.at)}); steps are written in time order, "
                                       "each later than the one before (steps with on aside)"))
    for i, step in enumerate(path.schedule):
        where = f"path.schedule.{i}"
        out += step.trigger_problems(where, spec)
        for key, base, check, show in (("rate", path.rate, _rate, format_rate), ("rtt", path.rtt, _rtt, format_time)):
            value = getattr(step, key)
            if isinstance(value, Multiple):
                try:
                    check(value.factor * base)
                except ValueError as e:
                    out.append((f"{where}.{key}", f"{value} of path.{key} ({show(base)}): {e}"))
    for i, drop in enumerate(path.drops):
        where = f"path.drops.{i}"
        if drop.at is not None and drop.at >= duration:
            out.append((f"{where}.at", f"{format_time(drop.at)} is not before study.duration "
                                       f"({format_time(duration)}); drops happen during the run"))
        out += drop.trigger_problems(where, spec)
        if drop.on is None and drop.only_flow is not None:
            if drop.only_flow >= len(spec.flows):
                out.append((f"{where}.flow", f"no flow {drop.only_flow}: the spec has {len(spec.flows)} [[flows]]"))
            elif spec.flows[drop.only_flow].kind == "cross":
                out.append((f"{where}.flow", f"flows.{drop.only_flow} is cross traffic, which [[path.drops]] "
                                             "never drops (it drops TCP data packets)"))
    model = path.loss_model
    if model.kind == "gilbert_elliott":
        if model.p is not None and path.loss != 0:
            out.append(("path.loss", (
                f"path.loss_model gives netem's p = {model.p:g}, which sets the mean loss "
                f"({model.given_mean():.6g}); leave path.loss out (or 0), or leave p out to make path.loss the "
                "mean")))
        elif model.p is None and (msg := model.mean_problem("path.loss", path.loss)):
            out.append(("path.loss", msg))
        out += [(f"path.schedule.{i}.loss", msg) for i, step in enumerate(path.schedule)
                if step.loss is not None and (msg := model.mean_problem(f"path.schedule.{i}.loss", step.loss))]
    frame = path.mtu + ETH_HEADER_BYTES
    for key, size in (("policer.burst", path.policer and path.policer.burst),
                      ("aggregation.bytes", path.aggregation and path.aggregation.bytes)):
        if size is not None and size < frame:
            out.append((f"path.{key}", f"{size} bytes is less than one frame of path.mtu = {path.mtu} "
                                       f"({frame} bytes with the {ETH_HEADER_BYTES}-byte Ethernet header); "
                                       f"write at least {frame} bytes"))
    return out


def plan_loss(path: PathSection) -> float:
    """The run plan's long-run mean loss: path.loss, or the mean netem's p gives."""
    given = path.loss_model.given_mean()
    return path.loss if given is None else given


# A ramp is a staircase of equal steps, one per RAMP_STEP_S of its length
# and at most RAMP_STEPS of them: every backend applies plan steps exactly
# (a packet straddling one is sent partly at each rate), so the staircase
# is what runs, and what a report draws.
RAMP_STEPS = 100
RAMP_STEP_S = 0.01


def staircase(at_s: float, ramp_s: float, before: dict[str, float | None],
              after: dict[str, float | None]) -> list[run_plan.PathStep]:
    """A linear change over `ramp_s` from `at_s` as plan steps: n equal
    steps (one per RAMP_STEP_S, at most RAMP_STEPS), the k-th (k = 1..n)
    at at_s + (k-1)·ramp_s/n with k/n of the change of each PathStep field
    `after` sets (from its value in `before`)."""
    n = max(1, min(RAMP_STEPS, round(ramp_s / RAMP_STEP_S)))
    return [run_plan.PathStep(at_s=at_s + (k - 1) * ramp_s / n, **{
        key: None if value is None else before[key] + (value - before[key]) * k / n
        for key, value in after.items()}) for k in range(1, n + 1)]


def ramp_steps(path: PathSection) -> list[run_plan.PathStep]:
    """The plan's steps of `path.schedule`: a step with `ramp` becomes n
    steps from the values in force before it (the path's, or the last
    timed step's) to its own, the k-th (k = 1..n) at at + (k-1)·ramp/n
    with k/n of the change; the others as written."""
    out: list[run_plan.PathStep] = []
    now = {"rate_bps": path.rate, "rtt_s": path.rtt, "loss": path.loss}
    for s in path.schedule:
        step = run_plan.PathStep(at_s=s.at, rate_bps=_resolved(s.rate, path.rate), rtt_s=_resolved(s.rtt, path.rtt),
                                 loss=s.loss, on=s.plan_trigger())
        if s.ramp is None:
            out.append(step)
        else:
            out += staircase(s.at, s.ramp, now, {k: getattr(step, k) for k in now})
        if s.at is not None:
            now |= {k: v for k in now if (v := getattr(step, k)) is not None}
    return out


def plan_dynamics(path: PathSection) -> run_plan.PathDynamics:
    """The run plan's PathDynamics of `path`, in SI units, each
    step's multiple of the path's rate or RTT resolved, each ramp a
    staircase (ramp_steps)."""
    return run_plan.PathDynamics(
        schedule=tuple(ramp_steps(path)),
        drops=tuple(run_plan.PathDrop(at_s=d.at, count=d.count, flow=d.only_flow, on=d.plan_trigger())
                    for d in path.drops),
        gilbert_elliott=path.loss_model.plan(),
        jitter=path.jitter.plan() if path.jitter else None,
        reorder=path.reorder.plan() if path.reorder else None,
        policer=path.policer.plan() if path.policer else None,
        aggregation=path.aggregation.plan() if path.aggregation else None,
        trace=path.trace.plan() if path.trace else None,
    )
