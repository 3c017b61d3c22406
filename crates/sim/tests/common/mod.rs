//! Helpers for integration tests: build RunPlan JSON like the Python side.
#![allow(dead_code)]

use fatpipe_sim::trace::RunResult;
use serde_json::{json, Value};

pub struct Plan(pub Value);

impl Plan {
    /// One bulk flow of `streams` streams over a path of `rate_bps` and `rtt_s`.
    pub fn new(cc: &str, streams: u64, rate_bps: f64, rtt_s: f64, duration_s: f64) -> Plan {
        Plan(json!({
            "run_id": "t", "backend": "sim", "rep": 0, "seed": 1,
            "duration_s": duration_s, "warmup_s": 0.0, "sample_interval_s": 1.0,
            "rate_bps": rate_bps, "rtt_s": rtt_s, "loss": 0.0, "corruption": 0.0,
            "buffer_bytes": (rate_bps * rtt_s / 8.0) as u64, "mtu_bytes": 1500,
            "senders": {"s1": {"rmem_max_bytes": 1u64 << 30, "wmem_max_bytes": 1u64 << 30,
                                "stream_rate_cap_bps": null, "extra_rtt_s": 0.0}},
            "receiver": {"rmem_max_bytes": 1u64 << 30, "wmem_max_bytes": 1u64 << 30,
                         "stream_rate_cap_bps": null, "extra_rtt_s": 0.0},
            "flows": [{"group": 0, "kind": "bulk", "cc": cc, "streams": streams, "mss_bytes": 1460,
                       "sender": "s1", "start_s": 0.0, "request_bytes": null, "response_bytes": null,
                       "concurrency": null, "rate_per_s": null}],
            "swept": {"path.loss": 0.0}
        }))
    }
    pub fn set(mut self, key: &str, v: Value) -> Plan {
        self.0[key] = v;
        self
    }
    pub fn rmem(mut self, b: u64) -> Plan {
        self.0["receiver"]["rmem_max_bytes"] = json!(b);
        self
    }
    pub fn wmem(mut self, b: u64) -> Plan {
        self.0["senders"]["s1"]["wmem_max_bytes"] = json!(b);
        self
    }
    pub fn flow(mut self, key: &str, v: Value) -> Plan {
        self.0["flows"][0][key] = v;
        self
    }
    pub fn json(&self) -> String {
        self.0.to_string()
    }
    pub fn run(&self) -> RunResult {
        fatpipe_sim::scenario::run_json(&self.json()).expect("valid plan")
    }
}

/// Goodput (bit/s) of all streams between the samples at t0 and t1.
pub fn goodput(r: &RunResult, t0: f64, t1: f64) -> f64 {
    let s = &r.series;
    let mut b0 = 0i64;
    let mut b1 = 0i64;
    for i in 0..s.len() {
        if (s.t_s[i] - t0).abs() < 1e-9 {
            b0 += s.delivered_bytes[i];
        }
        if (s.t_s[i] - t1).abs() < 1e-9 {
            b1 += s.delivered_bytes[i];
        }
    }
    (b1 - b0) as f64 * 8.0 / (t1 - t0)
}
