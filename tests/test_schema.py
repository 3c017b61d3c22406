"""The result schema exists once per language and the two agree: Rust's
table macros (crates/sim/src/trace.rs, through fatpipe._native), Python's
fatpipe.schema and docs/results.md. Older results load upgraded; newer ones
are refused with a clear error."""

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fatpipe
from fatpipe import _native, schema
from fatpipe.backends.base import PathReport as BasePathReport
from fatpipe.report.html import load_study
from fatpipe.results import RUN_COLUMNS, StudyStore

DOCS = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def _docs_table(heading: str) -> list[tuple[str, ...]]:
    """Rows (first column's backticked name, other cells) of the first table
    under the `## heading` section of docs/results.md."""
    text = DOCS.read_text()
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        # Cells split at unescaped pipes; a kind "int \\| None" reads "int | None".
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        m = re.fullmatch(r"`([a-z0-9_]+)`", cells[0]) if line.startswith("|") else None
        if m:
            rows.append((m.group(1), *cells[1:]))
    return rows


def test_rust_series_columns_equal_python_series_columns_in_order_and_kind():
    rust = [(name, kind) for name, kind, _unit, _doc in _native.series_columns()]
    assert rust == list(schema.SERIES_COLUMNS.items())


def test_docs_series_table_lists_exactly_the_series_columns_with_their_kinds():
    docs = [(name, kind) for name, kind, *_ in _docs_table("series.parquet")]
    assert docs == list(schema.SERIES_COLUMNS.items())


def test_rust_rpc_columns_equal_python_rpc_columns():
    rust = [(name, kind) for name, kind, _unit, _doc in _native.rpc_columns()]
    assert rust == list(schema.RPC_COLUMNS.items())


def test_rust_transfer_columns_equal_python_transfer_columns_and_the_docs():
    rust = [(name, kind) for name, kind, _unit, _doc in _native.transfer_columns()]
    assert rust == list(schema.TRANSFER_COLUMNS.items())
    docs = [(name, kind) for name, kind, *_ in _docs_table("transfers.parquet")]
    assert docs == list(schema.TRANSFER_COLUMNS.items())


def test_rust_path_facts_equal_python_path_report_fields():
    rust = [(name, kind) for name, kind, _unit, _doc in _native.path_facts()]
    assert rust == list(schema.PATH_FACTS.items())
    assert BasePathReport is schema.PathReport


def test_runs_table_and_docs_carry_every_path_column_once():
    assert [c for c in RUN_COLUMNS if c.startswith("path_")] == list(schema.PATH_COLUMNS)
    documented = DOCS.read_text()
    for col in schema.PATH_COLUMNS:
        assert f"`{col}`" in documented, col


def test_path_report_refuses_a_fact_it_does_not_know():
    with pytest.raises(ValueError, match="unknown path facts \\['jitter_s'\\]"):
        schema.PathReport.from_facts({"emulator": "x", "jitter_s": 1.0})


def test_a_sim_run_returns_the_schema_columns_and_path_facts():
    plan = {"run_id": "r", "backend": "sim", "rep": 0, "seed": 1, "duration_s": 0.5, "warmup_s": 0.0,
            "sample_interval_s": 0.1, "rate_bps": 10e6, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0,
            "buffer_bytes": 50_000, "mtu_bytes": 1500,
            "senders": {"s1": {"rmem_max_bytes": 6_000_000, "wmem_max_bytes": 4_000_000}},
            "receiver": {"rmem_max_bytes": 6_000_000, "wmem_max_bytes": 4_000_000},
            "flows": [{"group": 0, "kind": "bulk", "cc": "bbr", "streams": 1, "mss_bytes": 1448,
                       "sender": "s1"}]}
    out = _native.simulate(json.dumps(plan))
    assert list(out["series"]) == list(schema.SERIES_COLUMNS)
    assert list(out["rpcs"]) == list(schema.RPC_COLUMNS)
    assert list(out["transfers"]) == list(schema.TRANSFER_COLUMNS)
    report = schema.PathReport.from_facts(out["path"])
    assert report.emulator == "sim" and report.late_p99_s is None
    assert set(out["series"]["ca_state"]) <= set(schema.LINUX_CA_STATES)
    assert "startup" in out["series"]["cc_mode"]


# ---- versions ------------------------------------------------------------------


def _write_study(root: Path, version: int, series: pd.DataFrame) -> Path:
    """A consolidated study directory as fatpipe `version` wrote it."""
    root.mkdir()
    (root / "study.toml").write_text('[study]\nname = "old"\n')
    (root / "manifest.json").write_text(json.dumps({"schema_version": version}))
    runs = pd.DataFrame({"run_id": ["sim-p000-r00"], "backend": ["sim"], "status": ["ok"],
                         "cc": ["bbr"], "goodput_bps": [1e6]})
    for name, df in (("runs", runs), ("series", series)):
        table = pa.Table.from_pandas(df, preserve_index=False)
        meta = {**(table.schema.metadata or {}), b"fatpipe.schema_version": str(version).encode()}
        pq.write_table(table.replace_schema_metadata(meta), root / f"{name}.parquet")
    return root


V1_SERIES = pd.DataFrame({
    "run_id": ["sim-p000-r00"] * 4 + ["kernel-p000-r00"],
    "backend": ["sim"] * 4 + ["kernel"],
    "flow_group": [0] * 5, "stream": [0] * 5, "t_s": [0.1, 0.2, 0.3, 0.4, 0.1],
    "cwnd_segments": [10, 20, 30, 40, 10],
    "ca_state": ["startup", "probe_bw", "recovery", "open", "disorder"],
})


def test_a_version_1_study_loads_with_the_sim_mode_moved_to_cc_mode(tmp_path):
    root = _write_study(tmp_path / "v1", 1, V1_SERIES)
    s = StudyStore(root).series_table()
    assert list(s["ca_state"]) == ["open", "open", "recovery", "open", "disorder"]
    assert list(s["cc_mode"]) == ["startup", "probe_bw", "", "", ""]
    assert list(s.columns).index("cc_mode") == list(s.columns).index("ca_state") + 1
    # Selected columns, and through the report's reader.
    assert list(StudyStore(root).series_table(["t_s", "cc_mode"])["cc_mode"])[:2] == ["startup", "probe_bw"]
    study = load_study(root)
    assert list(study.read_series(run_id="kernel-p000-r00")["cc_mode"]) == [""]
    assert list(fatpipe.load(root).series["cc_mode"])[:2] == ["startup", "probe_bw"]


def test_a_version_2_series_is_read_unchanged_but_for_the_cc_columns_added_since(tmp_path):
    v2 = V1_SERIES.assign(ca_state="open", cc_mode="probe_bw")
    root = _write_study(tmp_path / "v2", 2, v2)
    got = StudyStore(root).series_table()
    pd.testing.assert_frame_equal(got[list(v2.columns)], v2)
    assert list(got.columns) == [*v2.columns, *schema.CC_VAR_COLUMNS]
    assert got[list(schema.CC_VAR_COLUMNS)].isna().all().all()
    # A study written with them reads exactly as written.
    with_cc = v2.assign(**{c: [None] * len(v2) for c in schema.CC_VAR_COLUMNS}).assign(cc_round=[1, 2, 3, 4, 5])
    root = _write_study(tmp_path / "v2cc", 2, with_cc)
    pd.testing.assert_frame_equal(StudyStore(root).series_table(), with_cc)


def test_a_runs_table_written_before_path_ce_marks_reads_it_as_zero(tmp_path):
    root = _write_study(tmp_path / "v2", 2, V1_SERIES.assign(ca_state="open", cc_mode=""))
    runs = pd.read_parquet(root / "runs.parquet").assign(path_queue_drops=[7], path_bottleneck_bps=[1e6])
    pq.write_table(pa.Table.from_pandas(runs, preserve_index=False), root / "runs.parquet")
    got = StudyStore(root).runs_table()
    assert list(got["path_ce_marks"]) == [0]
    assert list(got.columns).index("path_ce_marks") == list(got.columns).index("path_queue_drops") + 1


def test_a_study_of_a_newer_schema_is_refused_naming_file_and_versions(tmp_path):
    root = _write_study(tmp_path / "v3", 3, V1_SERIES)
    expected = re.escape(f"{root / 'manifest.json'}: written with result schema version 3, "
                         "but this fatpipe reads versions up to 2")
    with pytest.raises(schema.SchemaVersionError, match=expected):
        StudyStore(root).runs_table()
    with pytest.raises(schema.SchemaVersionError, match=expected):
        load_study(root)


def test_a_newer_series_file_is_refused_even_under_an_older_manifest(tmp_path):
    root = _write_study(tmp_path / "mixed", 2, V1_SERIES)
    meta = {b"fatpipe.schema_version": b"3"}
    table = pq.read_table(root / "series.parquet")
    pq.write_table(table.replace_schema_metadata(meta), root / "series.parquet")
    with pytest.raises(schema.SchemaVersionError, match=re.escape(f"{root / 'series.parquet'}: written with "
                                                                  "result schema version 3")):
        StudyStore(root).series_table()


def test_a_version_1_study_cannot_be_resumed_by_this_version(tmp_path):
    root = _write_study(tmp_path / "v1", 1, V1_SERIES)
    with pytest.raises(FileExistsError, match="schema version 1; this fatpipe writes version 2"):
        StudyStore(root).prepare((root / "study.toml").read_text())


def test_python_wire_sizes_equal_the_simulators():
    from fatpipe import wire
    for name, value in _native.wire_constants():
        assert getattr(wire, name) == value, name
    assert wire.frame_bytes(1500) == 1514 and wire.mss_with_timestamps(1500) == 1448


def test_linux_segments_carry_at_most_mtu_less_52_bytes_whatever_maxseg_asks():
    from fatpipe import wire
    # TCP_MAXSEG = 1472 on a 1500-byte path: tcp_sync_mss clamps to 1460,
    # then the timestamp option takes 12 (measured: GSO units of 1448).
    assert wire.linux_segment_payload(1460, 1500) == 1448
    assert wire.linux_segment_payload(1000, 1500) == 1000
    assert wire.linux_segment_payload(8948, 9000) == 8948


def test_sim_loss_matches_the_python_loss_from_corruption_formula():
    # A corruption-only path: the sim's random drops follow wire.packet_loss_probability.
    from fatpipe import wire
    corruption = 1e-6
    plan = {"run_id": "r", "backend": "sim", "rep": 0, "seed": 3, "duration_s": 5.0, "warmup_s": 0.0,
            "sample_interval_s": 1.0, "rate_bps": 50e6, "rtt_s": 0.01, "loss": 0.0, "corruption": corruption,
            "buffer_bytes": 1_000_000, "mtu_bytes": 1500,
            "senders": {"s1": {"rmem_max_bytes": 6_000_000, "wmem_max_bytes": 4_000_000}},
            "receiver": {"rmem_max_bytes": 6_000_000, "wmem_max_bytes": 4_000_000},
            "flows": [{"group": 0, "kind": "bulk", "cc": "bbr", "streams": 1, "mss_bytes": 1448,
                       "sender": "s1"}]}
    path = _native.simulate(json.dumps(plan))["path"]
    p = wire.packet_loss_probability(0.0, corruption, 1448)
    n = path["packets"]
    expected, sd = n * p, (n * p * (1 - p)) ** 0.5
    assert abs(path["random_drops"] - expected) < 4 * sd, (path["random_drops"], expected)


# ---- the path series -------------------------------------------------------------


def test_rust_path_series_columns_equal_python_path_series_columns():
    rust = [(name, kind) for name, kind, _unit, _doc in _native.path_series_columns()]
    assert rust == list(schema.PATH_SERIES_COLUMNS.items())


def test_docs_path_series_table_lists_exactly_the_path_series_columns():
    docs = [(name, kind) for name, kind, *_ in _docs_table("path_series.parquet")]
    assert docs == list(schema.PATH_SERIES_COLUMNS.items())


def test_a_study_written_before_the_path_series_reads_it_empty(tmp_path):
    root = _write_study(tmp_path / "v2", 2, V1_SERIES.assign(ca_state="open", cc_mode=""))
    got = StudyStore(root).path_series_table()
    assert got.empty and list(got.columns) == ["run_id", *schema.PATH_SERIES_COLUMNS]
    assert fatpipe.load(root).path_series.empty


# ---- the events ----------------------------------------------------------------


def test_rust_event_columns_equal_python_event_columns():
    rust = [(name, kind) for name, kind, _unit, _doc in _native.event_columns()]
    assert rust == list(schema.EVENT_COLUMNS.items())


def test_the_cc_var_columns_end_the_series_and_the_events_alike():
    n = len(schema.CC_VAR_COLUMNS)
    assert list(schema.SERIES_COLUMNS.items())[-n:] == list(schema.CC_VAR_COLUMNS.items())
    assert list(schema.EVENT_COLUMNS.items())[-n:] == list(schema.CC_VAR_COLUMNS.items())


def test_docs_events_table_lists_the_event_columns_and_names_the_cc_var_range():
    docs = [(name, kind) for name, kind, *_ in _docs_table("events.parquet")]
    own = [(k, v) for k, v in schema.EVENT_COLUMNS.items() if k not in schema.CC_VAR_COLUMNS]
    assert docs == own
    first, last = list(schema.CC_VAR_COLUMNS)[0], list(schema.CC_VAR_COLUMNS)[-1]
    section = DOCS.read_text().split("## events.parquet", 1)[1].split("\n## ", 1)[0]
    assert f"| `{first}` … `{last}` |" in section


def test_a_study_written_before_the_events_reads_them_empty_and_the_cc_columns_null(tmp_path):
    root = _write_study(tmp_path / "v2", 2, V1_SERIES.assign(ca_state="open", cc_mode=""))
    got = StudyStore(root).events_table()
    assert got.empty and list(got.columns) == ["run_id", *schema.EVENT_COLUMNS]
    loaded = fatpipe.load(root)
    assert loaded.events.empty
    series = loaded.series
    for col in schema.CC_VAR_COLUMNS:
        assert series[col].isna().all(), col
    picked = StudyStore(root).series_table(columns=["t_s", "cc_state", "cc_round"])
    assert list(picked.columns) == ["t_s", "cc_state", "cc_round"] and picked["cc_round"].isna().all()
