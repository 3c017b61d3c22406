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
