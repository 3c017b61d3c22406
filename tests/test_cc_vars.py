"""A CCA's internal variables per interval (the series' cc_* columns) and its
state changes (the events table): returned by the simulator for bbr and
bbr3, null and empty for other CCAs and backends, written per run and
consolidated by the store, checked on resume, read back by StudyStore.load()."""

import base64
import json
import shutil
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fatpipe import _native, schema
from fatpipe.backends.base import RunOutcome
from fatpipe.backends.sim import plan_json
from fatpipe.linuxpath import flows, tcpinfo
from fatpipe.results import STORED_EVENT_COLUMNS, StudyStore
from store_run import run_spec_text

SPEC = """
version = 1
[study]
name = "bbr-vars"
backends = ["sim"]
duration = "3s"
warmup = "0s"
repetitions = 1
interval = "100ms"
[path]
rate = "100Mbit"
rtt = "20ms"
buffer = "2bdp"
[[flows]]
cc = "bbr"
[sweep]
"flows.0.cc" = ["bbr", "bbr3", "cubic"]
"""


def _run(root, spec_text=SPEC):
    return run_spec_text(root, spec_text)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("cc-vars") / "out")


def _by_cc(plans):
    return {plan.flows[0].cc: plan for plan in plans}


def test_the_events_survive_the_store_exactly_as_the_simulator_returned_them(study):
    store, plans = study
    events = store.load().events
    assert list(events.columns) == STORED_EVENT_COLUMNS
    for cc, plan in _by_cc(plans).items():
        mine = events[events["run_id"] == plan.run_id]
        direct = _native.simulate(plan_json(plan))["events"]
        if cc == "cubic":
            assert mine.empty and direct["t_s"] == []
            assert not (store.root / "events" / f"{plan.run_id}.parquet").exists()
            continue
        assert list(mine["t_s"]) == direct["t_s"] and list(mine["to_state"]) == direct["to_state"]
        assert list(mine["cc_round"]) == direct["cc_round"]
        states = list(mine.loc[mine["kind"] == "cc_state", "to_state"])
        assert states[0] == "drain" and states[1].startswith("probe_bw"), states
        assert set(mine["kind"]) <= set(schema.EVENT_KINDS)
        rec, problem = store.check_run(plan.run_id)
        assert problem == "" and rec["files"]["events"] == len(mine)


def test_the_series_carries_the_cc_columns_filled_for_bbr_and_null_for_cubic(study):
    store, plans = study
    series = store.load().series
    for cc, plan in _by_cc(plans).items():
        mine = series[series["run_id"] == plan.run_id]
        assert len(mine) == 30
        if cc == "cubic":
            assert mine[list(schema.CC_VAR_COLUMNS)].isna().all().all()
            continue
        assert (mine["cc_state"] == mine["cc_mode"]).all()
        assert mine["cc_round"].notna().all() and mine["cc_round"].is_monotonic_increasing
        late = mine[mine["t_s"] >= 1.0]
        assert late["cc_full_bw_reached"].astype(bool).all()
        assert ((late["cc_max_bw_bps"] - 95.64e6).abs() < 0.02 * 95.64e6).all()
        has_bounds = late["cc_bw_hi_bps"].notna().all()
        assert has_bounds == (cc == "bbr3")
    # Typed even where one run's column is all null (cubic's).
    written = pq.read_schema(store.root / "series" / f"{_by_cc(plans)['cubic'].run_id}.parquet")
    assert written.field("cc_round").type == pa.int64() and written.field("cc_state").type == pa.string()
    assert written.field("cc_full_bw_reached").type == pa.bool_()


def test_a_run_written_before_the_cc_columns_and_events_is_kept_on_resume(study, tmp_path):
    store, plans = study
    copy = StudyStore(tmp_path / "copy")
    shutil.copytree(store.root, copy.root)
    rid = _by_cc(plans)["bbr"].run_id
    path = copy.root / "series" / f"{rid}.parquet"
    old = pq.read_table(path)
    pq.write_table(old.drop_columns(list(schema.CC_VAR_COLUMNS)), path)
    (copy.root / "events" / f"{rid}.parquet").unlink()
    rec = json.loads((copy.root / "runs" / f"{rid}.json").read_text())
    del rec["files"]["events"]
    (copy.root / "runs" / f"{rid}.json").write_text(json.dumps(rec))
    done, damaged = copy.resumable()
    assert rid in done and not damaged
    copy.consolidate()
    series = copy.series_table()
    assert series.loc[series["run_id"] == rid, list(schema.CC_VAR_COLUMNS)].isna().all().all()
    other = _by_cc(plans)["bbr3"].run_id
    assert series.loc[series["run_id"] == other, "cc_round"].notna().all()
    assert rid not in set(copy.events_table()["run_id"])


def test_a_damaged_events_file_makes_the_run_redone(study, tmp_path):
    store, plans = study
    copy = StudyStore(tmp_path / "copy")
    shutil.copytree(store.root, copy.root)
    rid = _by_cc(plans)["bbr3"].run_id
    (copy.root / "events" / f"{rid}.parquet").write_bytes(b"not parquet")
    rec, problem = copy.check_run(rid)
    assert rec is None and problem == f"events/{rid}.parquet unreadable (ArrowInvalid)"


def test_backends_without_events_return_an_empty_table():
    assert RunOutcome().events == schema.empty_events()


# ---- the kernel's TCP_CC_INFO ------------------------------------------------------


def _bbr_info(bw_bytes_per_s: int, min_rtt_us: int, pacing_gain: int, cwnd_gain: int) -> bytes:
    return struct.pack("<5I", bw_bytes_per_s & 0xFFFFFFFF, bw_bytes_per_s >> 32, min_rtt_us, pacing_gain, cwnd_gain)


def test_bbr_v1_tcp_cc_info_fills_state_bandwidth_min_rtt_and_gains_and_nothing_else():
    got = tcpinfo.cc_vars("bbr", _bbr_info(12_000_000_000 // 8 * 3, 20_150, 320, 512))
    assert got["cc_state"] == "probe_bw"
    assert got["cc_max_bw_bps"] == 36e9  # above 2^32 bytes/s: both halves read
    assert got["cc_min_rtt_s"] == pytest.approx(0.02015)
    assert (got["cc_pacing_gain"], got["cc_cwnd_gain"]) == (1.25, 2.0)
    rest = set(schema.CC_VAR_COLUMNS) - {"cc_state", "cc_max_bw_bps", "cc_min_rtt_s", "cc_pacing_gain",
                                         "cc_cwnd_gain"}
    assert all(got[c] is None for c in rest)
    assert list(got) == list(schema.CC_VAR_COLUMNS)
    # No sample yet: bbr_min_rtt is ~0U.
    assert tcpinfo.cc_vars("bbr", _bbr_info(0, 0xFFFFFFFF, 739, 739))["cc_min_rtt_s"] is None
    assert tcpinfo.cc_vars("cubic", b"\0" * 20) == schema.no_cc_vars()
    assert tcpinfo.cc_vars("bbr", b"") == schema.no_cc_vars()


def test_kernel_samples_become_series_rows_with_every_column():
    info = bytearray(tcpinfo.MIN_BYTES)
    line = json.dumps({"stream": 0, "t_s": 0.5, "tcp_info": base64.b64encode(bytes(info)).decode(),
                       "cc_info": base64.b64encode(_bbr_info(1_000_000, 20_000, 88, 739)).decode()})
    rows = flows.parse_samples(line, 0, "bbr")
    series = flows.rows_to_series(rows)
    assert list(series) == list(schema.SERIES_COLUMNS)
    assert series["cc_state"] == ["drain"] and series["cc_max_bw_bps"] == [8e6]
    assert flows.rows_to_series(flows.parse_samples(line, 0, "cubic"))["cc_max_bw_bps"] == [None]
