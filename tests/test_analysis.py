import math

import numpy as np
import pandas as pd
import pytest

from fatpipe.analysis import (
    collapse_intervals,
    collapse_points,
    fairness_summary,
    grid_summary,
    improvement_by_streams,
    improvement_factors,
    jain_index,
    mean_ci,
    models,
    run_collapses,
    run_fairness,
    t_quantile,
)
from fatpipe.analysis.collapse import collapse_summary, loss_axes
from fatpipe.analysis.stats import display_columns, point_columns

# ---- stats ---------------------------------------------------------------------


@pytest.mark.parametrize("df, expected", [(1, 12.7062), (2, 4.3027), (9, 2.2622), (30, 2.0423),
                                          (1000, 1.9623)])
def test_t_quantile_matches_student_tables(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_is_symmetric():
    assert t_quantile(0.025, 5) == pytest.approx(-t_quantile(0.975, 5))


def test_mean_ci_uses_student_t_with_n_minus_1_degrees_of_freedom():
    s = mean_ci([1.0, 2.0, 3.0, 4.0])
    sd = np.std([1, 2, 3, 4], ddof=1)
    half = 3.1824 * sd / 2
    assert s["n"] == 4 and s["mean"] == 2.5 and s["sd"] == pytest.approx(sd)
    assert s["ci_low"] == pytest.approx(2.5 - half, rel=1e-4)
    assert s["ci_high"] == pytest.approx(2.5 + half, rel=1e-4)


def test_mean_ci_of_one_value_has_no_interval_and_missing_values_are_dropped():
    s = mean_ci([5.0, None, float("nan")])
    assert s["n"] == 1 and s["mean"] == 5.0
    assert math.isnan(s["sd"]) and math.isnan(s["ci_low"])


def _runs(rows):
    base = {"backend": "sim", "status": "ok", "flags": "", "flow_group": 0, "kind": "bulk",
            "mss_bytes": 1448}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_grid_summary_groups_repetitions_counts_failures_and_unions_flags():
    runs = _runs([
        {"run_id": "a", "path.loss": 1e-4, "cc": "bbr", "streams": 1, "goodput_bps": 10.0,
         "flags": "rwnd_limited"},
        {"run_id": "b", "path.loss": 1e-4, "cc": "bbr", "streams": 1, "goodput_bps": 20.0,
         "flags": "emulator_late"},
        {"run_id": "c", "path.loss": 1e-4, "cc": "bbr", "streams": 1, "goodput_bps": None,
         "status": "failed"},
        {"run_id": "d", "path.loss": 1e-3, "cc": "bbr", "streams": 1, "goodput_bps": 5.0},
    ])
    pts = grid_summary(runs)
    assert list(pts["path.loss"]) == [1e-4, 1e-3] or list(pts["path.loss"]) == [1e-3, 1e-4]
    p = pts[pts["path.loss"] == 1e-4].iloc[0]
    assert p["n"] == 2 and p["mean"] == 15.0 and p["failed"] == 1
    assert p["flags"] == "emulator_late,rwnd_limited"
    assert point_columns(runs)[:2] == ["backend", "path.loss"]


def test_display_columns_drop_swept_keys_the_flow_group_determines():
    runs = _runs([{"run_id": "a", "path.mtu": 1500, "flows.0.cc": "bbr", "path.loss": 1e-4,
                   "cc": "bbr", "streams": 1, "goodput_bps": 1.0},
                  {"run_id": "b", "path.mtu": 9000, "flows.0.cc": "bbr", "path.loss": 1e-3,
                   "cc": "bbr", "streams": 1, "goodput_bps": 1.0, "mss_bytes": 8948}])
    shown = display_columns(runs, point_columns(runs))
    assert "path.loss" in shown and "mss_bytes" in shown
    assert "path.mtu" not in shown and "flows.0.cc" not in shown and "backend" not in shown


# ---- improvement factor ----------------------------------------------------------


def _points(rows):
    return pd.DataFrame([{"flow_group": 0, "kind": "bulk", "mss_bytes": 1448, "n": 3,
                          "sd": 0.0, "ci_low": r["mean"], "ci_high": r["mean"], "failed": 0,
                          "flags": "", **r} for r in rows])


def test_improvement_factors_use_the_largest_stream_count_per_condition():
    rows = []
    for loss, one, two, eight in ((1e-5, 1.0, 1.5, 3.0), (1e-4, 2.0, 2.0, 10.0)):
        for n, g in ((1, one), (2, two), (8, eight)):
            rows.append({"path.loss": loss, "cc": "bbr", "streams": n, "flows.0.streams": n,
                         "mean": g})
    rows += [{"path.loss": 1e-5, "cc": "reno", "streams": n, "flows.0.streams": n, "mean": g}
             for n, g in ((1, 4.0), (8, 4.0))]
    f = improvement_factors(_points(rows)).set_index("cc")
    assert f.loc["bbr", "avg"] == pytest.approx(4.0)  # (3/1 + 10/2) / 2
    assert f.loc["bbr", "max"] == pytest.approx(5.0)
    assert f.loc["bbr", "min"] == pytest.approx(3.0)
    assert f.loc["bbr", "conditions"] == 2 and f.loc["bbr", "streams"] == "8"
    assert f.loc["reno", "avg"] == pytest.approx(1.0)
    two = improvement_factors(_points(rows), n=2).set_index("cc")
    assert two.loc["bbr", "avg"] == pytest.approx(1.25)  # (1.5 + 1.0) / 2
    by_n = improvement_by_streams(_points(rows))
    assert by_n.loc["bbr", 8] == pytest.approx(4.0)


def test_improvement_factors_need_a_one_stream_point():
    f = improvement_factors(_points([{"cc": "bbr", "streams": 2, "mean": 1.0},
                                     {"cc": "bbr", "streams": 4, "mean": 2.0}]))
    assert f.empty


def test_improvement_factors_from_a_runs_table():
    runs = _runs([{"run_id": f"r{n}{rep}", "cc": "cubic", "streams": n, "flows.0.streams": n,
                   "goodput_bps": g + rep} for n, g in ((1, 10.0), (4, 30.0)) for rep in (0, 1)])
    f = improvement_factors(runs)
    assert f["avg"].iloc[0] == pytest.approx(30.5 / 10.5)


# ---- collapse ------------------------------------------------------------------------


def _series_with_dip(dip_from_s, dip_to_s, dt=0.5, end_s=12.0):
    t = np.arange(0, end_s + 1e-9, dt)
    g = np.full_like(t, 100.0)
    g[(t >= dip_from_s) & (t <= dip_to_s)] = 2.0  # below 10 % of the median 100
    return t, g


def test_collapse_interval_spans_from_the_sample_before_the_dip_to_its_last_sample():
    t, g = _series_with_dip(5.0, 8.0)
    assert collapse_intervals(t, g) == [(4.5, 8.0)]
    assert collapse_summary(t, g) == {"collapses": 1, "collapsed_s": 3.5}


def test_dips_shorter_than_one_second_are_not_collapses():
    t, g = _series_with_dip(5.0, 5.0)  # one 0.5 s sample
    assert collapse_intervals(t, g) == []
    t, g = _series_with_dip(5.0, 5.5)  # 4.5 .. 5.5: exactly 1 s counts
    assert collapse_intervals(t, g) == [(4.5, 5.5)]


def test_two_separate_collapses_and_a_zero_median_run():
    t, g = _series_with_dip(2.0, 3.0)
    g[(t >= 8.0) & (t <= 10.0)] = 0.0
    assert len(collapse_intervals(t, g)) == 2
    assert collapse_intervals(t, np.zeros_like(t)) == []


def test_run_collapses_sums_streams_and_skips_the_warmup():
    t, g = _series_with_dip(5.0, 8.0)
    rows = []
    for stream in (0, 1):
        for ti, gi in zip(t, g, strict=True):
            rows.append({"run_id": "r1", "flow_group": 0, "stream": stream, "t_s": ti,
                         "goodput_bps": gi if stream == 0 else 1.0})
    df = pd.DataFrame(rows)
    c = run_collapses(df, warmup_s=1.0)
    assert c.iloc[0]["collapses"] == 1
    assert c.iloc[0]["collapsed_s"] == pytest.approx(3.5)
    assert run_collapses(df, warmup_s={"r1": 9.0}).iloc[0]["collapses"] == 0


def test_collapse_point_is_the_smallest_loss_below_ten_percent_of_the_lowest_loss_goodput():
    rows = []
    for n, curve in ((1, (100, 50, 9, 1)), (8, (100, 90, 60, 12))):
        for loss, g in zip((0.0, 1e-4, 1e-3, 1e-2), curve, strict=True):
            rows.append({"path.loss": loss, "cc": "bbr", "streams": n, "mean": float(g)})
    cp = collapse_points(_points(rows), "path.loss").set_index("streams")
    assert cp.loc[1, "collapse_at"] == 1e-3
    assert cp.loc[1, "reference_bps"] == 100 and cp.loc[1, "reference_at"] == 0.0
    assert math.isnan(cp.loc[8, "collapse_at"]) and cp.loc[8, "last_measured"] == 1e-2
    assert loss_axes(_points(rows)) == ["path.loss"]


# ---- fairness --------------------------------------------------------------------


def test_jain_index_known_values():
    assert jain_index([1, 1, 1]) == pytest.approx(1.0)
    assert jain_index([1, 0]) == pytest.approx(0.5)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([3, 1]) == pytest.approx(16 / 20)
    assert math.isnan(jain_index([0, 0]))


def test_shares_and_jain_per_run_and_per_point():
    rows = []
    for rep, (a, b) in enumerate(((6.0, 2.0), (5.0, 3.0))):
        for group, g, cc in ((0, a, "bbr"), (1, b, "cubic")):
            rows.append({"run_id": f"r{rep}", "flows.0.cc": "bbr", "flow_group": group, "cc": cc,
                         "streams": 1, "goodput_bps": g})
        rows.append({"run_id": f"r{rep}", "flows.0.cc": "bbr", "flow_group": 2, "cc": "cubic",
                     "streams": 1, "goodput_bps": 0.1, "kind": "rpc"})
    runs = _runs(rows)
    jain, shares = run_fairness(runs)
    assert jain.loc[jain["run_id"] == "r0", "jain"].iloc[0] == pytest.approx(jain_index([6, 2]))
    s0 = shares[(shares["run_id"] == "r0") & (shares["flow_group"] == 0)]["share"].iloc[0]
    assert s0 == pytest.approx(6 / 8.1)
    summary = fairness_summary(runs).set_index("flow_group")
    assert summary.loc[0, "n"] == 2
    assert summary.loc[0, "share"] == pytest.approx((6 / 8.1 + 5 / 8.1) / 2)
    assert summary.loc[0, "jain"] == pytest.approx((jain_index([6, 2]) + jain_index([5, 3])) / 2)


# ---- models ----------------------------------------------------------------------


def test_mathis_at_mss_1448_rtt_20ms_loss_1e_3():
    expected = 1.22 * 1448 * 8 / (0.02 * math.sqrt(1e-3))
    assert models.mathis_bps(1448, 0.02, 1e-3) == pytest.approx(expected)
    assert models.mathis_bps(1448, 0.02, 1e-3) / 1e6 == pytest.approx(22.35, abs=0.01)
    assert models.mathis_bps(1448, 0.02, 1e-3, cap_bps=1e7) == 1e7
    assert math.isinf(models.mathis_bps(1448, 0.02, 0.0))


def test_cubic_average_window_rfc9438():
    # [0.4 * 3.7 / 1.2]^(1/4) * 0.1^(3/4) / (1e-6)^(3/4)
    w = (0.4 * 3.7 / 1.2) ** 0.25 * 0.1 ** 0.75 / 1e-6 ** 0.75
    assert models.cubic_avg_window_segments(0.1, 1e-6) == pytest.approx(w)
    assert w == pytest.approx(5926, rel=1e-3)
    # Long fat path, rare loss: the cubic region sets the throughput.
    assert models.cubic_bps(1448, 0.1, 1e-6) == pytest.approx(w * 1448 * 8 / 0.1)


def test_cubic_falls_back_to_the_reno_friendly_window_on_short_paths():
    # RFC 9438 §4.3: alpha_cubic = 3(1-b)/(1+b) gives Reno's sqrt(3/(2p)).
    assert models.reno_friendly_window_segments(1e-2) == pytest.approx(math.sqrt(1.5 / 1e-2))
    assert models.aimd_avg_window_segments(1e-2, 1.0, 0.5) == pytest.approx(math.sqrt(1.5 / 1e-2))
    rf = math.sqrt(1.5 / 1e-2) * 1448 * 8 / 0.001
    assert models.cubic_bps(1448, 0.001, 1e-2) == pytest.approx(rf)
    assert models.cubic_only_bps(1448, 0.001, 1e-2) < rf


def test_models_accept_arrays():
    p = np.array([1e-4, 1e-3])
    out = models.mathis_bps(1448, 0.02, p)
    assert out.shape == (2,) and out[0] == pytest.approx(out[1] * math.sqrt(10))


def test_packet_loss_probability_combines_loss_and_bit_corruption():
    assert models.packet_loss_probability(1e-3, 0.0, 1448) == pytest.approx(1e-3)
    p = models.packet_loss_probability(0.0, 1e-7, 1460)
    assert p == pytest.approx(1 - (1 - 1e-7) ** (1500 * 8))
