"""`fatpipe import iperf3`: iperf3 -J output (captured over the kernel
backend's path: 100 Mbit/s, 20 ms, loss 1e-4, cubic, -P 2, -t 3 -O 1) →
a study directory with the tables every backend writes."""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from pathlib import Path

import pytest

import fatpipe
from fatpipe import spec as spec_mod
from fatpipe.backends import BackendUnavailable
from fatpipe.cli import main
from fatpipe.importers import iperf3
from fatpipe.importers.study import import_iperf3, parse_path, study_text
from fatpipe.report import write_report
from fatpipe.results import StudyStore
from fatpipe.schema import SERIES_COLUMNS

FIXTURE = Path(__file__).parent / "data" / "iperf3-cubic-p2-100mbit-20ms.json"
PATH = "rate=100Mbit,rtt=20ms,loss=1e-4"


def _doc() -> dict:
    return json.loads(FIXTURE.read_text())


def test_every_stream_and_interval_becomes_a_series_row_with_the_schema_columns():
    run = iperf3.parse(FIXTURE.read_text())
    doc = _doc()
    assert list(run.series) == list(SERIES_COLUMNS)
    assert run.streams == 2 == doc["start"]["test_start"]["num_streams"]
    assert len(run.series["t_s"]) == 2 * len(doc["intervals"])
    assert run.cc == "cubic" and run.mss_bytes == doc["start"]["tcp_mss_default"] == 1448
    assert run.omit_s == 1 and math.isclose(run.duration_s, 4.0, abs_tol=0.01)


def test_delivered_bytes_and_retransmissions_are_cumulative_per_stream_from_the_omitted_intervals_on():
    run = iperf3.parse(FIXTURE.read_text())
    doc = _doc()
    s = run.series
    for i, sock in enumerate(st["socket"] for st in doc["intervals"][0]["streams"]):
        rows = [k for k in range(len(s["t_s"])) if s["stream"][k] == i]
        ivs = [st for iv in doc["intervals"] for st in iv["streams"] if st["socket"] == sock]
        assert [s["delivered_bytes"][k] for k in rows] == list(_cumsum(st["bytes"] for st in ivs))
        assert [s["retrans_segments"][k] for k in rows] == list(_cumsum(st["retransmits"] for st in ivs))
        # Time goes on through the omitted interval (iperf3 restarts its clock after -O).
        times = [s["t_s"][k] for k in rows]
        assert times == sorted(times) and math.isclose(times[-1], 4.0, abs_tol=0.01)


def test_the_nominal_interval_ignores_timer_jitter_and_a_short_last_interval():
    # A busy host stretched the first interval to 1.0006 s (rounded to 1 ms
    # that was 1.001 s, a setting of its own); the last one is cut short.
    doc = _doc()
    doc["intervals"][0]["streams"][0]["seconds"] = 1.0006
    doc["intervals"][-1]["streams"][0]["seconds"] = 0.37
    assert iperf3.parse(json.dumps(doc)).interval_s == 1.0


def test_cwnd_is_snd_cwnd_over_the_mss_and_srtt_is_the_reported_rtt():
    run = iperf3.parse(FIXTURE.read_text())
    first = _doc()["intervals"][0]["streams"][0]
    assert run.series["cwnd_segments"][0] == first["snd_cwnd"] // 1448
    assert run.series["srtt_s"][0] == first["rtt"] / 1e6
    assert all(0 < m <= r for m, r in zip(run.series["min_rtt_s"], run.series["srtt_s"], strict=True))


def test_an_iperf3_error_or_a_udp_test_is_refused_naming_the_file():
    with pytest.raises(iperf3.Iperf3FormatError, match="x.json: iperf3 reported an error: unable to connect"):
        iperf3.parse(json.dumps({"error": "unable to connect to server"}), "x.json")
    doc = _doc()
    doc["start"]["test_start"]["protocol"] = "UDP"
    with pytest.raises(iperf3.Iperf3FormatError, match="only TCP"):
        iperf3.parse(json.dumps(doc), "u.json")
    with pytest.raises(iperf3.Iperf3FormatError, match="not JSON"):
        iperf3.parse("Connecting to host", "plain.txt")


def test_the_path_option_names_a_bad_key_and_needs_rate_and_rtt():
    assert parse_path(PATH) == {"rate": "100Mbit", "rtt": "20ms", "loss": "1e-4"}
    with pytest.raises(spec_mod.SpecError, match="unknown key 'delay'"):
        parse_path("rate=1Gbit,delay=20ms")
    with pytest.raises(spec_mod.SpecError, match="missing rtt"):
        parse_path("rate=1Gbit")


def test_files_that_differ_in_cca_become_sweep_points_and_files_that_agree_repetitions():
    run = iperf3.parse(FIXTURE.read_text())
    doc = _doc()
    doc["end"]["sender_tcp_congestion"] = "bbr"
    bbr = iperf3.parse(json.dumps(doc))
    assert bbr.cc == "bbr"
    text = study_text("t", [run, run, bbr], parse_path(PATH), ["a", "b", "c"])
    assert '"flows.0.cc" = ["cubic", "bbr"]' in text and "repetitions = 2" in text
    # iperf3 is no backend: only an imported study (its manifest's mark) may name it.
    spec = spec_mod.validate(tomllib.loads(text), imported_from="iperf3")
    assert spec.study.backends == ["iperf3"] and spec.study.warmup == 1.0
    with pytest.raises(spec_mod.SpecError, match="study.backends: got 'iperf3'; the backends are"):
        spec_mod.validate(tomllib.loads(text))


def test_an_imported_study_has_the_runs_table_of_a_run_study(tmp_path):
    store = import_iperf3([FIXTURE], PATH, tmp_path / "imp", emit=lambda _line: None)
    runs = store.runs_table()
    assert len(runs) == 1
    r = runs.iloc[0]
    assert (r["backend"], r["cc"], r["streams"], r["mss_bytes"], r["status"]) == ("iperf3", "cubic", 2, 1448, "ok")
    assert r["rate_bps"] == 100e6 and r["rtt_s"] == 0.02 and r["loss"] == 1e-4
    # Goodput after the omitted second: what the sender wrote in the measured seconds.
    doc = _doc()
    written = sum(st["bytes"] for iv in doc["intervals"][1:] for st in iv["streams"])
    measured_s = sum(iv["sum"]["seconds"] for iv in doc["intervals"][1:])
    assert r["goodput_bps"] == pytest.approx(written * 8 / measured_s, rel=0.02)
    loaded = StudyStore(tmp_path / "imp").load()
    assert loaded.run_facts("iperf3-p000-r00")["iperf3_file"] == str(FIXTURE)


def test_the_manifest_marks_the_study_imported_and_loading_validates_its_spec_from_the_mark(tmp_path):
    other = tmp_path / "again.json"
    other.write_bytes(FIXTURE.read_bytes())
    import_iperf3([FIXTURE, other], PATH, tmp_path / "imp", emit=lambda _line: None)
    loaded = StudyStore(tmp_path / "imp").load()
    assert loaded.imported == {
        "tool": "iperf3", "command": "fatpipe import iperf3 RESULTS.json… --path rate=…,rtt=…",
        "files": [{"file": str(FIXTURE), "sha256": hashlib.sha256(FIXTURE.read_bytes()).hexdigest(),
                   "run_id": "iperf3-p000-r00"},
                  {"file": str(other), "sha256": hashlib.sha256(FIXTURE.read_bytes()).hexdigest(),
                   "run_id": "iperf3-p000-r01"}]}
    assert loaded.manifest["backends"] == {}  # its runs ran on no backend of this machine
    assert loaded.spec is not None and loaded.spec.study.backends == ["iperf3"]
    assert set(loaded.runs["backend"]) == {"iperf3"}


def test_a_study_imported_before_the_mark_reads_its_mark_from_the_backend_facts(tmp_path):
    import_iperf3([FIXTURE], PATH, tmp_path / "imp", emit=lambda _line: None)
    manifest_file = tmp_path / "imp" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    del manifest["imported"]
    manifest["backends"] = {"iperf3": {"imported_by": "fatpipe import iperf3 RESULTS.json… --path rate=…,rtt=…"}}
    manifest_file.write_text(json.dumps(manifest))
    loaded = StudyStore(tmp_path / "imp").load()
    assert loaded.imported["tool"] == "iperf3" and loaded.spec is not None


def test_a_report_of_an_imported_study_is_written(tmp_path):
    import_iperf3([FIXTURE], PATH, tmp_path / "imp", emit=lambda _line: None)
    page = write_report(tmp_path / "imp").read_text()
    assert "backends: iperf3" in page


def test_running_an_imported_study_is_refused_with_the_import_command(tmp_path, capsys):
    import_iperf3([FIXTURE], PATH, tmp_path / "imp", emit=lambda _line: None)
    for extra in ([], ["--backend", "auto"]):
        assert main(["run", str(tmp_path / "imp" / "study.toml"), "--out", str(tmp_path / "again"), *extra]) == 2
        err = capsys.readouterr().err
        assert "its runs were made by iperf3 and imported" in err and "fatpipe import iperf3" in err
    assert main(["check", str(tmp_path / "imp" / "study.toml")]) == 2
    assert "fatpipe import iperf3" in capsys.readouterr().err
    with pytest.raises(BackendUnavailable, match="its runs were made by iperf3 and imported"):
        fatpipe.run(tmp_path / "imp" / "study.toml", backend="iperf3", out=tmp_path / "again", progress=None)
    assert not (tmp_path / "again").exists()


def test_an_imported_study_runs_on_a_backend_given_instead_but_never_into_its_own_directory(tmp_path, capsys):
    import_iperf3([FIXTURE], PATH, tmp_path / "imp", emit=lambda _line: None)
    study = str(tmp_path / "imp" / "study.toml")
    assert main(["check", study, "--backend", "sim"]) == 0
    assert main(["run", study, "--backend", "sim", "--out", str(tmp_path / "imp"), "--no-report"]) == 2
    assert "holds runs of iperf3 imported with" in capsys.readouterr().err
    assert set(StudyStore(tmp_path / "imp").runs_table()["backend"]) == {"iperf3"}
    assert main(["run", study, "--backend", "sim", "--out", str(tmp_path / "sim"), "--no-report"]) == 0
    assert set(StudyStore(tmp_path / "sim").runs_table()["backend"]) == {"sim"}


def test_import_then_compare_with_a_sim_study_of_the_same_path(tmp_path, capsys):
    assert main(["import", "iperf3", str(FIXTURE), "--path", PATH, "--out", str(tmp_path / "imp")]) == 0
    sim = tmp_path / "sim.toml"
    sim.write_text((tmp_path / "imp" / "study.toml").read_text().replace('backends = ["iperf3"]',
                                                                         'backends = ["sim"]'))
    assert main(["run", str(sim), "--out", str(tmp_path / "sim"), "--no-report"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "imp"), str(tmp_path / "sim")]) == 0
    assert "comparison:" in capsys.readouterr().out
    from fatpipe.compare import compare_points
    points = compare_points(StudyStore(tmp_path / "imp").runs_table(), StudyStore(tmp_path / "sim").runs_table())
    assert points["matched"].all() and len(points) == 1
    assert 0.5 < points["ratio"].iloc[0] < 2.0


def _cumsum(values):
    total = 0
    for v in values:
        total += v
        yield total
