"""An application-limited bulk sender (docs/path-dynamics.md,
"Application-limited senders"): a ``[[flows]]`` entry of ``kind = "bulk"``
whose application writes at a limited rate that can change, and pauses.

* ``app_rate``: each stream's application writes at this rate
  (``"20Mbit"``), or ``"unlimited"``; left out, it always has data (as a
  bulk sender without these keys);
* ``[[flows.app]]``: steps in time order, each ``at`` a time from the
  run's start (or ``on`` a sender's state change, simulator only, as in
  ``[[path.schedule]]``: pathspec.Timed) and exactly one of ``rate`` (the
  new write rate per stream, or ``"unlimited"``) or ``pause`` (write
  nothing for this long, then resume at the rate in force, without
  catching up).

The application writes every :data:`TICK_S` the bytes the rate owes for
the tick, carrying the fraction. :func:`flow_problems` checks one flow's
keys (FlowSection's validator); :func:`problems` what needs the rest of the
spec; :func:`plan` gives the run plan's AppLimit (None: the sender always
has data, its plan as it was before these keys existed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, ConfigDict, model_validator

from .backends import base as run_plan
from .pathspec import Timed, _spec_type
from .units import format_time, toml_type

if TYPE_CHECKING:  # spec.py imports this module
    from .spec import FlowSection, Spec

KIND = "bulk"
# The keys of this module on a flow (each also a sweep key, sweep.py).
KEYS = ("app_rate", "app")
STEP_KEYS = ("at", "rate", "pause", "on", "nth", "flow", "after")
# The word for a rate without a limit (the sender always has data).
UNLIMITED = "unlimited"
# The application's write period, one definition for the simulator
# (crates/sim/src/app_rate.rs TICK) and the Linux traffic engine
# (linuxpath/engine.py APP_TICK_S), which read it from the plan's AppLimit.
TICK_S = 1e-3

_rate = _spec_type(lambda spec: spec.RateBps)
_pause = _spec_type(lambda spec: spec.DurationS)


def _rate_or_unlimited(value: Any) -> Any:
    if value == UNLIMITED:
        return UNLIMITED
    try:
        return _rate(value)
    except ValueError as e:
        raise ValueError(f"{e}; or {UNLIMITED!r} (the application always has data)") from None


AppRate = Annotated[float | str, BeforeValidator(_rate_or_unlimited)]


class AppStep(Timed):
    """One ``[[flows.app]]`` step: from `at` (or `on`) on, the write rate
    is `rate`; or for `pause` from then on, the application writes nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    rate: AppRate | None = None
    pause: Annotated[float, BeforeValidator(_pause)] | None = None

    @model_validator(mode="after")
    def _one_change(self) -> AppStep:
        if (self.rate is None) == (self.pause is None):
            raise ValueError("a step has exactly one of rate (the new write rate per stream, such as '10Mbit', or "
                             f"{UNLIMITED!r}) or pause (a time the application writes nothing, such as '2s')")
        return self


def _steps(value: Any) -> Any:
    if isinstance(value, dict):
        raise ValueError("the application's steps are an array of tables: write [[flows.app]] (double brackets) "
                         "under the flow's [[flows]] above each step's keys")
    if not isinstance(value, list):
        raise ValueError(f"[[flows.app]] is an array of tables of at and rate or pause, got {toml_type(value)}")
    return value


AppSchedule = Annotated[list[AppStep], BeforeValidator(_steps)]


def flow_problems(flow: FlowSection) -> list[str]:
    """What is wrong with one flow's application keys: only a bulk flow takes them."""
    given = [k for k in KEYS if k in flow.model_fields_set]
    if given and flow.kind != KIND:
        return [f"{', '.join(given)} only apply to kind = \"bulk\" (an RPC or cross flow sets its own pace)"]
    return []


def problems(spec: Spec) -> list[tuple[str, str]]:
    """Steps in time order, each during the run."""
    out: list[tuple[str, str]] = []
    duration = spec.study.duration
    for i, flow in enumerate(spec.flows):
        last: tuple[int, float] | None = None  # the timed step before
        for j, step in enumerate(flow.app):
            out += step.trigger_problems(f"flows.{i}.app.{j}", spec)
            if step.at is None:
                continue  # on a state change: no place in the time order
            where = f"flows.{i}.app.{j}.at"
            if step.at >= duration:
                out.append((where, f"{format_time(step.at)} is not before study.duration ({format_time(duration)}); "
                                   "a step happens during the run"))
            if last is not None and step.at <= last[1]:
                out.append((where, f"{format_time(step.at)} is not after flows.{i}.app.{last[0]}.at "
                                   f"({format_time(last[1])}); steps are written in time order, each "
                                   "later than the one before"))
            last = (j, step.at)
    return out


def _bps(rate: float | str | None) -> float | None:
    return None if rate in (None, UNLIMITED) else float(rate)  # type: ignore[arg-type]


def plan(flow: FlowSection) -> run_plan.AppLimit | None:
    """The run plan's AppLimit of a bulk flow, in SI units; None when its
    application always has data (no app_rate, or "unlimited", and no steps)."""
    rate_bps = _bps(flow.app_rate)
    if rate_bps is None and not flow.app:
        return None
    return run_plan.AppLimit(rate_bps=rate_bps, tick_s=TICK_S, steps=tuple(
        run_plan.AppStep(at_s=s.at, rate_bps=_bps(s.rate), pause_s=s.pause, on=s.plan_trigger()) for s in flow.app))
