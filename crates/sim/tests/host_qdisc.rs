//! The sending host's root qdisc (`qdisc`): fq paces every flow at its
//! sk_pacing_rate, so a CUBIC sender's slow-start bursts are spread and a
//! small buffer drops less; pfifo_fast and fq_codel leave it unpaced (the
//! ideal host's behaviour), and BBR, which paces itself, is the same
//! under any of them.
mod common;
use common::*;
use fatpipe_sim::scenario::run_json;
use fatpipe_sim::trace::RunResult;
use serde_json::json;

/// One stream over 1 Gbit/s, 50 ms, a buffer of a tenth of the BDP.
fn run(cc: &str, qdisc: Option<&str>) -> RunResult {
    let mut p = Plan::new(cc, 1, 1e9, 0.05, 3.0).set("buffer_bytes", json!(625_000));
    p.0["senders"]["s1"]["qdisc"] = json!(qdisc);
    p.run()
}

#[test]
fn fq_paces_cubic_and_a_small_buffer_drops_less() {
    let unpaced = run("cubic", None);
    let paced = run("cubic", Some("fq"));
    let (d0, d1) = (unpaced.path.queue_drops, paced.path.queue_drops);
    assert!(d1 < d0, "fq: {d1} drops, unpaced: {d0}");
    // The pacing rate is applied: tcp_info reports it either way, but only
    // the paced run's queue stays below the buffer most of the time.
    let max_q = |r: &RunResult| r.path_series.queue_bytes.iter().copied().max().unwrap_or(0);
    assert!(max_q(&paced) <= max_q(&unpaced), "{} vs {}", max_q(&paced), max_q(&unpaced));
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
