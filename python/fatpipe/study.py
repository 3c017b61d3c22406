"""Sweep × repetitions × backends → runs; running them with resume.

Run ids are stable for a given spec (``sim-p003-r01``: backend, sweep point,
repetition), so a resumed study finds what it already did. Seeds derive from
the study seed, the sweep point and the repetition only, so the kernel and
sim runs of one grid point get the same seed.
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from . import __version__, appspec, capturespec, crossspec, estimate, hostcpu, live, pathspec, transferspec
from . import spec as spec_mod
from .backends import DEFAULT_BACKEND, get_backend
from .backends.base import BackendUnavailable, FlowPlan, HostCpu, HostLimits, RunPlan
from .cluster.spec import parse_cluster_spec
from .results import IMPORTED_KEY, StoreError, StudyStore, imported_study
from .runcompute import compute_run, failed_rows, identity_columns, record_run  # noqa: F401 - two re-exported
from .testbed import Testbed, study_problems


def derive_seed(study_seed: int, point: int, rep: int) -> int:
    """A run's seed from the study's, its point and its repetition."""
    digest = hashlib.sha256(f"{study_seed}:{point}:{rep}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # fits a signed 64-bit


def transfer_arrivals(spec: spec_mod.Spec, flows: tuple[FlowPlan, ...], seed: int) -> tuple[FlowPlan, ...]:
    """`flows` with each transfer flow's data sets, their arrivals drawn
    from the run's `seed` (transferspec.plan)."""
    return tuple(dataclasses.replace(f, transfer=transferspec.plan(spec.flows[f.group], seed, f.group,
                                                                   spec.study.duration))
                 if f.kind == transferspec.KIND else f for f in flows)


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
    # The NIC ceiling is a sending host's total rate: `hosts.default.nic_rate`
    # and a profile's reach the senders; only `hosts.receiver.nic_rate`,
    # written there, reaches the receiver (which the simulator refuses: a
    # receiving host's ceiling is not modelled).
    nic_rate = h.nic_rate
    if name == "receiver":
        extra_rtt = spec.hosts["receiver"].extra_rtt if "receiver" in spec.hosts else 0.0
        nic_rate = spec.hosts["receiver"].nic_rate if "receiver" in spec.hosts else None
    return HostLimits(
        rmem_max_bytes=h.rmem_max or spec_mod.LINUX_RMEM_MAX_BYTES,
        wmem_max_bytes=h.wmem_max or spec_mod.LINUX_WMEM_MAX_BYTES,
        stream_rate_cap_bps=h.stream_rate_cap,
        extra_rtt_s=extra_rtt,
        ecn=spec_mod.LINUX_TCP_ECN if h.ecn is None else h.ecn,
        gro=bool(h.gro),
        processing_jitter_s=h.processing_jitter or None,
        start_spread_s=h.start_spread,
        cpu=host_cpu_plan(h),
        nic_rate_bps=nic_rate,
        interrupt_coalescing_s=h.interrupt_coalescing,
        interrupt_coalescing_frames=h.interrupt_coalescing_frames,
        qdisc=h.qdisc,
    )


def host_cpu_plan(h: spec_mod.HostSection) -> HostCpu | None:
    """The host's CPU cost model, on iff it has cpu_cores; unset costs are 0."""
    if h.cpu_cores is None:
        return None
    return HostCpu(
        cores=h.cpu_cores,
        app_threads=h.app_threads,
        machine=h.machine,
        rx_ring_packets=hostcpu.DEFAULT_RX_RING_PACKETS if h.rx_ring is None else h.rx_ring,
        rtx_queue=h.rtx_queue,
        **{field: getattr(h, key) or 0.0 for key, field in hostcpu.COST_FIELDS.items()},
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
        senders = {f.sender: _host_limits(point_spec, f.sender) for f in point_spec.flows if f.kind != crossspec.KIND}
        flows = tuple(
            FlowPlan(group=i, kind=f.kind, cc="", streams=f.streams, mss_bytes=0, sender="", start_s=f.start,
                     cross=crossspec.plan(f))
            if f.kind == crossspec.KIND else
            FlowPlan(
                group=i,
                kind=f.kind,
                cc=f.cc or "",
                streams=f.streams,
                mss_bytes=point_spec.mss_payload_bytes(f),
                sender=f.sender,
                start_s=f.start,
                request_bytes=f.request,
                response_bytes=f.response,
                concurrency=f.concurrency,
                rate_per_s=f.rate if f.kind == "rpc" else None,  # a transfer's rate is its arrivals
                ecn=f.ecn,
                cwnd_clamp=f.cwnd_clamp,
                pacing_rate_bps=f.pacing_rate,
                app=appspec.plan(f),
            )
            for i, f in enumerate(point_spec.flows)
        )
        unset = point_spec.path_unset()
        for backend in backends or point_spec.study.backends:
            if unset and not get_backend(backend).measures_path:
                raise spec_mod.SpecError([(key, f"missing: backend {backend!r} emulates the path and needs "
                                                "path.rate and path.rtt (only a backend that runs on a real path "
                                                "measures it instead)") for key in unset])
        s, p = point_spec.study, point_spec.path
        for backend in backends or s.backends:
            for rep in range(s.repetitions):
                seed = derive_seed(s.seed, 0 if s.seeds == "per-repetition" else point, rep)
                plans.append(
                    RunPlan(
                        run_id=f"{backend}-p{point:03d}-r{rep:02d}",
                        backend=backend,
                        rep=rep,
                        seed=seed,
                        duration_s=s.duration,
                        warmup_s=s.warmup,
                        sample_interval_s=s.interval,
                        rate_bps=p.rate,
                        rtt_s=p.rtt,
                        loss=pathspec.plan_loss(p),
                        corruption=p.corruption,
                        buffer_bytes=point_spec.buffer_bytes(),
                        aqm=p.aqm.plan(),
                        mtu_bytes=p.mtu,
                        senders=senders,
                        receiver=_host_limits(point_spec, "receiver"),
                        flows=transfer_arrivals(point_spec, flows, seed),
                        swept=dict(overrides),
                        testbed=testbed,
                        dynamics=pathspec.plan_dynamics(p),
                        emulator=p.emulator,
                        capture=capturespec.plan(point_spec.capture),
                    )
                )
    return plans


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
    """Run one plan in this process and record it. Returns (status, one-line summary)."""
    store.discard(plan.run_id)  # a failed or damaged earlier attempt
    with live.run(plan) as stream:  # --json-stream: its events
        result = compute_run(plan, store.run_workdir(plan.run_id), get_backend(plan.backend))
        record_run(store, result)
        live.run_end(stream, result)
    return result.status, result.summary


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


def _study_name(store: StudyStore) -> str:
    """The study's name as its manifest records it (else its directory's)."""
    try:
        return str(store.manifest().get("study", store.root.name))
    except (OSError, ValueError):
        return store.root.name


def run_plans(
    plans: list[RunPlan],
    store: StudyStore,
    jobs: int = 1,
    emit: Callable[[str], None] = print,
    client: Any = None,
) -> Progress:
    """Run every plan not yet finished, one backend after another (in the
    order the plans name them). Each backend says how many of its runs may
    run at once given `jobs` (Backend.max_parallel_runs); a backend that
    allows one runs in this thread, so Ctrl-C reaches the run itself.
    With a Dask `client` (fatpipe.cluster) every run goes to the cluster
    instead and this process only records the results."""
    done, damaged = store.resumable()
    todo = [p for p in plans if p.run_id not in done]
    if done:
        emit(f"resuming: {len(plans) - len(todo)} of {len(plans)} runs already finished")
    for run_id, problem in damaged.items():
        emit(f"redoing {run_id}: {problem}")
    progress = Progress(total=len(todo), emit=emit)
    live.study_start(_study_name(store), len(todo))
    if client is not None:
        from .cluster import run_on_cluster
        run_on_cluster(todo, store, client, progress.finished)
        live.study_end(progress.done, progress.failed)
        return progress
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
    live.study_end(progress.done, progress.failed)
    return progress


def study_dir_default(spec: spec_mod.Spec) -> Path:
    return Path("results") / spec.study.name


def study_manifest(spec: spec_mod.Spec, plans: list[RunPlan],
                   imported: dict[str, Any] | None = None) -> dict[str, Any]:
    """What manifest.json records about a study as it starts. The runs of an
    imported study (`imported`: its mark, results.IMPORTED_KEY) ran on no
    backend of this machine, so it records no backend facts."""
    used = [] if imported else sorted({p.backend for p in plans})
    mark = {IMPORTED_KEY: imported} if imported else {}
    return {
        "fatpipe_version": __version__,
        "study": spec.study.name,
        "started": dt.datetime.now(dt.UTC).isoformat(),
        # Named as platform.uname() names them (release: the OS kernel's).
        "host": {"system": platform.system(), "release": platform.release(),
                 "machine": platform.machine(), "python": platform.python_version()},
        "backends": {name: get_backend(name).facts() for name in used},
        "runs": [{"run_id": p.run_id, "seed": p.seed, "swept": p.swept} for p in plans],
        **mark,
    }


def load_study(study_file: str | Path, backends: Sequence[str] | None = None) -> tuple[spec_mod.Spec, dict[str, Any]]:
    """Load and validate a study file to run (or check) on `backends`
    (default: the study's own). The study.toml of an imported study (the
    manifest.json beside it marks it, results.imported_mark) names the tool
    that made its runs as its backend: fatpipe runs only the backends given
    instead, and refuses the study's own with the command that imports more."""
    mark = imported_study(Path(study_file).parent)
    spec, raw = spec_mod.load(study_file, mark["tool"] if mark else None)
    if mark and (not backends or AUTO in backends or mark["tool"] in backends):
        raise BackendUnavailable(
            f"{study_file}: its runs were made by {mark['tool']} and imported (manifest.json); fatpipe runs nothing "
            f"of {mark['tool']}: import more with `{mark['command']}`, or run the same study on a backend with "
            "--backend NAME")
    return spec, raw


# `--backend auto`: every backend of the study that can run here (its own
# check passes), else the default backend, which runs anywhere.
AUTO = "auto"


def usable_backends(spec: spec_mod.Spec, raw: dict[str, Any],
                    testbed: Testbed | None = None) -> tuple[list[str], dict[str, str]]:
    """(backends to run, {backend left out: why}) for `--backend auto`: the
    study's backends whose check passes for their runs, in the study's
    order; when none does, the default backend alone. The check is the one
    a run makes (so a backend is left out exactly when running it would
    be refused). Raises BackendUnavailable when even the default cannot run."""
    chosen, skipped = [], {}
    for name in spec.study.backends:
        try:
            get_backend(name).check(plan_runs(spec, raw, [name], testbed))
        except BackendUnavailable as e:
            skipped[name] = str(e)
        else:
            chosen.append(name)
    if not chosen and DEFAULT_BACKEND not in skipped:
        get_backend(DEFAULT_BACKEND).check(plan_runs(spec, raw, [DEFAULT_BACKEND], testbed))
        chosen = [DEFAULT_BACKEND]
    if not chosen:
        raise BackendUnavailable("; ".join(f"{n}: {why}" for n, why in skipped.items()))
    return chosen, skipped


@dataclass
class StudyRun:
    """What :func:`run_study` did: the store it wrote, the plans, how the runs
    went and the consolidated tables' row counts."""

    store: StudyStore
    plans: list[RunPlan]
    progress: Progress
    counts: dict[str, int]
    skipped: dict[str, str] = field(default_factory=dict)  # backends `auto` left out, and why


def run_study(
    study_file: str | Path,
    backends: Sequence[str] | None = None,
    out: str | Path | None = None,
    jobs: int | None = None,
    emit: Callable[[str], None] = print,
    force: bool = False,
    testbed: str | Path | Testbed | None = None,
    cluster: str | None = None,
    capture: bool = False,
) -> StudyRun:
    """Run (or resume) the study in `study_file`: validate it, plan its runs
    on `backends` (default: the study's own; ``["auto"]``: those of the
    study's backends that can run here, else the default one, see
    `usable_backends`), check every backend can carry
    them out and that the estimate (fatpipe.estimate) stays within the
    limits (refused with StudyTooBig unless `force`), then, holding the
    directory's lock, run them into `out` (default results/<study name>) and
    consolidate the tables, also when interrupted. `jobs` bounds the runs at
    once (default: the CPU count). `testbed` (a Testbed or a file) replaces
    the study's [testbed] for backends that run on one. `cluster` (a
    --cluster SPEC, fatpipe.cluster) computes the runs on a Dask cluster
    whose workers are checked before anything is written; this process
    still writes every run. An imported study runs only on `backends` given
    instead of its own, and never into its directory (`load_study`).
    `capture` (--capture) captures packets as a `[capture]` section with
    its defaults would, unless the study has its own (capturespec.py).
    `fatpipe run` and fatpipe.run() both come here."""
    cluster_spec = parse_cluster_spec(cluster) if cluster else None
    spec, raw = load_study(study_file, backends)
    if capture and "capture" not in raw:
        raw = {**raw, "capture": {}}
        spec = spec_mod.validate(raw, f"{study_file} with --capture")
    if testbed is not None and not isinstance(testbed, Testbed):
        testbed = spec_mod.load_testbed(testbed)
    skipped: dict[str, str] = {}
    checked: set[str] = set()
    if backends and AUTO in backends:
        if len(backends) > 1:
            raise BackendUnavailable(f"--backend {AUTO} chooses the backends itself: give it alone")
        backends, skipped = usable_backends(spec, raw, testbed)
        checked = set(backends)
        for name, why in skipped.items():
            emit(f"{name} backend left out: {why} -> running on {', '.join(backends)} only")
    plans = plan_runs(spec, raw, list(backends) if backends else None, testbed)
    root = Path(out) if out else study_dir_default(spec)
    mark = imported_study(root)
    if mark:
        raise FileExistsError(f"{root} holds runs of {mark['tool']} imported with `{mark['command']}`; "
                              "fatpipe does not add runs to it: choose another --out directory")
    jobs = jobs or os.cpu_count() or 1
    for name in sorted({p.backend for p in plans}):
        if name not in checked:
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
    with contextlib.ExitStack() as stack:
        client = None
        if cluster_spec is not None:
            from .cluster import open_study_cluster
            client = stack.enter_context(open_study_cluster(cluster_spec, plans, emit))
        return _run_locked(spec, spec_text, plans, store, jobs, emit, client, skipped)


def _run_locked(spec: spec_mod.Spec, spec_text: str, plans: list[RunPlan], store: StudyStore, jobs: int,
                emit: Callable[[str], None], client: Any, skipped: dict[str, str]) -> StudyRun:
    """Holding the study's lock: prepare the directory, write the manifest,
    run what is not finished, consolidate (also when interrupted)."""
    root = store.root
    with store.lock():
        removed = store.prepare(spec_text)
        if removed:
            emit(f"removed {len(removed)} temporary files a killed run left")
        store.write_manifest(study_manifest(spec, plans))
        emit(f"fatpipe {__version__}: study {spec.study.name!r}, {len(plans)} runs -> {root}")
        try:
            progress = run_plans(plans, store, jobs=jobs, emit=emit, client=client)
        except BaseException:
            # Interrupted or stopped: keep what finished readable, without
            # letting a second failure (a full disk) hide the first.
            try:
                store.consolidate()
            except StoreError as e:
                emit(f"could not consolidate the tables: {e}")
            raise
        counts = store.consolidate()
    return StudyRun(store=store, plans=plans, progress=progress, counts=counts, skipped=skipped)
