//! RPC flows: request/response on persistent connections.
mod common;
use common::*;
use serde_json::json;

fn rpc_plan(response: u64, concurrency: Option<u64>, rate: Option<f64>, duration: f64) -> Plan {
    Plan::new("cubic", 1, 100e6, 0.02, duration)
        .flow("kind", json!("rpc"))
        .flow("request_bytes", json!(100))
        .flow("response_bytes", json!(response))
        .flow("concurrency", json!(concurrency))
        .flow("rate_per_s", json!(rate))
}

#[test]
fn a_one_segment_rpc_takes_one_rtt_plus_serialization() {
    let r = rpc_plan(1000, Some(1), None, 2.0).run();
    let n = r.rpcs.duration_s.len();
    assert!((95..=100).contains(&n), "{n} RPCs in 2 s at 20 ms each");
    let expect = 0.02 + 1500.0 * 8.0 / 100e6;
    for &d in &r.rpcs.duration_s {
        assert!((d / expect - 1.0).abs() < 0.01, "duration {d} vs {expect}");
    }
    assert!(r.rpcs.response_bytes.iter().all(|&b| b == 1000));
}

#[test]
fn closed_loop_keeps_concurrency_rpcs_outstanding_and_large_responses_fill_the_pipe() {
    let r = rpc_plan(1_000_000, Some(4), None, 10.0).run();
    let n = r.rpcs.duration_s.len();
    let done_bytes = n as f64 * 1e6;
    // Four 1 MB responses back to back keep a 100 Mbit/s path mostly busy.
    let rate = done_bytes * 8.0 / 10.0;
    assert!(rate > 0.7 * 100e6 * 1460.0 / 1500.0, "RPC goodput {rate:.3e}");
    // Starts are non-decreasing per stream and every duration covers an RTT.
    assert!(r.rpcs.duration_s.iter().all(|&d| d >= 0.02));
}

#[test]
fn open_loop_issues_poisson_arrivals_at_the_given_rate() {
    let r = rpc_plan(10_000, None, Some(50.0), 20.0).run();
    let n = r.rpcs.duration_s.len() as f64;
    assert!((n - 1000.0).abs() < 4.0 * 1000f64.sqrt() + 5.0, "{n} RPCs, expected about 1000");
    let mut starts = r.rpcs.start_s.clone();
    starts.sort_by(f64::total_cmp);
    assert_eq!(starts, r.rpcs.start_s, "completions in issue order on one connection");
}

#[test]
fn rpc_flows_share_the_bottleneck_with_bulk_flows() {
    let mut p = Plan::new("cubic", 1, 100e6, 0.02, 5.0);
    let rpc = json!({"group": 1, "kind": "rpc", "cc": "cubic", "streams": 2, "mss_bytes": 1460,
                     "sender": "s1", "start_s": 1.0, "request_bytes": 100, "response_bytes": 100000,
                     "concurrency": 1, "rate_per_s": null});
    p.0["flows"].as_array_mut().unwrap().push(rpc);
    let r = p.run();
    assert!(r.rpcs.flow_group.iter().all(|&g| g == 1));
    assert!(r.rpcs.stream.contains(&0) && r.rpcs.stream.contains(&1));
    assert!(r.rpcs.start_s.iter().all(|&t| t >= 1.0));
    assert!(goodput(&r, 2.0, 5.0) > 50e6);
}

#[test]
fn an_rpc_flow_needs_exactly_one_of_concurrency_and_rate() {
    let e = fatpipe_sim::scenario::run_json(&rpc_plan(1000, None, None, 1.0).json()).unwrap_err().to_string();
    assert!(e.starts_with("flows[0].concurrency:"), "{e}");
    let e = fatpipe_sim::scenario::run_json(&rpc_plan(1000, Some(1), Some(3.0), 1.0).json()).unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
}
