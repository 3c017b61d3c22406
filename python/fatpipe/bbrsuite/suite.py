"""The BBR draft's suite run end to end: each case the path model can
express, with each CCA, as a study on a backend; its criteria evaluated;
one table (terminal, Markdown, JSON) of pass / fail / n/a / not evaluated
with the value measured."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import spec as spec_mod
from .. import wire
from ..backends import DEFAULT_BACKEND
from ..study import plan_runs
from .catalogue import Case, Catalogue, load
from .checks import RunTables, Verdict, evaluate, expand_pass_through
from .studies import study_toml


@dataclass
class CaseResult:
    case: str
    title: str
    cc: str
    backend: str
    status: str  # "pass" | "fail" | "no verdict" | "contrast" (not bbr3) | "not run" (why in `reason`)
    reason: str = ""
    verdicts: list[tuple[str, str, Verdict]] = field(default_factory=list)  # (step, criterion, verdict)
    linux_differs: tuple[str, ...] = ()


def _columns(df, run_id: str) -> dict[str, np.ndarray]:
    part = df[df["run_id"] == run_id] if len(df) else df
    return {c: part[c].to_numpy() for c in part.columns}


def _tables(loaded, run_id: str, plan) -> RunTables:
    """The run's tables and the path its plan (a RunPlan) gave it."""
    mss = wire.mss_with_timestamps(plan.mtu_bytes)

    def payload(rate_bps: float) -> float:
        return wire.goodput_ceiling_bps(rate_bps, mss, plan.mtu_bytes)

    steps = plan.dynamics.schedule
    policer = plan.dynamics.policer
    series = _columns(loaded.series, run_id)
    events = _columns(loaded.events, run_id)
    logged = bool(len(events.get("t_s", [])))
    if not logged:
        events = events_from_samples(series)
    events = expand_pass_through(events)
    rates_after = tuple(payload(s.rate_bps) for s in steps if s.rate_bps)
    constants = {"mss_bits": 8.0 * mss, "rtt_s": plan.rtt_s}
    if plan.dynamics.aggregation:
        constants["aggregation.interval"] = plan.dynamics.aggregation.interval_s
    if rates_after:
        constants["bdp_packets_after_step"] = rates_after[0] * plan.rtt_s / (8.0 * mss)
    app = plan.flows[0].app
    pauses = tuple((s.at_s, s.at_s + s.pause_s) for s in (app.steps if app else ()) if s.pause_s)
    written = None
    steps_bps = app.write_rate_steps() if app else []
    if steps_bps and all(rate is not None for _, rate in steps_bps):
        # Each stream writes its rate's bytes every tick (app_rate.rs).
        ts = np.asarray(series.get("t_s", []), dtype=float)
        edges = [t0 for t0, _ in steps_bps] + [np.inf]
        written = sum(np.clip(ts - t0, 0.0, t1 - t0) * rate / 8
                      for (t0, rate), t1 in zip(steps_bps, edges[1:], strict=True))
    return RunTables(series=series, events=events, constants=constants, pauses_s=pauses, app_written_bytes=written,
                     payload_rate_bps=payload(plan.rate_bps), schedule_s=tuple(s.at_s for s in steps),
                     rate_after_steps_bps=rates_after,
                     policer_payload_bps=payload(policer.rate_bps) if policer else None,
                     duration_s=plan.duration_s, logged_events=logged)


# The CCA the draft specifies; the others (bbr v1) run for contrast: their
# criteria show what they do, not a pass or a fail (docs/bbr-test-cases.md).
SPECIFIED_CC = "bbr3"


def events_from_samples(series: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """State changes read off the samples, for a backend that logs no
    events (the kernel's TCP_CC_INFO gives bbr's state, by its gains, per
    sample): each change at the first sample that shows it, with that
    sample's variables; an event's instant is then good to a sampling
    interval, and states shorter than one are missed."""
    states = series.get("cc_state", np.asarray([]))
    rows, last = [], None
    for i, state in enumerate(states):
        # BBR starts in STARTUP (bbr_init); a state read before it (the
        # kernel's first TCP_CC_INFO, before any gain is set) is not one.
        if state is None or (last is None and state != "startup"):
            continue
        if last is not None and state != last:
            rows.append((i, last))
        last = state
    kept = ("cwnd_segments", "inflight_segments")
    out = {k: np.asarray([v[i] for i, _ in rows], dtype=object) for k, v in series.items()
           if k.startswith("cc_") or k in kept}
    out["t_s"] = np.asarray([series["t_s"][i] for i, _ in rows], dtype=float)
    out["kind"] = np.asarray(["cc_state"] * len(rows), dtype=object)
    out["from_state"] = np.asarray([f for _, f in rows], dtype=object)
    out["to_state"] = np.asarray([states[i] for i, _ in rows], dtype=object)
    return out


def _overall(verdicts: list[Verdict], cc: str) -> str:
    judged = [v.status for v in verdicts if v.status in ("pass", "fail")]
    if cc != SPECIFIED_CC:
        return "contrast"
    if "fail" in judged:
        return "fail"
    return "pass" if judged else "no verdict"


def run_case(catalogue: Catalogue, case: Case, cc: str, backend: str, out: Path,
             progress: Callable[[str], None] | None = None) -> CaseResult:
    """Runs one case with one CCA on `backend` (its study under `out`) and
    evaluates its criteria."""
    from .. import run as run_study  # the public API: the same path as `fatpipe run`
    result = CaseResult(case.id, case.title, cc, backend, "not run", linux_differs=case.linux_differs)
    if case.status == "needs":
        result.reason = "not expressible: needs " + ", ".join(case.needs)
        return result
    out.mkdir(parents=True, exist_ok=True)
    name = f"{case.id.replace('.', '')}-{case.slug}-{cc}-{backend}"
    spec_path = out / f"{name}.toml"
    spec_path.write_text(study_toml(catalogue, case, cc, backend))
    try:
        loaded = run_study(spec_path, out=out / name, progress=None)
    except spec_mod.SpecError as e:
        # A setup this CCA cannot take: a trigger on a state it lacks (v1
        # has one PROBE_BW state), or a key this backend refuses.
        result.reason = f"not expressible for {cc} on {backend}: {e}"
        return result
    runs = loaded.runs
    if list(runs["status"]) != ["ok"]:
        result.reason = "; ".join(str(r) for r in runs["reason"])
        return result
    spec, raw = spec_mod.load(spec_path)
    (plan,) = plan_runs(spec, raw)
    tables = _tables(loaded, str(runs["run_id"].iloc[0]), plan)
    for c in case.criteria:
        result.verdicts.append((str(c.step), c.text(), evaluate(c, tables)))
    result.status = _overall([v for _, _, v in result.verdicts], cc)
    if progress:
        counts = {s: sum(v.status == s for _, _, v in result.verdicts) for s in ("pass", "fail")}
        progress(f"{case.id} {cc} on {backend}: {result.status} ({counts['pass']} passed, {counts['fail']} failed "
                 f"of {len(case.criteria)} criteria)")
    return result


def run_suite(out: str | Path, backend: str = DEFAULT_BACKEND, ccs: Sequence[str] | None = None,
              cases: Sequence[str] | None = None, progress: Callable[[str], None] | None = print) -> list[CaseResult]:
    """Every case (or `cases`, by id or slug) with every CCA of the
    catalogue (or `ccs`); writes out/bbr-cases.json and out/bbr-cases.md."""
    out = Path(out)
    catalogue = load()
    chosen = [catalogue.case(c) for c in cases] if cases else list(catalogue.cases)
    results = [run_case(catalogue, case, cc, backend, out, progress) for case in chosen
               for cc in (ccs or catalogue.ccs)]
    (out / "bbr-cases.json").write_text(json.dumps([asdict(r) for r in results], indent=1, default=str))
    (out / "bbr-cases.md").write_text(markdown(catalogue, results))
    return results


def markdown(catalogue: Catalogue, results: list[CaseResult]) -> str:
    """The suite's table: one row per case and CCA, then every criterion."""
    lines = [f"Cases of {catalogue.draft}, Appendix A, run by `fatpipe bbr-cases`.", "",
             "| case | title | cc | backend | result | criteria passed / failed / n/a / not evaluated |",
             "|---|---|---|---|---|---|"]
    for r in results:
        n = {s: sum(v.status == s for _, _, v in r.verdicts) for s in ("pass", "fail", "n/a", "not evaluated")}
        counts = f"{n['pass']} / {n['fail']} / {n['n/a']} / {n['not evaluated']}" if r.verdicts else r.reason
        lines.append(f"| {r.case} | {r.title} | {r.cc} | {r.backend} | {r.status} | {counts} |")
    lines += ["", "Every criterion:", "", "| case | cc | step | criterion | verdict | measured, or why |",
              "|---|---|---|---|---|---|"]
    for r in results:
        for step, text, v in r.verdicts:
            lines.append(f"| {r.case} | {r.cc} | {step} | {text} | {v.status} | {(v.measured or v.why)} |")
    differs = {r.case: r.linux_differs for r in results if r.linux_differs}
    if differs:
        lines += ["", "Where the simulator follows Linux and Linux departs from the draft (a failed criterion there "
                  "is the draft's difference from Linux, not the simulator's):", ""]
        lines += [f"* **{case}**: " + "; ".join(notes) for case, notes in differs.items()]
    return "\n".join(lines) + "\n"
