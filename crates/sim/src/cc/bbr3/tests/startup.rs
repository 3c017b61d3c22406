//! STARTUP and DRAIN: bbr_update_gains, bbr_check_full_bw_reached,
//! bbr_check_loss_too_high_in_startup, bbr_check_ecn_too_high_in_startup,
//! bbr_check_drain.

use super::*;

/// Growing rounds (×2 each) keep STARTUP from seeing a plateau.
fn grow(s: &mut Synth, rounds: u32) -> i64 {
    let mut d = 50;
    for _ in 0..rounds {
        d *= 2;
        s.ack(Ack::round(d).in_flight(d as u32));
    }
    d
}

#[test]
fn startup_paces_at_gain_2_77_with_cwnd_gain_2() {
    let mut s = Synth::new();
    s.ack(Ack::round(20));
    assert_eq!(s.bbr.mode(), Mode::Startup);
    assert_eq!(s.bbr.pacing_gain(), 710, "BBR_UNIT * 277 / 100 + 1");
    assert_eq!(s.bbr.cwnd_gain(), 512);
    assert_eq!(s.tp.snd_cwnd, 20, "cwnd grows by the acked count below target");
}

#[test]
fn startup_exits_on_a_bw_plateau_after_three_rounds() {
    let mut s = Synth::new();
    for _ in 0..3 {
        s.ack(Ack::round(PKTS_PER_RTT).in_flight(400));
    }
    assert_eq!(s.bbr.mode(), Mode::Startup, "two rounds without 25 % growth");
    s.ack(Ack::round(PKTS_PER_RTT).in_flight(400));
    assert!(s.bbr.full_bw_reached());
    assert_eq!(s.bbr.mode(), Mode::Drain);
}

#[test]
fn startup_keeps_going_while_bw_grows_by_a_quarter_per_round() {
    let mut s = Synth::new();
    grow(&mut s, 8);
    assert_eq!(s.bbr.mode(), Mode::Startup);
}

/// Rounds of growth, then a Recovery round with `events` loss-marking
/// ACKs, ended by a round-start ACK whose sample lost `lost` of 200.
fn lossy_startup_round(events: u32, lost: u32) -> Synth {
    let mut s = Synth::new();
    let d = grow(&mut s, 4);
    s.tp.ca_state = CaState::Recovery;
    for _ in 0..events {
        s.ack(Ack::round(d).same_round().dt(Time::from_millis(1)).marked_lost(1, 1, 200));
    }
    s.ack(Ack::round(d * 2).marked_lost(0, lost, 200));
    s
}

#[test]
fn startup_exits_when_loss_exceeds_two_percent() {
    let s = lossy_startup_round(6, 5); // 5/200 = 2.5 % > 2 %
    assert!(s.bbr.full_bw_reached());
    assert_ne!(s.bbr.mode(), Mode::Startup);
    assert!(s.bbr.inflight_hi() != NO_INFLIGHT_BOUND, "inflight_hi starts at the BDP");
}

#[test]
fn startup_ignores_loss_at_two_percent_or_below() {
    let s = lossy_startup_round(6, 3); // 1.5 %
    assert_eq!(s.bbr.mode(), Mode::Startup);
}

#[test]
fn startup_needs_six_loss_events_in_the_round_to_exit() {
    let s = lossy_startup_round(5, 20); // 10 % but only 5 events
    assert_eq!(s.bbr.mode(), Mode::Startup);
}

#[test]
fn startup_exits_after_two_rounds_of_ecn_above_half_at_low_rtt() {
    let mut s = Synth::with_seed(DEFAULT_SEED, true);
    let rtt = Time::from_millis(2);
    let mut d = 50;
    // Round 1 has no min_rtt yet: not ECN-eligible.
    for _ in 0..2 {
        d *= 2;
        s.ack(Ack::round(d).round_trip(rtt).dt(rtt).ce(10));
        assert_eq!(s.bbr.mode(), Mode::Startup);
    }
    d *= 2;
    s.ack(Ack::round(d).round_trip(rtt).dt(rtt).ce(10));
    assert!(s.bbr.ecn_eligible);
    assert!(s.bbr.full_bw_reached(), "two rounds with CE ratio >= 50 %");
    assert_ne!(s.bbr.mode(), Mode::Startup);
    assert!(s.bbr.inflight_hi() != NO_INFLIGHT_BOUND);
}

#[test]
fn startup_ignores_ecn_above_the_5_ms_ecn_max_rtt() {
    let mut s = Synth::with_seed(DEFAULT_SEED, true);
    let rtt = Time::from_millis(6);
    let mut d = 50;
    for _ in 0..5 {
        d *= 2;
        s.ack(Ack::round(d).round_trip(rtt).dt(rtt).ce(10));
    }
    assert!(!s.bbr.ecn_eligible);
    assert_eq!(s.bbr.mode(), Mode::Startup);
}

#[test]
fn drain_paces_at_0_35_until_inflight_fits_the_bdp() {
    let mut s = Synth::new();
    for _ in 0..4 {
        s.ack(Ack::round(PKTS_PER_RTT).in_flight(400));
    }
    assert_eq!(s.bbr.mode(), Mode::Drain);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(400));
    assert_eq!(s.bbr.pacing_gain(), 88, "BBR_UNIT * 1000 / 2885");
    assert_eq!(s.bbr.cwnd_gain(), 512, "keeps STARTUP's cwnd gain");
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(200));
    assert_eq!(s.bbr.mode(), Mode::ProbeBw);
    assert_eq!(s.bbr.phase(), Phase::Down, "PROBE_BW starts in DOWN");
    assert_eq!(s.tp.snd_ssthresh, Synth::BDP, "ssthresh exports the BDP for monitoring");
}
