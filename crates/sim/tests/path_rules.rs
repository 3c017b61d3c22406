//! End-to-end rules of the simulated path and TCP (no loss, window limits,
//! Mathis, determinism, buffer bounds).
mod common;
use common::*;
use fatpipe_sim::engine::Sim;
use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::units::Time;
use serde_json::json;

const MSS: f64 = 1460.0;
const WIRE: f64 = 1500.0;

#[test]
fn without_loss_goodput_equals_the_bottleneck_rate_in_payload_terms() {
    let r = Plan::new("reno", 1, 100e6, 0.02, 12.0).set("buffer_bytes", json!(500_000)).run();
    let g = goodput(&r, 4.0, 12.0);
    let expect = 100e6 * MSS / WIRE;
    assert!((g / expect - 1.0).abs() < 0.03, "goodput {g:.4e} vs {expect:.4e}");
    assert_eq!(r.path.random_drops, 0);
}

#[test]
fn without_loss_goodput_is_rwnd_over_rtt_when_the_receive_window_limits() {
    // rmem 1 MB -> advertised window rmem/2 = 342 segments of 1460 bytes.
    let rmem = 1_000_000u64;
    let r = Plan::new("reno", 1, 1e9, 0.02, 6.0).rmem(rmem).run();
    let wnd_bytes = ((rmem / 2) / 1460 * 1460) as f64;
    let expect = wnd_bytes * 8.0 / 0.02;
    let g = goodput(&r, 2.0, 6.0);
    assert!((g / expect - 1.0).abs() < 0.03, "goodput {g:.4e} vs rwnd/RTT {expect:.4e}");
    let last = r.series.len() - 1;
    assert!(r.series.rwnd_limited_s[last] > 3.0, "rwnd_limited_s {}", r.series.rwnd_limited_s[last]);
}

#[test]
fn the_send_buffer_bounds_unacked_data_and_goodput() {
    let wmem = 500_000u64;
    let r = Plan::new("reno", 1, 1e9, 0.02, 5.0).wmem(wmem).run();
    for i in 0..r.series.len() {
        assert!(r.series.inflight_segments[i] as u64 * 1460 <= wmem);
    }
    let expect = (wmem / 1460 * 1460) as f64 * 8.0 / 0.02;
    let g = goodput(&r, 2.0, 5.0);
    assert!((g / expect - 1.0).abs() < 0.03, "goodput {g:.4e} vs wmem/RTT {expect:.4e}");
    assert!(r.series.sndbuf_limited_s[r.series.len() - 1] > 2.0);
}

/// Reno under random loss follows Mathis et al.: rate ≈ 1.22·MSS/(RTT·√p).
#[test]
fn reno_under_random_loss_is_within_half_to_three_times_mathis() {
    let rtt = 0.02;
    for (p, duration) in [(1e-5, 60.0), (1e-4, 30.0), (1e-3, 30.0), (1e-2, 30.0)] {
        let mathis = 1.22 * MSS * 8.0 / (rtt * f64::sqrt(p));
        let rate = (mathis * 10.0).max(10e6);
        let r = Plan::new("reno", 1, rate, rtt, duration)
            .set("loss", json!(p))
            .set("buffer_bytes", json!((rate * rtt / 8.0) as u64))
            .run();
        let g = goodput(&r, 5.0, duration);
        let ratio = g / mathis;
        println!("p={p:e} mathis={mathis:.3e} goodput={g:.3e} ratio={ratio:.2}");
        assert!((0.5..=3.0).contains(&ratio), "p={p}: goodput/mathis = {ratio:.2}");
    }
}

#[test]
fn same_seed_gives_identical_output_and_another_seed_differs() {
    for cc in fatpipe_sim::cc::AVAILABLE {
        let plan = |seed: u64| {
            Plan::new(cc, 2, 200e6, 0.02, 3.0).set("loss", json!(1e-4)).set("seed", json!(seed)).json()
        };
        let a = fatpipe_sim::scenario::run_json(&plan(7)).unwrap().to_json().to_string();
        let b = fatpipe_sim::scenario::run_json(&plan(7)).unwrap().to_json().to_string();
        let c = fatpipe_sim::scenario::run_json(&plan(8)).unwrap().to_json().to_string();
        assert_eq!(a, b, "{cc}: same seed, different output");
        assert_ne!(a, c, "{cc}: different seeds, same output");
    }
}

#[test]
fn receiver_acks_every_second_segment_without_loss() {
    // A receive window below the BDP: no queue, no loss, only in-order data.
    let sc = Scenario::from_json(&Plan::new("reno", 1, 100e6, 0.02, 3.0).rmem(400_000).json()).unwrap();
    let mut sim = Sim::new(&sc.sim_config());
    sim.run_until(Time::from_secs(3));
    let segs = sim.sender(0).stats.segs_out as f64;
    let acks = sim.receiver(0).acks_sent as f64;
    assert!((acks / (segs / 2.0) - 1.0).abs() < 0.02, "acks {acks} for {segs} segments");
}

#[test]
fn memory_stays_bounded_by_the_window_under_loss() {
    let rmem = 4_000_000u64;
    let sc = Scenario::from_json(
        &Plan::new("reno", 1, 1e9, 0.02, 20.0).rmem(rmem).set("loss", json!(1e-3)).json(),
    )
    .unwrap();
    let wnd = (rmem / 2 / 1460) as usize;
    let mut sim = Sim::new(&sc.sim_config());
    for t in 1..=20 {
        sim.run_until(Time::from_secs(t));
        let s = sim.sender(0);
        assert!(s.sb.len() <= wnd, "scoreboard {} > window {wnd}", s.sb.len());
        assert!(s.footprint() <= 4 * wnd + 64, "footprint {}", s.footprint());
        assert!(sim.receiver(0).ofo_ranges() <= wnd);
    }
}

#[test]
fn every_registered_cca_runs_five_seconds_without_panicking() {
    for cc in fatpipe_sim::cc::AVAILABLE {
        let r = Plan::new(cc, 2, 200e6, 0.02, 5.0).set("loss", json!(1e-4)).run();
        let g = goodput(&r, 1.0, 5.0);
        println!("{cc}: goodput {g:.3e}");
        assert!(g > 0.0, "{cc} delivered nothing");
        assert_eq!(r.series.len(), 2 * 5);
    }
}

#[test]
fn series_has_one_row_per_stream_per_interval_with_cumulative_counters() {
    let r = Plan::new("reno", 3, 100e6, 0.02, 4.0).set("sample_interval_s", json!(0.5)).run();
    assert_eq!(r.series.len(), 3 * 8);
    for i in 3..r.series.len() {
        assert!(r.series.delivered_bytes[i] >= r.series.delivered_bytes[i - 3]);
        assert!(r.series.busy_s[i] >= r.series.busy_s[i - 3]);
    }
    assert_eq!(r.series.ca_state[0], "open");
    assert!(r.path.min_rtt_s.unwrap() >= 0.02);
    assert!(r.path.bottleneck_bps.unwrap() <= 100e6 * 1.0001);
}

#[test]
fn a_per_stream_rate_cap_paces_every_cca_down_to_the_cap() {
    for cc in ["reno", "bbr"] {
        let mut p = Plan::new(cc, 2, 1e9, 0.02, 6.0);
        p.0["senders"]["s1"]["stream_rate_cap_bps"] = json!(50e6);
        let r = p.run();
        let g = goodput(&r, 2.0, 6.0);
        assert!((g / 100e6 - 1.0).abs() < 0.03, "{cc}: two capped streams gave {g:.4e}");
    }
}

#[test]
fn access_delay_adds_to_the_round_trip_of_that_sender_only() {
    let mut p = Plan::new("reno", 1, 100e6, 0.02, 2.0);
    p.0["senders"]["s2"] = p.0["senders"]["s1"].clone();
    p.0["senders"]["s2"]["extra_rtt_s"] = json!(0.03);
    let mut f2 = p.0["flows"][0].clone();
    f2["group"] = json!(1);
    f2["sender"] = json!("s2");
    p.0["flows"].as_array_mut().unwrap().push(f2);
    let r = p.run();
    let min_rtt = |g: i64| {
        (0..r.series.len()).filter(|&i| r.series.flow_group[i] == g).map(|i| r.series.min_rtt_s[i]).fold(f64::MAX, f64::min)
    };
    assert!((min_rtt(0) - 0.02).abs() < 0.001, "{}", min_rtt(0));
    assert!((min_rtt(1) - 0.05).abs() < 0.001, "{}", min_rtt(1));
}

#[test]
fn random_loss_and_bit_corruption_combine_into_one_packet_loss_probability() {
    let (loss, corruption) = (1e-3, 1e-7);
    let r = Plan::new("reno", 1, 50e6, 0.02, 20.0)
        .set("loss", json!(loss))
        .set("corruption", json!(corruption))
        .run();
    let bits = (1460.0 + 40.0) * 8.0;
    let p = 1.0 - (1.0 - loss) * f64::powf(1.0 - corruption, bits);
    let seen = r.path.random_drops as f64 / r.path.packets as f64;
    let sd = (p / r.path.packets as f64).sqrt();
    assert!((seen - p).abs() < 4.0 * sd, "drop rate {seen:.5} vs {p:.5}");
}

#[test]
fn delivery_rate_samples_match_the_bottleneck_rate_when_it_is_saturated() {
    let r = Plan::new("reno", 1, 100e6, 0.02, 6.0).set("buffer_bytes", json!(500_000)).run();
    let expect = 100e6 * MSS / WIRE;
    for i in 2..r.series.len() {
        let d = r.series.delivery_rate_bps[i];
        assert!((d / expect - 1.0).abs() < 0.03, "t={} delivery rate {d:.4e}", r.series.t_s[i]);
    }
}

#[test]
fn segments_carry_timestamp_headers_when_they_fit_the_mtu() {
    use fatpipe_sim::wire::ip_packet_bytes as wire_bytes;
    assert_eq!(wire_bytes(1448, 1500), 1500); // Linux's MSS with timestamps
    assert_eq!(wire_bytes(1460, 1500), 1500); // no room for the option
    assert_eq!(wire_bytes(8948, 9000), 9000);
    assert_eq!(wire_bytes(1000, 1500), 1052);
    let r = Plan::new("reno", 1, 100e6, 0.02, 8.0).flow("mss_bytes", json!(1448)).set("buffer_bytes", json!(500_000)).run();
    let g = goodput(&r, 3.0, 8.0);
    // The bottleneck charges the Ethernet header too (wire::ETH_HEADER_BYTES).
    let expect = 100e6 * 1448.0 / 1514.0;
    assert!((g / expect - 1.0).abs() < 0.01, "goodput {g:.4e} vs {expect:.4e}");
}

#[test]
fn a_fifo_path_never_looks_reordered_to_rack() {
    // Drop-tail bursts leave many holes; SACK compression still reports
    // every range because the receiver flushes an ACK before forgetting a
    // block (tcp_sack_new_ofo_skb), so nothing ever looks late.
    for cc in fatpipe_sim::cc::AVAILABLE {
        let sc = Scenario::from_json(&Plan::new(cc, 4, 500e6, 0.02, 5.0).set("loss", json!(1e-3)).json()).unwrap();
        let mut sim = Sim::new(&sc.sim_config());
        sim.run_until(Time::from_secs(5));
        for i in 0..4 {
            assert!(!sim.sender(i).rack.reord_seen, "{cc} stream {i} saw reordering");
            assert!(sim.sender(i).stats.retrans > 0);
        }
    }
}

#[test]
fn retransmissions_match_drops_with_few_spurious_ones() {
    for cc in fatpipe_sim::cc::AVAILABLE {
        for (loss, streams) in [(0.0, 4u64), (1e-3, 2)] {
            let r = Plan::new(cc, streams, 500e6, 0.02, 8.0)
                .set("loss", json!(loss))
                .set("buffer_bytes", json!(300_000))
                .run();
            let n = r.series.len();
            let retrans: i64 = (n - streams as usize..n).map(|i| r.series.retrans_segments[i]).sum();
            let drops = (r.path.queue_drops + r.path.random_drops) as i64;
            println!("{cc} loss={loss}: drops {drops} retrans {retrans}");
            // Drops in the last RTT may not be detected yet when the run ends.
            assert!(retrans as f64 >= drops as f64 * 0.98 - 50.0, "{cc}: {retrans} retransmissions for {drops} drops");
            // The kernel backend on this path (4 streams, no random loss):
            // exactly one retransmission per drop for reno and cubic. So
            // here for every CCA, BIC and Scalable (4-5x as many recoveries)
            // included, now that withheld ACKs are flushed before a SACK
            // block can fall off the receiver's list unreported
            // (tcp_sack_new_ofo_skb, TCP_SACK_BLOCKS_EXPECTED).
            let spurious_allowed = 1.10;
            assert!(
                retrans as f64 <= drops as f64 * spurious_allowed + 20.0,
                "{cc}: {retrans} retransmissions for {drops} drops"
            );
        }
    }
}
