"""A Dask client for a :class:`~fatpipe.cluster.spec.ClusterSpec`.

`tokens` are the machine resource tokens the study's backends ask for
(``Backend.cluster_resource``, e.g. ``kernel``): workers that fatpipe starts
itself (local, ssh, slurm with exclusive=1) offer each of them once, so a run
that needs one runs only where a worker offers it. Workers of an existing
scheduler (tcp://) offer what they were started with (``dask worker
--resources kernel=1``).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

from .spec import ClusterSpec, ClusterSpecError

# How long the client waits to reach a scheduler before giving up.
CONNECT_TIMEOUT_S = 30
# Name of the batch jobs a slurm: cluster submits.
SLURM_JOB_NAME = "fatpipe-worker"


class ClusterError(RuntimeError):
    """The cluster cannot (or can no longer) carry out the study; the message
    says why and what to do. Finished runs are kept."""


class ClusterUnavailable(ClusterError):
    """Dask (fatpipe[cluster]) or the cluster itself cannot be reached; the message says why."""


def _dask():
    try:
        import distributed
    except ImportError as e:
        raise ClusterUnavailable("--cluster needs Dask: pip install 'fatpipe[cluster]'") from e
    return distributed


def slurm_job_kwargs(spec: ClusterSpec, tokens: dict[str, int]) -> dict[str, Any]:
    """dask-jobqueue's SLURM job options for a slurm: spec (one definition for
    the cluster and for :func:`slurm_job_script`)."""
    o = spec.options
    directives = list(spec.directives)
    extra_args: list[str] = []
    if o["exclusive"] == "1":
        directives.append("--exclusive")
        if tokens:
            extra_args = ["--resources", ",".join(f"{k}={v}" for k, v in sorted(tokens.items()))]
    return {
        "cores": int(o["cores"]), "processes": int(o["processes"]), "memory": o["memory"],
        "walltime": o["walltime"], "queue": o["queue"] or None, "account": o["account"] or None,
        "python": o["python"] or sys.executable, "interface": o["interface"] or None,
        "job_name": SLURM_JOB_NAME, "job_extra_directives": directives, "worker_extra_args": extra_args,
    }


def slurm_job_script(spec: ClusterSpec, tokens: dict[str, int], scheduler: str = "tcp://SCHEDULER:8786") -> str:
    """The batch script a slurm: cluster submits per job (sbatch), with
    `scheduler` as the address its workers connect to."""
    try:
        from dask_jobqueue.slurm import SLURMJob
    except ImportError as e:
        raise ClusterUnavailable("slurm: needs dask-jobqueue: pip install 'fatpipe[cluster]'") from e
    return SLURMJob(scheduler=scheduler, name=SLURM_JOB_NAME, **slurm_job_kwargs(spec, tokens)).job_script()


def _ssh_cluster(spec: ClusterSpec, tokens: dict[str, int]):
    from distributed import SSHCluster
    connect: dict[str, Any] = {}
    if "ssh_config" in spec.options:
        connect["config"] = [spec.options["ssh_config"]]
    if "known_hosts" in spec.options:
        connect["known_hosts"] = spec.options["known_hosts"]
    worker: dict[str, Any] = {"resources": tokens} if tokens else {}
    if "nthreads" in spec.options:
        worker["nthreads"] = int(spec.options["nthreads"])
    return SSHCluster(list(spec.hosts), connect_options=connect, worker_options=worker,
                      scheduler_options={"dashboard_address": None},
                      remote_python=spec.options.get("python", "python3"))


def _make_cluster(spec: ClusterSpec, tokens: dict[str, int]):
    """The cluster fatpipe starts for `spec` (None: an existing scheduler)."""
    distributed = _dask()
    if spec.kind == "local":
        # One thread per worker process: a run holds a core. The tokens are
        # offered by every worker; the machine lock (task.py) still keeps one
        # token-holding run per machine.
        return distributed.LocalCluster(n_workers=spec.workers, threads_per_worker=1, processes=True,
                                        resources=tokens or None, dashboard_address=None,
                                        silence_logs=logging.ERROR)
    if spec.kind == "ssh":
        return _ssh_cluster(spec, tokens)
    if spec.kind == "slurm":
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError as e:
            raise ClusterUnavailable("slurm: needs dask-jobqueue: pip install 'fatpipe[cluster]'") from e
        cluster = SLURMCluster(**slurm_job_kwargs(spec, tokens), scheduler_options={"dashboard_address": None})
        cluster.scale(jobs=int(spec.options["jobs"]))
        return cluster
    if spec.kind == "address":
        return None
    raise ClusterSpecError(f"--cluster {spec.text}: unknown kind {spec.kind!r}")


@contextlib.contextmanager
def open_client(spec: ClusterSpec, tokens: dict[str, int]) -> Iterator[Any]:
    """A distributed.Client on the cluster `spec` names; a cluster fatpipe
    started is shut down on the way out (its workers with it)."""
    distributed = _dask()
    try:
        cluster = _make_cluster(spec, tokens)
    except (ClusterSpecError, ClusterUnavailable):
        raise
    except Exception as e:  # any failure to start is reported with the spec
        raise ClusterUnavailable(f"--cluster {spec.text}: could not start {spec.describe()}: "
                                 f"{type(e).__name__}: {e}") from e
    try:
        try:
            client = distributed.Client(cluster if cluster is not None else spec.address,
                                        timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise ClusterUnavailable(f"--cluster {spec.text}: cannot reach {spec.describe()}: {e}") from e
        try:
            yield client
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
