//! Transfer flows (crate::transfer): data sets of a given size over their
//! own streams, and their completion times.
mod common;
use common::*;
use fatpipe_sim::scenario::Scenario;
use serde_json::json;

const MSS: u64 = 1448;

fn transfer_plan(streams: u64, size: u64, split: &str, chunk: Option<u64>, starts: &[f64], duration: f64) -> Plan {
    Plan::new("cubic", streams, 100e6, 0.02, duration)
        .flow("kind", json!("transfer"))
        .flow("mss_bytes", json!(MSS))
        .flow("transfer", json!({"size_bytes": size, "split": split, "chunk_bytes": chunk, "tick_s": 0.001,
                                 "starts_s": starts}))
}

/// Payload bytes acked per stream at the run's end (the last sample).
fn acked_per_stream(r: &fatpipe_sim::trace::RunResult) -> Vec<i64> {
    let n = r.series.stream.iter().max().map_or(0, |&s| s + 1) as usize;
    let mut last = vec![0; n];
    for (&s, &b) in r.series.stream.iter().zip(&r.series.delivered_bytes) {
        last[s as usize] = b;
    }
    last
}

#[test]
fn one_data_set_takes_its_serialization_plus_slow_start_and_a_one_way_delay() {
    let r = transfer_plan(1, 10_000_000, "equal", None, &[0.5], 4.0).run();
    assert_eq!(r.transfers.duration_s.len(), 1);
    let (start, fct) = (r.transfers.start_s[0], r.transfers.duration_s[0]);
    assert_eq!((start, r.transfers.size_bytes[0]), (0.5, 10_000_000));
    // The payload on the wire: 10 MB in 1448-byte segments of 1514-byte
    // frames at 100 Mbit/s, plus the one-way delay; slow start from IW 10
    // to the 250-segment BDP takes about log2(25) = 5 RTTs more.
    let serialization = (10_000_000f64 / MSS as f64).ceil() * 1514.0 * 8.0 / 100e6;
    assert!(fct > serialization + 0.01 && fct < serialization + 0.01 + 8.0 * 0.02, "completion {fct} s");
}

#[test]
fn equal_split_gives_each_stream_its_share_and_chunks_go_to_who_asks() {
    let size = 4_000_000;
    let r = transfer_plan(3, size, "equal", None, &[0.0], 3.0).run();
    let shares = acked_per_stream(&r);
    let per = (size as f64 / 3.0 / MSS as f64).ceil() as i64 * MSS as i64;
    assert!(shares.iter().all(|&b| b == per || b == per - MSS as i64), "{shares:?} vs {per}");
    let r = transfer_plan(3, size, "chunks", Some(100_000), &[0.0], 3.0).run();
    let got = acked_per_stream(&r);
    let chunk_bytes = (100_000f64 / MSS as f64).ceil() as i64 * MSS as i64;
    assert_eq!(got.iter().sum::<i64>(), 40 * chunk_bytes, "every chunk once: {got:?}");
    assert!(got.iter().all(|&b| b % chunk_bytes == 0 && b > 0), "whole chunks per stream: {got:?}");
    assert_eq!(r.transfers.duration_s.len(), 1);
}

#[test]
fn data_sets_start_on_their_own_streams_at_their_arrivals() {
    let r = transfer_plan(2, 2_000_000, "equal", None, &[0.0, 0.7, 1.3], 4.0).run();
    assert_eq!(r.transfers.transfer, vec![0, 1, 2]);
    let starts: Vec<f64> = r.transfers.start_s.iter().map(|t| (t * 1e6).round() / 1e6).collect();
    assert_eq!(starts, vec![0.0, 0.7, 1.3], "the planned starts (ns clock)");
    // Data set k's streams are 2k and 2k + 1, sampled from their start on.
    for (&s, &t) in r.series.stream.iter().zip(&r.series.t_s) {
        let start = [0.0, 0.7, 1.3][(s / 2) as usize];
        assert!(t >= start, "stream {s} sampled at {t} before its data set's start {start}");
    }
    assert_eq!(acked_per_stream(&r).len(), 6);
}

#[test]
fn a_data_set_that_cannot_finish_in_the_run_has_no_row() {
    let r = transfer_plan(1, 100_000_000, "equal", None, &[0.0], 1.0).run();
    assert!(r.transfers.duration_s.is_empty());
}

#[test]
fn a_transfer_plan_that_does_not_fit_is_refused_naming_the_field() {
    let cases: [(Plan, &str); 4] = [
        (Plan::new("cubic", 1, 100e6, 0.02, 1.0).flow("kind", json!("transfer")), "flows[0].transfer"),
        (transfer_plan(1, 1000, "chunks", None, &[0.0], 1.0), "flows[0].transfer.chunk_bytes"),
        (transfer_plan(1, 1000, "equal", None, &[0.5, 0.2], 1.0), "flows[0].transfer.starts_s[1]"),
        (transfer_plan(1, 0, "equal", None, &[0.0], 1.0), "flows[0].transfer.size_bytes"),
    ];
    for (plan, field) in cases {
        let e = Scenario::from_json(&plan.json()).expect_err(field).to_string();
        assert!(e.contains(field), "{e} should name {field}");
    }
    let bulk = Plan::new("cubic", 1, 100e6, 0.02, 1.0).flow("transfer", json!({"size_bytes": 1}));
    let e = Scenario::from_json(&bulk.json()).expect_err("bulk").to_string();
    assert!(e.contains("only a flow of kind transfer"), "{e}");
}
