//! tcp_congestion_ops hooks (bbr_init, bbr_cwnd_event, registration).

use super::*;
use crate::cc::{by_name, CwndEvent, AVAILABLE};
use crate::units::Rate;

/// bbr_init(): ssthresh infinite, STARTUP, SK_PACING_NEEDED; min_rtt from
/// tcp_min_rtt(); BBR owns cwnd and pacing (cong_control).
#[test]
fn init_requests_pacing_and_owns_cwnd() {
    let mut tp = ConnState::new(MSS);
    tp.snd_ssthresh = 20;
    tp.min_rtt = Time::from_micros(12_345);
    let mut b = Bbr::default();
    b.init(&mut tp);
    assert!(tp.pacing_enabled);
    assert_eq!(tp.snd_ssthresh, crate::cc::TCP_INFINITE_SSTHRESH);
    assert!(b.owns_cwnd_and_pacing());
    assert_eq!(b.min_rtt_us(), 12_345);
    assert_eq!(b.mode(), Mode::Startup);
    assert_eq!(b.name(), "bbr");
    // No RTT sample yet: bbr_bdp() caps at TCP_INIT_CWND.
    let fresh = Synth::new();
    assert_eq!(fresh.bbr.min_rtt_us(), u32::MAX);
    assert_eq!(fresh.bbr.bdp(BW_10_PER_MS, BBR_UNIT), 10);
}

#[test]
fn registered_as_bbr() {
    assert!(AVAILABLE.contains(&"bbr"));
    let cc = by_name("bbr").expect("bbr registered");
    assert_eq!(cc.name(), "bbr");
    assert!(cc.owns_cwnd_and_pacing());
    assert_eq!(cc.state_label(&crate::cc::ConnState::new(1448)), "startup");
}

/// bbr_cwnd_event(CA_EVENT_TX_START) while app-limited: idle_restart, and
/// in PROBE_BW pace at bw x 1.0 ("Avoid pointless buffer overflows").
#[test]
fn tx_start_after_idle_paces_at_bw_in_probe_bw() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.pin_phase(0);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)));
    let probing = s.pacing_bytes();
    assert_eq!(probing, Bbr::rate_bytes_per_sec(&s.tp, BW_10_PER_MS, 320));

    // Not app-limited: nothing happens.
    s.tp.packets_out = 0;
    s.bbr.cwnd_event(&mut s.tp, CwndEvent::TxStart);
    assert!(!s.bbr.idle_restart);
    assert_eq!(s.pacing_bytes(), probing);

    s.tp.app_limited = s.tp.delivered + 1;
    s.tp.now += Time::from_millis(500);
    s.bbr.cwnd_event(&mut s.tp, CwndEvent::TxStart);
    assert!(s.bbr.idle_restart);
    assert_eq!(s.pacing_bytes(), 14_335_186, "bw x 1.0 x 99%");
    // Other events are ignored.
    s.bbr.cwnd_event(&mut s.tp, CwndEvent::Loss);
    s.bbr.cwnd_event(&mut s.tp, CwndEvent::CwndRestart);
    assert_eq!(s.pacing_bytes(), 14_335_186);
    assert_eq!(s.tp.pacing_rate, Rate(14_335_186 * 8));
}

/// bbr_update_min_rtt(): no PROBE_RTT entry while restarting from idle;
/// "Restart after idle ends only once we process a new S/ACK for data".
#[test]
fn idle_restart_defers_probe_rtt_until_data_acked() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.tp.app_limited = s.tp.delivered + 1000;
    s.tp.packets_out = 0;
    s.tp.now += Time::from_secs(11);
    s.bbr.cwnd_event(&mut s.tp, CwndEvent::TxStart);
    let mut a = Ack::round(0).dt(Time::from_millis(1)).acked(0).app_limited();
    a.rtt = None;
    s.ack(a);
    assert_eq!(s.bbr.mode(), Mode::ProbeBw, "idle restart: no PROBE_RTT");
    assert!(s.bbr.idle_restart);
    let mut a = Ack::round(10).dt(Time::from_millis(1)).app_limited();
    a.rtt = None;
    s.ack(a);
    assert!(!s.bbr.idle_restart, "data acked");
    assert_eq!(s.bbr.mode(), Mode::ProbeBw);
    s.ack(Ack::round(10).dt(Time::from_millis(1)).app_limited().rtt(RTT.mul(2)));
    assert_eq!(s.bbr.mode(), Mode::ProbeRtt);
}
