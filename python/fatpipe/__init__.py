"""fatpipe: a laboratory for TCP congestion control on long fat networks.

From Python (a notebook, a script)::

    import fatpipe
    s = fatpipe.run("studies/quickstart.toml", backend="sim", out="results/qs")
    s = fatpipe.load("results/qs")      # a study run earlier
    s.runs, s.series, s.rpcs            # pandas DataFrames (docs/results.md)
    s.spec, s.manifest                  # the validated spec, manifest.json

Both return the object StudyStore.load() returns (fatpipe.loaded.LoadedStudy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .loaded import LoadedStudy

__version__ = "0.1.0"


def load(study_dir: str | Path) -> LoadedStudy:
    """Read the study in `study_dir` (a directory `fatpipe run` wrote)."""
    from .results import StudyStore
    return StudyStore(study_dir).load()


def run(
    study: str | Path,
    backend: str | Sequence[str] | None = None,
    out: str | Path | None = None,
    jobs: int | None = None,
    progress: Callable[[str], None] | None = print,
    force: bool = False,
    testbed: str | Path | None = None,
    cluster: str | None = None,
) -> LoadedStudy:
    """Run (or resume) the study file `study` as `fatpipe run` does, then load it.

    `backend`: one backend name or several (default: the study's
    ``study.backends``); `out`: the result directory (default
    results/<study name>); `jobs`: runs at once where the backend allows it
    (default: the CPU count); `progress`: called with each progress line
    (None: silent); `force`: run even if the cost estimate exceeds the
    limits (fatpipe.estimate; else StudyTooBig is raised before anything
    runs); `testbed`: a testbed file for the hosts backend (instead of the
    study's [testbed]); `cluster`: compute the runs on a Dask cluster
    (``"local:2"``, ``"tcp://HOST:PORT"``, ``"ssh:…"``, ``"slurm:…"``,
    docs/cluster.md; fatpipe.cluster.ClusterError if it cannot). Failed
    runs are recorded in ``runs`` (status, reason) as the CLI records them.
    A directory another process is writing raises
    fatpipe.results.StudyLocked; one that is not a fatpipe study, StoreError."""
    from .study import run_study
    backends = [backend] if isinstance(backend, str) else backend
    result = run_study(study, backends=backends, out=out, jobs=jobs, emit=progress or (lambda _line: None),
                       force=force, testbed=testbed, cluster=cluster)
    return result.store.load()
