//! The end hosts' processing jitter (crate::host, `processing_jitter_s`):
//! it delays, never reorders, is reproducible per seed, and a zero is the
//! ideal host.
mod common;
use common::*;
use fatpipe_sim::engine::Sim;
use fatpipe_sim::scenario::{run_json, Scenario};
use fatpipe_sim::trace::RunResult;
use fatpipe_sim::units::Time;
use serde_json::json;

/// Sets `processing_jitter_s` on the sender s1 and on the receiver.
fn jitter(mut p: Plan, sender_s: Option<f64>, receiver_s: Option<f64>) -> Plan {
    p.0["senders"]["s1"]["processing_jitter_s"] = json!(sender_s);
    p.0["receiver"]["processing_jitter_s"] = json!(receiver_s);
    p
}

/// A loss-free CUBIC/Reno mix: one stream each from s1, 100 Mbit/s,
/// 20 ms, a 1-BDP drop-tail buffer.
fn mix(seed: u64, jitter_s: Option<f64>, secs: f64) -> Plan {
    let mut p = jitter(Plan::new("cubic", 1, 100e6, 0.02, secs).set("seed", json!(seed)), jitter_s, jitter_s);
    let mut reno = p.0["flows"][0].clone();
    reno["group"] = json!(1);
    reno["cc"] = json!("reno");
    p.0["flows"].as_array_mut().unwrap().push(reno);
    p
}

/// Each flow group's delivered bytes at the end of the run.
fn delivered_by_group(r: &RunResult) -> Vec<i64> {
    let s = &r.series;
    let end = s.t_s.iter().cloned().fold(0.0, f64::max);
    let mut out = vec![0i64; 2];
    for i in 0..s.len() {
        if s.t_s[i] == end {
            out[s.flow_group[i] as usize] += s.delivered_bytes[i];
        }
    }
    out
}

#[test]
fn with_jitter_one_seed_repeats_exactly_and_two_seeds_differ() {
    let a = mix(1, Some(50e-6), 4.0).run();
    assert_eq!(a, mix(1, Some(50e-6), 4.0).run(), "the same seed must give the same run");
    let b = mix(2, Some(50e-6), 4.0).run();
    let (da, db) = (delivered_by_group(&a), delivered_by_group(&b));
    assert!(da[0] > 0 && da[1] > 0, "{da:?}");
    assert_ne!(da, db, "two seeds gave the same shares");
}

#[test]
fn zero_jitter_is_the_ideal_host() {
    let none = mix(3, None, 2.0).run();
    assert_eq!(none, mix(3, Some(0.0), 2.0).run());
    // And it does change a run when on.
    assert_ne!(none, mix(3, Some(20e-6), 2.0).run());
}

#[test]
fn jitter_never_reorders_a_flow() {
    // 1 Gbit/s: segments 12 µs apart, a mean delay of 1 ms: without the
    // in-order rule most segments would overtake their predecessors. The
    // window is bounded by rmem so the bottleneck never drops: any SACK,
    // recovery or retransmission could only come from reordering.
    for gro in [false, true] {
        let mut p = jitter(Plan::new("cubic", 2, 1e9, 0.01, 2.0).rmem(2_000_000), Some(1e-3), Some(1e-3));
        p.0["receiver"]["gro"] = json!(gro);
        let mut sim = Sim::new(&Scenario::from_json(&p.json()).unwrap().sim_config());
        let mut t = Time::ZERO;
        while t < Time::from_secs(2) {
            t += Time::from_micros(500);
            sim.run_until(t);
            assert_eq!(sim.max_receiver_ofo(), 0, "out-of-order data at {t:?} (gro {gro})");
        }
        assert_eq!(sim.bottleneck().drops, 0);
        for i in 0..2 {
            let s = sim.sender(i);
            assert_eq!((s.stats.retrans, s.stats.recoveries), (0, 0), "stream {i} (gro {gro})");
            assert!(sim.receiver(i).rcv_nxt > 50_000, "stream {i} moved {} segments", sim.receiver(i).rcv_nxt);
        }
    }
}

#[test]
fn a_sparse_flow_sees_the_mean_delay_at_the_receiver() {
    // One-segment RPCs at 50/s: the response is delayed at the receiving
    // host only (the request and the sender's ACK processing are not on
    // its completion path), each by one exponential draw of the mean.
    let rpcs = |jitter_s: Option<f64>| {
        let p = Plan::new("cubic", 1, 100e6, 0.02, 20.0)
            .flow("kind", json!("rpc"))
            .flow("request_bytes", json!(100))
            .flow("response_bytes", json!(1000))
            .flow("rate_per_s", json!(50.0));
        jitter(p, jitter_s, jitter_s).run().rpcs.duration_s
    };
    let (ideal, noisy) = (rpcs(None), rpcs(Some(300e-6)));
    assert_eq!(ideal.len(), noisy.len());
    let excess: Vec<f64> = ideal.iter().zip(&noisy).map(|(a, b)| b - a).collect();
    assert!(excess.iter().all(|&x| x >= 0.0), "a host delay made an RPC faster");
    let mean = excess.iter().sum::<f64>() / excess.len() as f64;
    assert!((mean / 300e-6 - 1.0).abs() < 0.1, "mean excess {mean}");
}

#[test]
fn processing_jitter_out_of_range_names_the_field_and_the_range() {
    let e = run_json(&jitter(Plan::new("reno", 1, 1e8, 0.02, 1.0), Some(0.02), None).json()).expect_err("20 ms is refused");
    assert_eq!(e.to_string(), "senders.s1.processing_jitter_s: must be 0 to 0.01 s (10 ms), got 0.02");
    let e = run_json(&jitter(Plan::new("reno", 1, 1e8, 0.02, 1.0), None, Some(-1e-6)).json()).expect_err("negative");
    assert!(e.to_string().starts_with("receiver.processing_jitter_s: must be 0 to 0.01 s"), "{e}");
}

#[test]
fn jitter_with_loss_gro_and_ecn_runs_through_every_event_loop() {
    // Random loss makes retransmissions (GRO units that may repeat data,
    // handed to TCP segment by segment when released); ECN and fq_codel
    // take the general event loop. Each run must move data and keep
    // reproducing itself.
    let variants: [(&str, bool, Option<serde_json::Value>); 3] = [
        ("bbr", true, None),
        ("cubic", true, None),
        ("dctcp", false, Some(json!({"kind": "ce_threshold", "k_packets": 65}))),
    ];
    for (cc, gro, aqm) in variants {
        let mut p = jitter(Plan::new(cc, 2, 1e9, 0.01, 2.0).set("loss", json!(1e-3)), Some(30e-6), Some(30e-6));
        p.0["receiver"]["gro"] = json!(gro);
        if let Some(a) = aqm {
            p = p.set("aqm", a);
        }
        let r = p.run();
        assert!(goodput(&r, 1.0, 2.0) > 2e7, "{cc}: {}", goodput(&r, 1.0, 2.0));
        assert_eq!(r, p.run(), "{cc}");
    }
}
