//! PROBE_BW: bbr_update_cycle_phase and its bbr_start_bw_probe_* steps,
//! bbr_pick_probe_wait, bbr_is_reno_coexistence_probe_time,
//! bbr_advance_max_bw_filter, bbr_update_gains.

use super::*;

/// From CRUISE, rounds of `dt` until REFILL; returns the rounds taken.
fn until_refill(s: &mut Synth, dt: Time) -> u32 {
    let mut n = 0;
    while s.bbr.phase() != Phase::Refill {
        s.ack(Ack::round(PKTS_PER_RTT).in_flight(150).dt(dt));
        n += 1;
        assert!(n < 1000, "never refilled");
    }
    n
}

#[test]
fn probe_bw_cycles_down_cruise_refill_up() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    assert_eq!(s.bbr.phase(), Phase::Down);
    assert_eq!(s.bbr.pacing_gain(), 232, "DOWN paces at 0.91");
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(150));
    assert_eq!(s.bbr.phase(), Phase::Cruise, "in-flight below the BDP: cruise");
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(150));
    assert_eq!(s.bbr.pacing_gain(), BBR_UNIT, "CRUISE paces at 1.0");
    until_refill(&mut s, RTT);
    assert_eq!(s.bbr.pacing_gain(), BBR_UNIT, "REFILL paces at 1.0");
    assert!(!s.bbr.bw_probe_samples);
    s.ack(Ack::round(PKTS_PER_RTT).in_flight(200));
    assert_eq!(s.bbr.phase(), Phase::Up, "a round of REFILL, then UP");
    assert!(s.bbr.bw_probe_samples, "samples now reflect the probe");
    assert_eq!(s.bbr.pacing_gain(), 320, "UP paces at 1.25");
    assert_eq!(s.bbr.cwnd_gain(), 576, "UP's cwnd gain is 2 + 1/4");
    // No bw growth for three rounds: the pipe is full, back to DOWN.
    for _ in 0..2 {
        s.ack(Ack::round(PKTS_PER_RTT).in_flight(200));
        assert_eq!(s.bbr.phase(), Phase::Up);
    }
    s.ack(Ack::round(PKTS_PER_RTT).in_flight(200));
    assert_eq!(s.bbr.phase(), Phase::Down);
}

#[test]
fn probe_up_keeps_probing_while_bw_grows() {
    let mut s = Synth::new();
    s.enter_cruise();
    until_refill(&mut s, RTT);
    let mut d = PKTS_PER_RTT;
    for _ in 0..6 {
        d = d * 5 / 4 + 1;
        s.ack(Ack::round(d).in_flight(200));
    }
    assert_eq!(s.bbr.phase(), Phase::Up);
}

#[test]
fn probe_bw_probes_after_63_rounds_for_reno_coexistence() {
    let mut s = Synth::new();
    s.enter_cruise();
    let rounds = until_refill(&mut s, RTT);
    // rounds_since_probe starts at 0 or 1 (bbr_bw_probe_rand_rounds = 2)
    // and counts the DOWN and CRUISE rounds; 63 rounds of 20 ms < 2 s.
    assert!((60..=63).contains(&rounds), "{rounds} rounds");
}

#[test]
fn probe_bw_probes_on_the_2_to_3_s_wall_clock_when_rounds_are_long() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    let down_start = s.bbr.cycle_mstamp;
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(150));
    until_refill(&mut s, Time::from_millis(100)); // 63 rounds = 6.3 s
    let waited = s.tp.now.saturating_sub(down_start);
    assert!(waited > Time::from_secs(2) && waited <= Time::from_millis(3_100), "{waited}");
}

#[test]
fn probe_wait_is_two_s_plus_up_to_one_s_and_zero_or_one_round() {
    let mut b = Bbr3::with_seed(7);
    let (mut lo, mut hi) = (u32::MAX, 0);
    for _ in 0..2000 {
        b.pick_probe_wait();
        assert!(b.rounds_since_probe < 2);
        lo = lo.min(b.probe_wait_us);
        hi = hi.max(b.probe_wait_us);
    }
    assert!((2_000_000..2_010_000).contains(&lo), "{lo}");
    assert!((2_990_001..3_000_000).contains(&hi), "{hi}");
}

#[test]
fn different_seeds_pick_different_probe_waits() {
    let (mut a, mut b) = (Bbr3::with_seed(1), Bbr3::with_seed(2));
    a.pick_probe_wait();
    b.pick_probe_wait();
    assert_ne!(a.probe_wait_us, b.probe_wait_us);
}

#[test]
fn max_bw_filter_keeps_the_last_two_probe_cycles() {
    let mut b = Bbr3::default();
    b.take_max_bw_sample(100);
    b.take_max_bw_sample(80);
    assert_eq!(b.max_bw(), 100);
    b.advance_max_bw_filter();
    assert_eq!(b.bw_hi, [100, 0]);
    b.take_max_bw_sample(60);
    assert_eq!(b.max_bw(), 100, "the previous cycle still counts");
    b.advance_max_bw_filter();
    assert_eq!(b.max_bw(), 60, "two cycles later it is forgotten");
    b.advance_max_bw_filter();
    assert_eq!(b.bw_hi, [60, 0], "an empty window keeps the old one");
}

#[test]
fn probe_down_ends_only_once_inflight_leaves_headroom_below_inflight_hi() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.bbr.inflight_hi = 150; // headroom: 150 - 150*38/256 = 128
    let mut a = Ack::round(PKTS_PER_RTT).same_round().in_flight(140);
    a.tx_in_flight = 150; // no higher safe level to raise inflight_hi to
    s.ack(a);
    assert_eq!(s.bbr.phase(), Phase::Down, "150 in flight > 128");
    a.in_flight = Some(110);
    s.ack(a);
    assert_eq!(s.bbr.phase(), Phase::Cruise);
}
