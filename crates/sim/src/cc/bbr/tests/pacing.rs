//! Pacing rate and TSO sizing (bbr_rate_bytes_per_sec,
//! bbr_set_pacing_rate, bbr_init_pacing_rate_from_rtt, bbr_tso_segs_goal).

use super::*;
use crate::units::Rate;

/// bbr_pacing_margin_percent = 1: pacing_rate = gain * bw * 99%.
#[test]
fn pacing_rate_has_1_percent_margin() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)));
    assert_eq!(s.bbr.pacing_gain(), BBR_UNIT);
    // 10 pkts/ms.mul(1448) B = 14.48 MB/s; 99% of it = 14 335 200 B/s. Linux's
    // fixed point (bw = 167772 in 2^-24 pkt/us) lands 14 B/s below.
    let got = s.pacing_bytes();
    assert_eq!(got, 14_335_186);
    let bw_bytes = 10_000.0 * f64::from(MSS);
    assert!((got as f64 / bw_bytes - 0.99).abs() < 1e-5);
    // Other gains carry the same margin.
    let at_5_4 = Bbr::rate_bytes_per_sec(&s.tp, BW_10_PER_MS, 320) as f64;
    assert!((at_5_4 / (bw_bytes * 1.25) - 0.99).abs() < 1e-5);
}

/// bbr_bw_to_pacing_rate(): min(rate, sk->sk_max_pacing_rate).
#[test]
fn pacing_rate_capped_by_max_pacing_rate() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.tp.max_pacing_rate = Rate::from_mbps(50);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)));
    assert_eq!(s.tp.pacing_rate, Rate::from_mbps(50));
}

/// bbr_set_pacing_rate(): before full bw is reached the pacing rate is only
/// raised; afterwards it follows gain * bw down as well.
#[test]
fn pacing_rate_only_increases_before_full_bw_reached() {
    let mut s = Synth::new();
    s.ack(Ack::round(PKTS_PER_RTT));
    let startup_rate = s.pacing_bytes();
    let high = Rate::from_gbps(1);
    s.tp.pacing_rate = high;
    s.ack(Ack::round(PKTS_PER_RTT));
    assert_eq!(s.tp.pacing_rate, high, "not lowered in STARTUP");
    s.tp.pacing_rate = Rate::ZERO;
    s.ack(Ack::round(PKTS_PER_RTT));
    assert_eq!(s.pacing_bytes(), startup_rate, "raised in STARTUP");
    s.enter_probe_bw();
    s.tp.pacing_rate = high;
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)));
    assert_eq!(s.pacing_bytes(), 14_335_186, "lowered once the pipe is full");
}

/// bbr_init_pacing_rate_from_rtt(): high_gain * cwnd / srtt once an RTT
/// sample exists (has_seen_rtt), else over a nominal 1 ms.
#[test]
fn init_pacing_rate_uses_srtt_when_available() {
    let mut tp = ConnState::new(MSS);
    tp.srtt = Time::from_millis(10);
    let mut b = Bbr::with_seed(1);
    b.init(&mut tp);
    assert!(b.has_seen_rtt);
    let want = 10.0 * f64::from(MSS) / 0.010 * 739.0 / 256.0 * 0.99;
    let got = (tp.pacing_rate.bps() / 8) as f64;
    assert!((got / want - 1.0).abs() < 1e-4, "{got} vs {want}");
}

/// bbr_min_tso_segs(): 1 segment below bbr_min_tso_rate (1.2 Mbit/s), 2
/// above; bbr_tso_segs_goal(): ~1 ms of data (pacing_rate >> 10), capped
/// at GSO_MAX_SIZE - 1 - MAX_TCP_HEADER bytes and 127 segments.
#[test]
fn tso_segs_goal_follows_pacing_rate() {
    let mut tp = ConnState::new(MSS);
    tp.pacing_rate = Rate::from_bps(1_000_000);
    assert_eq!(Bbr::min_tso_segs(&tp), 1);
    assert_eq!(Bbr::tso_segs_goal(&tp), 1);
    tp.pacing_rate = Rate::from_bps(1_200_000);
    assert_eq!(Bbr::min_tso_segs(&tp), 2);
    assert_eq!(Bbr::tso_segs_goal(&tp), 2);
    // 100 Mbit/s = 12.5 MB/s; >> 10 = 12207 B = 8 segments.
    tp.pacing_rate = Rate::from_mbps(100);
    assert_eq!(Bbr::tso_segs_goal(&tp), 8);
    // 10 Gbit/s: capped at (65536 - 1 - 320) / 1448 = 45 segments.
    tp.pacing_rate = Rate::from_gbps(10);
    assert_eq!(Bbr::tso_segs_goal(&tp), 45);
    // Tiny MSS: capped at 0x7F segments.
    let mut tiny = ConnState::new(100);
    tiny.pacing_rate = Rate::from_gbps(10);
    assert_eq!(Bbr::tso_segs_goal(&tiny), 127);
}
