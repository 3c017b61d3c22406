//! A sender host's start spread: each stream of a flow group starts at the
//! group's start plus a seeded uniform offset below the spread (and 3 µs
//! per stream, so no two collide); the default is `START_JITTER`.
mod common;
use common::*;
use fatpipe_sim::scenario::{run_json, Scenario, START_JITTER};
use fatpipe_sim::units::Time;
use serde_json::json;

fn starts(p: &Plan) -> Vec<Time> {
    Scenario::from_json(&p.json()).expect("valid plan").sim_config().streams.iter().map(|s| s.start).collect()
}

fn with_spread(p: Plan, spread_s: f64) -> Plan {
    let mut p = p;
    p.0["senders"]["s1"]["start_spread_s"] = json!(spread_s);
    p
}

#[test]
fn streams_start_within_the_hosts_spread_and_use_most_of_it() {
    let p = with_spread(Plan::new("reno", 32, 1e8, 0.02, 1.0), 0.05);
    let t = starts(&p);
    let slack = Time::from_micros(3 * 32);
    assert!(t.iter().all(|&s| s < Time::from_millis(50) + slack), "{t:?}");
    let (lo, hi) = (t.iter().min().unwrap(), t.iter().max().unwrap());
    // 32 uniform draws below 50 ms span less than 40 ms with probability
    // 32·0.8^31 ≈ 0.03 %; the draws are seeded, so this is deterministic.
    assert!(*hi - *lo > Time::from_millis(40), "spread {lo}..{hi}");
}

#[test]
fn without_a_spread_streams_start_within_start_jitter_as_before() {
    let default = starts(&Plan::new("reno", 32, 1e8, 0.02, 1.0));
    let explicit = starts(&with_spread(Plan::new("reno", 32, 1e8, 0.02, 1.0), START_JITTER.as_secs_f64()));
    assert_eq!(default, explicit);
    assert!(default.iter().all(|&s| s < START_JITTER + Time::from_micros(3 * 32)));
}

#[test]
fn a_spread_out_of_range_names_its_field() {
    let e = run_json(&with_spread(Plan::new("reno", 1, 1e8, 0.02, 1.0), 11.0).json()).map(|_| ()).expect_err("refused");
    assert_eq!(e.to_string(), "senders.s1.start_spread_s: must be 0 to 10 s, got 11");
}
