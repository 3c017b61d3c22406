//! bbr_update_min_rtt, bbr_probe_rtt_cwnd, bbr_check_probe_rtt_done,
//! bbr_exit_probe_rtt.

use super::*;

/// Cruises with RTT samples above the min until PROBE_RTT starts.
fn until_probe_rtt(s: &mut Synth) -> u32 {
    let mut rounds = 0;
    while s.bbr.mode() != Mode::ProbeRtt {
        let mut a = Ack::round(PKTS_PER_RTT).in_flight(150);
        a.rtt = Some(Time::from_millis(25)); // queueing; the sample's interval stays 20 ms
        s.ack(a);
        rounds += 1;
        assert!(rounds < 1000);
    }
    rounds
}

#[test]
fn probe_rtt_starts_when_the_5_s_min_rtt_window_expires() {
    let mut s = Synth::new();
    s.enter_cruise();
    let start = s.tp.now;
    until_probe_rtt(&mut s);
    let waited = s.tp.now.saturating_sub(start);
    assert!(waited <= Time::from_millis(5_100), "waited {waited}");
    assert!(waited >= Time::from_millis(4_800), "waited {waited}");
    assert_eq!(s.bbr.min_rtt_us, 20_000, "the 10 s min_rtt filter still holds 20 ms");
}

#[test]
fn probe_rtt_uses_half_bdp_cwnd() {
    let mut s = Synth::new();
    s.enter_cruise();
    until_probe_rtt(&mut s);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(150).dt(Time::from_millis(1)));
    assert_eq!(s.bbr.probe_rtt_cwnd(), 101, "ceil(0.5 x BDP of 201)");
    assert_eq!(s.tp.snd_cwnd, 101);
    assert_eq!(s.bbr.state_label(&s.tp), "probe_rtt");
}

#[test]
fn probe_rtt_lasts_200_ms_and_a_round_then_cruises() {
    let mut s = Synth::new();
    s.enter_cruise();
    until_probe_rtt(&mut s);
    let cwnd_before = s.bbr.prior_cwnd;
    // In-flight down to the PROBE_RTT cwnd: the 200 ms clock starts.
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(100).dt(Time::from_millis(1)));
    assert!(s.bbr.probe_rtt_done_stamp != 0);
    for _ in 0..9 {
        s.ack(Ack::round(100).in_flight(100).dt(Time::from_millis(20)));
        assert_eq!(s.bbr.mode(), Mode::ProbeRtt, "not before 200 ms");
    }
    s.ack(Ack::round(100).in_flight(100).dt(Time::from_millis(20)));
    s.ack(Ack::round(100).in_flight(100).dt(Time::from_millis(20)));
    assert_eq!(s.bbr.mode(), Mode::ProbeBw);
    assert_eq!(s.bbr.phase(), Phase::Cruise, "exit goes through DOWN to CRUISE");
    assert!(s.tp.snd_cwnd >= cwnd_before.min(200), "cwnd restored");
}

#[test]
fn a_lower_rtt_sample_postpones_probe_rtt() {
    let mut s = Synth::new();
    s.enter_cruise();
    for i in 0..300 {
        // every 4 s a sample at the min RTT refreshes probe_rtt_min_stamp
        let rtt = if i % 200 == 0 { Time::from_millis(19 - i / 200) } else { Time::from_millis(25) };
        let mut a = Ack::round(PKTS_PER_RTT).in_flight(150);
        a.rtt = Some(rtt);
        s.ack(a);
        assert_ne!(s.bbr.mode(), Mode::ProbeRtt, "round {i}");
    }
}
