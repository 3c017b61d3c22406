//! Paths that move (path/dynamics.rs, engine/moving.rs), run whole: each
//! feature changes what the path does when and only when it is asked for.

mod common;
use common::{goodput, Plan};
use serde_json::json;

fn dynamics(v: serde_json::Value) -> serde_json::Value {
    let mut d = json!({"schedule": [], "gilbert_elliott": null, "jitter": null, "policer": null, "aggregation": null});
    for (k, x) in v.as_object().expect("object") {
        d[k] = x.clone();
    }
    d
}

#[test]
fn a_static_dynamics_table_changes_nothing() {
    let plain = Plan::new("cubic", 2, 1e8, 0.02, 4.0).set("loss", json!(1e-4));
    let with = Plan::new("cubic", 2, 1e8, 0.02, 4.0).set("loss", json!(1e-4)).set("dynamics", dynamics(json!({})));
    let (a, b) = (plain.run(), with.run());
    assert_eq!(a.series.delivered_bytes, b.series.delivered_bytes);
    assert_eq!(a.path.random_drops, b.path.random_drops);
}

#[test]
fn a_rate_step_down_and_up_moves_goodput_with_the_bottleneck() {
    // 100 Mbit/s, 10x down at 4 s, back up at 8 s (the BBR draft's rate
    // steps): goodput follows the service rate in each phase. Each phase
    // is read after the recovery from the step's tail drops (bytes SACKed
    // before it count as delivered when the hole fills, so a window that
    // holds the recovery shows more than the link's rate).
    let steps = json!([{"at_s": 4.0, "rate_bps": 1e7}, {"at_s": 8.0, "rate_bps": 1e8}]);
    for cc in ["cubic", "bbr"] {
        let r = Plan::new(cc, 1, 1e8, 0.02, 12.0).set("sample_interval_s", json!(0.5)).set("dynamics", dynamics(json!({"schedule": steps}))).run();
        let (before, during, after) = (goodput(&r, 2.0, 4.0), goodput(&r, 6.0, 8.0), goodput(&r, 10.0, 12.0));
        let payload = 1460.0 / 1514.0;
        assert!(before > 0.85e8 * payload && before <= 1e8 * payload * 1.01, "{cc} before: {before:.3e}");
        assert!(during <= 1e7 * payload * 1.02 && during > 0.8e7 * payload, "{cc} during the 10 Mbit/s step: {during:.3e}");
        assert!(after > 0.8e8 * payload, "{cc} after stepping up: {after:.3e}");
    }
}

#[test]
fn an_rtt_step_changes_the_rtt_the_sender_measures() {
    let r = Plan::new("cubic", 1, 1e7, 0.02, 8.0)
        .set("sample_interval_s", json!(0.5))
        .set("dynamics", dynamics(json!({"schedule": [{"at_s": 4.0, "rtt_s": 0.1}]})))
        .run();
    let srtt = |t: f64| r.series.srtt_s[r.series.t_s.iter().position(|&x| (x - t).abs() < 1e-9).expect("sample")];
    assert!(srtt(3.5) >= 0.02 && srtt(3.5) < 0.06, "before: {}", srtt(3.5));
    assert!(srtt(8.0) >= 0.1, "after the step to 100 ms: {}", srtt(8.0));
}

#[test]
fn a_loss_step_starts_losses_at_the_scheduled_instant() {
    let r = Plan::new("cubic", 1, 1e8, 0.02, 6.0)
        .set("sample_interval_s", json!(0.5))
        .set("dynamics", dynamics(json!({"schedule": [{"at_s": 3.0, "loss": 0.01}]})))
        .run();
    let retrans = |t: f64| r.series.retrans_segments[r.series.t_s.iter().position(|&x| (x - t).abs() < 1e-9).expect("sample")];
    // A 1-BDP buffer and no loss: slow start overshoots once, then
    // nothing is lost until the step.
    let (at_3, at_6) = (retrans(3.0), retrans(6.0));
    assert!(at_6 - at_3 > 20, "retransmissions before {at_3}, after {at_6}");
    assert!(r.path.random_drops > 20);
}

#[test]
fn gilbert_elliott_loss_is_bursty_at_the_mean_asked_for() {
    let ge = json!({"r": 0.25, "bad_loss": 1.0, "good_loss": 0.0});
    let r = Plan::new("cubic", 4, 1e8, 0.02, 10.0).set("loss", json!(0.002)).set("dynamics", dynamics(json!({"gilbert_elliott": ge}))).run();
    let (lost, n) = (r.path.random_drops as f64, r.path.packets as f64);
    // p = r·L/(1 − L); the count's interval widened by the chain's
    // burstiness (variance × (1 + 2ρ/(1 − ρ)), ρ = 1 − p − r).
    let p = 0.25 * 0.002 / 0.998;
    let rho = 1.0 - p - 0.25;
    let half = 3.29 * (n * 0.002 * 0.998 * (1.0 + 2.0 * rho / (1.0 - rho))).sqrt();
    assert!((lost - 0.002 * n).abs() < half, "lost {lost} of {n}, expected {:.0} ± {half:.0}", 0.002 * n);
}

#[test]
fn a_policer_drops_what_exceeds_its_profile_and_caps_goodput() {
    // 100 Mbit/s bottleneck, 20 Mbit/s policer with a 30 KB burst.
    let pol = json!({"rate_bps": 2e7, "burst_bytes": 30_000});
    let r = Plan::new("cubic", 1, 1e8, 0.02, 10.0).set("dynamics", dynamics(json!({"policer": pol}))).run();
    assert!(r.path.policer_drops > 0);
    let g = goodput(&r, 0.0, 10.0);
    let ceiling = (2e7 * 10.0 + 30_000.0 * 8.0) / 10.0;
    assert!(g <= ceiling, "goodput {g:.3e} above the policer's rate·t + burst {ceiling:.3e}");
    assert!(g > 0.3 * 2e7, "goodput {g:.3e}");
    let unpoliced = Plan::new("cubic", 1, 1e8, 0.02, 10.0).run();
    assert_eq!(unpoliced.path.policer_drops, 0);
}

#[test]
fn jitter_reorders_only_when_asked() {
    for (reorder, expect_reordered) in [(false, false), (true, true)] {
        let j = json!({"deviation_s": 0.002, "distribution": "uniform", "reorder": reorder, "direction": "data"});
        let r = Plan::new("cubic", 1, 1e8, 0.02, 5.0).set("dynamics", dynamics(json!({"jitter": j}))).run();
        assert_eq!(r.path.reordered > 0, expect_reordered, "reorder = {reorder}: {} reordered", r.path.reordered);
        assert!(goodput(&r, 0.0, 5.0) > 1e6);
    }
}

#[test]
fn ack_aggregation_releases_acks_in_bursts_and_bbr_still_fills_the_link() {
    let agg = json!({"direction": "ack", "interval_s": 0.004, "bytes": null});
    let r = Plan::new("bbr", 1, 1e8, 0.04, 10.0).set("dynamics", dynamics(json!({"aggregation": agg}))).run();
    let g = goodput(&r, 4.0, 10.0);
    assert!(g > 0.8e8 * 1460.0 / 1514.0, "bbr under 4 ms ACK aggregation: {g:.3e}");
}

#[test]
fn the_same_seed_moves_the_same_way() {
    let d = dynamics(json!({
        "schedule": [{"at_s": 1.0, "rate_bps": 5e7}],
        "jitter": {"deviation_s": 0.001, "distribution": "normal", "reorder": true, "direction": "both"},
        "gilbert_elliott": {"r": 0.5, "bad_loss": 0.5, "good_loss": 0.0}
    }));
    let p = Plan::new("cubic", 2, 1e8, 0.02, 3.0).set("loss", json!(0.001)).set("dynamics", d);
    let (a, b) = (p.run(), p.run());
    assert_eq!(a.series.delivered_bytes, b.series.delivered_bytes);
    assert_eq!((a.path.reordered, a.path.random_drops), (b.path.reordered, b.path.random_drops));
}

