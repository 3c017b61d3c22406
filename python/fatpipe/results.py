"""The result store: one directory per study, Parquet tables, resumable.

Layout (documented for users in docs/results.md)::

    DIR/                   the study directory, holding:
      .fatpipe-study       marker: this directory is a fatpipe study
      .fatpipe.lock        flock held by the process writing the study (pid, host, start)
      study.toml           the spec as run
      manifest.json        fatpipe version, schema version, backends' facts, seeds;
                           an imported study's mark (IMPORTED_KEY)
      runs/<run_id>.json   one record per finished run (written last, atomically)
      series/<run_id>.parquet, rpcs/<run_id>.parquet, path_series/<run_id>.parquet,
      events/<run_id>.parquet, transfers/<run_id>.parquet
      work/<run_id>/       a backend's scratch files for the run (raw samples)
      runs.parquet         consolidated: one row per run x flow group
      series.parquet       consolidated per-interval samples per stream
      rpcs.parquet         consolidated per-RPC completions
      path_series.parquet  consolidated per-interval samples of the bottleneck
      events.parquet       consolidated CCA state changes
      transfers.parquet    consolidated data sets of transfer flows that completed

A run counts as finished once its record exists and its files check out
(:meth:`StudyStore.check_run`); records are written to a temporary file and
renamed, so a crash or Ctrl-C never leaves a half record, and finished runs
are never rewritten by a resumed study. A run whose files are damaged
(truncated Parquet, unparseable JSON) is redone: its files are removed first.

Files are created without following symlinks, under unique temporary names
(:mod:`fatpipe.storefs`); a non-empty directory that is not a fatpipe study
is refused, never written into.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from . import storefs
from .schema import (
    CC_VAR_COLUMNS,
    CPU_COLUMNS,
    EVENT_COLUMNS,
    PATH_COLUMNS,
    PATH_SERIES_COLUMNS,
    RPC_COLUMNS,
    SCHEMA_VERSION,
    SERIES_COLUMNS,
    TRANSFER_COLUMNS,
    parquet_version,
    study_version,
    upgrade_runs,
    upgrade_series,
)
from .storefs import StoreError, StudyLocked

if TYPE_CHECKING:
    from .loaded import LoadedStudy

__all__ = ["IMPORTED_KEY", "RUN_COLUMNS", "SCHEMA_VERSION", "STORED_EVENT_COLUMNS", "STORED_PATH_SERIES_COLUMNS",
           "STORED_RPC_COLUMNS", "STORED_SERIES_COLUMNS", "STORED_TRANSFER_COLUMNS", "StoreError", "StudyLocked",
           "StudyStore", "imported_mark",
           "imported_study"]

# Columns every runs row has, in order; swept keys (dotted names) follow the
# identity columns. Units are in the names.
RUN_COLUMNS = [
    "run_id", "backend", "rep", "seed", "status", "reason",
    "flow_group", "kind", "cc", "streams", "mss_bytes", "sender", "start_s",
    "cwnd_clamp",  # segments; present only in studies that clamp a flow
    "pacing_rate_bps",  # each stream's pacing cap; present only in studies that pace a flow
    "rate_bps", "rtt_s", "loss", "corruption", "buffer_bytes", "mtu_bytes",
    "duration_s", "warmup_s",
    "goodput_bps", "stream_goodput_min_bps", "stream_goodput_max_bps",
    "retrans_rate", "retrans_segments", "srtt_p50_s", "srtt_p99_s", "min_rtt_s",
    "rwnd_limited_frac", "sndbuf_limited_frac",
    "rpc_count", "rpc_goodput_bps", "rpc_ideal_s",
    "rpc_p50_s", "rpc_p90_s", "rpc_p99_s", "rpc_p999_s",
    "rpc_slowdown_p50", "rpc_slowdown_p99",
    "transfer_count", "transfer_done", "transfer_size_bytes",
    "fct_mean_s", "fct_p50_s", "fct_p95_s", "fct_max_s", "transfer_goodput_bps",
    *PATH_COLUMNS,
    *CPU_COLUMNS,
    "flags", "wall_s",
]

# The columns of the per-run series, RPC, path series and events files
# (runcompute.compute_run adds the run's identity and summary.series_with_goodput
# the goodput).
STORED_SERIES_COLUMNS = ["run_id", "backend", *SERIES_COLUMNS, "goodput_bps"]
STORED_RPC_COLUMNS = ["run_id", *RPC_COLUMNS]
STORED_TRANSFER_COLUMNS = ["run_id", *TRANSFER_COLUMNS]
STORED_PATH_SERIES_COLUMNS = ["run_id", *PATH_SERIES_COLUMNS]
STORED_EVENT_COLUMNS = ["run_id", *EVENT_COLUMNS]
# Per-run table files: directory (and consolidated name) and the columns a
# file must have to count as complete. The series' cc_* columns came later
# within the schema version: a run written before them is complete without
# them (they read as null), so resuming such a study redoes no run.
PER_RUN_TABLES = (("series", [c for c in STORED_SERIES_COLUMNS if c not in CC_VAR_COLUMNS]),
                  ("rpcs", STORED_RPC_COLUMNS), ("path_series", STORED_PATH_SERIES_COLUMNS),
                  ("events", STORED_EVENT_COLUMNS), ("transfers", STORED_TRANSFER_COLUMNS))
# Column kinds of the tables whose columns may be all null in one run (a CCA
# without variables): written with these Arrow types, never Arrow's null type.
_TABLE_KINDS = {"series": SERIES_COLUMNS, "events": EVENT_COLUMNS}
_ARROW_TYPES = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_()}

MARKER_NAME = ".fatpipe-study"
MARKER_TEXT = b"fatpipe study directory: written by fatpipe, see docs/results.md\n"
PER_RUN_DIRS = ("runs", "series", "rpcs", "path_series", "events", "transfers", "work")


def _with_schema_meta(table: pa.Table, kind: str) -> pa.Table:
    meta = dict(table.schema.metadata or {})
    meta[b"fatpipe.schema_version"] = str(SCHEMA_VERSION).encode()
    meta[b"fatpipe.table"] = kind.encode()
    return table.replace_schema_metadata(meta)


def _typed(table: pa.Table, kinds: dict[str, str]) -> pa.Table:
    """`table` with each all-null column of a known kind ("int | None", …)
    cast to that kind's Arrow type."""
    for i, name in enumerate(table.column_names):
        kind = kinds.get(name, "").removesuffix(" | None")
        if pa.types.is_null(table.schema.field(i).type) and kind in _ARROW_TYPES:
            table = table.set_column(i, name, table.column(i).cast(_ARROW_TYPES[kind]))
    return table


def _parquet_writer(table: pa.Table):
    return lambda f: pq.write_table(table, f, compression="zstd")


def _is_legacy_study(root: Path) -> bool:
    """A study written before the marker existed: manifest.json with the
    result schema version."""
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and "schema_version" in manifest


# manifest.json's mark of a study whose runs were made elsewhere and imported
# (`fatpipe import`, fatpipe.importers): {"tool": what made them (the runs'
# `backend` column, and what study.toml's study.backends names), "command":
# how to import more, "files": [{"file", "sha256", "run_id"}]}.
IMPORTED_KEY = "imported"


def imported_mark(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The import mark of a study's manifest (None: its runs were run by fatpipe).
    A study imported before the mark existed named its tool as a backend
    whose facts held the import command (``imported_by``)."""
    mark = manifest.get(IMPORTED_KEY)
    if isinstance(mark, dict) and isinstance(mark.get("tool"), str):
        return {"command": "fatpipe import", "files": [], **mark}
    for tool, facts in (manifest.get("backends") or {}).items():
        if isinstance(facts, dict) and isinstance(facts.get("imported_by"), str):
            return {"tool": tool, "command": facts["imported_by"], "files": []}
    return None


def imported_study(root: str | Path) -> dict[str, Any] | None:
    """The import mark of the study directory `root` (None: not imported, or
    no readable manifest.json there)."""
    try:
        manifest = json.loads((Path(root) / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return imported_mark(manifest) if isinstance(manifest, dict) else None


class StudyStore:
    """Reads and writes one study directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # ---- safe writing ------------------------------------------------------

    @contextlib.contextmanager
    def _dir(self, sub: str | None = None) -> Iterator[int]:
        """The study directory (or its per-run directory `sub`) as an open
        descriptor, created if missing, never through a symlink."""
        root_fd = storefs.open_root(self.root)
        try:
            if sub is None:
                yield root_fd
                return
            fd = storefs.open_subdir(root_fd, sub, self.root / sub)
            try:
                yield fd
            finally:
                os.close(fd)
        finally:
            os.close(root_fd)

    def _write(self, sub: str | None, name: str, write) -> None:
        with self._dir(sub) as fd:
            shown = self.root / sub / name if sub else self.root / name
            storefs.write_file(fd, name, shown, write)

    def _check_ours(self, root_fd: int) -> None:
        """Refuse a non-empty directory that is not a fatpipe study."""
        names = [n for n in storefs.entries(root_fd) if n != storefs.LOCK_NAME]
        if not names or MARKER_NAME in names or _is_legacy_study(self.root):
            return
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        raise StoreError(
            f"{self.root} is not empty ({shown}) and is not a fatpipe study (no {MARKER_NAME}); "
            "fatpipe writes only into a new or empty directory or its own study: choose another --out"
        )

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the study's lock while writing it (storefs.StudyLock): a
        second process refuses, naming the holder."""
        with self._dir() as root_fd:
            self._check_ours(root_fd)
            held = storefs.StudyLock(root_fd, self.root)
        try:
            yield
        finally:
            held.release()

    # ---- the spec and manifest -------------------------------------------

    def prepare(self, spec_text: str) -> list[str]:
        """Create the directory, or check that it is a fatpipe study holding
        the same spec; create the per-run directories and remove the
        temporary files a killed writer left (returned, relative paths).

        Resuming with a different spec would mix results of two experiments,
        so it is refused.
        """
        with self._dir() as root_fd:
            self._check_ours(root_fd)
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
            storefs.write_file(root_fd, MARKER_NAME, self.root / MARKER_NAME, lambda f: f.write(MARKER_TEXT))
            if not as_run.exists():
                storefs.write_file(root_fd, "study.toml", as_run, lambda f: f.write(spec_text.encode()))
            removed = storefs.remove_tmp_files(root_fd)
            for sub in PER_RUN_DIRS:
                fd = storefs.open_subdir(root_fd, sub, self.root / sub)
                try:
                    removed += [f"{sub}/{name}" for name in storefs.remove_tmp_files(fd)]
                finally:
                    os.close(fd)
        return removed

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        manifest = {"schema_version": SCHEMA_VERSION, **manifest}
        data = json.dumps(manifest, indent=2, default=str).encode()
        self._write(None, "manifest.json", lambda f: f.write(data))

    def manifest(self) -> dict[str, Any]:
        return json.loads((self.root / "manifest.json").read_text())

    # ---- per-run records --------------------------------------------------

    def record_path(self, run_id: str) -> Path:
        return self.root / "runs" / f"{run_id}.json"

    def check_run(self, run_id: str) -> tuple[dict[str, Any] | None, str]:
        """A run's record if the run finished and all its files check out,
        else (None, what is wrong; "" when the run simply has no record).

        Checked: the record parses and names the run; the series and RPC
        files are readable Parquet with the stored columns and the row
        counts the record lists; JSON files under work/<run_id>/ parse
        (of a JSON-lines file, its last line)."""
        path = self.record_path(run_id)
        try:
            rec = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None, ""
        except (OSError, ValueError) as e:
            return None, f"record {path.name} unreadable ({type(e).__name__})"
        if not isinstance(rec, dict) or rec.get("run_id") != run_id or not isinstance(rec.get("rows"), list):
            return None, f"record {path.name} is not a fatpipe run record"
        files = rec.get("files") or {}
        for kind, columns in PER_RUN_TABLES:
            problem = _check_parquet(self.root / kind / f"{run_id}.parquet", columns, files.get(kind))
            if problem:
                return None, problem
        problem = _check_json_files(self.root / "work" / run_id)
        if problem:
            return None, problem
        return rec, ""

    def _record_names(self) -> list[str]:
        return sorted(p.stem for p in (self.root / "runs").glob("*.json"))

    def resumable(self) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """(records of runs finished successfully whose files check out, by
        run id; what is wrong with each run whose files do not)."""
        done: dict[str, dict[str, Any]] = {}
        damaged: dict[str, str] = {}
        for run_id in self._record_names():
            rec, problem = self.check_run(run_id)
            if problem:
                damaged[run_id] = problem
            elif rec is not None and rec.get("status") == "ok":
                done[run_id] = rec
        return done, damaged

    def finished(self) -> dict[str, dict[str, Any]]:
        """Records of runs already finished successfully, by run id."""
        return self.resumable()[0]

    def discard(self, run_id: str) -> None:
        """Remove every file of a run (record first, so a crash in between
        never leaves a record without its files), before it is redone."""
        for sub, name in (("runs", f"{run_id}.json"), *((kind, f"{run_id}.parquet") for kind, _ in PER_RUN_TABLES),
                          ("work", run_id)):
            with self._dir(sub) as fd:
                try:
                    storefs.remove_entry(fd, name)
                except OSError as e:
                    raise storefs.os_problem(self.root / sub / name, e) from None

    def run_workdir(self, run_id: str) -> Path:
        """A new, empty work/<run_id>/ for a backend's scratch files: what
        was there (a killed run's files, a planted symlink) is removed
        without being followed, and the directory is created mode 0700 so
        nobody else can plant anything in it during the run."""
        with self._dir("work") as fd:
            try:
                storefs.remove_entry(fd, run_id)
                os.mkdir(run_id, 0o700, dir_fd=fd)
            except OSError as e:
                raise storefs.os_problem(self.root / "work" / run_id, e) from None
        return self.root / "work" / run_id

    def write_work_file(self, run_id: str, name: str, data: bytes) -> None:
        """Write one of a run's scratch files, computed elsewhere (a cluster
        worker), into work/<run_id>/`name` (a relative path of plain names;
        directories created, nothing followed through a symlink)."""
        parts = name.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise StoreError(f"work file {name!r} of run {run_id}: not a plain relative path")
        with self._dir("work") as work_fd:
            fds = [storefs.open_subdir(work_fd, run_id, self.root / "work" / run_id)]
            try:
                shown = self.root / "work" / run_id
                for part in parts[:-1]:
                    shown = shown / part
                    fds.append(storefs.open_subdir(fds[-1], part, shown))
                storefs.write_file(fds[-1], parts[-1], shown / parts[-1], lambda f: f.write(data))
            finally:
                for fd in fds:
                    os.close(fd)

    def write_run(
        self,
        run_id: str,
        status: str,
        rows: list[dict[str, Any]],
        series: dict[str, list] | None = None,
        rpcs: dict[str, list] | None = None,
        reason: str = "",
        path_series: dict[str, list] | None = None,
        facts: dict[str, Any] | None = None,
        events: dict[str, list] | None = None,
        transfers: dict[str, list] | None = None,
    ) -> None:
        """Write a run's series, RPCs, path series, events and transfers, then its
        record (which marks it done, lists the rows of each file, for the
        check on resume, and keeps the backend's facts of the run:
        RunOutcome.facts). A table without rows writes no file."""
        files = {}
        for kind, table_columns in (("series", series), ("rpcs", rpcs), ("path_series", path_series),
                                    ("events", events), ("transfers", transfers)):
            table = pa.table(table_columns or {})
            if table.num_rows == 0:
                continue
            table = _typed(table, _TABLE_KINDS.get(kind, {}))
            self._write(kind, f"{run_id}.parquet", _parquet_writer(table))
            files[kind] = table.num_rows
        record = {"run_id": run_id, "status": status, "reason": reason, "rows": rows, "files": files,
                  "facts": facts or {}}
        data = json.dumps(record, default=float).encode()
        self._write("runs", f"{run_id}.json", lambda f: f.write(data))

    def run_facts(self, run_id: str) -> dict[str, Any]:
        """What the backend recorded about run `run_id` (RunOutcome.facts;
        empty for a failed run or one written before facts were kept)."""
        try:
            data = (self.root / "runs" / f"{run_id}.json").read_bytes()
        except FileNotFoundError:
            raise KeyError(f"{self.root}: no run {run_id!r}") from None
        return json.loads(data).get("facts", {})

    # ---- consolidated tables ---------------------------------------------

    def consolidate(self) -> dict[str, int]:
        """Write runs/series/rpcs.parquet from the per-run files of the runs
        whose record is readable (a damaged run is left for the next resume
        to redo). Returns row counts."""
        rows: list[dict[str, Any]] = []
        kept: set[str] = set()
        for run_id in self._record_names():
            try:
                rec = json.loads(self.record_path(run_id).read_bytes())
                rows.extend(rec["rows"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            kept.add(run_id)
        counts = {"runs": len(rows)}
        if rows:
            columns = _ordered_columns(rows)
            table = pa.table({c: [r.get(c) for r in rows] for c in columns})
            self._write(None, "runs.parquet", _parquet_writer(_with_schema_meta(table, "runs")))
        for kind, _ in PER_RUN_TABLES:
            parts = []
            for p in sorted((self.root / kind).glob("*.parquet")):
                if p.stem not in kept:
                    continue
                try:
                    parts.append(pq.read_table(p))
                except (OSError, pa.ArrowException):
                    continue
            if parts:
                table = pa.concat_tables(parts, promote_options="default")
                self._write(None, f"{kind}.parquet", _parquet_writer(_with_schema_meta(table, kind)))
            counts[kind] = sum(t.num_rows for t in parts)
        return counts

    def runs_table(self):
        """The consolidated runs table as a pandas DataFrame."""
        import pandas as pd
        study_version(self.root)
        return upgrade_runs(pd.read_parquet(self.root / "runs.parquet"))

    def rpcs_table(self):
        """The consolidated RPC completions (an empty DataFrame if there are none)."""
        import pandas as pd
        path = self.root / "rpcs.parquet"
        return pd.read_parquet(path) if path.exists() else pd.DataFrame()

    def transfers_table(self):
        """The consolidated data sets of transfer flows that completed, with
        the stored columns (empty when there are none)."""
        import pandas as pd
        path = self.root / "transfers.parquet"
        return pd.read_parquet(path) if path.exists() else pd.DataFrame(columns=STORED_TRANSFER_COLUMNS)

    def path_series_table(self, run_id: str | None = None):
        """The consolidated path series (the bottleneck per sampling
        interval), or one run's rows, with the stored columns; empty for a
        study written before the table existed or whose backend could not
        observe its bottleneck."""
        import pandas as pd
        path = self.root / "path_series.parquet"
        if not path.exists():
            return pd.DataFrame(columns=STORED_PATH_SERIES_COLUMNS)
        parquet_version(path, default=study_version(self.root))
        filters = [("run_id", "==", run_id)] if run_id else None
        return pd.read_parquet(path, filters=filters)

    def events_table(self, run_id: str | None = None):
        """The consolidated events (the CCAs' state changes), or one run's,
        with the stored columns; empty for a study written before the table
        existed or whose runs recorded none (CCAs without variables, backends
        other than the simulator)."""
        import pandas as pd
        path = self.root / "events.parquet"
        if not path.exists():
            return pd.DataFrame(columns=STORED_EVENT_COLUMNS)
        parquet_version(path, default=study_version(self.root))
        filters = [("run_id", "==", run_id)] if run_id else None
        df = pd.read_parquet(path, filters=filters)
        # Columns added within the schema version (cc_* variables, the
        # window at the event): null in a study written before them.
        missing = [c for c in STORED_EVENT_COLUMNS if c not in df.columns]
        return df.assign(**dict.fromkeys(missing))[STORED_EVENT_COLUMNS] if missing else df

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
        if read is not None:
            # cc_* columns a study written before them lacks: filled below.
            present = set(pq.read_schema(path).names)
            read = [c for c in read if c in present or c not in CC_VAR_COLUMNS]
        filters = [("run_id", "==", run_id)] if run_id else None
        df = upgrade_series(pd.read_parquet(path, columns=read, filters=filters), version)
        missing = [c for c in CC_VAR_COLUMNS if c not in df.columns and (columns is None or c in columns)]
        if missing:
            df = df.assign(**dict.fromkeys(missing))
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


def _check_parquet(path: Path, columns: list[str], rows: int | None) -> str:
    """What is wrong with a per-run Parquet file ("" if nothing). `rows`:
    the count its record lists (None: a record older than the count, which
    needs the file only if it exists)."""
    if not path.exists() and not rows:
        return ""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        return f"{path.parent.name}/{path.name} unreadable ({type(e).__name__})"
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        return f"{path.parent.name}/{path.name} lacks columns {', '.join(missing)}"
    if rows is not None and table.num_rows != rows:
        return f"{path.parent.name}/{path.name} has {table.num_rows} rows, its record says {rows}"
    return ""


def _check_json_files(workdir: Path) -> str:
    """What is wrong with the raw JSON (lines) files a backend left in
    `workdir` ("" if nothing): a .json file must parse, and the last line of
    a .jsonl file."""
    if workdir.is_symlink() or not workdir.is_dir():
        return ""
    for p in sorted(workdir.iterdir()):
        if p.suffix not in (".json", ".jsonl") or p.is_symlink() or not p.is_file():
            continue
        try:
            text = p.read_text()
            # A whole .json file; of a .jsonl file the last line, where a
            # killed writer or a truncation leaves its mark.
            lines = [ln for ln in text.splitlines() if ln.strip()][-1:] if p.suffix == ".jsonl" else [text]
            for line in lines:
                json.loads(line)
        except (OSError, ValueError) as e:
            return f"work/{workdir.name}/{p.name} unreadable ({type(e).__name__})"
    return ""
