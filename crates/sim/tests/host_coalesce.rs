//! Interrupt coalescing (crate::host::coalesce): packets reach TCP at the
//! interrupt that ends their batch, so the RTT grows by part of the
//! moderation delay; a frame count of one interrupts at every packet (the
//! ideal host); and bad values name the field.
mod common;
use common::*;
use fatpipe_sim::scenario::run_json;
use fatpipe_sim::trace::RunResult;
use serde_json::json;

/// One CUBIC stream, cwnd clamped to 20 segments, over 1 Gbit/s, 10 ms: no
/// queue, so the RTT is the path's plus what the hosts add.
fn thin() -> Plan {
    Plan::new("cubic", 1, 1e9, 0.01, 3.0).flow("cwnd_clamp", json!(20)).set("sample_interval_s", json!(0.1))
}

fn mean_srtt(r: &RunResult) -> f64 {
    let s: Vec<f64> = r.series.srtt_s.iter().skip(5).copied().collect();
    s.iter().sum::<f64>() / s.len() as f64
}

#[test]
fn the_receivers_moderation_adds_part_of_its_delay_to_the_rtt() {
    let ideal = mean_srtt(&thin().run());
    let mut p = thin();
    p.0["receiver"]["interrupt_coalescing_s"] = json!(500e-6);
    let moderated = mean_srtt(&p.run());
    // A segment waits between 0 and 500 µs for the interrupt that follows
    // its batch's first packet; its ACK goes out then.
    let added = moderated - ideal;
    assert!((50e-6..=500e-6).contains(&added), "srtt {ideal} -> {moderated}: {added} s added");
}

#[test]
fn the_senders_moderation_of_acks_adds_to_the_rtt_too() {
    let ideal = mean_srtt(&thin().run());
    let mut p = thin();
    p.0["senders"]["s1"]["interrupt_coalescing_s"] = json!(500e-6);
    let added = mean_srtt(&p.run()) - ideal;
    assert!((50e-6..=500e-6).contains(&added), "{added} s added");
}

#[test]
fn a_frame_count_of_one_interrupts_at_every_packet() {
    let ideal = thin().run();
    let mut p = thin();
    p.0["receiver"]["interrupt_coalescing_s"] = json!(500e-6);
    p.0["receiver"]["interrupt_coalescing_frames"] = json!(1);
    p.0["senders"]["s1"]["interrupt_coalescing_s"] = json!(500e-6);
    p.0["senders"]["s1"]["interrupt_coalescing_frames"] = json!(1);
    assert_eq!(p.run().series, ideal.series);
}

#[test]
fn bad_moderation_values_name_the_field() {
    let e = |usecs: serde_json::Value, frames: serde_json::Value| {
        let mut p = thin();
        p.0["receiver"]["interrupt_coalescing_s"] = usecs;
        p.0["receiver"]["interrupt_coalescing_frames"] = frames;
        run_json(&p.json()).unwrap_err().to_string()
    };
    assert_eq!(e(json!(0.02), json!(null)), "receiver.interrupt_coalescing_s: must be > 0 and at most 0.01 s, got 0.02");
    assert_eq!(
        e(json!(null), json!(8)),
        "receiver.interrupt_coalescing_frames: needs interrupt_coalescing_s (the delay the frame count cuts short)"
    );
    assert_eq!(e(json!(1e-4), json!(0)), "receiver.interrupt_coalescing_frames: must be 1 to 65536 packets, got 0");
}
