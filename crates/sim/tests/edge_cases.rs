//! Extreme but valid plans finish without panicking or hanging.
mod common;
use common::*;
use serde_json::json;

#[test]
fn total_loss_backs_off_and_ends() {
    let r = Plan::new("reno", 2, 1e9, 0.02, 30.0).set("loss", json!(1.0)).run();
    assert_eq!(r.series.delivered_bytes.iter().max(), Some(&0));
    assert!(r.stats.events < 10_000, "{} events", r.stats.events);
    let last = r.series.len() - 1;
    assert_eq!(r.series.ca_state[last], "loss");
}

#[test]
fn zero_rtt_zero_buffer_and_tiny_rates_work() {
    for cc in fatpipe_sim::cc::AVAILABLE {
        let r = Plan::new(cc, 1, 1e8, 0.0, 1.0).set("buffer_bytes", json!(0)).run();
        assert!(goodput(&r, 0.0, 1.0) > 0.0, "{cc} zero rtt");
        let r = Plan::new(cc, 1, 10e3, 0.05, 5.0).set("buffer_bytes", json!(3000)).run();
        assert!(r.series.delivered_bytes.last().copied().unwrap_or(0) > 0, "{cc} 10 kbit/s");
    }
}

#[test]
fn many_streams_and_jumbo_frames() {
    let r = Plan::new("reno", 200, 1e9, 0.01, 1.0).run();
    assert_eq!(r.series.len(), 200);
    let r = Plan::new("bbr", 2, 1e9, 0.02, 2.0).set("mtu_bytes", json!(9000)).flow("mss_bytes", json!(8960)).run();
    assert!(goodput(&r, 1.0, 2.0) > 0.5e9);
}
