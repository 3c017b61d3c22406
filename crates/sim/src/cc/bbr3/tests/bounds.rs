//! The upper bound inflight_hi (bbr_adapt_upper_bounds,
//! bbr_handle_inflight_too_high, bbr_inflight_hi_from_lost_skb,
//! bbr_inflight_with_headroom) and the lower bounds bw_lo / inflight_lo
//! (bbr_adapt_lower_bounds); loss recovery hooks.

use super::*;
use crate::cc::TxSnapshot;

/// CRUISE, then a forced REFILL and a round: PROBE_UP with probe samples.
fn enter_up(s: &mut Synth) {
    s.enter_cruise();
    s.bbr.start_bw_probe_refill(&s.tp, 0);
    s.ack(Ack::round(PKTS_PER_RTT).in_flight(200));
    assert_eq!(s.bbr.phase(), Phase::Up);
    assert!(s.bbr.bw_probe_samples);
}

/// x * (1 - beta) in BBR_UNIT fixed point.
fn times_0_7(x: u64) -> u64 {
    (x * u64::from(BBR_UNIT - BETA)) >> BBR_SCALE
}

#[test]
fn inflight_hi_cut_by_beta_when_probe_loss_exceeds_two_percent() {
    let mut s = Synth::new();
    enter_up(&mut s);
    let target = u64::from(s.bbr.target_inflight(&s.tp));
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(200).marked_lost(0, 10, 100));
    assert_eq!(u64::from(s.bbr.inflight_hi()), times_0_7(target).max(100));
    assert!(s.bbr.prev_probe_too_high);
    assert!(!s.bbr.bw_probe_samples, "only react once per probe");
    assert_eq!(s.bbr.phase(), Phase::Down);
}

#[test]
fn probe_loss_at_two_percent_or_below_is_tolerated() {
    let mut s = Synth::new();
    enter_up(&mut s);
    // 3 of 200 = 1.5 %; bbr_loss_thresh is 5/256 = 1.95 %
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(200).marked_lost(0, 3, 200));
    assert_eq!(s.bbr.inflight_hi(), NO_INFLIGHT_BOUND);
    assert_eq!(s.bbr.phase(), Phase::Up);
}

#[test]
fn inflight_hi_rises_to_any_tx_in_flight_delivered_without_high_loss() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.bbr.inflight_hi = 150;
    let mut a = Ack::round(PKTS_PER_RTT).same_round().in_flight(150);
    a.tx_in_flight = 180;
    s.ack(a);
    assert_eq!(s.bbr.inflight_hi(), 180);
}

#[test]
fn inflight_hi_from_lost_skb_finds_where_loss_crossed_two_percent() {
    let rs = |tx_in_flight, lost| RateSample { tx_in_flight, lost, ..RateSample::default() };
    // earlier losses (4 of 99) already crossed the threshold: prefix 0
    assert_eq!(Bbr3::inflight_hi_from_lost_skb(&rs(100, 5), 1), 99);
    // budget ceil(999 * 5 / 256) = 20, 2 lost before: (20 - 2) * 256 / 251 = 18
    assert_eq!(Bbr3::inflight_hi_from_lost_skb(&rs(1000, 3), 1), 1017);
    assert_eq!(Bbr3::inflight_hi_from_lost_skb(&rs(0, 3), 1), u32::MAX, "inconsistent sample");
}

#[test]
fn skb_marked_lost_while_probing_cuts_inflight_hi() {
    let mut s = Synth::new();
    enter_up(&mut s);
    s.tp.lost += 30;
    let tx = TxSnapshot { in_flight: 1000, lost: s.tp.lost - 30, ..TxSnapshot::default() };
    let target = u64::from(s.bbr.target_inflight(&s.tp));
    s.bbr.skb_marked_lost(&mut s.tp, 0, &tx);
    // 30 of 1000 > 1.95 %; lost_prev 29 of 999 already over budget 20
    assert_eq!(u64::from(s.bbr.inflight_hi()), times_0_7(target).max(999));
    assert_eq!(s.bbr.phase(), Phase::Down);
}

#[test]
fn skb_marked_lost_outside_a_probe_only_notes_the_loss() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.tp.lost += 50;
    let tx = TxSnapshot { in_flight: 100, lost: s.tp.lost - 50, ..TxSnapshot::default() };
    s.bbr.skb_marked_lost(&mut s.tp, 0, &tx);
    assert!(s.bbr.loss_in_round && s.bbr.loss_in_cycle, "bbr_note_loss");
    assert_eq!(s.bbr.inflight_hi(), NO_INFLIGHT_BOUND);
}

#[test]
fn cruise_caps_cwnd_at_inflight_hi_less_15_percent_headroom() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.bbr.inflight_hi = 200;
    assert!(s.bbr.target_inflight(&s.tp) > 171);
    let mut a = Ack::round(PKTS_PER_RTT).same_round().in_flight(150);
    a.tx_in_flight = 150;
    s.ack(a);
    assert_eq!(s.tp.snd_cwnd, 200 - (200 * 38 / 256), "inflight_hi - 15 %");
}

#[test]
fn inflight_lo_and_bw_lo_cut_by_beta_per_loss_round_while_cruising() {
    let mut s = Synth::new();
    s.enter_cruise();
    let cwnd = u64::from(s.tp.snd_cwnd);
    let max_bw = s.bbr.max_bw();
    s.bbr.loss_in_round = true;
    s.bbr.bw_latest = 1;
    s.bbr.inflight_latest = 1;
    s.bbr.adapt_lower_bounds(&s.tp);
    assert_eq!(u64::from(s.bbr.inflight_lo()), times_0_7(cwnd));
    assert_eq!(s.bbr.bw_lo, times_0_7(max_bw));
    assert_eq!(s.bbr.bw(), s.bbr.bw_lo, "bbr_bw() is min(max_bw, bw_lo)");
    s.bbr.adapt_lower_bounds(&s.tp);
    assert_eq!(u64::from(s.bbr.inflight_lo()), times_0_7(times_0_7(cwnd)), "again next loss round");
}

#[test]
fn lower_bounds_never_drop_below_the_latest_round_delivery() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.bbr.loss_in_round = true;
    let floor = s.tp.snd_cwnd - 1; // above 0.7 x cwnd
    s.bbr.inflight_latest = floor;
    s.bbr.bw_latest = s.bbr.max_bw();
    s.bbr.adapt_lower_bounds(&s.tp);
    assert_eq!(s.bbr.inflight_lo(), floor);
    assert_eq!(s.bbr.bw_lo, s.bbr.max_bw());
}

#[test]
fn a_lossy_round_while_cruising_caps_cwnd_at_inflight_lo() {
    let mut s = Synth::new();
    s.enter_cruise();
    let cwnd = s.tp.snd_cwnd;
    s.ack(Ack::round(100).same_round().in_flight(150).marked_lost(3, 3, 150));
    s.ack(Ack::round(100).in_flight(100));
    let lo = s.bbr.inflight_lo();
    assert_eq!(u64::from(lo), times_0_7(u64::from(cwnd)), "cwnd {cwnd}");
    assert_eq!(s.tp.snd_cwnd, lo.max(CWND_MIN_TARGET));
}

#[test]
fn lower_bounds_ignore_loss_while_probing() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.bbr.start_bw_probe_refill(&s.tp, 0);
    s.bbr.loss_in_round = true;
    s.bbr.adapt_lower_bounds(&s.tp);
    assert_eq!(s.bbr.inflight_lo(), NO_INFLIGHT_BOUND);
    assert_eq!(s.bbr.bw_lo, NO_BW_BOUND);
}

#[test]
fn refill_resets_the_lower_bounds() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.bbr.inflight_lo = 50;
    s.bbr.bw_lo = 1;
    s.bbr.start_bw_probe_refill(&s.tp, 0);
    assert_eq!(s.bbr.inflight_lo(), NO_INFLIGHT_BOUND);
    assert_eq!(s.bbr.bw_lo, NO_BW_BOUND);
}

#[test]
fn recovery_uses_no_packet_conservation() {
    let mut s = Synth::new();
    s.enter_cruise();
    let cwnd = s.tp.snd_cwnd;
    s.tp.ca_state = CaState::Recovery;
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(20).marked_lost(1, 1, 200));
    assert_eq!(s.tp.snd_cwnd, cwnd, "v1 would cut cwnd to in-flight + acked (30)");
}

#[test]
fn rto_seeds_inflight_lo_with_the_cwnd_before_it() {
    let mut s = Synth::new();
    s.enter_cruise();
    let cwnd = s.tp.snd_cwnd;
    s.bbr.ssthresh(&s.tp);
    s.bbr.set_state(&mut s.tp, CaState::Loss);
    s.tp.snd_cwnd = 1;
    assert_eq!(s.bbr.inflight_lo(), cwnd);
    s.bbr.set_state(&mut s.tp, CaState::Open);
    assert_eq!(s.tp.snd_cwnd, cwnd, "bbr_exit_loss_recovery restores prior_cwnd");
}

#[test]
fn undo_restores_the_bounds_saved_when_recovery_began() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.bbr.inflight_hi = 300;
    s.bbr.ssthresh(&s.tp);
    s.bbr.inflight_hi = 100;
    s.bbr.inflight_lo = 80;
    let prior = s.bbr.prior_cwnd;
    assert_eq!(s.bbr.undo_cwnd(&mut s.tp), prior);
    assert_eq!(s.bbr.inflight_hi(), 300);
    assert_eq!(s.bbr.inflight_lo(), NO_INFLIGHT_BOUND, "max with the unset bound");
}
