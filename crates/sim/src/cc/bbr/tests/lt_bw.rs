//! Long-term bandwidth / policer detection (bbr_lt_bw_sampling,
//! bbr_lt_bw_interval_done).

use super::*;

/// One policed round: 100 packets delivered and 30 lost per 20 ms (loss
/// rate 30/100 >= 50/256), i.e. a policed rate of 5 pkts/ms.
fn policed_round(s: &mut Synth, losses: u32) {
    s.ack(Ack::round(PKTS_PER_RTT / 2).acked(100).losses(losses).in_flight(300));
}

/// bbr_lt_bw_sampling(): two consecutive 4-round intervals, each ending in
/// a loss with loss rate >= 20% and with bw within 1/8 of each other,
/// make BBR use lt_bw (their average) with pacing_gain 1; after
/// bbr_lt_bw_max_rtts (48) PROBE_BW rounds it goes back to max_bw and
/// restarts gain cycling.
#[test]
fn lt_bw_detects_policer_and_uses_lt_bw_for_48_rounds() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    assert_eq!(s.bbr.max_bw(), BW_10_PER_MS);

    // Round 1: the first loss starts sampling (lt_rtt_cnt = 1).
    policed_round(&mut s, 30);
    assert!(s.bbr.lt_is_sampling);
    assert_eq!(s.bbr.lt_rtt_cnt, 1);
    // Rounds 2-4 close the first interval: 300 delivered in 60 ms.
    for _ in 2..=4 {
        policed_round(&mut s, 30);
    }
    let five_per_ms = (300u64 << 24) / 60_000;
    assert_eq!(s.bbr.lt_bw, five_per_ms, "first interval's bw");
    assert!(!s.bbr.lt_use_bw(), "one interval is not enough");
    assert_eq!(s.bbr.lt_rtt_cnt, 0);
    // Rounds 5-8: a second, consistent interval.
    for _ in 5..=7 {
        policed_round(&mut s, 30);
        assert!(!s.bbr.lt_use_bw());
    }
    policed_round(&mut s, 30);
    assert!(s.bbr.lt_use_bw(), "policer detected");
    assert_eq!(s.bbr.lt_bw, five_per_ms, "average of the two intervals");
    assert_eq!(s.bbr.bw(), five_per_ms, "bbr_bw() is lt_bw");
    assert!(s.bbr.max_bw() > five_per_ms, "max filter still higher");
    assert_eq!(s.bbr.pacing_gain(), BBR_UNIT);
    let want = Bbr::rate_bytes_per_sec(&s.tp, five_per_ms, BBR_UNIT);
    assert_eq!(s.pacing_bytes(), want, "paced at lt_bw x 1.0");

    // 47 more PROBE_BW rounds keep lt_bw and gain 1 in every phase.
    for r in 1..BBR_LT_BW_MAX_RTTS {
        policed_round(&mut s, 0);
        assert!(s.bbr.lt_use_bw(), "round {r}");
        assert_eq!(s.bbr.pacing_gain(), BBR_UNIT, "round {r}");
    }
    // The 48th round stops using lt_bw and restarts gain cycling.
    policed_round(&mut s, 0);
    assert!(!s.bbr.lt_use_bw());
    assert_eq!(s.bbr.lt_bw, 0);
    assert!(!s.bbr.lt_is_sampling);
    assert_eq!(s.bbr.mode(), Mode::ProbeBw);
}

/// bbr_lt_loss_thresh = 50/256: intervals with fewer losses never end.
#[test]
fn lt_bw_ignores_intervals_with_loss_rate_below_threshold() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    // 19/100 < 50/256 = 19.5%.
    for _ in 0..16 {
        policed_round(&mut s, 19);
        assert_eq!(s.bbr.lt_bw, 0);
    }
    // Interval longer than 4 * bbr_lt_intvl_min_rtts: sampling reset.
    policed_round(&mut s, 19);
    assert_eq!(s.bbr.lt_rtt_cnt, 0);
    assert!(!s.bbr.lt_is_sampling);
}

/// bbr_lt_bw_interval_done(): intervals whose bw differ by more than 1/8
/// (and more than 4 kbit/s) are not "consistent": the newer one becomes
/// the reference.
#[test]
fn lt_bw_needs_consistent_intervals() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    for _ in 0..4 {
        policed_round(&mut s, 30);
    }
    let first = s.bbr.lt_bw;
    // Second interval delivers 100 -> 150 packets per round (+50%).
    for _ in 0..4 {
        s.ack(Ack::round(PKTS_PER_RTT).acked(150).losses(45).in_flight(300));
    }
    assert!(!s.bbr.lt_use_bw());
    assert!(s.bbr.lt_bw > first + first / 8);
    // A third interval consistent with the second: policed.
    for _ in 0..4 {
        s.ack(Ack::round(PKTS_PER_RTT).acked(150).losses(45).in_flight(300));
    }
    assert!(s.bbr.lt_use_bw());
}

/// bbr_lt_bw_sampling(): "To avoid underestimates, reset sampling if we
/// run out of data."
#[test]
fn lt_bw_sampling_reset_by_app_limited_sample() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    policed_round(&mut s, 30);
    assert!(s.bbr.lt_is_sampling);
    s.ack(Ack::round(PKTS_PER_RTT).app_limited());
    assert!(!s.bbr.lt_is_sampling);
}
