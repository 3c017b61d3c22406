//! The sending host's root qdisc (`qdisc`): fq paces every flow at its
//! sk_pacing_rate. A paced CUBIC socket (SK_PACING_FQ) leaves slow start on
//! an ACK train only past a full delay_min, not delay_min / 2
//! (hystart_update(), tcp_cubic.c: pacing spreads a round over up to RTT/2
//! more), so it grows a larger window before it leaves, as the kernel
//! backend measures (docs/host-model.md, "qdisc"); pfifo_fast and fq_codel
//! leave it unpaced (the ideal host's behaviour), and BBR, which paces
//! itself, is the same under any of them.
mod common;
use common::*;
use fatpipe_sim::scenario::run_json;
use fatpipe_sim::trace::RunResult;
use serde_json::json;

/// One stream over 1 Gbit/s, 50 ms, a buffer of a tenth of the BDP,
/// sampled every 10 ms.
fn run(cc: &str, qdisc: Option<&str>) -> RunResult {
    let mut p = Plan::new(cc, 1, 1e9, 0.05, 3.0).set("buffer_bytes", json!(625_000)).set("sample_interval_s", json!(0.01));
    p.0["senders"]["s1"]["qdisc"] = json!(qdisc);
    p.run()
}

/// The largest window of the first second (slow start and its exit).
fn slow_start_cwnd(r: &RunResult) -> i64 {
    let s = &r.series;
    s.t_s.iter().zip(&s.cwnd_segments).filter(|(t, _)| **t <= 1.0).map(|(_, c)| *c).max().unwrap_or(0)
}

#[test]
fn fq_paces_cubic_so_slow_start_runs_to_a_larger_window() {
    let unpaced = run("cubic", None);
    let paced = run("cubic", Some("fq"));
    // Unpaced, a round's ACKs come compressed into its first half and the
    // train ends slow start below half the BDP; paced (at twice cwnd/srtt
    // in slow start) a train longer than delay_min needs ACKs that never
    // pause for a whole round: the pipe is full, the window at the BDP.
    let bdp_segments = (1e9 * 0.05 / 8.0 / 1460.0) as i64;
    let (w0, w1) = (slow_start_cwnd(&unpaced), slow_start_cwnd(&paced));
    assert!(w0 < bdp_segments / 2 && w1 >= bdp_segments, "slow-start window: fq {w1}, unpaced {w0}, BDP {bdp_segments}");
    // A buffer of a tenth of the BDP then drops more of the paced window,
    // and the paced flow, never stuck below half the BDP, delivers more.
    assert!(paced.path.queue_drops > unpaced.path.queue_drops);
    let delivered = |r: &RunResult| r.series.delivered_bytes.last().copied().unwrap_or(0);
    assert!(delivered(&paced) > delivered(&unpaced), "{} vs {}", delivered(&paced), delivered(&unpaced));
}

#[test]
fn pfifo_fast_and_fq_codel_leave_pacing_to_the_cca() {
    let ideal = run("cubic", None);
    assert_eq!(run("cubic", Some("pfifo_fast")).series, ideal.series);
    assert_eq!(run("cubic", Some("fq_codel")).series, ideal.series);
    // BBR asks for pacing itself (SK_PACING_NEEDED): fq changes nothing.
    assert_eq!(run("bbr", Some("fq")).series, run("bbr", None).series);
}

#[test]
fn an_unknown_qdisc_is_refused_listing_the_known_ones() {
    let mut p = Plan::new("cubic", 1, 1e9, 0.05, 1.0);
    p.0["senders"]["s1"]["qdisc"] = json!("cake");
    let e = run_json(&p.json()).unwrap_err().to_string();
    assert_eq!(e, "senders.s1.qdisc: unknown qdisc 'cake'; known: fq, fq_codel, pfifo_fast");
}
