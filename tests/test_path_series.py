"""The path series (the bottleneck per sampling interval): written per run
and consolidated by the store, checked on resume, shown by the report."""

import pandas as pd
import pytest

from fatpipe import schema
from fatpipe.backends.base import RunOutcome
from fatpipe.report import write_report
from fatpipe.results import STORED_PATH_SERIES_COLUMNS, StudyStore
from store_run import run_spec_text

SPEC = """
version = 1
[study]
name = "queue"
backends = ["sim"]
duration = "3s"
warmup = "1s"
repetitions = 1
interval = "250ms"
[path]
rate = "100Mbit"
rtt = "20ms"
buffer = "2bdp"
[[flows]]
cc = "dctcp"
[sweep]
"path.aqm" = ["droptail", "ce_threshold:20pkts"]
"""


def _run(root, spec_text=SPEC):
    return run_spec_text(root, spec_text)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("path-series") / "out")


def test_each_run_stores_its_path_series_at_the_series_sample_times(study):
    store, plans = study
    ps = store.path_series_table()
    assert list(ps.columns) == STORED_PATH_SERIES_COLUMNS
    series = store.series_table(columns=["run_id", "t_s"])
    for plan in plans:
        rec, problem = store.check_run(plan.run_id)
        assert problem == "" and rec["files"]["path_series"] == 12  # 3 s / 250 ms
        mine = ps[ps["run_id"] == plan.run_id]
        assert list(mine["t_s"]) == sorted(series[series["run_id"] == plan.run_id]["t_s"].unique())
        assert list(store.path_series_table(run_id=plan.run_id)["t_s"]) == list(mine["t_s"])


def test_the_last_cumulative_counts_equal_the_runs_path_facts(study):
    store, _ = study
    runs = store.runs_table().groupby("run_id").first()
    last = store.path_series_table().sort_values("t_s").groupby("run_id").last()
    for rid, row in runs.iterrows():
        assert last.loc[rid, "ce_marks"] == row["path_ce_marks"]
        assert last.loc[rid, "queue_drops"] == row["path_queue_drops"]
    assert (runs["path_ce_marks"] > 0).sum() == 1, "only the marking bottleneck marks CE"


def test_a_damaged_path_series_file_makes_the_run_redone(study, tmp_path):
    store, plans = study
    rid = plans[0].run_id
    copy = StudyStore(tmp_path / "copy")
    import shutil
    shutil.copytree(store.root, copy.root)
    (copy.root / "path_series" / f"{rid}.parquet").write_bytes(b"not parquet")
    rec, problem = copy.check_run(rid)
    assert rec is None and problem == f"path_series/{rid}.parquet unreadable (ArrowInvalid)"
    assert rid in copy.resumable()[1]


def test_a_backend_that_cannot_sample_its_queue_writes_no_path_series(tmp_path):
    assert RunOutcome().path_series == schema.empty_path_series()
    store = StudyStore(tmp_path / "out")
    store.prepare("")
    store.write_run("r1", "ok", [{"run_id": "r1"}], path_series={"run_id": [], **schema.empty_path_series()})
    rec, problem = store.check_run("r1")
    assert problem == "" and "path_series" not in rec["files"]
    assert not (store.root / "path_series" / "r1.parquet").exists()
    store.consolidate()
    assert store.path_series_table().empty


def test_the_report_shows_the_queue_of_one_run_and_ce_marks_in_the_grid(study):
    store, _ = study
    path = write_report(store.root)
    html = path.read_text()
    assert (path.parent / "queue.png").stat().st_size > 1000
    grid = html[html.index('id="grid"'):]
    grid = grid[: grid.index("</table>")]
    assert ">queue p50 (kB)</th>" in grid and ">CE marks</th>" in grid
    points = pd.read_csv(path.parent / "grid_points.csv")
    assert {"queue_p50_bytes", "path_ce_marks"} <= set(points.columns)
    # The marking bottleneck holds DCTCP's queue near K = 20 packets (~30 kB);
    # drop-tail lets it fill towards the 2 BDP buffer (500 kB).
    by_aqm = points.set_index("path.aqm")["queue_p50_bytes"]
    assert by_aqm["ce_threshold:20pkts"] < 60e3 < by_aqm["droptail"]


def test_the_report_has_no_ce_column_when_nothing_was_marked(tmp_path):
    store, _ = _run(tmp_path / "out", SPEC.replace('"ce_threshold:20pkts"', '"droptail"').replace(
        '["droptail", "droptail"]', '["droptail"]').replace('cc = "dctcp"', 'cc = "cubic"'))
    html = write_report(store.root).read_text()
    grid = html[html.index('id="grid"'):]
    assert ">queue p50 (kB)</th>" in grid and ">CE marks</th>" not in grid[: grid.index("</table>")]
