//! Cross traffic (path/cross.rs) and a delivery trace (path/trace.rs), run
//! whole: cross packets take their share of the bottleneck from the TCP
//! flows and show in the queue; a trace sets the bottleneck's service.

mod common;
use common::Plan;
use fatpipe_sim::trace::RunResult;
use serde_json::{json, Value};

fn dynamics(v: Value) -> Value {
    let mut d = json!({"schedule": [], "gilbert_elliott": null, "jitter": null, "policer": null, "aggregation": null, "trace": null});
    for (k, x) in v.as_object().expect("object") {
        d[k] = x.clone();
    }
    d
}

/// A cross group (group 1) with `cross` as its cross table.
fn with_cross(plan: Plan, streams: u64, cross: Value) -> Plan {
    let mut p: Value = serde_json::from_str(&plan.json()).expect("plan");
    let flow = json!({"group": 1, "kind": "cross", "cc": null, "streams": streams, "mss_bytes": null, "sender": null,
                      "start_s": 0.0, "request_bytes": null, "response_bytes": null, "concurrency": null,
                      "rate_per_s": null, "cross": cross});
    p["flows"].as_array_mut().expect("flows").push(flow);
    Plan(p)
}

/// Goodput (bit/s) of `group` between the samples at t0 and t1.
fn group_goodput(r: &RunResult, group: i64, t0: f64, t1: f64) -> f64 {
    let s = &r.series;
    let at = |t: f64| -> i64 {
        (0..s.len()).filter(|&i| s.flow_group[i] == group && (s.t_s[i] - t).abs() < 1e-9).map(|i| s.delivered_bytes[i]).sum()
    };
    (at(t1) - at(t0)) as f64 * 8.0 / (t1 - t0)
}

#[test]
fn cross_traffic_at_rate_r_leaves_a_tcp_flow_about_the_link_less_r() {
    // 100 Mbit/s, 40 Mbit/s of constant cross traffic in 1500-byte
    // packets (four sources of 10 Mbit/s): the TCP flow gets about
    // 60 Mbit/s of frames, and the two together fill the link.
    for cc in ["cubic", "bbr"] {
        let plan = Plan::new(cc, 1, 1e8, 0.02, 12.0).flow("mss_bytes", json!(1448)).set("sample_interval_s", json!(0.5));
        let r = with_cross(plan, 4, json!({"rate_bps": 1e7, "pattern": "constant"})).set("dynamics", dynamics(json!({}))).run();
        let (tcp, cross) = (group_goodput(&r, 0, 4.0, 12.0), group_goodput(&r, 1, 4.0, 12.0));
        let tcp_frames = tcp * 1514.0 / 1448.0;
        let cross_frames = cross * 1514.0 / 1500.0;
        assert!(tcp_frames > 0.85 * 6e7 && tcp_frames < 1.1 * 6e7, "{cc}: TCP {tcp_frames:.3e} bit/s of frames");
        assert!(cross_frames > 0.9 * 4e7 && cross_frames <= 4e7 * 1.001, "{cc}: cross {cross_frames:.3e} bit/s of frames");
        assert!(tcp_frames + cross_frames > 0.93e8, "{cc}: the link carried {:.3e}", tcp_frames + cross_frames);
        // Cross rows carry no TCP state.
        let rows: Vec<usize> = (0..r.series.len()).filter(|&i| r.series.flow_group[i] == 1).collect();
        assert_eq!(rows.len(), 4 * 24, "four sources sampled every 0.5 s");
        assert!(rows.iter().all(|&i| r.series.cwnd_segments[i] == 0 && r.series.segs_out[i] == 0));
    }
}

#[test]
fn cross_traffic_beyond_the_link_fills_the_queue_the_samples_see_and_is_tail_dropped() {
    // 12 Mbit/s of cross traffic on a 10 Mbit/s link: the buffer stays
    // full, each sample sees it (the sample offers the cross packets due
    // first), the excess is dropped and the TCP flow is starved.
    let plan = Plan::new("cubic", 1, 1e7, 0.02, 6.0).set("sample_interval_s", json!(0.5));
    let r = with_cross(plan, 1, json!({"rate_bps": 1.2e7, "pattern": "constant", "packet_bytes": 1500}))
        .set("dynamics", dynamics(json!({})))
        .run();
    let buffer = 1e7 * 0.02 / 8.0;
    let late: Vec<i64> = (0..r.path_series.len()).filter(|&i| r.path_series.t_s[i] >= 2.0).map(|i| r.path_series.queue_bytes[i]).collect();
    assert!(late.iter().all(|&q| q as f64 > buffer - 2.0 * 1514.0), "queue {late:?} of {buffer}");
    // 1/6 of 12 Mbit/s dropped over 6 s: about 990 packets.
    assert!(r.path.queue_drops > 900, "{} drops", r.path.queue_drops);
    assert!(group_goodput(&r, 0, 2.0, 6.0) < 1e6, "TCP got {}", group_goodput(&r, 0, 2.0, 6.0));
}

#[test]
fn on_off_cross_traffic_sends_its_rate_times_its_on_fraction() {
    // Eight sources of 5 Mbit/s while on, on 10 ms and off 30 ms on
    // average (shape 1.5): about 1.25 Mbit/s each over the run (the
    // link, 100 Mbit/s, never drops them); a heavy tail makes the
    // estimate noisy, so the bound is loose.
    let plan = Plan::new("bbr", 1, 1e8, 0.02, 40.0).set("sample_interval_s", json!(1.0));
    let r = with_cross(plan, 8, json!({"rate_bps": 5e6, "pattern": "on_off", "on_s": 0.01, "off_s": 0.03}))
        .set("dynamics", dynamics(json!({})))
        .run();
    let cross = group_goodput(&r, 1, 0.0, 40.0) * 1514.0 / 1500.0 / 8.0;
    assert!(cross > 0.8 * 1.25e6 && cross < 1.2 * 1.25e6, "{cross:.3e} bit/s per source");
}

#[test]
fn a_trace_of_one_opportunity_per_millisecond_serves_a_thousand_packets_a_second() {
    // The trace "1": one 1504-byte opportunity each millisecond; TCP's
    // 1500-byte IP packets (MSS 1448 with timestamps) take one each.
    let trace = json!({"ms_gaps": [1], "counts": [1]});
    let r = Plan::new("cubic", 1, 12e6, 0.04, 10.0)
        .flow("mss_bytes", json!(1448))
        .set("dynamics", dynamics(json!({"trace": trace})))
        .run();
    let g = common::goodput(&r, 4.0, 10.0);
    assert!(g > 0.95 * 1000.0 * 1448.0 * 8.0 && g <= 1000.0 * 1448.0 * 8.0 * 1.01, "{g:.4e}");
    // Four opportunities every 2 ms: four times the service.
    let trace = json!({"ms_gaps": [2], "counts": [4]});
    let r = Plan::new("cubic", 1, 48e6, 0.04, 10.0)
        .flow("mss_bytes", json!(1448))
        .set("dynamics", dynamics(json!({"trace": trace})))
        .run();
    let g = common::goodput(&r, 4.0, 10.0);
    assert!(g > 0.95 * 2000.0 * 1448.0 * 8.0 && g <= 2000.0 * 1448.0 * 8.0 * 1.01, "{g:.4e}");
}
