//! End-to-end behaviour of each CCA on the simulated path, checked against
//! the analytic models and the Linux behaviour the issue names.
mod common;
use common::*;
use serde_json::json;

const MSS: f64 = 1460.0;
const RTT_S: f64 = 0.02;

/// Mathis et al. (1997): rate = 1.22 · MSS / (RTT · √p), in bit/s.
fn mathis_bps(p: f64) -> f64 {
    1.22 * MSS * 8.0 / (RTT_S * p.sqrt())
}

/// RFC 9438 §5.1 (Appendix of the CUBIC response function): the average
/// window of CUBIC under random loss p, in segments,
/// W = (C·(3+β)/(4·(1−β)))^¼ · RTT^¾ / p^¾ with C = 0.4, β = 0.7.
fn cubic_response_bps(p: f64) -> f64 {
    let (c, beta) = (0.4f64, 0.7f64);
    let w = (c * (3.0 + beta) / (4.0 * (1.0 - beta))).powf(0.25) * RTT_S.powf(0.75) / p.powf(0.75);
    w * MSS * 8.0 / RTT_S
}

fn lossy_run(cc: &str, p: f64, rate_bps: f64, duration_s: f64) -> f64 {
    let r = Plan::new(cc, 1, rate_bps, RTT_S, duration_s)
        .set("loss", json!(p))
        .set("seed", json!(7))
        .run();
    goodput(&r, 5.0, duration_s)
}

#[test]
fn cubic_under_random_loss_is_within_half_to_three_times_the_larger_of_mathis_and_rfc9438() {
    for (p, duration) in [(1e-5, 60.0), (1e-4, 30.0), (1e-3, 30.0), (1e-2, 30.0)] {
        let model = mathis_bps(p).max(cubic_response_bps(p));
        // A bottleneck 10x the model keeps the result loss-limited.
        let g = lossy_run("cubic", p, (model * 10.0).max(10e6), duration);
        let ratio = g / model;
        assert!((0.5..=3.0).contains(&ratio), "p={p}: goodput {g:.3e} is {ratio:.2}x the model {model:.3e}");
    }
}

#[test]
fn bbr_keeps_at_least_90_percent_of_the_bottleneck_at_one_percent_random_loss() {
    // No end-host limit binds: windows of 1 GiB (Plan::new's default).
    let rate = 1e9;
    let g = lossy_run("bbr", 1e-2, rate, 30.0);
    let payload_rate = rate * MSS / 1500.0;
    assert!(g >= 0.9 * payload_rate, "bbr goodput {g:.3e} < 90 % of {payload_rate:.3e}");
}

#[test]
fn bbr_cwnd_drops_to_4_segments_for_at_least_200ms_about_every_10s() {
    let r = Plan::new("bbr", 1, 100e6, RTT_S, 36.0).set("sample_interval_s", json!(0.01)).run();
    let s = &r.series;
    // Spans of consecutive samples with cwnd <= 4 (PROBE_RTT).
    let mut spans: Vec<(f64, f64)> = Vec::new();
    let mut start: Option<f64> = None;
    for i in 0..s.len() {
        let low = s.cwnd_segments[i] <= 4;
        match (low, start) {
            (true, None) => start = Some(s.t_s[i]),
            (false, Some(t0)) => {
                spans.push((t0, s.t_s[i]));
                start = None;
            }
            _ => {}
        }
    }
    assert!(spans.len() >= 3, "expected PROBE_RTT about every 10 s, saw {spans:?}");
    for (t0, t1) in &spans {
        // At least 200 ms (bbr_probe_rtt_mode_ms), allowing one sample of
        // quantization at each end.
        assert!(t1 - t0 >= 0.19, "PROBE_RTT span {t0:.2}-{t1:.2} s shorter than 200 ms");
    }
    for w in spans.windows(2) {
        let gap = w[1].0 - w[0].0;
        // bbr_min_rtt_win_sec = 10 s, plus the PROBE_RTT dwell and a round.
        assert!((9.5..=11.0).contains(&gap), "PROBE_RTT every {gap:.2} s, expected about 10 s");
    }
}

#[test]
fn hystart_leaves_slow_start_before_the_first_loss_on_a_deep_buffer_path() {
    // 1 Gbit/s, 40 ms, buffer 8 BDP: without HyStart, slow start would run
    // until the buffer overflows at about 9 BDP of cwnd.
    let rate = 1e9;
    let rtt = 0.04;
    let bdp_bytes = rate * rtt / 8.0;
    let r = Plan::new("cubic", 1, rate, rtt, 3.0)
        .set("buffer_bytes", json!((8.0 * bdp_bytes) as u64))
        .set("sample_interval_s", json!(0.01))
        .run();
    let s = &r.series;
    let exit = (0..s.len()).find(|&i| s.cc_mode[i] == "cong_avoid");
    let exit = exit.expect("cubic never left slow start");
    assert_eq!(r.path.queue_drops, 0, "a loss happened before or despite HyStart's exit");
    assert_eq!(r.path.random_drops, 0);
    let bdp_segments = bdp_bytes / MSS;
    let cwnd_at_exit = s.cwnd_segments[exit] as f64;
    assert!(
        cwnd_at_exit < 9.0 * bdp_segments,
        "slow start left at cwnd {cwnd_at_exit} >= 9 BDP ({bdp_segments:.0} segments per BDP)"
    );
}

#[test]
fn loss_free_repetitions_differ_by_seed_through_start_jitter() {
    // Two cubic streams racing on a lossless path: which one wins must be
    // up to the seed (connection start offsets), not fixed by stream order.
    let run = |seed: u64| {
        let r = Plan::new("cubic", 2, 100e6, RTT_S, 5.0).set("seed", json!(seed)).run();
        let last = r.series.len() - 2;
        (r.series.delivered_bytes[last], r.series.delivered_bytes[last + 1])
    };
    let a = run(1);
    assert_eq!(a, run(1), "same seed must give the same run");
    assert!((2..12).any(|seed| run(seed) != a), "every seed gave the same loss-free run");
}

/// BBRv3 reacts to loss above bbr_loss_thresh (2 %) where v1 ignores it
/// below ~20 % (issue P1.3): 1 Gbit/s, 100 ms, 20 s, one stream.
#[test]
fn bbr3_holds_up_to_one_percent_random_loss_and_drops_by_five_percent_where_v1_holds() {
    let run = |cc: &str, p: f64| {
        let r = Plan::new(cc, 1, 1e9, 0.1, 20.0).set("loss", json!(p)).set("seed", json!(7)).run();
        goodput(&r, 5.0, 20.0)
    };
    let payload_rate = 1e9 * MSS / 1500.0;
    for p in [1e-3, 1e-2] {
        let g = run("bbr3", p);
        assert!(g >= 0.7 * payload_rate, "bbr3 at loss {p}: {g:.3e} < 70 % of {payload_rate:.3e}");
    }
    let (v3, v1) = (run("bbr3", 5e-2), run("bbr", 5e-2));
    assert!(v1 >= 0.5 * payload_rate, "bbr v1 at 5 % loss: {v1:.3e}");
    assert!(v3 <= 0.25 * v1, "bbr3 at 5 % loss {v3:.3e} is not far below v1's {v1:.3e}");
}
