//! Rule-named tests of tcp_nv.c's rules (`cc::nv`).

use super::*;
use crate::units::Time;

const MSS: u32 = 1000;

fn started(cwnd: u32, ssthresh: u32) -> (Nv, ConnState) {
    let mut tp = ConnState::new(MSS);
    let mut nv = Nv::with_seed(1);
    nv.init(&mut tp);
    (tp.snd_cwnd, tp.snd_ssthresh, tp.is_cwnd_limited) = (cwnd, ssthresh, true);
    (nv, tp)
}

/// An ACK with an RTT of `us` and `segs` segments delivered since the
/// acked packet was sent.
fn ack(nv: &mut Nv, tp: &mut ConnState, us: u64, segs: u32) {
    let s = AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(us)), in_flight: segs * MSS };
    nv.pkts_acked(tp, &s);
}

#[test]
fn nv_params_default_to_linux() {
    let p = NvParams::default();
    assert_eq!((p.pad, p.pad_buffer, p.reset_period_s, p.min_cwnd), (10, 2, 5, 2));
    assert_eq!((p.cong_dec_mult, p.ssthresh_factor, p.rtt_factor, p.loss_dec_factor), (38, 8, 128, 819));
    assert_eq!((p.cwnd_growth_rate_neg, p.cwnd_growth_rate_pos), (8, 0));
    assert_eq!((p.dec_eval_min_calls, p.inc_eval_min_calls, p.ssthresh_eval_min_calls), (60, 20, 30));
    assert_eq!((p.stop_rtt_cnt, p.rtt_min_cnt), (10, 2));
}

#[test]
fn tcpnv_recalc_ssthresh_keeps_80_percent() {
    let (mut nv, mut tp) = started(1000, 500);
    assert_eq!(nv.ssthresh(&tp), 1000 * 819 / 1024);
    tp.snd_cwnd = 2;
    assert_eq!(nv.ssthresh(&tp), 2);
}

#[test]
fn tcpnv_acked_averages_rtt_by_half_and_tracks_min_and_max_rate() {
    let (mut nv, mut tp) = started(100, 50);
    ack(&mut nv, &mut tp, 10_000, 100);
    assert_eq!((nv.last_rtt, nv.min_rtt, nv.min_rtt_new), (10_000, 10_000, 10_000));
    // rate = 100 000 bytes · 80000 / 10000 µs = 800 000 (100s of bit/s:
    // 80 Mbit/s).
    assert_eq!(nv.rtt_max_rate, 800_000);
    ack(&mut nv, &mut tp, 20_000, 100);
    assert_eq!(nv.last_rtt, 15_000);
    assert_eq!((nv.min_rtt, nv.rtt_max_rate, nv.eval_call_cnt), (10_000, 800_000, 2));
}

#[test]
fn tcpnv_acked_skips_acks_without_rtt_outside_open_or_with_nothing_in_flight() {
    let (mut nv, mut tp) = started(100, 50);
    nv.pkts_acked(&mut tp, &AckSample { pkts_acked: 1, rtt: None, in_flight: 1000 });
    ack(&mut nv, &mut tp, 10_000, 0);
    tp.ca_state = CaState::Recovery;
    ack(&mut nv, &mut tp, 10_000, 10);
    assert_eq!((nv.eval_call_cnt, nv.last_rtt), (0, 0));
}

#[test]
fn tcpnv_acked_swaps_in_the_new_min_rtt_after_the_reset_period() {
    let (mut nv, mut tp) = started(100, 50);
    ack(&mut nv, &mut tp, 10_000, 100);
    nv.min_rtt_new = 12_000; // as if re-learned during the period
    nv.last_rtt = 30_000;
    tp.now = Time::from_secs(2);
    ack(&mut nv, &mut tp, 30_000, 100);
    assert_eq!((nv.min_rtt, nv.min_rtt_new), (12_000, NV_INIT_RTT));
    // Next reset in [3/4, 5/4) of 5 s.
    let next = nv.min_rtt_reset_jiffies - 2000;
    assert!((3750..6250).contains(&next), "{next}");
}

/// A round with `calls` samples at `us` delivering `segs` each, ended by
/// the last ACK passing rtt_start_seq.
fn round(nv: &mut Nv, tp: &mut ConnState, calls: u32, us: u64, segs: u32) {
    for i in 0..calls {
        if i + 1 == calls {
            tp.snd_una = nv.rtt_start_seq + 1;
            tp.snd_nxt = tp.snd_una + tp.snd_cwnd as u64;
        }
        ack(nv, tp, us, segs);
    }
}

#[test]
fn tcpnv_acked_decreases_30_percent_of_the_excess_over_rate_times_min_rtt_plus_pad() {
    let (mut nv, mut tp) = started(200, 150);
    // Rate 100 segments per 10 ms at min RTT 10 ms: cwnd_by_slope 100,
    // max_win 110. Needs nv_rtt_min_cnt RTTs and 60 samples.
    round(&mut nv, &mut tp, 30, 10_000, 100);
    assert_eq!(tp.snd_cwnd, 200, "one RTT: no decision yet");
    round(&mut nv, &mut tp, 30, 10_000, 100);
    // dec = (200 - 110) · 38 >> 7 = 26; ssthresh = 8 · 110 >> 3.
    assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (174, 110));
    assert!(!nv.allow_cwnd_growth);
    assert_eq!((nv.eval_call_cnt, nv.rtt_cnt, nv.rtt_max_rate), (0, 0, 0));
}

#[test]
fn tcpnv_acked_leaves_slow_start_after_30_samples() {
    let (mut nv, mut tp) = started(200, crate::cc::TCP_INFINITE_SSTHRESH);
    round(&mut nv, &mut tp, 3, 10_000, 100);
    round(&mut nv, &mut tp, 27, 10_000, 100);
    assert_eq!(tp.snd_ssthresh, 110, "30 samples over 2 RTTs suffice in slow start");
}

#[test]
fn tcpnv_acked_allows_growth_below_max_win_minus_pad_buffer_after_20_samples() {
    let (mut nv, mut tp) = started(100, 50);
    nv.allow_cwnd_growth = false;
    // Rate 200 segments per RTT: max_win 210 > cwnd 100.
    round(&mut nv, &mut tp, 19, 10_000, 200);
    assert!(!nv.allow_cwnd_growth);
    round(&mut nv, &mut tp, 20, 10_000, 200);
    assert!(nv.allow_cwnd_growth);
    assert_eq!(nv.no_cong_cnt, 1);
}

#[test]
fn tcpnv_acked_raises_nv_min_cwnd_when_an_rtt_has_one_sample() {
    let (mut nv, mut tp) = started(100, 50);
    tp.snd_una = 3;
    tp.snd_nxt = 10;
    ack(&mut nv, &mut tp, 10_000, 3);
    assert_eq!(nv.nv_min_cwnd, NV_MIN_CWND + NV_MIN_CWND_GROW);
    assert_eq!(nv.rtt_start_seq, 10 + 6);
}

#[test]
fn tcpnv_cong_avoid_grows_only_when_allowed_and_slower_with_negative_factor() {
    let (mut nv, mut tp) = started(100, 50);
    for _ in 0..100 {
        nv.cong_avoid(&mut tp, 1);
    }
    assert_eq!(tp.snd_cwnd, 101, "factor 0: Reno");
    nv.allow_cwnd_growth = false;
    for _ in 0..1000 {
        nv.cong_avoid(&mut tp, 1);
    }
    assert_eq!(tp.snd_cwnd, 101);
    nv.allow_cwnd_growth = true;
    nv.cwnd_growth_factor = -1;
    tp.snd_cwnd_cnt = 0;
    for _ in 0..201 {
        nv.cong_avoid(&mut tp, 1);
    }
    assert_eq!(tp.snd_cwnd, 101, "factor -1: one per 2 cwnd");
    nv.cong_avoid(&mut tp, 1);
    assert_eq!(tp.snd_cwnd, 102);
}

#[test]
fn tcpnv_state_stops_growth_on_reduction_and_lowers_the_factor_on_rto() {
    let (mut nv, mut tp) = started(100, 50);
    nv.cwnd_growth_factor = 2;
    nv.set_state(&mut tp, CaState::Recovery);
    assert_eq!((nv.allow_cwnd_growth, nv.reset, nv.cwnd_growth_factor), (false, true, 2));
    nv.set_state(&mut tp, CaState::Loss);
    assert_eq!(nv.cwnd_growth_factor, -1, "reset to Reno's 0, then one lower");
    nv.rtt_cnt = 5;
    tp.snd_una = 77;
    nv.set_state(&mut tp, CaState::Open);
    assert_eq!((nv.reset, nv.rtt_cnt, nv.rtt_start_seq), (false, 0, 77));
    for _ in 0..20 {
        nv.set_state(&mut tp, CaState::Loss);
    }
    assert_eq!(nv.cwnd_growth_factor, -8);
}
