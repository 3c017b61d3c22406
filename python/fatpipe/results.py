"""The result store: one directory per study, Parquet tables, resumable.

Layout (documented for users in docs/results.md)::

    DIR/study.toml          the spec as run
    DIR/manifest.json       fatpipe version, schema version, backends' facts, seeds
    DIR/runs/<run_id>.json  one record per finished run (written last, atomically)
    DIR/series/<run_id>.parquet, DIR/rpcs/<run_id>.parquet
    DIR/runs.parquet        consolidated: one row per run x flow group
    DIR/series.parquet      consolidated per-interval samples per stream
    DIR/rpcs.parquet        consolidated per-RPC completions

A run counts as finished once its record exists; records are written to a
temporary file and renamed, so a crash or Ctrl-C never leaves a half record,
and finished runs are never rewritten by a resumed study.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import PATH_COLUMNS, SCHEMA_VERSION, parquet_version, study_version, upgrade_series

if TYPE_CHECKING:
    from .loaded import LoadedStudy

# Columns every runs row has, in order; swept keys (dotted names) follow the
# identity columns. Units are in the names.
RUN_COLUMNS = [
    "run_id", "backend", "rep", "seed", "status", "reason",
    "flow_group", "kind", "cc", "streams", "mss_bytes", "sender", "start_s",
    "rate_bps", "rtt_s", "loss", "corruption", "buffer_bytes", "mtu_bytes",
    "duration_s", "warmup_s",
    "goodput_bps", "stream_goodput_min_bps", "stream_goodput_max_bps",
    "retrans_rate", "retrans_segments", "srtt_p50_s", "srtt_p99_s", "min_rtt_s",
    "rwnd_limited_frac", "sndbuf_limited_frac",
    "rpc_count", "rpc_goodput_bps", "rpc_ideal_s",
    "rpc_p50_s", "rpc_p90_s", "rpc_p99_s", "rpc_p999_s",
    "rpc_slowdown_p50", "rpc_slowdown_p99",
    *PATH_COLUMNS,
    "flags", "wall_s",
]


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_write_table(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _with_schema_meta(table: pa.Table, kind: str) -> pa.Table:
    meta = dict(table.schema.metadata or {})
    meta[b"fatpipe.schema_version"] = str(SCHEMA_VERSION).encode()
    meta[b"fatpipe.table"] = kind.encode()
    return table.replace_schema_metadata(meta)


class StudyStore:
    """Reads and writes one study directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # ---- the spec and manifest -------------------------------------------

    def prepare(self, spec_text: str) -> None:
        """Create the directory, or check that it holds the same spec.

        Resuming with a different spec would mix results of two experiments,
        so it is refused.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        as_run = self.root / "study.toml"
        if as_run.exists():
            manifest = self.root / "manifest.json"
            written = study_version(self.root) if manifest.exists() else SCHEMA_VERSION
            if written != SCHEMA_VERSION:
                raise FileExistsError(
                    f"{self.root} holds results of schema version {written}; this fatpipe writes "
                    f"version {SCHEMA_VERSION} and cannot resume it: choose another --out directory"
                )
            if as_run.read_text() != spec_text:
                raise FileExistsError(
                    f"{self.root} holds results of a different spec (study.toml differs); "
                    "choose another --out directory or remove it"
                )
        else:
            _atomic_write_bytes(as_run, spec_text.encode())

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        manifest = {"schema_version": SCHEMA_VERSION, **manifest}
        _atomic_write_bytes(self.root / "manifest.json", json.dumps(manifest, indent=2, default=str).encode())

    def manifest(self) -> dict[str, Any]:
        return json.loads((self.root / "manifest.json").read_text())

    # ---- per-run records --------------------------------------------------

    def record_path(self, run_id: str) -> Path:
        return self.root / "runs" / f"{run_id}.json"

    def finished(self) -> dict[str, dict[str, Any]]:
        """Records of runs already finished successfully, by run id."""
        out = {}
        for p in sorted((self.root / "runs").glob("*.json")):
            try:
                rec = json.loads(p.read_text())
            except (OSError, json.JSONDecodeError):
                continue  # unreadable: the run will be redone
            if rec.get("status") == "ok":
                out[rec["run_id"]] = rec
        return out

    def write_run(
        self,
        run_id: str,
        status: str,
        rows: list[dict[str, Any]],
        series: dict[str, list] | None = None,
        rpcs: dict[str, list] | None = None,
        reason: str = "",
    ) -> None:
        """Write a run's series and RPCs, then its record (which marks it done)."""
        if series is not None and series.get("t_s"):
            _atomic_write_table(self.root / "series" / f"{run_id}.parquet", pa.table(series))
        if rpcs is not None and rpcs.get("start_s"):
            _atomic_write_table(self.root / "rpcs" / f"{run_id}.parquet", pa.table(rpcs))
        record = {"run_id": run_id, "status": status, "reason": reason, "rows": rows}
        _atomic_write_bytes(self.record_path(run_id), json.dumps(record, default=float).encode())

    # ---- consolidated tables ---------------------------------------------

    def consolidate(self) -> dict[str, int]:
        """Write runs/series/rpcs.parquet from the per-run files. Returns row counts."""
        rows: list[dict[str, Any]] = []
        for p in sorted((self.root / "runs").glob("*.json")):
            rec = json.loads(p.read_text())
            rows.extend(rec["rows"])
        counts = {"runs": len(rows)}
        if rows:
            columns = _ordered_columns(rows)
            table = pa.table({c: [r.get(c) for r in rows] for c in columns})
            _atomic_write_table(self.root / "runs.parquet", _with_schema_meta(table, "runs"))
        for kind in ("series", "rpcs"):
            parts = sorted((self.root / kind).glob("*.parquet"))
            if parts:
                table = pa.concat_tables([pq.read_table(p) for p in parts], promote_options="default")
                _atomic_write_table(self.root / f"{kind}.parquet", _with_schema_meta(table, kind))
            counts[kind] = sum(pq.ParquetFile(p).metadata.num_rows for p in parts)
        return counts

    def runs_table(self):
        """The consolidated runs table as a pandas DataFrame."""
        import pandas as pd
        study_version(self.root)
        return pd.read_parquet(self.root / "runs.parquet")

    def rpcs_table(self):
        """The consolidated RPC completions (an empty DataFrame if there are none)."""
        import pandas as pd
        path = self.root / "rpcs.parquet"
        return pd.read_parquet(path) if path.exists() else pd.DataFrame()

    def series_table(self, columns: list[str] | None = None, run_id: str | None = None):
        """The consolidated series, or some of its columns, or one run's rows
        (an empty DataFrame if no series were kept), in the current schema:
        older versions are upgraded on read, newer ones refused."""
        import pandas as pd
        path = self.root / "series.parquet"
        if not path.exists():
            return pd.DataFrame()
        version = parquet_version(path, default=study_version(self.root))
        read = columns
        if columns is not None and version < SCHEMA_VERSION:
            read = [c for c in dict.fromkeys([*columns, "ca_state", "backend"]) if c != "cc_mode"]
        filters = [("run_id", "==", run_id)] if run_id else None
        df = upgrade_series(pd.read_parquet(path, columns=read, filters=filters), version)
        return df if columns is None else df[columns]

    # ---- reading a study back -------------------------------------------

    def load(self) -> LoadedStudy:
        """The one way to read a study: its runs, rpcs and (on first use)
        series tables, its spec and its manifest (fatpipe.loaded)."""
        from .loaded import LoadedStudy
        if not (self.root / "runs.parquet").exists():
            raise FileNotFoundError(f"{self.root}: no runs.parquet (run the study first)")
        spec_path, manifest_path = self.root / "study.toml", self.root / "manifest.json"
        return LoadedStudy(
            store=self,
            runs=self.runs_table(),
            rpcs=self.rpcs_table(),
            spec_text=spec_path.read_text() if spec_path.exists() else "",
            manifest=self.manifest() if manifest_path.exists() else {},
        )


def _ordered_columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    known = [c for c in RUN_COLUMNS if c in seen]
    swept = sorted(c for c in seen if "." in c)
    rest = [c for c in seen if c not in RUN_COLUMNS and c not in swept]
    # Identity first, then swept keys, then metrics.
    head = known[: known.index("warmup_s") + 1] if "warmup_s" in known else known
    tail = [c for c in known if c not in head]
    return head + swept + tail + rest
