//! min_rtt filter and PROBE_RTT (bbr_update_min_rtt,
//! bbr_check_probe_rtt_done).

use super::*;

/// bbr_update_min_rtt(): when min_rtt has not been refreshed for
/// bbr_min_rtt_win_sec (10 s), enter PROBE_RTT, save cwnd and cap it at
/// bbr_cwnd_min_target (4); once in flight <= 4, stay for
/// bbr_probe_rtt_mode_ms (200 ms) and at least one round, then restore
/// the saved cwnd and return to PROBE_BW.
#[test]
fn probe_rtt_sets_cwnd_to_4_for_200ms_after_min_rtt_expires_10s() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    let ms = Time::from_millis(1);
    // Let cwnd settle at its PROBE_BW target.
    for _ in 0..10 {
        s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).acked(100).in_flight(300));
    }
    let stamp = s.bbr.min_rtt_stamp; // jiffies (ms) of the last 20 ms RTT
    let steady_cwnd = s.tp.snd_cwnd;
    assert!(steady_cwnd > 400);

    // RTT samples above min_rtt (a standing queue) do not refresh it.
    let slow = RTT + ms;
    while Bbr::jiffies(&s.tp) + 10 <= stamp + 10_000 {
        s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).in_flight(300).rtt(slow));
        assert_ne!(s.bbr.mode(), Mode::ProbeRtt, "entered at {}", s.tp.now);
        assert_eq!(s.bbr.min_rtt_us(), 20_000);
    }
    // After(jiffies, stamp + 10 s): PROBE_RTT.
    let cwnd_before = s.tp.snd_cwnd;
    s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).in_flight(300).rtt(slow));
    assert!(Bbr::jiffies(&s.tp) > stamp + 10_000);
    assert_eq!(s.bbr.mode(), Mode::ProbeRtt);
    assert_eq!(s.bbr.state_label(&s.tp), "probe_rtt");
    assert_eq!(s.tp.snd_cwnd, 4);
    assert_eq!((s.bbr.pacing_gain(), s.bbr.cwnd_gain()), (BBR_UNIT, BBR_UNIT));
    assert_eq!(s.bbr.prior_cwnd, cwnd_before, "cwnd saved");
    assert_eq!(s.bbr.min_rtt_us(), 21_000, "expired filter takes the new RTT");
    assert_ne!(s.tp.app_limited, 0, "PROBE_RTT marks samples app-limited");

    // In flight not yet down to 4: the 200 ms have not started.
    s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).in_flight(100).rtt(slow));
    assert_eq!(s.bbr.probe_rtt_done_stamp, 0);
    // In flight at 4: the 200 ms start now.
    s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).in_flight(4).rtt(slow));
    let start = s.tp.now;
    assert_eq!(s.bbr.probe_rtt_done_stamp, Bbr::jiffies(&s.tp) + 200);
    // Rounds keep completing, but for 200 ms cwnd stays at 4.
    while s.tp.now + ms.mul(10) <= start + ms.mul(200) {
        s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).in_flight(4).rtt(slow));
        assert_eq!(s.bbr.mode(), Mode::ProbeRtt, "left early at {}", s.tp.now);
        assert_eq!(s.tp.snd_cwnd, 4);
    }
    s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).in_flight(4).rtt(slow));
    assert_eq!(s.tp.now - start, ms.mul(210), "first ACK after 200 ms");
    assert_eq!(s.bbr.mode(), Mode::ProbeBw, "full pipe: back to PROBE_BW");
    // cwnd = max(cwnd, prior_cwnd), then bbr_set_cwnd's min(cwnd + acked,
    // target); the target grew with the new 21 ms min_rtt.
    assert!(
        (cwnd_before..=cwnd_before + 10).contains(&s.tp.snd_cwnd),
        "cwnd {} restored from {cwnd_before}",
        s.tp.snd_cwnd
    );
    assert_eq!(s.bbr.min_rtt_stamp, Bbr::jiffies(&s.tp), "next PROBE_RTT in 10 s");
}

/// bbr_update_min_rtt(): "Maintain min packets in flight for max(200 ms,
/// 1 round)" — after 200 ms PROBE_RTT still waits for a round to end.
#[test]
fn probe_rtt_lasts_at_least_one_round() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    let ms = Time::from_millis(1);
    // 10 s + 1 ms later, with no RTT sample in between.
    s.ack(Ack::round(PKTS_PER_RTT).dt(Time::from_secs(10) + ms).in_flight(4).rtt(RTT + ms));
    assert_eq!(s.bbr.mode(), Mode::ProbeRtt);
    assert_ne!(s.bbr.probe_rtt_done_stamp, 0);
    // 300 ms of ACKs for packets sent before the round began.
    for _ in 0..30 {
        s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms.mul(10)).in_flight(4));
        assert_eq!(s.bbr.mode(), Mode::ProbeRtt);
    }
    s.ack(Ack::round(PKTS_PER_RTT).dt(ms.mul(10)).in_flight(4));
    assert_eq!(s.bbr.mode(), Mode::ProbeBw);
}

/// bbr_check_probe_rtt_done() -> bbr_reset_mode(): without a full pipe,
/// PROBE_RTT returns to STARTUP.
#[test]
fn probe_rtt_returns_to_startup_if_pipe_not_full() {
    let mut s = Synth::new();
    s.ack(Ack::round(20).in_flight(10));
    let ms = Time::from_millis(1);
    s.tp.now += Time::from_secs(11);
    s.ack(Ack::round(20).dt(ms).in_flight(4).rtt(RTT + ms));
    assert_eq!(s.bbr.mode(), Mode::ProbeRtt);
    s.ack(Ack::round(20).dt(ms.mul(300)).in_flight(4));
    assert_eq!(s.bbr.mode(), Mode::Startup);
}

/// bbr_update_min_rtt(): a sample at or below min_rtt refreshes the stamp,
/// so PROBE_RTT is not entered while the path keeps showing its min RTT.
#[test]
fn min_rtt_refreshed_by_equal_sample_postpones_probe_rtt() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    for _ in 0..1200 {
        s.ack(Ack::round(PKTS_PER_RTT).dt(Time::from_millis(10)).in_flight(300));
        assert_ne!(s.bbr.mode(), Mode::ProbeRtt);
    }
}
