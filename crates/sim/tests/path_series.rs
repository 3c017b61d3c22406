//! The path series: one row per sampling interval with the bottleneck's
//! queue at the sample instant and its drop and CE counters so far.
mod common;
use common::*;
use fatpipe_sim::trace::RunResult;
use serde_json::json;

const RATE_BPS: f64 = 100e6;
const RTT_S: f64 = 0.02;
const BDP_BYTES: f64 = RATE_BPS * RTT_S / 8.0;

fn run(cc: &str, buffer_bdp: f64, aqm: serde_json::Value, duration_s: f64) -> RunResult {
    Plan::new(cc, 1, RATE_BPS, RTT_S, duration_s)
        .set("sample_interval_s", json!(0.25))
        .set("buffer_bytes", json!((buffer_bdp * BDP_BYTES) as u64))
        .set("aqm", aqm)
        .run()
}

fn fq_codel() -> serde_json::Value {
    json!({"kind": "fq_codel", "target_s": 0.005, "interval_s": 0.1, "limit_packets": 10240,
           "ce_threshold_s": null, "quantum_bytes": 1514, "ecn": true})
}

/// Samples taken at or after `t0_s`.
fn after(r: &RunResult, t0_s: f64) -> impl Iterator<Item = usize> + '_ {
    (0..r.path_series.len()).filter(move |&i| r.path_series.t_s[i] >= t0_s)
}

#[test]
fn the_path_series_has_one_row_per_sample_at_the_streams_sample_times() {
    let r = run("reno", 1.0, json!({"kind": "droptail"}), 3.0);
    let want: Vec<f64> = (1..=12).map(|k| k as f64 * 0.25).collect();
    assert_eq!(r.path_series.t_s, want);
    assert_eq!(r.series.t_s, want, "one stream: one series row per sample");
}

#[test]
fn a_standing_queue_shows_in_the_occupancy_and_stays_within_the_buffer() {
    let r = run("cubic", 2.0, json!({"kind": "droptail"}), 10.0);
    let p = &r.path_series;
    let buffer = 2.0 * BDP_BYTES;
    let frame = (0..p.len()).find(|&i| p.queue_packets[i] > 0).map(|i| p.queue_bytes[i] / p.queue_packets[i]);
    let frame = frame.expect("CUBIC builds a queue in a 2 BDP buffer");
    for i in 0..p.len() {
        // Bulk data is full-sized segments: bytes are packets x one frame.
        assert_eq!(p.queue_bytes[i], p.queue_packets[i] * frame, "row {i}");
        assert!(p.queue_bytes[i] as f64 <= buffer + frame as f64, "row {i}: {} B queued", p.queue_bytes[i]);
    }
    let max = after(&r, 2.0).map(|i| p.queue_bytes[i]).max().unwrap();
    assert!(max as f64 > 0.5 * BDP_BYTES, "largest queue after 2 s: {max} B");
}

#[test]
fn cumulative_drops_never_fall_and_end_at_the_path_fact() {
    let r = run("cubic", 0.5, json!({"kind": "droptail"}), 8.0);
    let drops = &r.path_series.queue_drops;
    assert!(drops.windows(2).all(|w| w[0] <= w[1]), "{drops:?}");
    assert!(r.path.queue_drops > 0, "a 0.5 BDP buffer overflows");
    // The last sample is at the end of the run: it holds the whole count.
    assert_eq!(*drops.last().unwrap() as u64, r.path.queue_drops);
    assert!(r.path_series.ce_marks.iter().all(|&c| c == 0), "drop-tail marks nothing");
}

#[test]
fn cumulative_ce_marks_end_at_the_path_fact_on_a_marking_bottleneck() {
    let r = run("dctcp", 2.0, json!({"kind": "ce_threshold", "k_packets": 20}), 5.0);
    let ce = &r.path_series.ce_marks;
    assert!(ce.windows(2).all(|w| w[0] <= w[1]), "{ce:?}");
    assert!(r.path.ce_marks > 0);
    assert_eq!(*ce.last().unwrap() as u64, r.path.ce_marks);
    // DCTCP holds the queue near K = 20 packets, far below the 2 BDP buffer.
    let max = after(&r, 1.0).map(|i| r.path_series.queue_packets[i]).max().unwrap();
    assert!(max <= 60, "largest queue after 1 s: {max} packets");
}

#[test]
fn fq_codel_backlog_counts_in_the_occupancy_and_stays_below_drop_tails() {
    // With fq_codel the FIFO holds only the packet on the wire: a sample
    // with more than one packet queued counts fq_codel's backlog.
    let fq = run("cubic", 8.0, fq_codel(), 10.0);
    let fq_max = after(&fq, 2.0).map(|i| fq.path_series.queue_packets[i]).max().unwrap();
    assert!(fq_max > 1, "fq_codel's backlog is sampled (largest: {fq_max} packets)");
    let dt = run("cubic", 8.0, json!({"kind": "droptail"}), 10.0);
    let dt_max = after(&dt, 2.0).map(|i| dt.path_series.queue_packets[i]).max().unwrap();
    assert!(fq_max * 4 < dt_max, "CoDel keeps the queue short: fq_codel {fq_max}, drop-tail {dt_max} packets");
}
