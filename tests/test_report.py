import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fake_backend import FakeBackend
from fatpipe import cli
from fatpipe import study as study_mod
from fatpipe.report import write_report
from store_run import run_spec_text
from synthetic_study import sharing_study, streams_study

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def streams_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("report") / "streams"
    return streams_study(root, ccs=("bbr", "cubic"), streams=(1, 4), mtus=(1500, 9000),
                         losses=(1e-5, 1e-4, 1e-3, 1e-2), reps=2, duration_s=12.0)


@pytest.fixture(scope="module")
def streams_report(streams_dir):
    path = write_report(streams_dir)
    return path, path.read_text()


def _headers(html: str) -> list[str]:
    return re.findall(r"<h2 id=\"[^\"]+\">([^<]+)</h2>", html)


def test_report_is_one_self_contained_page_with_embedded_figures(streams_report):
    path, html = streams_report
    assert path == path.parent.parent / "report" / "report.html"
    assert html.count('<img alt=') >= 4  # loss, streams, MSS, time series
    assert 'src="data:image/png;base64,' in html
    assert "http://" not in html and "https://" not in html  # nothing fetched from elsewhere
    for name in ("goodput_vs_loss", "goodput_vs_streams", "goodput_vs_mss", "timeseries"):
        assert (path.parent / f"{name}.png").stat().st_size > 1000
        assert (path.parent / f"{name}.svg").read_text().lstrip().startswith("<?xml")


def test_report_has_the_improvement_factor_table_when_streams_vary(streams_report):
    path, html = streams_report
    assert "Improvement factor from parallel streams" in _headers(html)
    table = html[html.index("<caption>Improvement factor from parallel streams"):]
    table = table[: table.index("</table>")]
    for header in ("CCA", "average", "max", "min", "conditions"):
        assert f">{header}</th>" in table
    assert ">bbr</td>" in table and ">cubic</td>" in table
    factors = pd.read_csv(path.parent / "improvement_factors.csv")
    assert set(factors["cc"]) == {"bbr", "cubic"}
    # bbr's single stream is bounded by the 6 MB window: 4 streams give ~4x.
    assert factors.set_index("cc").loc["bbr", "avg"] == pytest.approx(4.0, rel=0.15)


def test_report_states_findings_computed_from_the_data(streams_report):
    path, html = streams_report
    findings = json.loads((path.parent / "findings.json").read_text())
    factors = pd.read_csv(path.parent / "improvement_factors.csv").set_index("cc")
    expected = f"bbr: parallel streams raise goodput {factors.loc['bbr', 'avg']:.2f}× on average"
    assert any(line.startswith(expected) for line in findings)
    assert any("collapse" in line for line in findings)
    assert "Main findings" in html and expected in html


def test_report_has_collapse_points_and_every_grid_point(streams_report):
    path, html = streams_report
    heads = _headers(html)
    assert "Collapse points along loss" in heads and "All grid points" in heads
    grid = pd.read_csv(path.parent / "grid_points.csv")
    assert len(grid) == 2 * 2 * 2 * 4  # cc x streams x mtu x loss
    assert {"n", "goodput_mean_bps", "goodput_sd_bps", "goodput_ci95_low_bps",
            "goodput_ci95_high_bps", "flags"} <= set(grid.columns)
    assert (grid["n"] == 2).all()
    cp = pd.read_csv(path.parent / "collapse_points_loss.csv")
    cubic1 = cp[(cp["cc"] == "cubic") & (cp["streams"] == 1)]
    assert cubic1["collapse_at"].notna().all()  # Mathis-like cubic collapses by loss 1e-2
    assert cp[cp["cc"] == "bbr"]["collapse_at"].isna().all()


def test_time_series_defaults_to_the_collapsing_run_and_can_be_chosen(streams_dir, streams_report):
    _, html = streams_report
    assert "the run with the longest goodput collapse" in html
    assert "Collapses within runs" in _headers(html)
    runs = pd.read_parquet(streams_dir / "runs.parquet")
    chosen = runs["run_id"].iloc[-1]
    html2 = write_report(streams_dir, run_id=chosen).read_text()
    assert f"Per-stream samples of run {chosen}, chosen on the command line" in html2
    with pytest.raises(ValueError, match="not in"):
        write_report(streams_dir, run_id="no-such-run")


def test_sections_follow_the_data_sharing_study(tmp_path):
    root = sharing_study(tmp_path / "sharing")
    path = write_report(root)
    html = path.read_text()
    heads = _headers(html)
    assert "Sharing the bottleneck" in heads and "RPC latency" in heads
    assert "Improvement factor from parallel streams" not in heads
    assert not any(h.startswith("Collapse points") for h in heads)
    assert (path.parent / "fairness.png").exists() and (path.parent / "rpc_cdf.png").exists()
    fair = pd.read_csv(path.parent / "fairness.csv")
    assert {"share", "jain", "share_ci_low"} <= set(fair.columns)
    assert "Jain" in html and "p99.9 (ms)" in html


def _run_fake_study(tmp_path, monkeypatch, spec_text):
    monkeypatch.setattr(study_mod, "get_backend", lambda _name: FakeBackend())
    store, _ = run_spec_text(tmp_path / "out", spec_text)
    return store.root


FAKE_SPEC = """
version = 1
[study]
name = "fake-cc"
duration = "3s"
warmup = "1s"
repetitions = 2
interval = "100ms"
[path]
rate = "100Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
[sweep]
"flows.0.cc" = ["cubic", "bbr", "broken"]
"""


def test_report_of_a_study_run_through_the_real_pipeline(tmp_path, monkeypatch, capsys):
    root = _run_fake_study(tmp_path, monkeypatch, FAKE_SPEC)
    assert cli.main(["report", str(root)]) == 0
    assert "report:" in capsys.readouterr().out
    html = (root / "report" / "report.html").read_text()
    heads = _headers(html)
    assert "All grid points" in heads and "Failed runs" in heads
    assert "Goodput per grid point" in heads  # nothing swept but the CCA
    assert "Improvement factor from parallel streams" not in heads
    assert "backend exploded" in html
    assert "fake-cc" in html  # the study's name from study.toml
    assert cli.main(["report", str(tmp_path / "missing")]) == 2


def test_cli_run_writes_the_report_after_a_study(tmp_path, monkeypatch):
    p = tmp_path / "s.toml"
    p.write_text(FAKE_SPEC.replace(', "broken"', ""))
    monkeypatch.setattr(study_mod, "get_backend", lambda _name: FakeBackend())
    monkeypatch.setattr(cli, "get_backend", lambda _name: FakeBackend())
    assert cli.main(["run", str(p), "--out", str(tmp_path / "res"), "--jobs", "1"]) == 0
    assert (tmp_path / "res" / "report" / "report.html").exists()


@pytest.mark.parametrize(("module", "loads_matplotlib"), [
    ("fatpipe.report.findings", False),
    ("fatpipe.report.references", False),  # the docs generator's Markdown
    ("fatpipe.cli", False),
    ("fatpipe.advisor", False),
    ("fatpipe.report.figures", True),  # the probe sees matplotlib where it is loaded
])
def test_text_findings_and_report_less_paths_load_no_matplotlib(module, loads_matplotlib):
    code = f"import sys, {module}; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(loads_matplotlib)


def _without_modules(monkeypatch, *names: str) -> None:
    """Makes `names` unimportable (None in sys.modules) and forgets the
    report modules that imported them (in sys.modules and as attributes of
    the package, which `from . import x` reads), so the next report imports
    afresh."""
    import fatpipe.report
    for mod in [m for m in sys.modules if m.startswith("fatpipe.report.") or m.split(".")[0] in names]:
        monkeypatch.delitem(sys.modules, mod)
        if mod.startswith("fatpipe.report."):
            monkeypatch.delattr(fatpipe.report, mod.split(".")[2], raising=False)
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def test_a_missing_optional_dependency_skips_the_report_in_one_line(streams_dir, monkeypatch):
    _without_modules(monkeypatch, "matplotlib")
    lines: list[str] = []
    cli._maybe_report(streams_dir, lines.append)
    assert lines == [f"no report: matplotlib is not installed (the report's figures need it); "
                     f"install it and run `fatpipe report {streams_dir}`"]


@pytest.mark.parametrize("broken", ["fatpipe.report", "fatpipe.report.figures"])
def test_an_import_bug_in_the_report_is_not_swallowed(streams_dir, monkeypatch, broken):
    _without_modules(monkeypatch, broken)
    lines: list[str] = []
    with pytest.raises(ImportError) as e:
        cli._maybe_report(streams_dir, lines.append)
    assert e.value.name == broken and lines == []


CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install.sh)")
@pytest.mark.usefixtures("streams_report")
def test_report_renders_in_headless_chromium(streams_dir, tmp_path):
    out = tmp_path / "shot.png"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "screenshot_report.py"),
                        str(streams_dir), "--out", str(out)], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000


def test_a_study_whose_runs_all_failed_still_gets_a_report(tmp_path):
    root = streams_study(tmp_path / "failed", ccs=("bbr",), streams=(1, 2), mtus=(1500,),
                         losses=(1e-5,), reps=2, duration_s=4.0)
    runs = pd.read_parquet(root / "runs.parquet")
    runs["status"], runs["reason"], runs["goodput_bps"] = "failed", "RuntimeError: boom", None
    runs.to_parquet(root / "runs.parquet")
    (root / "series.parquet").unlink()
    heads = _headers(write_report(root).read_text())
    assert "All grid points" in heads and "Failed runs" in heads
    assert "Time series of one run" not in heads


def test_a_corruption_sweep_gets_its_own_loss_figure_and_collapse_table(tmp_path):
    root = streams_study(tmp_path / "corr", ccs=("reno",), streams=(1, 4), mtus=(1500,),
                         losses=(1e-5, 1e-4, 1e-3), reps=2, duration_s=4.0)
    runs = pd.read_parquet(root / "runs.parquet").rename(columns={"path.loss": "path.corruption"})
    runs["path.corruption"] *= 1e-4  # per bit
    runs["corruption"], runs["loss"] = runs["path.corruption"], 0.0
    runs.to_parquet(root / "runs.parquet")
    path = write_report(root)
    heads = _headers(path.read_text())
    assert "Goodput vs corruption" in heads and "Collapse points along corruption" in heads
    assert (path.parent / "goodput_vs_corruption.png").exists()
    assert (path.parent / "collapse_points_corruption.csv").exists()


def test_rpc_section_compares_with_the_idle_path_and_splits_goodput_by_flow_kind(tmp_path):
    root = sharing_study(tmp_path / "sharing")
    path = write_report(root)
    html = path.read_text()
    assert "idle path (ms)" in html and "Streaming (bulk) vs RPC flows" in html
    latency = pd.read_csv(path.parent / "rpc_latency.csv")
    assert (latency["ideal"] > 0).all() and (latency["p50"] >= latency["ideal"]).all()
    kinds = pd.read_csv(path.parent / "goodput_by_flow_kind.csv")
    assert set(kinds["kind"]) == {"bulk", "rpc"}
    assert {"goodput_bps", "retrans_rate"} <= set(kinds.columns)


# Appended to a copy of the report: runs after the page's own script, clicks
# and scrolls like a user, and leaves what it saw in an attribute that
# --dump-dom prints.
INTERACTION_PROBE = """<script>
(function () {
  var root = document.getElementById("fp-ts"), out = {};
  out.ready = root.getAttribute("data-fp-ready");
  out.paths = +root.getAttribute("data-fp-paths");
  out.panels = document.querySelectorAll(".fp-ts-panel svg").length;
  out.stream0 = document.querySelectorAll('path.fp-ts-line[data-stream="0"]').length;
  out.view = root.getAttribute("data-fp-view");
  var panels = document.querySelector(".fp-ts-panels"), r = panels.getBoundingClientRect();
  panels.dispatchEvent(new WheelEvent("wheel", {deltaY: -300, clientX: r.left + r.width / 2,
                                                clientY: r.top + 40, bubbles: true, cancelable: true}));
  out.zoomed = root.getAttribute("data-fp-view");
  document.querySelector('.fp-ts-key[data-stream="0"]').click();
  out.hiddenPaths = +root.getAttribute("data-fp-paths");
  out.stream0Hidden = document.querySelectorAll('path.fp-ts-line[data-stream="0"]').length;
  out.pressed = document.querySelector('.fp-ts-key[data-stream="0"]').getAttribute("aria-pressed");
  document.querySelector('.fp-ts-key[data-stream="0"]').click();
  out.shownAgain = +root.getAttribute("data-fp-paths");
  document.querySelector('[data-act="reset"]').click();
  out.reset = root.getAttribute("data-fp-view");
  function drag(from, to, shift) {
    var y = r.top + 60;
    panels.dispatchEvent(new PointerEvent("pointerdown", {clientX: from, clientY: y, button: 0, shiftKey: shift,
                                                          pointerId: 1, bubbles: true}));
    panels.dispatchEvent(new PointerEvent("pointermove", {clientX: to, clientY: y, pointerId: 1, bubbles: true}));
    panels.dispatchEvent(new PointerEvent("pointerup", {clientX: to, clientY: y, pointerId: 1, bubbles: true}));
  }
  drag(r.left + 0.4 * r.width, r.left + 0.7 * r.width, false);
  out.dragged = root.getAttribute("data-fp-view");
  drag(r.left + 0.5 * r.width, r.left + 0.3 * r.width, true);
  out.panned = root.getAttribute("data-fp-view");
  panels.dispatchEvent(new MouseEvent("dblclick", {bubbles: true}));
  out.reset2 = root.getAttribute("data-fp-view");
  document.body.setAttribute("data-probe", JSON.stringify(out));
}());
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install.sh)")
def test_interactive_time_series_renders_zooms_and_toggles_in_headless_chromium(streams_dir, tmp_path):
    runs = pd.read_parquet(streams_dir / "runs.parquet")
    run = runs[runs["streams"] == 4]["run_id"].iloc[0]
    html = write_report(streams_dir, run_id=run).read_text()
    assert html.count('id="fp-ts"') == 1
    page = tmp_path / "probe.html"
    page.write_text(html.replace("</body>", INTERACTION_PROBE + "</body>"))
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,2000",
                        "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    found = re.search(r'data-probe="([^"]*)"', r.stdout)
    assert found, "the page's script did not run"
    probe = json.loads(found.group(1).replace("&quot;", '"'))
    lines_per_stream = 5  # goodput, cwnd, sRTT, min RTT, retransmissions
    n_streams, totals = 4, 1  # the flow group's total goodput is a legend entry too
    assert probe["ready"] == "1" and probe["panels"] == 4
    assert probe["paths"] == n_streams * lines_per_stream + totals
    assert probe["stream0"] == lines_per_stream
    t0, t1 = map(float, probe["view"].split())
    z0, z1 = map(float, probe["zoomed"].split())
    assert t0 <= z0 < z1 <= t1 and (z1 - z0) < 0.9 * (t1 - t0)  # the wheel zoomed in
    assert probe["hiddenPaths"] == probe["paths"] - lines_per_stream and probe["stream0Hidden"] == 0
    assert probe["pressed"] == "false" and probe["shownAgain"] == probe["paths"]
    assert probe["reset"] == probe["view"]
    d0, d1 = map(float, probe["dragged"].split())
    assert t0 < d0 < d1 < t1 and (d1 - d0) < 0.45 * (t1 - t0)  # dragged over ~30 % of the width
    p0, p1 = map(float, probe["panned"].split())
    assert p1 - p0 == pytest.approx(d1 - d0, rel=1e-3) and p0 > d0  # shift+drag to the left: later times
    assert probe["reset2"] == probe["view"]  # double-click shows the whole run
