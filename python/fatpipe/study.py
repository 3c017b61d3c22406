"""Sweep × repetitions × backends → runs; running them with resume.

Run ids are stable for a given spec (``sim-p003-r01``: backend, sweep point,
repetition), so a resumed study finds what it already did. Seeds derive from
the study seed, the sweep point and the repetition only, so the kernel and
sim runs of one grid point get the same seed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import platform
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__, estimate
from . import spec as spec_mod
from .backends import get_backend
from .backends.base import FlowPlan, HostLimits, RunPlan
from .results import StoreError, StudyStore
from .schema import path_columns
from .summary import series_with_goodput, summarize
from .testbed import Testbed, load_testbed, study_problems


def derive_seed(study_seed: int, point: int, rep: int) -> int:
    digest = hashlib.sha256(f"{study_seed}:{point}:{rep}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # fits a signed 64-bit


def sweep_points(spec: spec_mod.Spec) -> list[dict[str, Any]]:
    """The sweep's points: the cartesian axes in the order written, then the
    linked groups, each a zip of its keys (``Sweep.points``)."""
    return spec.sweep.points()


def _host_limits(spec: spec_mod.Spec, name: str) -> HostLimits:
    h = spec.host(name)
    # Access-link delay is per host: `hosts.default.extra_rtt` delays every
    # sender's link but not the receiver's (which would add it twice to every
    # path); only `hosts.receiver.extra_rtt` delays the receiver's link.
    extra_rtt = h.extra_rtt
    if name == "receiver":
        extra_rtt = spec.hosts["receiver"].extra_rtt if "receiver" in spec.hosts else 0.0
    return HostLimits(
        rmem_max_bytes=h.rmem_max or spec_mod.LINUX_RMEM_MAX_BYTES,
        wmem_max_bytes=h.wmem_max or spec_mod.LINUX_WMEM_MAX_BYTES,
        stream_rate_cap_bps=h.stream_rate_cap,
        extra_rtt_s=extra_rtt,
        ecn=spec_mod.LINUX_TCP_ECN if h.ecn is None else h.ecn,
        gro=bool(h.gro),
    )


def plan_runs(
    spec: spec_mod.Spec, raw: dict[str, Any], backends: list[str] | None = None, testbed: Testbed | None = None
) -> list[RunPlan]:
    """Every run of the study, validated before anything starts. `testbed`
    (--testbed FILE) replaces the study's own [testbed]."""
    spec_mod.check_run_count(spec, backends)
    if testbed is not None:
        problems = study_problems(testbed, {f.sender for f in spec.flows})
        if problems:
            raise spec_mod.SpecError(problems, "--testbed")
    testbed = testbed if testbed is not None else spec.testbed
    plans = []
    for point, overrides in enumerate(sweep_points(spec)):
        point_spec = spec_mod.point_spec(raw, overrides, spec)
        senders = {f.sender: _host_limits(point_spec, f.sender) for f in point_spec.flows}
        flows = tuple(
            FlowPlan(
                group=i,
                kind=f.kind,
                cc=f.cc,
                streams=f.streams,
                mss_bytes=point_spec.mss_payload_bytes(f),
                sender=f.sender,
                start_s=f.start,
                request_bytes=f.request,
                response_bytes=f.response,
                concurrency=f.concurrency,
                rate_per_s=f.rate,
                ecn=f.ecn,
                cwnd_clamp=f.cwnd_clamp,
            )
            for i, f in enumerate(point_spec.flows)
        )
        unset = point_spec.path_unset()
        for backend in backends or point_spec.study.backends:
            if unset and not getattr(get_backend(backend), "measures_path", False):
                raise spec_mod.SpecError([(key, f"missing: backend {backend!r} emulates the path and needs "
                                                "path.rate and path.rtt (only a backend that runs on a real path "
                                                "measures it instead)") for key in unset])
        s, p = point_spec.study, point_spec.path
        for backend in backends or s.backends:
            for rep in range(s.repetitions):
                plans.append(
                    RunPlan(
                        run_id=f"{backend}-p{point:03d}-r{rep:02d}",
                        backend=backend,
                        rep=rep,
                        seed=derive_seed(s.seed, point, rep),
                        duration_s=s.duration,
                        warmup_s=s.warmup,
                        sample_interval_s=s.interval,
                        rate_bps=p.rate,
                        rtt_s=p.rtt,
                        loss=p.loss,
                        corruption=p.corruption,
                        buffer_bytes=point_spec.buffer_bytes(),
                        aqm=p.aqm.plan(),
                        mtu_bytes=p.mtu,
                        senders=senders,
                        receiver=_host_limits(point_spec, "receiver"),
                        flows=flows,
                        swept=dict(overrides),
                        testbed=testbed,
                    )
                )
    return plans


def identity_columns(plan: RunPlan) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": plan.run_id, "backend": plan.backend, "rep": plan.rep, "seed": plan.seed,
        "rate_bps": plan.rate_bps, "rtt_s": plan.rtt_s, "loss": plan.loss,
        "corruption": plan.corruption, "buffer_bytes": plan.buffer_bytes,
        "mtu_bytes": plan.mtu_bytes, "duration_s": plan.duration_s, "warmup_s": plan.warmup_s,
    }
    for key, value in plan.swept.items():
        out[key] = value
    return out


def failed_rows(plan: RunPlan, reason: str) -> list[dict[str, Any]]:
    base = identity_columns(plan)
    return [
        {**base, "status": "failed", "reason": reason, "flow_group": f.group, "kind": f.kind,
         "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes, "sender": f.sender}
        for f in plan.flows
    ]


@dataclass
class Progress:
    """Runs done, the current run and an ETA, printed as runs finish."""

    total: int
    emit: Callable[[str], None] = print
    done: int = 0
    failed: int = 0
    started: float = field(default_factory=time.monotonic)

    def finished(self, plan: RunPlan, status: str, summary: str) -> None:
        self.done += 1
        self.failed += status != "ok"
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        self.emit(
            f"[{self.done}/{self.total}] {plan.run_id} {status} {summary}"
            f"  (elapsed {elapsed:.0f}s, ETA {eta:.0f}s)"
        )


def execute_one(plan: RunPlan, store: StudyStore) -> tuple[str, str]:
    """Run one plan and record it. Returns (status, one-line summary)."""
    backend = get_backend(plan.backend)
    store.discard(plan.run_id)  # a failed or damaged earlier attempt
    workdir = store.run_workdir(plan.run_id)
    t0 = time.monotonic()
    try:
        outcome = backend.run(plan, workdir)
        rows = summarize(plan, outcome)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001 - any failure is recorded with its reason
        reason = f"{type(e).__name__}: {e}"
        store.write_run(plan.run_id, "failed", failed_rows(plan, reason), reason=reason)
        return "failed", reason.splitlines()[0][:200]
    wall_s = time.monotonic() - t0
    base = identity_columns(plan)
    path_cols = {**path_columns(outcome.path), "wall_s": wall_s}
    full_rows = [{**base, "status": "ok", "reason": "", **row, **path_cols} for row in rows]
    series = series_with_goodput(outcome)
    n = len(series["t_s"])
    series = {"run_id": [plan.run_id] * n, "backend": [plan.backend] * n, **series}
    rpcs = {"run_id": [plan.run_id] * len(outcome.rpcs["start_s"]), **outcome.rpcs}
    path_series = {"run_id": [plan.run_id] * len(outcome.path_series["t_s"]), **outcome.path_series}
    store.write_run(plan.run_id, "ok", full_rows, series, rpcs, path_series=path_series, facts=outcome.facts)
    goodputs = " ".join(
        f"{r['cc']}x{r['streams']}={(r['goodput_bps'] or 0) / 1e6:.1f}Mbit/s" for r in rows
    )
    return "ok", goodputs


def _run_in_pool(plans: list[RunPlan], store: StudyStore, workers: int, progress: Progress) -> None:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: dict[Future, RunPlan] = {}
        queue = list(plans)
        try:
            while queue or pending:
                while queue and len(pending) < workers:
                    plan = queue.pop(0)
                    pending[pool.submit(execute_one, plan, store)] = plan
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    plan = pending.pop(fut)
                    status, summary = fut.result()
                    progress.finished(plan, status, summary)
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise


def run_plans(
    plans: list[RunPlan],
    store: StudyStore,
    jobs: int = 1,
    emit: Callable[[str], None] = print,
) -> Progress:
    """Run every plan not yet finished, one backend after another (in the
    order the plans name them). Each backend says how many of its runs may
    run at once given `jobs` (Backend.max_parallel_runs); a backend that
    allows one runs in this thread, so Ctrl-C reaches the run itself."""
    done, damaged = store.resumable()
    todo = [p for p in plans if p.run_id not in done]
    if done:
        emit(f"resuming: {len(plans) - len(todo)} of {len(plans)} runs already finished")
    for run_id, problem in damaged.items():
        emit(f"redoing {run_id}: {problem}")
    progress = Progress(total=len(todo), emit=emit)
    by_backend: dict[str, list[RunPlan]] = {}
    for plan in todo:
        by_backend.setdefault(plan.backend, []).append(plan)
    for name, backend_plans in by_backend.items():
        at_once = max(1, get_backend(name).max_parallel_runs(max(1, jobs)))
        if at_once == 1:
            for plan in backend_plans:
                status, summary = execute_one(plan, store)
                progress.finished(plan, status, summary)
        else:
            _run_in_pool(backend_plans, store, at_once, progress)
    return progress


def study_dir_default(spec: spec_mod.Spec) -> Path:
    return Path("results") / spec.study.name


def study_manifest(spec: spec_mod.Spec, plans: list[RunPlan]) -> dict[str, Any]:
    """What manifest.json records about a study as it starts."""
    used = sorted({p.backend for p in plans})
    return {
        "fatpipe_version": __version__,
        "study": spec.study.name,
        "started": dt.datetime.now(dt.UTC).isoformat(),
        # Named as platform.uname() names them (release: the OS kernel's).
        "host": {"system": platform.system(), "release": platform.release(),
                 "machine": platform.machine(), "python": platform.python_version()},
        "backends": {name: get_backend(name).facts() for name in used},
        "runs": [{"run_id": p.run_id, "seed": p.seed, "swept": p.swept} for p in plans],
    }


@dataclass
class StudyRun:
    """What :func:`run_study` did: the store it wrote, the plans, how the runs
    went and the consolidated tables' row counts."""

    store: StudyStore
    plans: list[RunPlan]
    progress: Progress
    counts: dict[str, int]


def run_study(
    study_file: str | Path,
    backends: Sequence[str] | None = None,
    out: str | Path | None = None,
    jobs: int | None = None,
    emit: Callable[[str], None] = print,
    force: bool = False,
    testbed: str | Path | Testbed | None = None,
) -> StudyRun:
    """Run (or resume) the study in `study_file`: validate it, plan its runs
    on `backends` (default: the study's own), check every backend can carry
    them out and that the estimate (fatpipe.estimate) stays within the
    limits (refused with StudyTooBig unless `force`), then, holding the
    directory's lock, run them into `out` (default results/<study name>) and
    consolidate the tables, also when interrupted. `jobs` bounds the runs at
    once (default: the CPU count). `testbed` (a Testbed or a file) replaces
    the study's [testbed] for backends that run on one. `fatpipe run` and
    fatpipe.run() both come here."""
    spec, raw = spec_mod.load(study_file)
    if testbed is not None and not isinstance(testbed, Testbed):
        testbed = load_testbed(testbed)
    plans = plan_runs(spec, raw, list(backends) if backends else None, testbed)
    root = Path(out) if out else study_dir_default(spec)
    jobs = jobs or os.cpu_count() or 1
    for name in sorted({p.backend for p in plans}):
        get_backend(name).check([p for p in plans if p.backend == name])
        for item in get_backend(name).clean_stale():  # what a fatpipe killed with SIGKILL left
            emit(f"{name}: {item}")
    cost = estimate.study_cost(plans, jobs)
    for line in cost.lines():
        emit(line)
    problems = estimate.over_limits(cost, root)
    if problems and not force:
        raise estimate.StudyTooBig("; ".join(problems) + " (--force runs it anyway)")
    spec_text = Path(study_file).read_text()
    store = StudyStore(root)
    with store.lock():
        removed = store.prepare(spec_text)
        if removed:
            emit(f"removed {len(removed)} temporary files a killed run left")
        store.write_manifest(study_manifest(spec, plans))
        emit(f"fatpipe {__version__}: study {spec.study.name!r}, {len(plans)} runs -> {root}")
        try:
            progress = run_plans(plans, store, jobs=jobs, emit=emit)
        except BaseException:
            # Interrupted or stopped: keep what finished readable, without
            # letting a second failure (a full disk) hide the first.
            try:
                store.consolidate()
            except StoreError as e:
                emit(f"could not consolidate the tables: {e}")
            raise
        counts = store.consolidate()
    return StudyRun(store=store, plans=plans, progress=progress, counts=counts)
