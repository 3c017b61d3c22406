//! TCP Westwood+ (Mascolo et al., "TCP Westwood: Bandwidth Estimation for
//! Enhanced Transport over Wireless Links", MobiCom 2001; Grieco and
//! Mascolo's Westwood+) as Linux implements it in net/ipv4/tcp_westwood.c:
//! Reno's growth, but after a loss the window is set from the bandwidth
//! estimate times the minimum RTT instead of halved. The estimate counts
//! acked bytes per RTT window (at least 50 ms) from snd_una deltas on
//! every ACK (`in_ack_event`, fast and slow path) and smooths the samples
//! with two 7/8 low-pass filters. Linux has no module parameters for it.
//!
//! Units as Linux: bytes, jiffies (`cc::jiffies`, HZ = 1000), so the
//! estimate is bytes per jiffy and the RTTs are whole jiffies.

use super::jiffies::{jiffies, usecs_to_jiffies, HZ};
use super::reno::Reno;
use super::{AckSample, ConnState, CongestionControl, CwndEvent, CA_ACK_SLOWPATH};

/// TCP_WESTWOOD_RTT_MIN: the shortest bandwidth-sample window, HZ/20 = 50 ms.
pub const TCP_WESTWOOD_RTT_MIN: u32 = (HZ / 20) as u32;
/// TCP_WESTWOOD_INIT_RTT: RTT and min RTT before the first sample, 20 s.
pub const TCP_WESTWOOD_INIT_RTT: u32 = (20 * HZ) as u32;

/// `struct westwood`.
#[derive(Debug, Clone)]
pub struct Westwood {
    /// First, lightly smoothed bandwidth estimate (bytes per jiffy).
    bw_ns_est: u32,
    /// Bandwidth estimate (bytes per jiffy).
    bw_est: u32,
    /// Jiffies at the start of the current sample window.
    rtt_win_sx: u64,
    /// Bytes acked in the current sample window.
    bk: u32,
    /// snd_una (bytes, modulo 2^32 like a sequence number) at the last ACK.
    snd_una: u32,
    /// Bytes this ACK accounts for (westwood_acked_count).
    cumul_ack: u32,
    /// Bytes already counted for duplicate ACKs, subtracted from the
    /// cumulative ACK that covers them.
    accounted: u32,
    /// Latest RTT sample (jiffies).
    rtt: u32,
    /// Minimum RTT (jiffies).
    rtt_min: u32,
    /// The next ACK initialises `snd_una` (first_ack).
    first_ack: bool,
    /// The next ACK sets rtt_min to the current RTT (reset_rtt_min).
    reset_rtt_min: bool,
}

impl Default for Westwood {
    fn default() -> Westwood {
        Westwood {
            bw_ns_est: 0,
            bw_est: 0,
            rtt_win_sx: 0,
            bk: 0,
            snd_una: 0,
            cumul_ack: 0,
            accounted: 0,
            rtt: TCP_WESTWOOD_INIT_RTT,
            rtt_min: TCP_WESTWOOD_INIT_RTT,
            first_ack: true,
            reset_rtt_min: true,
        }
    }
}

/// tp->snd_una in bytes, modulo 2^32 as Linux's sequence numbers (the
/// simulator counts whole segments of mss_cache bytes).
fn snd_una_bytes(tp: &ConnState) -> u32 {
    tp.snd_una.wrapping_mul(tp.mss_bytes as u64) as u32
}

/// westwood_do_filter(): (7 a + b) / 8.
fn do_filter(a: u32, b: u32) -> u32 {
    ((7 * a as u64 + b as u64) >> 3) as u32
}

impl Westwood {
    pub fn new() -> Westwood {
        Westwood::default()
    }

    /// The bandwidth estimate, bytes per jiffy.
    pub fn bw_est(&self) -> u32 {
        self.bw_est
    }

    /// The minimum RTT, jiffies.
    pub fn rtt_min(&self) -> u32 {
        self.rtt_min
    }

    /// westwood_filter(): the first sample fills both filters; later ones
    /// go through two 7/8 low-pass stages.
    fn filter(&mut self, delta: u32) {
        let sample = self.bk / delta.max(1);
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = do_filter(self.bw_ns_est, sample);
            self.bw_est = do_filter(self.bw_est, self.bw_ns_est);
        }
    }

    /// westwood_update_window(): on the first ACK take snd_una as the
    /// start; once more than max(rtt, 50 ms) has passed since the window
    /// began, filter bk / delta and start a new window.
    fn update_window(&mut self, tp: &ConnState) {
        let now_j = jiffies(tp.now);
        let delta = now_j.saturating_sub(self.rtt_win_sx).min(u32::MAX as u64) as u32;
        if self.first_ack {
            self.snd_una = snd_una_bytes(tp);
            self.first_ack = false;
        }
        if self.rtt != 0 && delta > self.rtt.max(TCP_WESTWOOD_RTT_MIN) {
            self.filter(delta);
            self.bk = 0;
            self.rtt_win_sx = now_j;
        }
    }

    /// update_rtt_min(): after an RTO the next RTT replaces the minimum.
    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }

    /// westwood_fast_bw(): a fast-path ACK counts exactly the snd_una advance.
    fn fast_bw(&mut self, tp: &ConnState) {
        self.update_window(tp);
        let una = snd_una_bytes(tp);
        self.bk = self.bk.wrapping_add(una.wrapping_sub(self.snd_una));
        self.snd_una = una;
        self.update_rtt_min();
    }

    /// westwood_acked_count(): bytes a slow-path ACK accounts for. A
    /// duplicate ACK counts one MSS (and remembers it in `accounted`); a
    /// cumulative ACK of more than one MSS subtracts what duplicates
    /// already counted.
    fn acked_count(&mut self, tp: &ConnState) -> u32 {
        let mss = tp.mss_bytes;
        let una = snd_una_bytes(tp);
        self.cumul_ack = una.wrapping_sub(self.snd_una);
        if self.cumul_ack == 0 {
            self.accounted = self.accounted.wrapping_add(mss);
            self.cumul_ack = mss;
        }
        if self.cumul_ack > mss {
            // Partial or delayed ACK.
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = mss;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = una;
        self.cumul_ack
    }

    /// tcp_westwood_bw_rttmin(): max(bw_est · rtt_min / mss, 2) segments,
    /// the window that fills the pipe without a queue. Linux multiplies in
    /// u32; here the product is taken in u64 and saturates (they differ
    /// only for a BDP above 4 GiB).
    pub fn bw_rttmin(&self, tp: &ConnState) -> u32 {
        let segs = self.bw_est as u64 * self.rtt_min as u64 / tp.mss_bytes.max(1) as u64;
        (segs.min(u32::MAX as u64) as u32).max(2)
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    /// tcp_westwood_init(): empty estimates, RTTs at TCP_WESTWOOD_INIT_RTT,
    /// the first window starts now.
    fn init(&mut self, tp: &mut ConnState) {
        *self = Westwood::default();
        self.rtt_win_sx = jiffies(tp.now);
        self.snd_una = snd_una_bytes(tp);
    }

    /// tcp_reno_ssthresh (Westwood+ sets the real value in cwnd_event).
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        Reno.ssthresh(tp)
    }

    /// tcp_reno_cong_avoid.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        Reno.cong_avoid(tp, acked)
    }

    /// tcp_westwood_event(): at the end of CWR/Recovery cwnd = ssthresh =
    /// bw_est · rtt_min; on an RTO ssthresh = bw_est · rtt_min and the next
    /// RTT sample restarts rtt_min.
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        match ev {
            CwndEvent::CompleteCwr => {
                tp.snd_ssthresh = self.bw_rttmin(tp);
                tp.snd_cwnd = tp.snd_ssthresh;
            }
            CwndEvent::Loss => {
                tp.snd_ssthresh = self.bw_rttmin(tp);
                self.reset_rtt_min = true;
            }
            _ => {}
        }
    }

    /// tcp_westwood_pkts_acked(): keep the latest RTT sample, in jiffies.
    fn pkts_acked(&mut self, _tp: &mut ConnState, sample: &AckSample) {
        if let Some(rtt) = sample.rtt {
            let us = rtt.as_micros();
            if us > 0 {
                self.rtt = usecs_to_jiffies(us).min(u32::MAX as u64) as u32;
            }
        }
    }

    /// tcp_westwood_ack(): a slow-path ACK (SACK, duplicate, …) counts
    /// westwood_acked_count(); a fast-path ACK the snd_una advance.
    fn in_ack_event(&mut self, tp: &mut ConnState, flags: u32) {
        if flags & CA_ACK_SLOWPATH != 0 {
            self.update_window(tp);
            let acked = self.acked_count(tp);
            self.bk = self.bk.wrapping_add(acked);
            self.update_rtt_min();
            return;
        }
        self.fast_bw(tp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CA_ACK_WIN_UPDATE, TCP_INFINITE_SSTHRESH};
    use crate::units::Time;

    const MSS: u32 = 1000;

    fn started() -> (Westwood, ConnState) {
        let mut tp = ConnState::new(MSS);
        tp.is_cwnd_limited = true;
        let mut w = Westwood::new();
        w.init(&mut tp);
        (w, tp)
    }

    fn rtt_sample(w: &mut Westwood, tp: &mut ConnState, ms: u64) {
        let s = AckSample { pkts_acked: 1, rtt: Some(Time::from_millis(ms)), in_flight: 1 };
        w.pkts_acked(tp, &s);
    }

    #[test]
    fn tcp_westwood_init_starts_with_20s_rtts_and_no_estimate() {
        let (w, tp) = started();
        assert_eq!((w.rtt, w.rtt_min, w.bw_est), (20_000, 20_000, 0));
        assert_eq!(w.bw_rttmin(&tp), 2);
        assert_eq!(TCP_WESTWOOD_RTT_MIN, 50);
    }

    #[test]
    fn tcp_westwood_pkts_acked_keeps_the_last_rtt_in_jiffies_rounded_up() {
        let (mut w, mut tp) = started();
        let s = AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(40_100)), in_flight: 1 };
        w.pkts_acked(&mut tp, &s);
        assert_eq!(w.rtt, 41);
        w.pkts_acked(&mut tp, &AckSample { rtt: None, ..s });
        assert_eq!(w.rtt, 41);
    }

    #[test]
    fn westwood_fast_bw_counts_the_snd_una_advance_and_tracks_rtt_min() {
        let (mut w, mut tp) = started();
        rtt_sample(&mut w, &mut tp, 30);
        tp.snd_una = 5;
        w.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        // The first ACK takes snd_una as the start (first_ack): nothing counted.
        assert_eq!(w.bk, 0);
        assert_eq!(w.rtt_min, 30, "reset_rtt_min: the first sample replaces 20 s");
        tp.snd_una = 8;
        w.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        assert_eq!(w.bk, 3 * MSS);
        rtt_sample(&mut w, &mut tp, 45);
        w.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        assert_eq!(w.rtt_min, 30);
    }

    #[test]
    fn westwood_acked_count_counts_a_dupack_as_one_mss_and_takes_it_back_later() {
        let (mut w, mut tp) = started();
        // The first ACK takes snd_una as the start, so it is a duplicate
        // to westwood_acked_count() too (as in Linux): one MSS.
        w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!((w.bk, w.accounted), (MSS, MSS));
        // Two duplicate ACKs: one MSS each.
        w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!((w.bk, w.accounted), (3 * MSS, 3 * MSS));
        // A cumulative ACK of 5 segments counts 5 - 3 already accounted:
        // over the episode, exactly the 5 segments acked.
        tp.snd_una = 5;
        w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!((w.bk, w.accounted), (5 * MSS, 0));
    }

    #[test]
    fn westwood_acked_count_partial_ack_covered_by_dupacks_counts_one_mss() {
        let (mut w, mut tp) = started();
        for _ in 0..4 {
            w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        }
        tp.snd_una = 3; // 3 MSS, 4 already accounted
        w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!((w.cumul_ack, w.accounted), (MSS, MSS));
    }

    #[test]
    fn westwood_update_window_filters_only_after_max_rtt_and_50ms() {
        let (mut w, mut tp) = started();
        rtt_sample(&mut w, &mut tp, 20);
        w.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        tp.snd_una = 100;
        tp.now = Time::from_millis(50);
        w.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        assert_eq!(w.bw_est, 0, "delta 50 is not > max(20, 50)");
        tp.now = Time::from_millis(51);
        tp.snd_una = 102;
        w.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        // The window closes before this ACK's bytes: 100 MSS in 51 jiffies.
        assert_eq!(w.bw_est, 100 * MSS / 51);
        assert_eq!(w.bk, 2 * MSS);
        assert_eq!(w.rtt_win_sx, 51);
    }

    #[test]
    fn westwood_filter_fills_with_the_first_sample_then_smooths_by_7_8() {
        let mut w = Westwood::new();
        w.bk = 80_000;
        w.filter(10);
        assert_eq!((w.bw_ns_est, w.bw_est), (8000, 8000));
        w.bk = 0;
        w.filter(10);
        assert_eq!(w.bw_ns_est, 7000);
        assert_eq!(w.bw_est, (7 * 8000 + 7000) / 8);
    }

    #[test]
    fn tcp_westwood_bw_rttmin_is_bw_times_rtt_min_over_mss_at_least_2() {
        let (mut w, tp) = started();
        w.bw_est = 12_500; // 100 Mbit/s in bytes per ms
        w.rtt_min = 40;
        assert_eq!(w.bw_rttmin(&tp), 500);
        w.bw_est = 10;
        assert_eq!(w.bw_rttmin(&tp), 2);
    }

    #[test]
    fn tcp_westwood_event_complete_cwr_sets_cwnd_and_ssthresh_to_bw_rttmin() {
        let (mut w, mut tp) = started();
        w.bw_est = 12_500;
        w.rtt_min = 40;
        tp.snd_cwnd = 900;
        w.cwnd_event(&mut tp, CwndEvent::CompleteCwr);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (500, 500));
    }

    #[test]
    fn tcp_westwood_event_loss_sets_ssthresh_and_restarts_rtt_min() {
        let (mut w, mut tp) = started();
        w.bw_est = 12_500;
        w.rtt_min = 40;
        w.reset_rtt_min = false;
        tp.snd_cwnd = 900;
        tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        w.cwnd_event(&mut tp, CwndEvent::Loss);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (900, 500));
        rtt_sample(&mut w, &mut tp, 70);
        w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!(w.rtt_min, 70, "the next ACK's RTT replaces rtt_min");
    }

    #[test]
    fn westwood_grows_and_halves_ssthresh_like_reno() {
        let (mut w, mut tp) = started();
        tp.snd_cwnd = 100;
        tp.snd_ssthresh = 50;
        for _ in 0..100 {
            w.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 101);
        assert_eq!(w.ssthresh(&tp), 50);
    }
}
