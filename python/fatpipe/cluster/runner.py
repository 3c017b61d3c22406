"""A study's runs on a Dask cluster: workers compute (task.run_on_worker),
this process alone records (runcompute.record_run), as results arrive.

Before anything is submitted every worker's identity is checked against this
process's (identity.py) and the machine tokens the runs need must be offered
by some worker. A worker that dies while running a run: Dask gives the run
to another worker, up to its ``allowed-failures`` (3); after that the run is
recorded as failed with the reason (KilledWorker) and is redone when the
study is run again. No worker at all for `wait_s` stops the study (finished
runs kept) instead of waiting forever.
"""

from __future__ import annotations

import queue
import secrets
import time
from collections.abc import Callable
from typing import Any

from .. import live
from ..backends import get_backend
from ..backends.base import RunPlan
from ..results import StudyStore
from ..runcompute import RunResult, failed_result, record_run
from .connect import ClusterError
from .identity import differences, identity
from .task import run_on_worker

# How long a study waits with no worker connected (at the start, or after
# every worker died) before it stops.
NO_WORKERS_WAIT_S = 120.0
# How often the client looks at the cluster while no run finishes.
POLL_S = 1.0


def machine_tokens(plans: list[RunPlan]) -> dict[str, int]:
    """The Dask resource tokens the plans' backends need, one of each per
    machine (``Backend.cluster_resource``). A backend that works on a
    testbed (``takes_testbed``) runs one run at a time on that testbed, so
    its runs refuse a cluster."""
    tokens: dict[str, int] = {}
    for name in sorted({p.backend for p in plans}):
        backend = get_backend(name)
        if backend.takes_testbed:
            raise ClusterError(f"backend {name!r} runs on one testbed, one run at a time, and cannot use "
                               "--cluster; run its studies without --cluster")
        token = backend.cluster_resource
        if token:
            tokens[token] = 1
    return tokens


def _worker_name(address: str, info: dict[str, Any]) -> str:
    host = info.get("host") or info.get("name") or ""
    return f"{address} ({host})" if host else address


def check_workers(client: Any, tokens: dict[str, int], wait_s: float = NO_WORKERS_WAIT_S) -> list[str]:
    """Refuse (ClusterError naming the worker) unless every connected worker
    runs this fatpipe, source, native build and Dask, and each token is
    offered by at least one worker. Waits up to `wait_s` for the first
    worker. Returns one line per worker checked."""
    try:
        client.wait_for_workers(1, timeout=wait_s)
    except TimeoutError:
        raise ClusterError(f"no Dask worker connected within {wait_s:.0f} s; start workers and run again") from None
    mine = identity()
    found = client.run(identity, on_error="return")
    problems, lines = [], []
    for address, theirs in sorted(found.items()):
        if isinstance(theirs, BaseException):
            problems.append(f"worker {address} cannot report its fatpipe ({type(theirs).__name__}: {theirs}); "
                            "is fatpipe installed there?")
            continue
        name = _worker_name(address, theirs)
        diff = differences(mine, theirs)
        if diff:
            problems.append(f"worker {name} runs a different build: {'; '.join(diff)}")
        lines.append(f"worker {name}: fatpipe {theirs['fatpipe']}, native build {theirs['native']}")
    if problems:
        raise ClusterError("refusing to submit: " + " | ".join(problems)
                           + "; every worker needs the same fatpipe build as this machine (docs/cluster.md)")
    workers = client.scheduler_info(n_workers=-1)["workers"]
    for token in tokens:
        if not any(token in (w.get("resources") or {}) for w in workers.values()):
            raise ClusterError(f"runs here need the machine token {token!r}, which no worker offers; start one "
                               f"worker per machine with `dask worker SCHEDULER --resources {token}=1` "
                               "(docs/cluster.md)")
    return lines


def _result_of(future: Any, plan: RunPlan, mine: dict[str, str]) -> RunResult:
    """The finished future's RunResult, a failed one for a run the cluster
    could not complete; ClusterError for a result from a different build."""
    from distributed import KilledWorker

    try:
        result = future.result()
    except KilledWorker as e:
        return failed_result(plan, f"KilledWorker: every worker that ran it died ({e}); it is redone when the "
                                   "study is run again")
    except Exception as e:  # noqa: BLE001 - whatever the cluster raised is the run's reason
        return failed_result(plan, f"{type(e).__name__} on the cluster: {e}")
    diff = differences(mine, result.worker)
    if diff:
        raise ClusterError(f"worker on {result.worker.get('host', '?')} (joined after the check) runs a "
                           f"different build: {'; '.join(diff)}; its result for {plan.run_id} was not recorded")
    return result


class _Watchdog:
    """Stops the study when no worker has been connected for `wait_s`."""

    def __init__(self, client: Any, wait_s: float) -> None:
        self.client, self.wait_s, self.idle_since = client, wait_s, None

    def check(self) -> None:
        if self.client.nthreads():
            self.idle_since = None
            return
        now = time.monotonic()
        self.idle_since = self.idle_since or now
        if now - self.idle_since > self.wait_s:
            raise ClusterError(f"no Dask worker has been connected for {self.wait_s:.0f} s; finished runs are "
                               "kept: start workers and run the same command again")


def run_on_cluster(
    plans: list[RunPlan],
    store: StudyStore,
    client: Any,
    finished: Callable[[RunPlan, str, str], None],
    wait_s: float = NO_WORKERS_WAIT_S,
) -> None:
    """Submit every plan, record each result as it arrives (then call
    `finished(plan, status, summary)`, the progress line). On Ctrl-C or any
    error, runs not yet started are cancelled; recorded runs stay."""
    mine = identity()
    batch = secrets.token_hex(4)  # keys unique to this study run on a shared scheduler
    pending: dict[Any, RunPlan] = {}
    # Finished futures arrive here from Dask's callback thread: O(1) per run
    # however many are pending, and a bounded wait that Ctrl-C interrupts.
    arrived: queue.SimpleQueue = queue.SimpleQueue()
    try:
        for i, plan in enumerate(plans):
            token = get_backend(plan.backend).cluster_resource
            # Earlier plans first (a higher priority), so runs start in plan order as they do serially.
            future = client.submit(run_on_worker, plan, token, key=f"fatpipe-{plan.run_id}-{batch}", pure=False,
                                   resources={token: 1} if token else None, priority=len(plans) - i)
            pending[future] = plan
            future.add_done_callback(arrived.put)
        watchdog = _Watchdog(client, wait_s)
        while pending:
            try:
                future = arrived.get(timeout=POLL_S)
            except queue.Empty:
                watchdog.check()
                continue
            plan = pending.pop(future)
            result = _result_of(future, plan, mine)
            future.release()
            store.discard(plan.run_id)  # a failed or damaged earlier attempt
            if result.work_files:
                store.run_workdir(plan.run_id)
            record_run(store, result)
            live.replay(plan, result)  # --json-stream: a worker's run arrives whole
            finished(plan, result.status, result.summary)
    except BaseException:
        if pending:
            try:
                client.cancel(list(pending))
            except Exception:  # noqa: BLE001 - cancelling is best effort on the way out
                pass
        raise
