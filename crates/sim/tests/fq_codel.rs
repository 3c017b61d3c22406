//! fq_codel at the bottleneck, end to end: the plan's keys, and RPC
//! latency next to a bulk CUBIC flow (issue P1.3 item 5).
mod common;
use common::*;
use fatpipe_sim::fq_codel::FqCodelParams;
use fatpipe_sim::path::Aqm;
use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::units::Time;
use serde_json::{json, Value};

const RATE_BPS: f64 = 100e6;
const RTT_S: f64 = 0.02;

fn fq_codel_plan() -> Value {
    json!({"kind": "fq_codel", "target_s": 0.005, "interval_s": 0.1, "limit_packets": 10240,
           "ce_threshold_s": null, "quantum_bytes": 1514, "ecn": true})
}

#[test]
fn the_plans_fq_codel_keys_become_its_parameters() {
    let aqm = |v: Value| Scenario::from_json(&Plan::new("reno", 1, 1e8, 0.01, 1.0).set("aqm", v).json()).unwrap().aqm;
    assert_eq!(aqm(fq_codel_plan()), Aqm::FqCodel(FqCodelParams::default()));
    let mut v = fq_codel_plan();
    v["ce_threshold_s"] = json!(0.001);
    v["quantum_bytes"] = json!(300);
    v["ecn"] = json!(false);
    let want = FqCodelParams { ce_threshold: Some(Time::from_millis(1)), quantum: 300, ecn: false, ..FqCodelParams::default() };
    assert_eq!(aqm(v), Aqm::FqCodel(want));
}

#[test]
fn fq_codel_keys_are_validated_with_the_allowed_values() {
    let bad = |key: &str, val: Value| {
        let mut v = fq_codel_plan();
        v[key] = val;
        Scenario::from_json(&Plan::new("reno", 1, 1e8, 0.01, 1.0).set("aqm", v).json()).unwrap_err().to_string()
    };
    let e = bad("target_s", json!(0.0));
    assert!(e.contains("aqm.target_s") && e.contains("> 0"), "{e}");
    let e = bad("limit_packets", json!(0));
    assert!(e.contains("aqm.limit_packets") && e.contains("must be 1 to"), "{e}");
    let e = bad("quantum_bytes", json!(0));
    assert!(e.contains("aqm.quantum_bytes"), "{e}");
    let e = bad("ecn", json!(1));
    assert_eq!(e, "aqm.ecn: invalid type: integer `1`, expected a boolean");
}

/// One bulk CUBIC flow (unless `bulk` is false) and one closed-loop RPC
/// stream (1000-byte responses, one outstanding) starting at 2 s.
fn rpc_next_to_bulk(aqm: Value, buffer_bdp: f64, bulk: bool) -> RunResult {
    let mut p = Plan::new("cubic", 1, RATE_BPS, RTT_S, 20.0)
        .set("aqm", aqm)
        .set("buffer_bytes", json!((buffer_bdp * RATE_BPS * RTT_S / 8.0) as u64));
    let rpc = json!({"group": 1, "kind": "rpc", "cc": "cubic", "streams": 1, "mss_bytes": 1460,
                     "sender": "s1", "start_s": 2.0, "request_bytes": 100, "response_bytes": 1000,
                     "concurrency": 1, "rate_per_s": null});
    if bulk {
        p.0["flows"].as_array_mut().unwrap().push(rpc);
    } else {
        p.0["flows"] = json!([rpc]);
    }
    p.run()
}

/// Median RPC duration (s) after `from_s`.
fn median_rpc_s(r: &RunResult, from_s: f64) -> f64 {
    let mut d: Vec<f64> = (0..r.rpcs.duration_s.len()).filter(|&i| r.rpcs.start_s[i] >= from_s).map(|i| r.rpcs.duration_s[i]).collect();
    assert!(d.len() > 50, "{} RPCs", d.len());
    d.sort_by(f64::total_cmp);
    d[d.len() / 2]
}

use fatpipe_sim::trace::RunResult;

#[test]
fn fq_codel_keeps_rpc_latency_near_the_idle_path_while_drop_tail_adds_the_buffers_drain_time() {
    let idle = median_rpc_s(&rpc_next_to_bulk(json!({"kind": "droptail"}), 8.0, false), 2.0);
    // An idle path: one RTT plus a frame's serialization.
    assert!((idle - RTT_S).abs() < 0.001, "idle RPC {idle}");

    // Drop-tail at 8 BDP: CUBIC keeps the buffer between full and 0.7 of
    // (BDP + buffer) minus the BDP, so an RPC waits behind 5.3 to 8 BDP of
    // queue: between 0.66 and 1 of the buffer's drain time.
    let buffer_bdp = 8.0;
    let drain_s = buffer_bdp * RTT_S;
    let dt = rpc_next_to_bulk(json!({"kind": "droptail"}), buffer_bdp, true);
    let inflation = median_rpc_s(&dt, 5.0) - idle;
    eprintln!("idle {idle} drop-tail inflation {inflation}");
    assert!(inflation > 0.5 * drain_s && inflation < 1.05 * drain_s, "drop-tail inflation {inflation} s, drain {drain_s} s");

    // fq_codel: the RPC stream is a sparse flow served ahead of the bulk
    // queue (new-flow priority), waiting at most for the frame on the wire.
    let fq = rpc_next_to_bulk(fq_codel_plan(), buffer_bdp, true);
    let inflation = median_rpc_s(&fq, 5.0) - idle;
    eprintln!("fq_codel inflation {inflation} drops {} goodput {}", fq.path.queue_drops, goodput(&fq, 5.0, 20.0));
    assert!(inflation < 0.002, "fq_codel inflation {inflation} s");
    let worst = fq.rpcs.duration_s.iter().zip(&fq.rpcs.start_s).filter(|(_, &s)| s >= 5.0).map(|(&d, _)| d).fold(0.0, f64::max);
    assert!(worst - idle < 0.005 + 0.001, "fq_codel worst RPC {worst} s");
    // CoDel keeps the bulk flow's standing queue near target by dropping
    // (CUBIC here does not negotiate ECN), and the link stays busy.
    assert!(fq.path.queue_drops > 0 && fq.path.ce_marks == 0);
    assert!(goodput(&fq, 5.0, 20.0) > 0.85 * RATE_BPS, "bulk goodput {}", goodput(&fq, 5.0, 20.0));
}
