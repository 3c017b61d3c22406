//! Loss recovery (bbr_ssthresh, bbr_save_cwnd,
//! bbr_set_cwnd_to_recover_or_restore, bbr_set_state, bbr_undo_cwnd).

use super::*;

fn in_probe_bw_at_steady_cwnd() -> Synth {
    let mut s = Synth::new();
    s.enter_probe_bw();
    for _ in 0..3 {
        s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)).in_flight(300));
    }
    s
}

/// Enters fast recovery as the engine does: ssthresh (saves cwnd), then
/// set_state(Recovery) and ca_state = Recovery.
fn enter_recovery(s: &mut Synth) {
    let ssthresh = s.bbr.ssthresh(&s.tp);
    s.tp.snd_ssthresh = ssthresh;
    s.bbr.set_state(&mut s.tp, CaState::Recovery);
    s.tp.ca_state = CaState::Recovery;
}

/// bbr_set_cwnd_to_recover_or_restore(): "On the first round of recovery,
/// we follow the packet conservation principle: send P packets per P
/// packets acked": cwnd = in_flight + acked at the start, then
/// max(cwnd - losses, in_flight + acked) until the round ends; then
/// slow start (cwnd + acked) toward the target.
#[test]
fn packet_conservation_in_first_recovery_round() {
    let mut s = in_probe_bw_at_steady_cwnd();
    let cwnd0 = s.tp.snd_cwnd;
    enter_recovery(&mut s);
    assert_eq!(s.bbr.prior_cwnd, cwnd0);

    let ms = Time::from_millis(1);
    // First recovery ACK: acked 2, 1 lost, 150 left in flight.
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).acked(2).losses(1).in_flight(150));
    assert!(s.bbr.packet_conservation);
    assert_eq!(s.tp.snd_cwnd, 152, "in_flight + acked");
    assert_eq!(s.bbr.next_rtt_delivered, s.tp.delivered, "round restarted");

    // Same round: P packets out per P acked.
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).acked(3).in_flight(149));
    assert_eq!(s.tp.snd_cwnd, 152);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).acked(1).losses(2).in_flight(140));
    assert_eq!(s.tp.snd_cwnd, 150, "max(cwnd - losses, in_flight + acked)");
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).acked(1).in_flight(100));
    assert_eq!(s.tp.snd_cwnd, 150, "never below cwnd");

    // The next round: conservation off, slow start by acked.
    s.ack(Ack::round(PKTS_PER_RTT).dt(ms).acked(5).in_flight(100));
    assert!(!s.bbr.packet_conservation);
    assert_eq!(s.tp.snd_cwnd, 155);
}

/// bbr_set_cwnd_to_recover_or_restore(): "Exiting loss recovery; restore
/// cwnd saved before recovery."
#[test]
fn cwnd_restored_after_recovery() {
    let mut s = in_probe_bw_at_steady_cwnd();
    let cwnd0 = s.tp.snd_cwnd;
    enter_recovery(&mut s);
    let ms = Time::from_millis(1);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).acked(2).losses(10).in_flight(50));
    assert_eq!(s.tp.snd_cwnd, 52);

    s.tp.ca_state = CaState::Open;
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).acked(2).in_flight(50));
    // max(cwnd, prior_cwnd), then min(cwnd + acked, target).
    assert!(
        (cwnd0..=cwnd0 + 2).contains(&s.tp.snd_cwnd),
        "cwnd {} restored from {cwnd0}",
        s.tp.snd_cwnd
    );
    assert!(!s.bbr.packet_conservation);
    assert_eq!(s.bbr.prev_ca_state, CaState::Open);
}

/// bbr_ssthresh(): "Entering loss recovery, so save cwnd" and return the
/// current ssthresh unchanged; bbr_save_cwnd() keeps the max while cwnd is
/// already cut by recovery.
#[test]
fn ssthresh_saves_cwnd_and_returns_current_ssthresh() {
    let mut s = in_probe_bw_at_steady_cwnd();
    s.tp.snd_ssthresh = 1234;
    s.tp.snd_cwnd = 300;
    assert_eq!(s.bbr.ssthresh(&s.tp), 1234);
    assert_eq!(s.bbr.prior_cwnd, 300);
    // In recovery (prev_ca_state >= Recovery) a smaller cwnd is not saved.
    s.bbr.prev_ca_state = CaState::Recovery;
    s.tp.snd_cwnd = 100;
    s.bbr.ssthresh(&s.tp);
    assert_eq!(s.bbr.prior_cwnd, 300);
}

/// bbr_set_state(TCP_CA_Loss): prev_ca_state = Loss, full_bw = 0,
/// round_start = 1 ("treat RTO like end of a round") and an LT sample
/// with one loss; after the RTO, cwnd is restored on return to Open.
#[test]
fn rto_loss_state_resets_full_bw_and_starts_lt_sampling() {
    let mut s = in_probe_bw_at_steady_cwnd();
    let cwnd0 = s.tp.snd_cwnd;
    s.bbr.ssthresh(&s.tp);
    s.bbr.set_state(&mut s.tp, CaState::Loss);
    s.tp.ca_state = CaState::Loss;
    assert_eq!(s.bbr.prev_ca_state, CaState::Loss);
    assert_eq!(s.bbr.full_bw, 0);
    assert!(s.bbr.round_start);
    assert!(s.bbr.lt_is_sampling, "the RTO's loss starts LT sampling");
    s.tp.snd_cwnd = 1; // tcp_enter_loss()
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)).acked(1).in_flight(1));
    // min(1 + acked, target), then max(.., bbr_cwnd_min_target).
    assert_eq!(s.tp.snd_cwnd, 4, "at least 4 after the RTO");
    s.tp.ca_state = CaState::Open;
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)).acked(1).in_flight(1));
    assert!((cwnd0..=cwnd0 + 1).contains(&s.tp.snd_cwnd));
}

/// bbr_undo_cwnd(): "spurious slow-down; reset full pipe detection" and LT
/// sampling; cwnd is returned as is.
#[test]
fn undo_cwnd_resets_full_bw_and_lt_sampling() {
    let mut s = Synth::new();
    s.ack(Ack::round(PKTS_PER_RTT));
    s.ack(Ack::round(PKTS_PER_RTT).losses(5));
    s.ack(Ack::round(PKTS_PER_RTT));
    assert_ne!(s.bbr.full_bw, 0);
    assert_eq!(s.bbr.full_bw_cnt, 2);
    assert!(s.bbr.lt_is_sampling);
    s.tp.snd_cwnd = 77;
    assert_eq!(s.bbr.undo_cwnd(&mut s.tp), 77);
    assert_eq!((s.bbr.full_bw, s.bbr.full_bw_cnt), (0, 0));
    assert!(!s.bbr.lt_is_sampling && !s.bbr.lt_use_bw && s.bbr.lt_bw == 0);
}
