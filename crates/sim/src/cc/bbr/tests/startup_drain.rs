//! STARTUP gains, full-pipe detection (bbr_check_full_bw_reached) and
//! DRAIN (bbr_check_drain).

use super::*;

/// bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1 (2/ln 2) for both pacing and
/// cwnd in STARTUP; bbr_drain_gain = BBR_UNIT * 1000 / 2885.
#[test]
fn startup_pacing_gain_is_2_885() {
    assert_eq!(BBR_HIGH_GAIN, 739);
    assert_eq!(BBR_DRAIN_GAIN, 88);
    let two_over_ln2 = 2.0 / std::f64::consts::LN_2;
    assert!((f64::from(BBR_HIGH_GAIN) / 256.0 - two_over_ln2).abs() < 0.005);

    let mut s = Synth::new();
    assert_eq!(s.bbr.mode(), Mode::Startup);
    assert_eq!(s.bbr.state_label(&s.tp), "startup");
    assert_eq!(s.bbr.pacing_gain(), BBR_HIGH_GAIN);
    assert_eq!(s.bbr.cwnd_gain(), BBR_HIGH_GAIN);

    // bbr_init_pacing_rate_from_rtt(): no RTT yet, so 10 packets per
    // nominal 1 ms times high_gain, less the 1% margin.
    let expected = 10.0 * f64::from(MSS) / 1e-3 * 739.0 / 256.0 * 0.99;
    let got = s.pacing_bytes() as f64;
    assert!((got / expected - 1.0).abs() < 1e-4, "init pacing {got} vs {expected}");

    // Each STARTUP ACK keeps the high gain and paces at 2.885 x max_bw.
    s.ack(Ack::round(PKTS_PER_RTT));
    assert_eq!(s.bbr.pacing_gain(), BBR_HIGH_GAIN);
    let bw_bytes = 10_000.0 * f64::from(MSS); // 10 pkts/ms
    let want = bw_bytes * 739.0 / 256.0 * 0.99;
    let got = s.pacing_bytes() as f64;
    // The pacing rate only rises before full bw: max(init-from-srtt, gain*bw).
    assert!(got >= want * 0.9999, "startup pacing {got} < {want}");
}

/// bbr_check_full_bw_reached(): full pipe after 3 consecutive rounds in
/// which max_bw stayed below bbr_full_bw_thresh (1.25) x full_bw.
#[test]
fn startup_exits_after_three_rounds_without_25_percent_growth() {
    let mut s = Synth::new();
    // Growing by 30% per round never fills the pipe.
    let mut d = 100.0f64;
    for _ in 0..6 {
        s.ack(Ack::round(d as i64));
        assert_eq!(s.bbr.mode(), Mode::Startup);
        assert_eq!(s.bbr.full_bw_cnt, 0);
        d *= 1.3;
    }
    // Growth is measured against full_bw, the bw at the last >= 25% jump:
    // +7% per round stays below 1.25x for three rounds (1.07^3 = 1.225).
    let mut slow = Synth::new();
    let mut d2 = 100.0f64;
    for _ in 0..20 {
        // +20% per round is not a stall: 1.2^2 = 1.44 re-arms full_bw.
        slow.ack(Ack::round(d2 as i64));
        d2 *= 1.2;
    }
    assert_eq!(slow.bbr.mode(), Mode::Startup);
    d = d / 1.3 * 1.07;
    for round in 1..=3u32 {
        s.ack(Ack::round(d as i64));
        d *= 1.07;
        if round < 3 {
            assert_eq!(s.bbr.mode(), Mode::Startup, "round {round}");
            assert_eq!(s.bbr.full_bw_cnt, round);
            assert!(!s.bbr.full_bw_reached());
        }
    }
    assert!(s.bbr.full_bw_reached());
    // In flight (1000) is above the BDP, so the flow is now draining.
    assert_eq!(s.bbr.mode(), Mode::Drain);
    assert_eq!(s.bbr.pacing_gain(), BBR_DRAIN_GAIN);
    assert_eq!(s.bbr.cwnd_gain(), BBR_HIGH_GAIN);
}

/// "skipped while app-limited": app-limited rounds neither count towards
/// nor reset full-pipe detection.
#[test]
fn startup_full_bw_detection_skips_app_limited_rounds() {
    let mut s = Synth::new();
    s.ack(Ack::round(PKTS_PER_RTT));
    for _ in 0..10 {
        s.ack(Ack::round(PKTS_PER_RTT).app_limited());
    }
    assert_eq!(s.bbr.full_bw_cnt, 0);
    assert_eq!(s.bbr.mode(), Mode::Startup);
    // Only non-app-limited flat rounds count.
    for _ in 0..3 {
        s.ack(Ack::round(PKTS_PER_RTT));
    }
    assert!(s.bbr.full_bw_reached());
}

/// bbr_check_drain(): DRAIN sets ssthresh to bbr_inflight(max_bw, 1.0) and
/// ends (entering PROBE_BW) once packets in flight are <= that target.
#[test]
fn drain_ends_when_inflight_below_bdp() {
    let mut s = Synth::new();
    for _ in 0..4 {
        s.ack(Ack::round(PKTS_PER_RTT).in_flight(1000));
    }
    assert_eq!(s.bbr.mode(), Mode::Drain);
    assert_eq!(s.bbr.state_label(&s.tp), "drain");
    let target = s.bbr.inflight(&s.tp, s.bbr.max_bw(), BBR_UNIT);
    // BDP = ceil(10 pkts/ms x 20 ms) = 200, plus 3 TSO bursts, rounded up
    // to an even number (bbr_quantization_budget).
    assert_eq!(s.bbr.bdp(s.bbr.max_bw(), BBR_UNIT), 200);
    let tso = Bbr::tso_segs_goal(&s.tp);
    assert_eq!(target, (200 + 3 * tso + 1) & !1);
    // ssthresh was set on entering DRAIN, while the TSO budget still used
    // the STARTUP pacing rate: 2.885 x 14.48 MB/s x 0.99 >> 10 = 27 segs.
    assert_eq!(s.tp.snd_ssthresh, (200 + 3 * 27 + 1) & !1);

    // Above the target: still draining, pacing at 1/high_gain.
    for n in [900, 500, target + 1] {
        s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(n).dt(Time::from_millis(1)));
        assert_eq!(s.bbr.mode(), Mode::Drain, "in flight {n}");
    }
    // At the target: the queue is estimated drained.
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(target).dt(Time::from_millis(1)));
    assert_eq!(s.bbr.mode(), Mode::ProbeBw);
    assert_eq!(s.bbr.cwnd_gain(), BBR_CWND_GAIN);
}

/// bbr_set_cwnd(): before the pipe is full, cwnd only grows (by the acked
/// count, while below target); it is not cut to the target.
#[test]
fn startup_cwnd_grows_by_acked_and_is_never_cut() {
    let mut s = Synth::new();
    s.tp.snd_cwnd = 10;
    s.ack(Ack::round(20).acked(10));
    assert_eq!(s.tp.snd_cwnd, 20);
    // A huge cwnd above target is kept until full bw is reached.
    s.tp.snd_cwnd = 5000;
    s.ack(Ack::round(20).acked(10));
    assert_eq!(s.tp.snd_cwnd, 5000);
}

/// bbr_set_cwnd(): "done: tcp_snd_cwnd_set(tp, min(cwnd, tp->snd_cwnd_clamp))"
/// — STARTUP's 2/ln2 growth stops at a TCP_BPF_SNDCWND_CLAMP.
#[test]
fn bbr_cwnd_capped_by_clamp() {
    let mut s = Synth::new();
    s.tp.set_cwnd_clamp(40);
    let mut most = 0;
    for _ in 0..12 {
        s.ack(Ack::round(PKTS_PER_RTT).in_flight(40));
        most = most.max(s.tp.snd_cwnd);
    }
    assert_eq!(most, 40, "grows to the clamp and no further");
    assert_eq!(s.tp.snd_cwnd, 40);
}
