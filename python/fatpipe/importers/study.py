"""Imported runs → a study directory with the tables every backend writes.

`fatpipe import iperf3 FILE… --path rate=…,rtt=…[,loss=…,buffer=…,mtu=…,corruption=…]`
writes a study.toml that describes what the files measured (``iperf3`` in
study.backends, the path as the user describes it, one flow group with each
file's CCA, streams and MSS; files that differ in those become the points of
a sweep, files that agree its repetitions), plans it with the same planner
as any study, and records each file as one run through the same summary and
store as a run of any backend (runcompute.outcome_result, record_run).
manifest.json marks the study imported (results.IMPORTED_KEY: the tool, the
command, each file and the run it became): iperf3 is no fatpipe backend, and
the mark is what lets the study.toml name it (spec.validate's
`imported_from`) and what refuses running it. `fatpipe compare` then sets it
beside a simulated study of the same path.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import spec as spec_mod
from ..backends.base import PathReport, RunOutcome
from ..results import StudyStore
from ..runcompute import outcome_result, record_run
from ..schema import RPC_COLUMNS, empty_path_series
from ..study import plan_runs, study_manifest
from ..wire import mss_with_timestamps, tcp_maxseg
from . import iperf3

# The tool that made the runs: their `backend` column and study.backends.
TOOL = "iperf3"
COMMAND = "fatpipe import iperf3 RESULTS.json… --path rate=…,rtt=…"
PATH_KEYS = ("rate", "rtt", "loss", "corruption", "buffer", "mtu")
DEFAULT_MTU_BYTES = 1500


def parse_path(text: str) -> dict[str, str]:
    """``rate=1Gbit,rtt=20ms,loss=1e-4`` → {key: value as written} (pure).
    The values are checked by the spec, as if written in [path]."""
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise spec_mod.SpecError([("--path", f"{item!r}: write key=value, e.g. rate=1Gbit,rtt=20ms")])
        if key not in PATH_KEYS:
            raise spec_mod.SpecError([("--path", f"unknown key {key!r}; allowed: {', '.join(PATH_KEYS)}")])
        out[key] = value
    missing = [k for k in ("rate", "rtt") if k not in out]
    if missing:
        raise spec_mod.SpecError([("--path", f"missing {' and '.join(missing)}: the path the files ran over "
                                             "(e.g. rate=1Gbit,rtt=20ms,loss=1e-4)")])
    return out


def _toml_value(value: str) -> str:
    """A --path value as TOML: a number stays a number, anything else a string."""
    try:
        number = float(value)
    except ValueError:
        return json.dumps(value)
    return value if math.isfinite(number) else json.dumps(value)


def _seconds(value: float) -> str:
    return json.dumps(f"{value:.6g}s")


def _flow_key(run: iperf3.Iperf3Run, mtu_bytes: int) -> dict[str, object]:
    key: dict[str, object] = {"cc": run.cc, "streams": run.streams}
    if run.mss_bytes != mss_with_timestamps(mtu_bytes):
        key["mss"] = tcp_maxseg(run.mss_bytes)  # TCP_MAXSEG, as the spec's `mss`
    return key


def study_text(name: str, runs: Sequence[iperf3.Iperf3Run], path: dict[str, str], sources: Sequence[str]) -> str:
    """The study.toml of imported runs (pure). Raises SpecError when the files
    disagree on what a study fixes (duration, warm-up, interval)."""
    first = runs[0]
    timing = {(r.duration_s, r.omit_s, r.interval_s) for r in runs}
    if len(timing) > 1:
        raise spec_mod.SpecError([("files", "they differ in duration, omitted seconds (-O) or interval (-i): "
                                            f"{sorted(timing)}; import each kind into its own study")])
    mtu = int(float(path.get("mtu", DEFAULT_MTU_BYTES)))
    keys = [_flow_key(r, mtu) for r in runs]
    points = list({json.dumps(k, sort_keys=True): k for k in keys}.values())
    reps = max(sum(k == p for k in keys) for p in points)
    lines = ["version = 1", "", "[study]", f"name = {json.dumps(name)}",
             f"description = {json.dumps('imported from iperf3 -J: ' + ', '.join(sources))[:2000]}",
             f'backends = ["{TOOL}"]', f"duration = {_seconds(first.duration_s)}",
             f"warmup = {_seconds(first.omit_s)}", f"repetitions = {reps}",
             f"interval = {_seconds(first.interval_s)}", "", "[path]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in path.items()]
    lines += ["", "[[flows]]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in points[0].items()]
    varying = [k for k in ("cc", "streams", "mss") if len({json.dumps(p.get(k)) for p in points}) > 1]
    if any("mss" in p for p in points) and "mss" not in varying and "mss" not in points[0]:
        varying.append("mss")
    if varying:
        values = {k: [p.get(k, tcp_maxseg(mss_with_timestamps(mtu))) for p in points] for k in varying}
        lines += ["", "[sweep]"] if len(varying) == 1 else ["", "[[sweep.linked]]"]
        lines += [f'"flows.0.{k}" = {json.dumps(v)}' for k, v in values.items()]
    return "\n".join(lines) + "\n"


def import_iperf3(files: Sequence[str | Path], path_text: str, out: str | Path, name: str | None = None,
                  emit: Callable[[str], None] = print) -> StudyStore:
    """Import `files` (`iperf3 -J` client outputs) into the study directory
    `out` (created; an existing fatpipe study there is replaced run by run)."""
    if not files:
        raise spec_mod.SpecError([("files", "no iperf3 -J file given")])
    path = parse_path(path_text)
    contents = [Path(f).read_bytes() for f in files]
    runs = [iperf3.parse(data.decode(), str(f)) for f, data in zip(files, contents, strict=True)]
    name = name or Path(out).name
    text = study_text(name, runs, path, [Path(f).name for f in files])
    raw = tomllib.loads(text)
    spec = spec_mod.validate(raw, "the imported study", imported_from=TOOL)
    plans = plan_runs(spec, raw)
    mtu = spec.path.mtu
    by_point: dict[str, list] = {}
    for plan in plans:
        key = json.dumps(_flow_key_of_plan(plan), sort_keys=True)
        by_point.setdefault(key, []).append(plan)
    made = [by_point[json.dumps(_flow_key(run, mtu), sort_keys=True)].pop(0) for run in runs]
    mark = {"tool": TOOL, "command": COMMAND,
            "files": [{"file": str(f), "sha256": hashlib.sha256(data).hexdigest(), "run_id": plan.run_id}
                      for f, data, plan in zip(files, contents, made, strict=True)]}
    store = StudyStore(out)
    with store.lock():
        store.prepare(text)
        store.write_manifest(study_manifest(spec, plans, imported=mark))
        for f, run, plan in zip(files, runs, made, strict=True):
            min_rtts = [v for v in run.series["min_rtt_s"] if v > 0]
            outcome = RunOutcome(series=run.series, rpcs={k: [] for k in RPC_COLUMNS},
                                 path=PathReport(emulator="iperf3 (the path as measured)",
                                                 min_rtt_s=min(min_rtts) if min_rtts else None),
                                 path_series=empty_path_series(),
                                 facts={"iperf3_file": str(f), **run.facts})
            result = outcome_result(plan, outcome, 0.0)
            record_run(store, result)
            emit(f"{plan.run_id} <- {f}: {result.summary}")
        store.consolidate()
    return store


def _flow_key_of_plan(plan) -> dict[str, object]:
    f = plan.flows[0]
    fake = iperf3.Iperf3Run(cc=f.cc, streams=f.streams, mss_bytes=f.mss_bytes, duration_s=0, omit_s=0,
                            interval_s=1, reverse=False)
    return _flow_key(fake, plan.mtu_bytes)
