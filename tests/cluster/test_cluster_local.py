"""`--cluster local:2` computes the same runs as the serial path and the
client alone records them: rows byte-identical apart from wall time,
the same series, progress lines of the same form."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

import fatpipe
from fatpipe.study import run_study

pytest.importorskip("distributed", reason="needs fatpipe[cluster] (dask[distributed])")

from clusterlab import write_small_study

PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (sim-p\d{3}-r\d{2}) (ok|failed) .*  \(elapsed \d+s, ETA \d+s\)$")
WALL_TIME_COLUMNS = ("wall_s",)


def _record_rows(study_dir) -> dict[str, str]:
    """Each run's rows as recorded, JSON-encoded, without wall-time columns."""
    out = {}
    for path in sorted((study_dir / "runs").glob("*.json")):
        rows = json.loads(path.read_bytes())["rows"]
        out[path.stem] = json.dumps([{k: v for k, v in r.items() if k not in WALL_TIME_COLUMNS} for r in rows])
    return out


def test_local_cluster_rows_are_byte_identical_to_the_serial_run(tmp_path):
    study = write_small_study(tmp_path / "small.toml")
    serial_lines: list[str] = []
    run_study(study, out=tmp_path / "serial", jobs=1, emit=serial_lines.append)
    cluster_lines: list[str] = []
    loaded = fatpipe.run(study, out=tmp_path / "cluster", cluster="local:2", progress=cluster_lines.append)

    serial, cluster = _record_rows(tmp_path / "serial"), _record_rows(tmp_path / "cluster")
    assert len(serial) == 12 and serial.keys() == cluster.keys()
    different = [run_id for run_id in serial if serial[run_id] != cluster[run_id]]
    assert not different, f"rows differ for {different}"
    assert sorted(loaded.runs["run_id"]) == sorted(serial)

    columns = [c for c in pq.read_schema(tmp_path / "serial" / "runs.parquet").names if c not in WALL_TIME_COLUMNS]
    a = pq.read_table(tmp_path / "serial" / "runs.parquet", columns=columns).sort_by("run_id")
    b = pq.read_table(tmp_path / "cluster" / "runs.parquet", columns=columns).sort_by("run_id")
    assert a.equals(b)
    for table in ("series", "rpcs", "path_series"):
        exists = (tmp_path / "serial" / f"{table}.parquet").exists()
        assert exists == (tmp_path / "cluster" / f"{table}.parquet").exists(), table
        if not exists:
            continue
        sa = pq.read_table(tmp_path / "serial" / f"{table}.parquet")
        sb = pq.read_table(tmp_path / "cluster" / f"{table}.parquet")
        keys = [("run_id", "ascending")] + [(k, "ascending") for k in ("stream", "t_s") if k in sa.column_names]
        assert sa.sort_by(keys).equals(sb.sort_by(keys)), f"{table} differs"

    for lines in (serial_lines, cluster_lines):
        progress = [m for m in map(PROGRESS.match, lines) if m]
        assert [int(m[1]) for m in progress] == list(range(1, 13)), lines
        assert {m[3] for m in progress} == set(serial)
    assert any(line.startswith("cluster: a local Dask cluster of 2 worker processes, 2 workers")
               for line in cluster_lines)


def test_resume_on_the_cluster_runs_only_what_is_missing(tmp_path):
    study = write_small_study(tmp_path / "small.toml")
    run_study(study, out=tmp_path / "s", jobs=1, emit=lambda _line: None)
    for run_id in ("sim-p000-r00", "sim-p004-r01"):
        (tmp_path / "s" / "runs" / f"{run_id}.json").unlink()
    lines: list[str] = []
    result = run_study(study, out=tmp_path / "s", cluster="local:2", emit=lines.append)
    assert "resuming: 10 of 12 runs already finished" in lines
    ran = sorted(m[3] for m in map(PROGRESS.match, lines) if m)
    assert ran == ["sim-p000-r00", "sim-p004-r01"]
    assert result.counts["runs"] == 12 and result.progress.failed == 0
