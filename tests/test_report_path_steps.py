"""The report's time series shows a path's schedule: the link's rate and
the propagation RTT as steps (report/run_sections.path_steps), and an
application-limited flow's write rate (run_sections.app_steps)."""

from __future__ import annotations

import fatpipe
from fatpipe.report import write_report
from fatpipe.report.run_sections import app_steps, path_steps

STUDY = """version = 1
[study]
name = "steps"
backends = ["sim"]
duration = "3s"
interval = "250ms"
[path]
rate = "20Mbit"
rtt = "20ms"
[[path.schedule]]
at = "1s"
rate = "0.5x"
[[path.schedule]]
at = "2s"
rtt = "40ms"
[[flows]]
cc = "cubic"
"""


def test_the_schedule_reaches_the_reports_time_series(tmp_path):
    (tmp_path / "s.toml").write_text(STUDY)
    study = fatpipe.run(tmp_path / "s.toml", out=tmp_path / "out", progress=None)
    rid = study.runs["run_id"].iloc[0]
    assert path_steps(study, rid) == [(0.0, 20e6, 0.02), (1.0, 10e6, 0.02), (2.0, 10e6, 0.04)]
    assert study.run_plan("nope-p000-r00") is None
    page = write_report(tmp_path / "out", run_id=rid)
    assert (tmp_path / "out" / "report" / "timeseries.png").exists() and page


def test_a_static_path_draws_no_schedule(tmp_path):
    static = STUDY.split("[[path.schedule]]")[0] + "[[flows]]\ncc = \"cubic\"\n"
    (tmp_path / "s.toml").write_text(static)
    study = fatpipe.run(tmp_path / "s.toml", out=tmp_path / "out", progress=None)
    assert path_steps(study, study.runs["run_id"].iloc[0]) is None


APP_STUDY = STUDY.split("[[path.schedule]]")[0] + """[[flows]]
cc = "cubic"
app_rate = "5Mbit"
[[flows.app]]
at = "1s"
pause = "500ms"
[[flows.app]]
at = "1.2s"
rate = "8Mbit"
[[flows.app]]
at = "2.5s"
rate = "unlimited"
"""


def test_an_application_limited_flows_write_rate_reaches_the_reports_time_series(tmp_path):
    # A rate step during the pause sets the rate the writes resume at.
    (tmp_path / "s.toml").write_text(APP_STUDY)
    study = fatpipe.run(tmp_path / "s.toml", out=tmp_path / "out", progress=None)
    rid = study.runs["run_id"].iloc[0]
    assert app_steps(study, rid) == [(0, [(0.0, 5e6), (1.0, 0.0), (1.2, 0.0), (1.5, 8e6), (2.5, None)])]
    assert path_steps(study, rid) is None
    page = write_report(tmp_path / "out", run_id=rid)
    assert (tmp_path / "out" / "report" / "timeseries.png").exists() and page
