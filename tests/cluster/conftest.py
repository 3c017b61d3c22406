"""The cluster tests: skipped without Dask (fatpipe[cluster])."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import clusterlab


@pytest.fixture
def dask_processes(tmp_path):
    """A factory of DaskProcesses (scheduler + workers as subprocesses),
    all stopped at the end of the test."""
    made = []

    def make() -> clusterlab.DaskProcesses:
        made.append(clusterlab.DaskProcesses(tmp_path))
        return made[-1]

    yield make
    for d in made:
        d.close()
