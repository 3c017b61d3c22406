import math

import numpy as np
import pandas as pd
import pytest

from fatpipe import cli
from fatpipe.analysis.stats import t_quantile
from fatpipe.compare import (
    PAIRED_MIN_PAIRS,
    compare,
    compare_points,
    compare_rpc,
    match_keys,
    paired_ratio_ci,
    ratio_ci,
    reps_to_resolve,
)
from synthetic_study import sharing_study, streams_study


def _study(root, **kw):
    return streams_study(root, ccs=("bbr", "cubic"), streams=(1, 4), mtus=(1500,),
                         losses=(1e-5, 1e-3), reps=3, duration_s=4.0, warmup_s=1.0, **kw)


def test_ratio_ci_is_a_log_symmetric_interval_around_b_over_a():
    r, lo, hi = ratio_ci(100.0, 10.0, 5, 50.0, 5.0, 5)
    assert r == pytest.approx(0.5)
    assert lo < 0.5 < hi
    assert (0.5 / lo) == pytest.approx(hi / 0.5)
    # Same relative sd on both sides: se = sqrt(2 * 0.1^2 / 5), df = 8.
    se = math.sqrt(2 * 0.01 / 5)
    assert hi == pytest.approx(0.5 * math.exp(2.3060 * se), rel=1e-4)


def test_ratio_ci_needs_two_repetitions_and_a_positive_reference():
    r, lo, hi = ratio_ci(100.0, float("nan"), 1, 90.0, 1.0, 3)
    assert r == pytest.approx(0.9) and math.isnan(lo) and math.isnan(hi)
    assert math.isnan(ratio_ci(0.0, 1.0, 3, 1.0, 1.0, 3)[0])
    assert ratio_ci(10.0, 0.0, 3, 20.0, 0.0, 3) == (2.0, 2.0, 2.0)


def test_points_match_across_backends_and_disagreements_come_first(tmp_path):
    a = pd.read_parquet(_study(tmp_path / "a", backend="kernel") / "runs.parquet")
    b = pd.read_parquet(_study(tmp_path / "b", backend="sim", seed=5) / "runs.parquet")
    # One point of B is made 40 % slower.
    slow = (b["cc"] == "cubic") & (b["streams"] == 4) & (b["path.loss"] == 1e-5)
    b.loc[slow, "goodput_bps"] *= 0.6
    keys, only = match_keys(a, b)
    assert "backend" not in keys and "run_id" not in keys and "path.loss" in keys and not only
    t = compare_points(a, b)
    assert t["matched"].all() and len(t) == 8
    first = t.iloc[0]
    assert first["disagree"] and first["cc"] == "cubic" and first["streams"] == 4
    assert first["ratio"] == pytest.approx(0.6, rel=0.1)
    assert t["disagree"].sum() == 1
    assert t["ratio_ci_low"].notna().all()


def test_points_only_in_one_study_are_kept_unmatched(tmp_path):
    a = pd.read_parquet(_study(tmp_path / "a") / "runs.parquet")
    b = a[a["cc"] == "bbr"]
    t = compare_points(a, b)
    assert t["matched"].sum() == 4 and (~t["matched"]).sum() == 4
    assert t[~t["matched"]]["b_n"].isna().all()


def test_compare_writes_page_csv_and_plots(tmp_path, capsys):
    a = _study(tmp_path / "a", backend="kernel")
    b = _study(tmp_path / "b", backend="sim", seed=9, scale=0.5)
    assert cli.main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    assert "comparison:" in capsys.readouterr().out
    html = (tmp_path / "cmp" / "compare.html").read_text()
    assert html.count("<img alt=") == 2
    assert "8 of 8 points disagree by more than 15%" in html
    assert "ratio B/A" in html
    csv = pd.read_csv(tmp_path / "cmp" / "compare_goodput.csv")
    assert csv["ratio"].between(0.4, 0.6).all()
    assert (tmp_path / "cmp" / "compare_ratio.svg").exists()


def test_compare_default_output_directory_lives_in_b(tmp_path):
    a = _study(tmp_path / "a")
    b = _study(tmp_path / "b", seed=3)
    path = compare(a, b)
    assert path == b / "compare-vs-a" / "compare.html"


def test_rpc_percentiles_side_by_side(tmp_path):
    a = sharing_study(tmp_path / "a", backend="kernel")
    b = sharing_study(tmp_path / "b", backend="sim", seed=8, rpc_scale=2.0)
    ra, rb = pd.read_parquet(a / "runs.parquet"), pd.read_parquet(b / "runs.parquet")
    rpc = compare_rpc(ra, rb)
    assert len(rpc) == 3  # one RPC group per sweep point
    assert (rpc["b_p99_s"] / rpc["a_p99_s"]).between(1.3, 3.0).all()
    html = compare(a, b, tmp_path / "cmp").read_text()
    assert "RPC completion times" in html and "p99.9 A (ms)" in html
    assert (tmp_path / "cmp" / "compare_rpc.csv").exists()


def test_paired_ratio_ci_subtracts_the_covariance_of_the_pairs():
    a = np.array([100.0, 80.0, 120.0, 90.0])
    b = a * 1.1 + np.array([0.5, -0.5, 0.3, -0.3])
    r, lo, hi = paired_ratio_ci(a, b)
    assert r == pytest.approx(b.mean() / a.mean())
    assert lo < r < hi and hi / lo < 1.03  # the pairs move together
    _, wlo, whi = ratio_ci(a.mean(), a.std(ddof=1), 4, b.mean(), b.std(ddof=1), 4)
    assert whi / wlo > 1.3  # unpaired, the runs' spread dominates


def test_paired_ratio_ci_of_uncorrelated_pairs_has_the_unpaired_variance_and_n_minus_1_df():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([5.0, 3.0, 3.0, 5.0])  # sample covariance with a: exactly 0
    r, lo, hi = paired_ratio_ci(a, b)
    se2 = (a.var(ddof=1) / a.mean() ** 2 + b.var(ddof=1) / b.mean() ** 2) / 4
    assert math.log(hi / r) == pytest.approx(t_quantile(0.975, 3) * math.sqrt(se2), rel=1e-9)


def test_runs_pair_by_seed_when_both_studies_drew_the_same_seeds(tmp_path):
    a = pd.read_parquet(_study(tmp_path / "a", backend="kernel") / "runs.parquet")
    same = pd.read_parquet(_study(tmp_path / "b", backend="sim") / "runs.parquet")
    other = pd.read_parquet(_study(tmp_path / "c", backend="sim", seed=5) / "runs.parquet")
    assert (compare_points(a, same)["pairs"] == 3).all()
    assert (compare_points(a, other)["pairs"] == 0).all()
    # A failed run leaves its pair out; below PAIRED_MIN_PAIRS the point is unpaired.
    same.loc[same.index[:2], "status"] = "failed"
    pairs = compare_points(a, same)["pairs"]
    assert ((pairs == 0) | (pairs >= PAIRED_MIN_PAIRS)).all() and (pairs == 0).any()


def test_reps_to_resolve_is_the_fewest_whose_interval_is_within_15_percent():
    rel_var = 2 * 0.10 ** 2  # both sides vary by 10 % per run
    n = reps_to_resolve(rel_var, paired=False)
    half = lambda k, df: t_quantile(0.975, df) * math.sqrt(rel_var / k)  # noqa: E731
    assert half(n, 2 * n - 2) <= math.log(1.15) < half(n - 1, 2 * n - 4)
    # Pairs that move together need far fewer; pairing costs degrees of freedom.
    assert reps_to_resolve(0.002, paired=True) < n
    assert reps_to_resolve(rel_var, paired=True) >= n
    assert math.isnan(reps_to_resolve(float("nan"), paired=False))


def test_runs_on_a_lossless_path_are_not_paired(tmp_path):
    a = pd.read_parquet(_study(tmp_path / "a", backend="kernel") / "runs.parquet")
    b = pd.read_parquet(_study(tmp_path / "b", backend="sim") / "runs.parquet")
    for runs in (a, b):
        runs.loc[runs["loss"] == 1e-5, ["loss", "path.loss"]] = 0.0
    t = compare_points(a, b)
    assert (t.loc[t["loss"] == 0, "pairs"] == 0).all() and (t.loc[t["loss"] > 0, "pairs"] == 3).all()
