"""fatpipe compare's second and third metrics: the median smoothed RTT and
the retransmission rate per grid point (compare_metrics.py), by the same
method as goodput, with retransmission rates' absolute agreement floor."""

import math
import re

import pandas as pd
import pytest

from fatpipe import cli
from fatpipe.compare import RETRANS_AGREE_BELOW, compare, compare_points
from fatpipe.compare_metrics import metric_tables
from synthetic_study import sharing_study, streams_study

POINT = ["cc", "streams", "loss"]


def _study(root, **kw):
    return streams_study(root, ccs=("bbr", "cubic"), streams=(1, 4), mtus=(1500,),
                         losses=(1e-5, 1e-3), reps=3, duration_s=4.0, warmup_s=1.0, **kw)


def _at(runs: pd.DataFrame, cc: str, streams: int, loss: float) -> pd.Series:
    return (runs["cc"] == cc) & (runs["streams"] == streams) & (runs["loss"] == loss)


def _row(t: pd.DataFrame, cc: str, streams: int, loss: float) -> pd.Series:
    rows = t[_at(t, cc, streams, loss)]
    assert len(rows) == 1
    return rows.iloc[0]


# Per point: retransmission rate of A, of B, and whether they disagree.
RETRANS = {
    ("bbr", 1, 1e-5): (0.0002, 0.0008, False),  # ratio 4, both below the floor: agree
    ("bbr", 4, 1e-5): (0.0, 0.003, True),  # A retransmits nothing, B 0.3 %: ratio undefined
    ("cubic", 1, 1e-5): (0.0, 0.0, False),  # neither retransmits
    ("cubic", 4, 1e-5): (0.01, 0.0125, True),  # above the floor, 25 % apart
    ("bbr", 1, 1e-3): (0.0005, 0.0015, True),  # one side above the floor: the 15 % rule, ratio 3
    ("bbr", 4, 1e-3): (0.011, 0.012, False),  # 9 % apart
    ("cubic", 1, 1e-3): (0.0, 0.0009, False),  # A is 0, B below the floor: agree
    ("cubic", 4, 1e-3): (0.02, 0.0, True),  # B retransmits nothing
}


def _pair(tmp_path, write: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A kernel-like and a sim-like study (same seeds, so lossy points pair)
    with known smoothed RTTs and retransmission rates: B's RTT at cubic,
    4 streams, loss 1e-5 is 3.5 times A's (a standing queue), elsewhere
    equal; the retransmission rates of RETRANS. Each repetition scales
    both sides alike, so every ratio is exact."""
    da, db = _study(tmp_path / "a", backend="kernel"), _study(tmp_path / "b", backend="sim")
    a, b = pd.read_parquet(da / "runs.parquet"), pd.read_parquet(db / "runs.parquet")
    for runs, side in ((a, 0), (b, 1)):
        rep = 1 + 0.1 * runs["rep"]
        runs["srtt_p50_s"] = 0.040 * rep
        if side:
            runs.loc[_at(runs, "cubic", 4, 1e-5), "srtt_p50_s"] *= 3.5
        for (cc, n, loss), rates in RETRANS.items():
            at = _at(runs, cc, n, loss)
            runs.loc[at, "retrans_rate"] = rates[side] * rep[at]
        if write:
            runs.to_parquet((da, db)[side] / "runs.parquet")
    return a, b


def _findings(html: str) -> list[str]:
    return re.findall(r"<li>(.*?)</li>", html.split('<div class="findings">', 1)[1].split("</ul>", 1)[0])


def test_srtt_ratio_per_point_and_the_queue_that_disagrees(tmp_path):
    a, b = _pair(tmp_path, write=False)
    t = compare_points(a, b, metric="srtt_p50_s")
    assert t["matched"].all() and len(t) == 8
    first = t.iloc[0]
    assert (first["cc"], first["streams"], first["loss"]) == ("cubic", 4, 1e-5)
    assert first["disagree"] and first["ratio"] == pytest.approx(3.5)
    assert first["a_mean"] == pytest.approx(0.044) and first["b_mean"] == pytest.approx(0.154)
    assert t["disagree"].sum() == 1
    assert t.iloc[1:]["ratio"].to_numpy() == pytest.approx(1.0)
    # The lossy points pair by seed as goodput's do.
    assert (t["pairs"] == 3).all()


def test_retrans_rates_agree_below_the_floor_and_a_zero_does_not_crash(tmp_path):
    assert RETRANS_AGREE_BELOW == pytest.approx(1e-3)
    a, b = _pair(tmp_path, write=False)
    t = compare_points(a, b, metric="retrans_rate")
    for (cc, n, loss), (ra, rb, disagree) in RETRANS.items():
        row = _row(t, cc, n, loss)
        assert bool(row["disagree"]) is disagree, (cc, n, loss)
        if ra > 0:
            assert row["ratio"] == pytest.approx(rb / ra)
        else:
            assert math.isnan(row["ratio"]) and math.isnan(row["ratio_ci_low"])
    assert _row(t, "bbr", 1, 1e-5)["ratio"] == pytest.approx(4.0)  # disagrees by ratio, agrees by floor
    # Undefined ratios (A or B 0) first, then the largest ratio.
    order = [(r.cc, r.streams, r.loss) for r in t.head(4).itertuples()]
    assert set(order[:2]) == {("bbr", 4, 1e-5), ("cubic", 4, 1e-3)}
    assert order[2:] == [("bbr", 1, 1e-3), ("cubic", 4, 1e-5)]
    assert not t.iloc[4:]["disagree"].any()


def test_the_floor_is_the_retransmission_rates_own(tmp_path):
    a, b = _pair(tmp_path, write=False)
    # The same numbers as an RTT: no floor, so the 15 % rule alone decides.
    t = compare_points(a.assign(srtt_p50_s=a["retrans_rate"]), b.assign(srtt_p50_s=b["retrans_rate"]),
                       metric="srtt_p50_s")
    assert _row(t, "bbr", 1, 1e-5)["disagree"]
    assert not _row(t, "cubic", 1, 1e-3)["disagree"]  # A 0: ratio undefined, no rule applies


def test_compare_writes_srtt_and_retrans_csvs_and_the_section(tmp_path):
    _pair(tmp_path)
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp")]) == 0
    out = tmp_path / "cmp"
    srtt = pd.read_csv(out / "compare_srtt.csv")
    assert len(srtt) == 8 and srtt["disagree"].sum() == 1
    assert srtt.loc[0, "ratio"] == pytest.approx(3.5)
    retrans = pd.read_csv(out / "compare_retrans.csv")
    assert sorted(map(tuple, retrans.loc[retrans["disagree"], POINT].to_numpy())) == sorted(
        k for k, v in RETRANS.items() if v[2])
    html = (out / "compare.html").read_text()
    assert '<h2 id="delay">Queueing delay and retransmissions</h2>' in html
    assert "Median smoothed RTT b/a: median ratio 1.00 (range 1.00–3.50) over 8 points; 1 of 8 points " \
           "disagree (by more than 15%). Largest: loss 1e-05, cubic, 4 streams — 44 ms vs 154 ms " \
           "(ratio 3.50)." in html
    assert "Retransmission rate b/a: median ratio 1.25 (range 0.00–4.00) over 5 points, undefined at 3 " \
           "where a&#x27;s is 0; 4 of 8 points disagree (by more than 15%; below 0.1% on both sides agree). " \
           "Largest: loss 1e-05, bbr, 4 streams — 0% vs 0.33% (ratio undefined)." in html
    assert "a (ms)" in html and "b (%)" in html
    # Pairs whose correlation is undefined (one side constant) show the count alone.
    assert "(nan)" not in html.split('id="delay"', 1)[1]


def test_goodput_output_does_not_depend_on_the_other_metrics(tmp_path):
    a, b = _pair(tmp_path)
    with_metrics = compare(tmp_path / "a", tmp_path / "b", tmp_path / "with").read_text()
    for runs, d in ((a, "a"), (b, "b")):
        runs.drop(columns=["srtt_p50_s", "retrans_rate"]).to_parquet(tmp_path / d / "runs.parquet")
    without = compare(tmp_path / "a", tmp_path / "b", tmp_path / "without").read_text()
    assert (tmp_path / "with" / "compare_goodput.csv").read_bytes() == \
        (tmp_path / "without" / "compare_goodput.csv").read_bytes()
    lines, more = _findings(without), _findings(with_metrics)
    assert len(lines) >= 3 and more[:len(lines)] == lines and len(more) == len(lines) + 2
    assert "Queueing delay" not in without and "Median smoothed RTT" in with_metrics


def test_a_study_without_srtt_still_compares(tmp_path):
    # The sharing study's runs have no srtt_p50_s column (an older study).
    a = sharing_study(tmp_path / "a", backend="kernel")
    b = sharing_study(tmp_path / "b", backend="sim", seed=8)
    ra, rb = pd.read_parquet(a / "runs.parquet"), pd.read_parquet(b / "runs.parquet")
    assert "srtt_p50_s" not in ra.columns
    assert [m.column for m, _ in metric_tables(ra, rb)] == ["retrans_rate"]
    html = compare(a, b, tmp_path / "cmp").read_text()
    assert "Queueing delay and retransmissions" in html and "Median smoothed RTT" not in html
    assert not (tmp_path / "cmp" / "compare_srtt.csv").exists()
    # Neither metric: the page is written without the section.
    for d, runs in ((a, ra), (b, rb)):
        runs.drop(columns=["retrans_rate"]).to_parquet(d / "runs.parquet")
    html = compare(a, b, tmp_path / "cmp2").read_text()
    assert "Grid points" in html and "Queueing delay" not in html
    assert sorted(p.name for p in (tmp_path / "cmp2").glob("*.csv")) == ["compare_goodput.csv", "compare_rpc.csv"]


def test_an_rtt_column_without_values_is_not_compared(tmp_path):
    a, b = _pair(tmp_path, write=False)
    a["srtt_p50_s"] = float("nan")
    assert [m.column for m, _ in metric_tables(a, b)] == ["retrans_rate"]
