//! A per-flow `cwnd_clamp` (tp->snd_cwnd_clamp as TCP_BPF_SNDCWND_CLAMP
//! sets it) holds for every algorithm: cwnd never exceeds it, and on a
//! path whose BDP is larger than the clamp the flow's goodput is the
//! window-limited rate clamp × MSS / RTT.
mod common;
use common::*;
use fatpipe_sim::cc::AVAILABLE;
use fatpipe_sim::trace::RunResult;
use serde_json::json;

const RATE_BPS: f64 = 100e6;
const RTT_S: f64 = 0.02;
/// Payload per segment in common::Plan.
const MSS_BYTES: f64 = 1460.0;
/// Well below the BDP of 100 Mbit/s × 20 ms = 171 segments of 1460 bytes.
const CLAMP: u32 = 40;

fn clamped(cc: &str, loss: f64) -> RunResult {
    Plan::new(cc, 1, RATE_BPS, RTT_S, 10.0)
        .set("sample_interval_s", json!(0.05))
        .set("loss", json!(loss))
        .flow("cwnd_clamp", json!(CLAMP))
        .run()
}

fn max_cwnd(r: &RunResult) -> i64 {
    r.series.cwnd_segments.iter().copied().max().unwrap_or(0)
}

/// Every rule that raises cwnd takes the min with snd_cwnd_clamp
/// (tcp_slow_start, tcp_cong_avoid_ai, bbr_set_cwnd, the CCAs' own
/// `if (cwnd < snd_cwnd_clamp)` checks): no sample ever exceeds it, with
/// or without losses, and a lossless flow reaches it.
#[test]
fn cwnd_never_exceeds_the_clamp_for_every_cca() {
    for cc in AVAILABLE {
        let lossless = clamped(cc, 0.0);
        assert_eq!(max_cwnd(&lossless), CLAMP as i64, "{cc}: a lossless flow grows to the clamp and stops");
        let lossy = clamped(cc, 1e-3);
        let most = max_cwnd(&lossy);
        assert!(most <= CLAMP as i64, "{cc}: cwnd {most} above the clamp {CLAMP} under loss");
    }
}

/// Window-limited goodput: at most clamp segments are unacknowledged, and
/// each takes at least the base RTT to be acknowledged, so goodput ≤
/// clamp × MSS / RTT exactly; with no queue (the clamp is a quarter of the
/// BDP) the RTT is the base RTT plus a segment's serialization (1514 bytes
/// at 100 Mbit/s: 0.12 ms, 0.6 %) and the ACK's, so goodput comes within
/// 3 % of the bound (measured: 98.8 % for every algorithm but bbr3).
/// BBRv3 enters ProbeRTT every 5 s (bbr_probe_rtt_mode_ms) and holds half
/// its BDP estimate, here half the clamp, for 200 ms plus a round
/// (bbr_probe_rtt_cwnd_gain = 0.5): up to half of (0.2 + RTT) / 5 s less
/// (measured: 96.5 %).
#[test]
fn lossless_goodput_is_clamp_times_mss_per_rtt() {
    let bound = CLAMP as f64 * MSS_BYTES * 8.0 / RTT_S;
    for cc in AVAILABLE {
        let g = goodput(&clamped(cc, 0.0), 2.0, 10.0);
        let probe_rtt_share = if *cc == "bbr3" { 0.5 * (0.2 + RTT_S) / 5.0 } else { 0.0 };
        assert!(g <= bound * 1.001, "{cc}: {g:.4e} bit/s above the window bound {bound:.4e}");
        let least = bound * (0.97 - probe_rtt_share);
        assert!(g >= least, "{cc}: {g:.4e} bit/s, expected at least {least:.4e} (bound {bound:.4e})");
    }
}

/// Streams without a clamp in the same run are not clamped (the clamp is
/// per flow, as a per-socket option).
#[test]
fn the_clamp_is_per_flow() {
    let mut p = Plan::new("cubic", 1, RATE_BPS, RTT_S, 5.0).set("sample_interval_s", json!(0.05));
    let mut second = p.0["flows"][0].clone();
    second["group"] = json!(1);
    p.0["flows"].as_array_mut().unwrap().push(second);
    let r = p.flow("cwnd_clamp", json!(CLAMP)).run();
    let s = &r.series;
    let most = |g: i64| (0..s.len()).filter(|&i| s.flow_group[i] == g).map(|i| s.cwnd_segments[i]).max().unwrap_or(0);
    assert_eq!(most(0), CLAMP as i64);
    assert!(most(1) > 2 * CLAMP as i64, "the unclamped flow grows past the clamp: {}", most(1));
}
