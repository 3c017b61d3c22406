"""Runs of one study spread over a Dask cluster (`fatpipe run --cluster SPEC`,
``fatpipe.run(cluster=SPEC)``; docs/cluster.md).

* spec.py     the --cluster SPEC: local[:N], tcp://HOST:PORT, ssh:…, slurm:…
* connect.py  a Dask client on that cluster (starting it where fatpipe owns it)
* identity.py fatpipe version, source digest and native build id, compared per worker
* task.py     what a worker runs: one plan computed in its own scratch directory
* runner.py   submit, record results as they arrive, cancel on Ctrl-C

Dask is optional (``pip install 'fatpipe[cluster]'``): nothing here imports it
until a cluster is asked for.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..backends.base import RunPlan
from .connect import ClusterError, ClusterUnavailable, open_client, slurm_job_script
from .runner import NO_WORKERS_WAIT_S, check_workers, machine_tokens, run_on_cluster
from .spec import ClusterSpec, ClusterSpecError, parse_cluster_spec

__all__ = ["NO_WORKERS_WAIT_S", "ClusterError", "ClusterSpec", "ClusterSpecError", "ClusterUnavailable",
           "open_study_cluster", "parse_cluster_spec", "run_on_cluster", "slurm_job_script"]


@contextlib.contextmanager
def open_study_cluster(spec: ClusterSpec, plans: list[RunPlan], emit: Callable[[str], None],
                       wait_s: float = NO_WORKERS_WAIT_S) -> Iterator[Any]:
    """A checked Dask client for the study's `plans` on cluster `spec`:
    backends that cannot use a cluster refused, every worker's build
    checked, the machine tokens offered. Shut down on the way out."""
    tokens = machine_tokens(plans)
    with open_client(spec, tokens) as client:
        lines = check_workers(client, tokens, wait_s)
        emit(f"cluster: {spec.describe()}, {len(lines)} workers, same fatpipe build on each")
        yield client
