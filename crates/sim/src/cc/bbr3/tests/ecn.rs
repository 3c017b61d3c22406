//! BBRv3's ECN response: bbr_update_ecn_alpha, bbr_ecn_cut,
//! bbr_ecn_lower_bounds, bbr_is_inflight_too_high's CE test, and
//! rs->is_ece marking the round.

use super::*;

/// A flow at 2 ms RTT with ECN negotiated, cruising.
fn low_rtt_cruise() -> Synth {
    let mut s = Synth::with_seed(DEFAULT_SEED, true);
    let rtt = Time::from_millis(2);
    for _ in 0..20 {
        if s.bbr.mode() == Mode::ProbeBw {
            break;
        }
        s.ack(Ack::round(20).round_trip(rtt).dt(rtt).in_flight(20));
    }
    s.ack(Ack::round(20).same_round().round_trip(rtt).dt(Time::from_micros(100)).in_flight(10));
    assert_eq!(s.bbr.phase(), Phase::Cruise);
    assert!(s.bbr.ecn_eligible);
    s
}

#[test]
fn ecn_alpha_is_an_ewma_of_the_ce_ratio_with_gain_one_sixteenth() {
    let mut s = low_rtt_cruise();
    s.bbr.ecn_alpha = BBR_UNIT;
    s.bbr.alpha_last_delivered = s.tp.delivered;
    s.bbr.alpha_last_delivered_ce = s.tp.delivered_ce;
    s.tp.delivered += 100;
    assert_eq!(s.bbr.update_ecn_alpha(&s.tp), Some(0));
    assert_eq!(s.bbr.ecn_alpha(), 240, "256 * 15/16");
    s.tp.delivered += 100;
    s.tp.delivered_ce += 50;
    assert_eq!(s.bbr.update_ecn_alpha(&s.tp), Some(128));
    assert_eq!(s.bbr.ecn_alpha(), 225 + 8, "240 * 15/16 + 128/16");
}

#[test]
fn ecn_alpha_starts_at_one() {
    assert_eq!(Bbr3::default().ecn_alpha(), BBR_UNIT);
}

#[test]
fn ecn_round_cuts_inflight_lo_by_alpha_over_three() {
    let mut s = low_rtt_cruise();
    let cwnd = s.tp.snd_cwnd;
    s.bbr.ecn_alpha = BBR_UNIT;
    s.bbr.ecn_in_round = true;
    s.bbr.adapt_lower_bounds(&s.tp);
    assert_eq!(s.bbr.ecn_cut(), 256 - 85);
    assert_eq!(s.bbr.inflight_lo(), (cwnd * 171) >> 8);
    assert_eq!(s.bbr.bw_lo, NO_BW_BOUND, "ECN bounds inflight only");
}

#[test]
fn ece_marks_the_round_only_when_ecn_eligible() {
    let mut s = low_rtt_cruise();
    s.ack(Ack::round(20).same_round().round_trip(Time::from_millis(2)).in_flight(10).ce(1));
    assert!(s.bbr.ecn_in_round);
    let mut far = Synth::new(); // no ECN: never eligible
    far.enter_cruise();
    far.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(150).ce(1));
    assert!(!far.bbr.ecn_in_round);
}

#[test]
fn ce_above_half_of_a_probe_sample_cuts_inflight_hi() {
    let mut s = low_rtt_cruise();
    s.bbr.start_bw_probe_refill(&s.tp, 0);
    s.ack(Ack::round(20).round_trip(Time::from_millis(2)).in_flight(20));
    assert_eq!(s.bbr.phase(), Phase::Up);
    let mut a = Ack::round(20).same_round().round_trip(Time::from_millis(2)).in_flight(20).ce(11);
    a.tx_in_flight = 20;
    s.ack(a); // 11 of 20 delivered were CE: > 50 %
    assert!(s.bbr.inflight_hi() != NO_INFLIGHT_BOUND);
    assert_eq!(s.bbr.phase(), Phase::Down);
}
