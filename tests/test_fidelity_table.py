"""bench/fidelity_table.py's lossless tables (deep buffer, many flows) and
their export, on synthetic kernel and sim studies with known values."""

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from synthetic_study import lossless_study

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fidelity_table", ROOT / "bench" / "fidelity_table.py")
ft = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ft)

# The deep-buffer point: vegas keeps a queue in the simulator only; bbr
# retransmits in the simulator only; cubic agrees.
DEEP_KERNEL = {"srtt_s": {"vegas": 0.0415, "cubic": 0.150, "bbr": 0.045},
               "retrans_rate": {"vegas": 0.0, "cubic": 0.002, "bbr": 0.0}}
DEEP_SIM = {"srtt_s": {"vegas": 0.1398, "cubic": 0.155, "bbr": 0.045},
            "retrans_rate": {"vegas": 0.0, "cubic": 0.0021, "bbr": 0.004}}
# Many flows: each of the three senders retransmits this much.
MANY_KERNEL = {"retrans_rate": {"cubic": 0.112, "bbr": 0.301}}
MANY_SIM = {"retrans_rate": {"cubic": 0.083, "bbr": 0.243}}
MANY = {"ccs": ("cubic", "bbr"), "groups": 3, "streams": 2, "rtt_s": 0.01, "buffer_bdp": 1.0}


def _studies(base: Path, many_sim: bool = True) -> Path:
    lossless_study(base / "fidelity-deep-buffer", "kernel", **DEEP_KERNEL)
    lossless_study(base / "fidelity-deep-buffer-sim", "sim", **DEEP_SIM)
    lossless_study(base / "fidelity-many-flows-grid", "kernel", **MANY, **MANY_KERNEL)
    if many_sim:
        lossless_study(base / "fidelity-many-flows-grid-sim", "sim", **MANY, **MANY_SIM)
    return base


def _cells(table: str) -> dict[str, list[str]]:
    """CCA -> its row's cells after the CCA."""
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    return {r[0].strip(): [c.strip() for c in r[1:]] for r in rows}


def test_deep_buffer_table_marks_the_queue_and_the_retransmissions(tmp_path):
    base = _studies(tmp_path)
    k, s = ft.runs(base / "fidelity-deep-buffer"), ft.runs(base / "fidelity-deep-buffer-sim")
    cells = _cells(ft.lossless_table(k, s, "fidelity-deep-buffer"))
    assert list(cells) == ["cubic", "bbr", "vegas"]
    goodput, mbit, srtt, srtt_ratio, rtx, rtx_ratio = cells["vegas"]
    assert goodput.startswith("1.00 [") and "!" not in goodput and mbit == "90.0 / 90.0"
    assert srtt == "41.5 / 139.8"
    assert srtt_ratio.startswith(f"{0.1398 / 0.0415:.2f} [") and srtt_ratio.endswith("**!**")
    assert (rtx, rtx_ratio) == ("0.000 / 0.000", "–")  # neither retransmits: agree
    assert cells["bbr"][4:] == ["0.000 / 0.400", "– **!**"]  # the kernel's 0 against 0.4 %
    assert cells["cubic"][2] == "150.0 / 155.0" and "!" not in cells["cubic"][3] and "?" not in cells["cubic"][3]
    assert cells["cubic"][4] == "0.200 / 0.210" and cells["cubic"][5].startswith("1.05 [")
    assert "!" not in cells["cubic"][5]


def test_many_flows_compares_each_runs_totals(tmp_path):
    base = _studies(tmp_path)
    k = ft.runs(base / "fidelity-many-flows-grid")
    totals = ft.run_totals(k)
    assert len(totals) == len(k) / 3 and (totals["flow_group"] == 0).all()
    per_run = k.groupby("run_id")["goodput_bps"].sum()
    assert totals.set_index("run_id")["goodput_bps"].to_dict() == pytest.approx(per_run.to_dict())
    cells = _cells(ft.lossless_table(totals, ft.run_totals(ft.runs(base / "fidelity-many-flows-grid-sim")), "x"))
    assert cells["cubic"][1] == "90.0 / 90.0"
    assert cells["cubic"][4] == "11.200 / 8.300" and cells["cubic"][5].startswith(f"{0.083 / 0.112:.2f} [")
    assert cells["cubic"][5].endswith("**!**") and cells["bbr"][5].endswith("**!**")
    # A flow group without goodput leaves its run's total undefined, not short.
    k.loc[k.index[1], "goodput_bps"] = float("nan")
    assert ft.run_totals(k)["goodput_bps"].isna().sum() == 1


def test_a_study_with_several_points_per_cca_is_refused(tmp_path):
    base = _studies(tmp_path)
    k = ft.runs(base / "fidelity-many-flows-grid")
    with pytest.raises(ValueError, match="fidelity-many-flows-grid: more than one grid point for cc 'bbr'"):
        ft.lossless_table(k, ft.runs(base / "fidelity-many-flows-grid-sim"), "fidelity-many-flows-grid")


def test_export_writes_the_lossless_csvs_and_skips_absent_studies(tmp_path):
    base = _studies(tmp_path / "results", many_sim=False)
    out = tmp_path / "data"
    ft.export(base, out)
    assert sorted(p.name for p in out.iterdir()) == [
        f"deep-buffer-{x}.csv" for x in ("goodput", "kernel-runs", "retrans", "sim-runs", "srtt")]
    srtt = pd.read_csv(out / "deep-buffer-srtt.csv").set_index("cc")
    assert srtt.loc["vegas", "ratio"] == pytest.approx(0.1398 / 0.0415) and srtt.loc["vegas", "disagree"]
    retrans = pd.read_csv(out / "deep-buffer-retrans.csv").set_index("cc")
    assert retrans.loc["bbr", "disagree"] and not retrans.loc["vegas", "disagree"]
    assert "srtt_p50_s" in pd.read_csv(out / "deep-buffer-kernel-runs.csv").columns
    lossless_study(base / "fidelity-many-flows-grid-sim", "sim", **MANY, **MANY_SIM)
    ft.export(base, out)
    many = pd.read_csv(out / "many-flows-retrans.csv")
    assert len(many) == 2 and many["disagree"].all()  # one point per CCA: the run totals
    assert len(pd.read_csv(out / "many-flows-sim-runs.csv")) == 2 * 3 * 3  # the per-group rows


def test_main_prints_the_lossless_tables_alone(tmp_path, capsys):
    base = _studies(tmp_path)
    ft.main([str(base)])
    text = capsys.readouterr().out
    assert "## Grid" not in text
    assert "## Lossless: 1 stream, lossless 100 Mbit/s, 40 ms, 4 BDP" in text
    assert "## Lossless: 3 senders × 32 streams" in text
    assert "| vegas |" in text and "below 0.1% on both sides agree" in text
