//! The max-bw filter (bbr_update_bw, minmax_running_max over bbr_bw_rtts
//! rounds) and packet-timed round counting.

use super::*;

/// bbr_bw_rtts = CYCLE_LEN + 2 = 10: a max-bw sample is remembered while
/// fewer than 11 rounds have passed, and forgotten on the 11th.
#[test]
fn max_bw_filter_forgets_after_10_rounds() {
    assert_eq!(BBR_BW_RTTS, 10);
    let mut s = Synth::new();
    s.ack(Ack::round(PKTS_PER_RTT));
    s.ack(Ack::round(2 * PKTS_PER_RTT)); // the peak
    let peak_round = s.bbr.rtt_cnt();
    let peak = s.bbr.max_bw();
    assert_eq!(peak, 2 * BW_10_PER_MS);
    for k in 1..=10 {
        s.ack(Ack::round(PKTS_PER_RTT));
        assert_eq!(s.bbr.rtt_cnt(), peak_round + k);
        assert_eq!(s.bbr.max_bw(), peak, "{k} rounds after the peak");
    }
    s.ack(Ack::round(PKTS_PER_RTT));
    assert_eq!(s.bbr.rtt_cnt(), peak_round + 11);
    assert_eq!(s.bbr.max_bw(), BW_10_PER_MS, "peak forgotten 11 rounds later");
}

/// bbr_update_bw(): "we filter out app-limited samples unless they describe
/// the path bw at least as well as our bw model".
#[test]
fn app_limited_samples_do_not_lower_max_bw() {
    let mut s = Synth::new();
    s.ack(Ack::round(PKTS_PER_RTT));
    assert_eq!(s.bbr.max_bw(), BW_10_PER_MS);
    // Far more than 10 rounds of low app-limited samples: the model holds.
    for _ in 0..30 {
        s.ack(Ack::round(PKTS_PER_RTT / 4).app_limited());
        assert_eq!(s.bbr.max_bw(), BW_10_PER_MS);
    }
    // An app-limited sample above the model is taken.
    s.ack(Ack::round(2 * PKTS_PER_RTT).app_limited());
    assert_eq!(s.bbr.max_bw(), 2 * BW_10_PER_MS);
}

/// bbr_update_bw(): "if (rs->delivered < 0 || rs->interval_us <= 0)
/// return; /* Not a valid observation */" — no sample, no round.
#[test]
fn invalid_rate_samples_are_ignored() {
    let mut s = Synth::new();
    s.ack(Ack::round(PKTS_PER_RTT));
    let rounds = s.bbr.rtt_cnt();
    let mut a = Ack::round(-1);
    s.ack(a);
    a = Ack::round(10 * PKTS_PER_RTT);
    a.interval = Time::ZERO;
    s.ack(a);
    assert_eq!(s.bbr.rtt_cnt(), rounds);
    assert_eq!(s.bbr.max_bw(), BW_10_PER_MS);
}

/// bbr_update_bw(): a round starts when rs->prior_delivered reaches
/// next_rtt_delivered (tp->delivered when the previous round started),
/// computed inside BBR rather than taken from ConnState::round_count.
#[test]
fn rounds_are_counted_from_prior_delivered() {
    let mut s = Synth::new();
    s.tp.round_count = 999; // must be ignored
    s.ack(Ack::round(PKTS_PER_RTT).acked(10));
    assert_eq!(s.bbr.rtt_cnt(), 1);
    assert_eq!(s.bbr.next_rtt_delivered, 10);
    // Packets sent before delivered reached 10 end no round.
    for prior in [0u64, 5, 9] {
        s.tp.delivered += 1;
        s.tp.now += Time::from_millis(1);
        let rs = RateSample {
            prior_delivered: prior,
            delivered: 5,
            interval: RTT,
            acked_sacked: 1,
            ..RateSample::default()
        };
        s.bbr.cong_control(&mut s.tp, &rs);
        assert_eq!(s.bbr.rtt_cnt(), 1, "prior_delivered {prior}");
    }
    // The first packet sent at delivered == 10 ends the round.
    s.tp.delivered += 1;
    let rs = RateSample {
        prior_delivered: 10,
        delivered: 5,
        interval: RTT,
        acked_sacked: 1,
        ..RateSample::default()
    };
    s.bbr.cong_control(&mut s.tp, &rs);
    assert_eq!(s.bbr.rtt_cnt(), 2);
    assert_eq!(s.bbr.next_rtt_delivered, s.tp.delivered);
}
