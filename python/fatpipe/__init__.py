"""fatpipe: a laboratory for TCP congestion control on long fat networks.

From Python (a notebook, a script)::

    import fatpipe
    s = fatpipe.run("studies/quickstart.toml", backend="sim", out="results/qs")
    s = fatpipe.load("results/qs")      # a study run earlier
    s.runs, s.series, s.rpcs            # pandas DataFrames (docs/results.md)
    s.spec, s.manifest                  # the validated spec, manifest.json
    t = fatpipe.advise(rate="10Gbit", rtt="70ms", loss=1e-4)   # ranked choices (docs/advise.md)

Both return the object StudyStore.load() returns (fatpipe.loaded.LoadedStudy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

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
    capture: bool = False,
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
    docs/cluster.md; fatpipe.cluster.ClusterError if it cannot); `capture`:
    write each run's packets as pcap files (``--capture``, docs/captures.md;
    LoadedStudy.captures lists them). Failed
    runs are recorded in ``runs`` (status, reason) as the CLI records them.
    A directory another process is writing raises
    fatpipe.results.StudyLocked; one that is not a fatpipe study, StoreError."""
    from .study import run_study
    backends = [backend] if isinstance(backend, str) else backend
    result = run_study(study, backends=backends, out=out, jobs=jobs, emit=progress or (lambda _line: None),
                       force=force, testbed=testbed, cluster=cluster, capture=capture)
    return result.store.load()


def advise(request: str | Path | None = None, *, out: str | Path | None = None, jobs: int | None = None,
           progress: Callable[[str], None] | None = print, **keys) -> pd.DataFrame:
    """Advise on a path as `fatpipe advise` does and return the ranked table.

    `request`: a request file (TOML, docs/advise.md), or None; `keys`: the
    same keys as keyword arguments, winning over the file (rate="10Gbit",
    rtt="70ms", loss=1e-4, mtu=[1500, 9000], buffer="1bdp", rmem="6MiB",
    wmem="4MiB", stream_cap=…, ccas=[…], max_streams=16, competing="cubic",
    budget="60s", host_profile="NAME", host={"cpu_cores": 4, …}). One row
    per candidate tried, best first; the recommendation, the hosts' CPU
    (``hosts``), buffer and jumbo findings and the assumptions are in
    ``.attrs``. Invalid keys raise fatpipe.advise.RequestError."""
    from .advisor import load_request, run_advice, validate_request
    from .advisor.render import write_html
    req = load_request(request, keys) if request is not None else validate_request(keys)
    result = run_advice(req, out=out, jobs=jobs, emit=progress or (lambda _line: None))
    write_html(result)
    return result.frame()
