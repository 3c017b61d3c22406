"""`fatpipe advise` on the simulator: the rules its advice must follow
(issue 14's acceptance), kept fast by scaled rates where the rule allows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import fatpipe
from fatpipe.advisor import RequestError, validate_request
from fatpipe.advisor import plan as pl
from fatpipe.advisor.rank import loss_margin
from fatpipe.window import rmem_for_window, whole_mib, window_needed_bytes, wmem_for_window
from fatpipe.wire import mss_with_timestamps

LOSS_BASED = {"reno", "cubic", "htcp", "bic", "highspeed", "scalable", "westwood", "illinois", "yeah",
              "vegas", "nv"}


def test_window_bound_10g_20ms_6mib_names_the_limit_and_the_buffer_that_removes_it(tmp_path):
    t = fatpipe.advise(rate="10Gbit", rtt="20ms", rmem="6MiB", wmem="6MiB", ccas=["cubic", "bbr"],
                       max_streams=4, budget="20s", out=tmp_path, progress=None)
    need = window_needed_bytes(10e9, 0.02, mss_with_timestamps(1500), 1500, 0.02 * 10e9 / 8)
    assert t.attrs["window_bound"]
    assert t.attrs["rmem_needed_bytes"] == whole_mib(rmem_for_window(need))
    assert t.attrs["wmem_needed_bytes"] == whole_mib(wmem_for_window(need))
    text = " ".join(t.attrs["buffers"])
    assert "Window-bound" in text and f"tcp_rmem max to {t.attrs['rmem_needed_bytes'] >> 20} MiB" in text
    # The runs show it: one cubic stream with the hosts' 6 MiB is held back
    # by its window, one stream with the raised buffers is not.
    one_now = t[(t["cc"] == "cubic") & (t["streams"] == 1) & (t["buffers"] == "as now")].iloc[0]
    assert one_now["window_bound"] and one_now["goodput_bps"] < 1.3e9
    raised = t[(t["streams"] == 1) & (t["buffers"] == "raised")]
    assert (raised["goodput_bps"] > 9e9).any()
    assert (tmp_path / "advice.html").exists()


def test_one_percent_loss_at_70ms_recommends_bbr_and_ranks_loss_based_far_below(tmp_path):
    # The rule (BBR is not loss-bound, loss-based CCAs are) holds at any
    # rate; 1 Gbit/s keeps the test fast.
    t = fatpipe.advise(rate="1Gbit", rtt="70ms", loss=0.01, max_streams=4, budget="30s", out=tmp_path,
                       progress=None)
    top = t[t["recommended"]].iloc[0]
    assert top["cc"] in ("bbr", "bbr3"), t.head(8).to_string()
    best_loss_based = t[t["cc"].isin(LOSS_BASED)]["goodput_bps"].max()
    assert best_loss_based < 0.3 * top["goodput_bps"]
    assert t[t["cc"].isin(LOSS_BASED)]["rank"].min() > t[t["cc"] == "bbr"]["rank"].min()


@pytest.fixture(scope="module")
def jumbo_advice(tmp_path_factory):
    out = tmp_path_factory.mktemp("jumbo")
    return fatpipe.advise(rate="1Gbit", rtt="20ms", loss=1e-4, mtu=[1500, 9000], ccas=["cubic", "reno"],
                          max_streams=2, budget="20s", out=out, progress=None), out


def test_jumbo_allowed_with_loss_based_ccas_recommends_mtu_9000(jumbo_advice):
    t, _ = jumbo_advice
    assert t[t["recommended"]].iloc[0]["mtu_bytes"] == 9000
    assert t.attrs["jumbo"].startswith("Jumbo frames pay")


def test_top_choice_agrees_with_a_separate_run_with_more_repetitions(jumbo_advice, tmp_path):
    t, out = jumbo_advice
    top = t[t["recommended"]].iloc[0]
    req = validate_request({"rate": "1Gbit", "rtt": "20ms", "loss": 1e-4, "mtu": [1500, 9000],
                            "ccas": ["cubic", "reno"]})
    c = pl.Candidate(top["cc"], int(top["streams"]), int(top["mtu_bytes"]), int(top["rmem_bytes"]),
                     int(top["wmem_bytes"]))
    timing = pl.timing(req)
    # The advice's own timing (read back from its coarse stage), a new seed, more repetitions.
    coarse = fatpipe.load(out / "coarse").spec.study
    timing = pl.Timing(coarse.warmup, coarse.duration, coarse.interval)
    study = tmp_path / "check.toml"
    study.write_text(pl.toml_text(pl.stage_raw(req, "check", [c], timing, repetitions=10, seed=777)))
    runs = fatpipe.run(study, out=tmp_path / "check", progress=None).runs
    mean = runs[runs["flow_group"] == 0]["goodput_bps"].mean()
    assert top["goodput_ci_low_bps"] <= mean <= top["goodput_ci_high_bps"], (mean, top.to_dict())


def test_request_errors_name_the_key():
    with pytest.raises(RequestError) as e:
        validate_request({"rate": "10Gbit", "rtt": "fast", "ccas": "bbr,nope", "mtu": "1500,jumbo", "x": 1})
    text = str(e.value)
    for key in ("rtt:", "ccas:", "mtu:", "x: unknown key"):
        assert key in text, text


def test_request_file_and_flags_flags_win(tmp_path):
    from fatpipe.advisor import load_request
    f = tmp_path / "path.toml"
    f.write_text('rate = "10Gbit"\nrtt = "70ms"\nloss = 1e-4\nmtu = [1500, 9000]\n')
    req = load_request(f, {"loss": 1e-3})
    assert (req.rate, req.rtt, req.loss, req.mtu) == (10e9, 0.07, 1e-3, [1500, 9000])


def test_stage_spec_is_a_valid_study_with_one_linked_group_of_candidates():
    from fatpipe import spec as spec_mod
    req = validate_request({"rate": "10Gbit", "rtt": "70ms", "loss": 1e-4, "mtu": "1500,9000", "competing": "cubic"})
    cands = pl.coarse_candidates(req)
    raw = pl.stage_raw(req, "s", cands, pl.timing(req), 2, 1, losses=[1e-3, 1e-2], competing="cubic")
    import tomllib
    spec = spec_mod.validate(tomllib.loads(pl.toml_text(raw)))
    assert spec_mod.run_count(spec) == len(cands) * 2 * 2
    assert pl.baseline(req) in cands and len(set(cands)) == len(cands)


def test_timing_covers_slow_start_and_many_round_trips():
    req = validate_request({"rate": "100Gbit", "rtt": "70ms"})
    t = pl.timing(req)
    assert t.warmup_s >= (pl.slow_start_rtts(req) + 5) * 0.07 - 1e-9
    assert t.measured_s >= pl.MIN_MEASURE_RTTS * 0.07 - 1e-9
    assert pl.timing(req, squeeze=0.01).measured_s >= pl.MIN_MEASURE_RTTS * 0.07 - 1e-9


def test_tuned_buffers_share_the_window_between_streams():
    req = validate_request({"rate": "10Gbit", "rtt": "20ms"})
    one, four = pl.tuned_buffers(req, 1500, 1), pl.tuned_buffers(req, 1500, 4)
    assert one[0] > four[0] >= req.rmem and one[1] > four[1] >= req.wmem


def test_loss_margin_interpolates_in_log_loss_where_goodput_halves():
    c = pl.Candidate("cubic", 1, 1500, 1 << 20, 1 << 20)
    keys = dict(zip(pl.CANDIDATE_KEYS, c.values(), strict=True))
    rows = [{**keys, "status": "ok", "flow_group": 0, "path.loss": p, "goodput_bps": g}
            for p, g in ((1e-4, 80.0), (1e-3, 20.0))]
    at = loss_margin(pd.DataFrame(rows), c, 1e-5, 100.0)
    # 80 → 20 between 1e-4 and 1e-3: half (50) is halfway in log(loss).
    assert at == pytest.approx(math.sqrt(1e-4 * 1e-3))
    assert loss_margin(pd.DataFrame(rows[:1]), c, 1e-5, 100.0) == math.inf


def test_wilson_interval_brackets_the_proportion():
    from fatpipe.advisor.measure import wilson_interval
    lo, hi = wilson_interval(10, 10000)
    assert lo < 1e-3 < hi and hi - lo < 1.5e-3
    assert wilson_interval(0, 1000)[0] == 0.0 and 0 < wilson_interval(0, 1000)[1] < 0.005


# ---- the recommendation rule (rank.choose) and the stage order, on made-up statistics ----


def _stats(rows, req):
    """A candidate_stats-like table: (cc, streams, buffers, mean Gbit/s, half-width, n, halves_at, share)."""
    out = []
    for cc, streams, buffers, mean, hw, n, halves, share in rows:
        rmem, wmem = (req.rmem, req.wmem) if buffers == "as now" else (req.rmem * 8, req.wmem * 8)
        c = pl.Candidate(cc, streams, 1500, rmem, wmem)
        out.append({"candidate": c, "cc": cc, "streams": streams, "mtu_bytes": 1500, "buffers": buffers,
                    "rmem_bytes": rmem, "wmem_bytes": wmem, "retrans_rate": 1e-4, "n": n,
                    "goodput_bps": mean * 1e9,
                    "goodput_ci_low_bps": math.nan if n < 2 else (mean - hw) * 1e9,
                    "goodput_ci_high_bps": math.nan if n < 2 else (mean + hw) * 1e9,
                    "loss_halves_at": halves, "competing_share": share})
    return pd.DataFrame(out).sort_values("goodput_bps", ascending=False, kind="stable").reset_index(drop=True)


def test_recommendation_prefers_a_much_larger_loss_margin_among_equal_candidates():
    from fatpipe.advisor.rank import choose
    req = validate_request({"rate": "10Gbit", "rtt": "20ms", "loss": 1e-4})
    # scalable × 16 (no sysctl change) halves at 3.9× the loss; bbr × 8 with
    # raised buffers never halved up to 64×: equal goodput, so bbr wins.
    s = _stats([("scalable", 16, "as now", 9.56, 0.03, 9, 3.9e-4, math.nan),
                ("bbr", 8, "raised", 9.54, 0.05, 6, math.inf, math.nan)], req)
    i, why = choose(s, req, largest_loss_tried=6.4e-3)
    assert s.loc[i, "cc"] == "bbr" and s.loc[why["fragile"], "cc"] == "scalable"
    # Within MARGIN_MUCH of each other, simplicity decides again.
    s = _stats([("scalable", 16, "as now", 9.56, 0.03, 9, 4.0e-3, math.nan),
                ("bbr", 8, "raised", 9.54, 0.05, 6, math.inf, math.nan)], req)
    i, why = choose(s, req, largest_loss_tried=6.4e-3)
    assert s.loc[i, "cc"] == "scalable" and "fragile" not in why


def test_recommendation_prefers_less_harm_to_the_competitor_among_equal_candidates():
    from fatpipe.advisor.findings import recommendation
    from fatpipe.advisor.rank import choose
    req = validate_request({"rate": "10Gbit", "rtt": "10ms", "competing": "cubic"})
    s = _stats([("illinois", 16, "as now", 9.56, 0.01, 10, math.inf, 0.05),
                ("cubic", 1, "raised", 9.55, 0.02, 6, math.inf, 0.45),
                ("bbr", 16, "as now", 9.56, 0.01, 6, math.inf, 0.0)], req)
    i, why = choose(s, req, largest_loss_tried=1e-2)
    assert (s.loc[i, "cc"], s.loc[i, "streams"]) == ("cubic", 1)
    # Simplicity alone would take bbr × 16 (your buffers; bbr before illinois in --ccas order).
    assert s.loc[why["harmful"], "cc"] == "bbr"
    s["recommended"] = s.index == i
    s["jain"] = math.nan
    s.attrs.update(why={k: (s.loc[v, "candidate"] if k != "equal" else v) for k, v in why.items()},
                   largest_loss_tried=1e-2)
    text = recommendation(s, req)
    assert "Use cubic with 1 stream" in text and "bbr × 16" in text and "flow 0 %" in text, text


def test_recommendation_needs_two_runs_a_lucky_single_run_is_not_recommended():
    from fatpipe.advisor.rank import choose
    req = validate_request({"rate": "10Gbit", "rtt": "20ms", "loss": 1e-4})
    s = _stats([("htcp", 16, "as now", 9.9, 0.0, 1, math.nan, math.nan),
                ("cubic", 16, "as now", 9.0, 0.05, 3, math.nan, math.nan),
                ("reno", 16, "as now", 8.0, 0.05, 3, math.nan, math.nan)], req)
    i, why = choose(s, req)
    assert s.loc[i, "cc"] == "cubic" and why["equal"] == 1  # reno, 11 % slower, is not equal
    # Nothing with two runs: the best single run, said so (equal = 0).
    i, why = choose(s[s["n"] == 1].reset_index(drop=True), req)
    assert i == 0 and why["equal"] == 0


def test_stage_order_measures_the_equal_set_first_one_candidate_per_cca_before_a_second():
    from fatpipe.advisor.rank import stage_order
    req = validate_request({"rate": "10Gbit", "rtt": "20ms", "loss": 1e-4})
    s = _stats([("htcp", 16, "as now", 9.9, 0.0, 1, math.nan, math.nan),      # one run: not equal
                ("scalable", 16, "as now", 9.56, 0.03, 9, math.nan, math.nan),
                ("scalable", 8, "as now", 9.55, 0.03, 6, math.nan, math.nan),
                ("bbr", 8, "raised", 9.54, 0.05, 6, math.nan, math.nan),
                ("reno", 16, "as now", 5.0, 0.05, 3, math.nan, math.nan)], req)  # not equal
    order = [(c.cc, c.streams) for c in stage_order(s, req)]
    assert order == [("scalable", 8), ("bbr", 8), ("scalable", 16), ("htcp", 16), ("reno", 16)]
    # The competing stage: the robust part of the equal set first, fewest streams first.
    s["loss_halves_at"] = [math.nan, 3.9e-4, 3.9e-4, math.inf, math.nan]
    s.attrs["largest_loss_tried"] = 6.4e-3
    order = [(c.cc, c.streams) for c in stage_order(s, req, fewest_streams_first=True, robust_first=True)]
    assert order[:3] == [("bbr", 8), ("scalable", 8), ("scalable", 16)]


def test_equal_set_takes_candidates_within_3_percent_even_when_the_intervals_are_tight():
    from fatpipe.advisor.rank import EQUAL_WITHIN, equal_set
    req = validate_request({"rate": "10Gbit", "rtt": "20ms", "loss": 1e-4})
    # The 10 Gbit/s, 20 ms, 1e-4 seed path: bbr × 8 is 0.8 % slower, outside scalable's interval.
    s = _stats([("scalable", 16, "as now", 9.56, 0.03, 9, 3.9e-4, math.nan),
                ("bbr", 8, "raised", 9.48, 0.05, 6, math.inf, math.nan),
                ("reno", 16, "as now", 9.56 * (1 - EQUAL_WITHIN) - 0.01, 0.01, 6, math.inf, math.nan)], req)
    assert [s.loc[i, "cc"] for i in equal_set(s)] == ["scalable", "bbr"]


# ---- the plan within the budget ----


def test_loss_based_rungs_that_cannot_reach_the_link_are_pruned_at_100gbit():
    req = validate_request({"rate": "100Gbit", "rtt": "70ms", "loss": 1e-3})
    cands = pl.coarse_candidates(req)
    for cc in LOSS_BASED - {"westwood"}:
        assert {c.streams for c in cands if c.cc == cc and c != pl.baseline(req)} == {16}, cc
    assert {c.streams for c in cands if c.cc == "bbr"} == {1, 4, 16}
    assert {c.streams for c in cands if c.cc == "westwood"} == {1, 4, 16}  # not bound by random loss
    assert pl.baseline(req) in cands
    lossless = validate_request({"rate": "100Gbit", "rtt": "70ms"})
    assert {c.streams for c in pl.coarse_candidates(lossless) if c.cc == "reno"} == {1, 4, 16}


def test_loss_bound_is_above_every_loss_based_cca_in_the_simulator(tmp_path):
    # The pruning is only safe if the bound holds: one stream of each
    # loss-bound CCA on a 1 Gbit/s, 20 ms path at 1 % stays below it (the
    # bound, ~116 Mbit/s, is well below the link there).
    req = validate_request({"rate": "1Gbit", "rtt": "20ms", "loss": 1e-2, "rmem": "64MiB", "wmem": "64MiB"})
    cands = [pl.Candidate(cc, 1, 1500, req.rmem, req.wmem) for cc in sorted(LOSS_BASED - {"westwood"})]
    study = tmp_path / "bound.toml"
    study.write_text(pl.toml_text(pl.stage_raw(req, "bound", cands, pl.timing(req), 2, seed=5)))
    runs = fatpipe.run(study, out=tmp_path / "bound", progress=None).runs
    got = runs[runs["flow_group"] == 0].groupby("flows.0.cc")["goodput_bps"].max()
    assert pl.loss_bound_bps(req, "cubic", mss_with_timestamps(1500)) < 0.2 * req.rate
    assert len(got) == len(cands)
    for cc, bps in got.items():
        assert bps <= pl.loss_bound_bps(req, cc, mss_with_timestamps(1500)), (cc, bps)


def test_measured_span_is_capped_by_packets_at_100gbit_but_never_below_20_rtts():
    fast = pl.timing(validate_request({"rate": "100Gbit", "rtt": "70ms"}))
    assert fast.measured_s == pytest.approx(pl.MIN_MEASURE_RTTS * 0.07, abs=0.15)
    slow = pl.timing(validate_request({"rate": "10Gbit", "rtt": "20ms"}))
    assert slow.measured_s >= pl.MIN_MEASURE_S - 1e-9


def test_margin_stage_shrinks_then_skips_when_the_budget_left_is_short():
    from fatpipe.advisor import advice as adv
    from fatpipe.advisor.stages import Budget
    req = validate_request({"rate": "100Gbit", "rtt": "70ms", "loss": 1e-3})
    t = pl.timing(req)
    order = [pl.Candidate("bbr", s, 1500, *pl.tuned_buffers(req, 1500, s)) for s in (16, 8, 4, 2)]
    one_run = pl.run_wall_s(req, order[0], t, 4e-3)
    plenty = Budget(1e4, jobs=2)
    cands, reps, losses = adv.plan_margin(req, plenty, order, t, 0.6)
    assert (len(cands), reps, len(losses)) == (adv.MARGIN_KEEP, adv.MARGIN_REPS, len(adv.MARGIN_FACTORS))
    # Room for 2 run lengths on 2 cores: one candidate, one run at each of the three losses.
    cands, reps, losses = adv.plan_margin(req, Budget(2.02 * one_run / 0.6, jobs=2), order, t, 0.6)
    assert (cands, reps, len(losses)) == (order[:1], 1, 3)
    # Room for 1.2 run lengths: the middle loss alone (two candidates side by side on 2 cores).
    cands, reps, losses = adv.plan_margin(req, Budget(1.2 * one_run / 0.6, jobs=2), order, t, 0.6)
    assert (cands, reps, losses) == (order[:2], 1, (req.loss * adv.MARGIN_FACTORS[1],))
    assert adv.plan_margin(req, Budget(0.5 * one_run, jobs=2), order, t, 0.6) == ([], 0, ())


# ---- the send buffer as the simulator counts it (window.py) ----


def test_send_buffer_window_is_the_payload_the_simulator_keeps_in_flight(tmp_path):
    from fatpipe.window import window_of_wmem
    req = validate_request({"rate": "1Gbit", "rtt": "20ms", "rmem": "64MiB", "wmem": "1MiB", "ccas": ["cubic"]})
    c = pl.Candidate("cubic", 1, 1500, req.rmem, req.wmem)
    study = tmp_path / "wmem.toml"
    study.write_text(pl.toml_text(pl.stage_raw(req, "wmem", [c], pl.timing(req), 1, seed=3)))
    runs = fatpipe.run(study, out=tmp_path / "wmem", progress=None).runs
    got = runs[runs["flow_group"] == 0].iloc[0]
    expect = window_of_wmem(req.wmem) * 8 / 0.02  # 1 MiB per RTT: 419 Mbit/s
    assert got["goodput_bps"] == pytest.approx(expect, rel=0.05)
    assert got["sndbuf_limited_frac"] > 0.5


@pytest.mark.parametrize("flags, named", [(["--measure-reps", "2"], "--measure-reps"),
                                          (["--measure-duration", "4s"], "--measure-duration")])
def test_probe_flags_without_a_testbed_are_refused_naming_them(flags, named, capsys):
    from fatpipe import cli
    assert cli.main(["advise", "--rate", "1Gbit", "--rtt", "20ms", *flags]) == 2
    err = capsys.readouterr().err
    assert named in err and "--testbed" in err, err


@pytest.mark.parametrize("flags, named", [(["--measure-duration", "4 parsecs"], "--measure-duration"),
                                          (["--measure-duration", "0s"], "positive time"),
                                          (["--measure-reps", "0"], "give at least 1")])
def test_bad_probe_flags_are_refused_before_any_host_is_touched(flags, named, tmp_path, capsys):
    from fatpipe import cli
    testbed = tmp_path / "missing-testbed.toml"  # never read: the flags are refused first
    assert cli.main(["advise", "--testbed", str(testbed), *flags]) == 2
    err = capsys.readouterr().err
    assert named in err, err
