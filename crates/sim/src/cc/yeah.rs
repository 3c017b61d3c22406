//! YeAH-TCP (Baiocchi, Castellani and Vacirca, "YeAH-TCP: Yet Another
//! Highspeed TCP", PFLDnet 2007) as Linux implements it in
//! net/ipv4/tcp_yeah.c: a fast mode that grows like Scalable TCP while the
//! Vegas-style estimate of its own queue stays at most ALPHA = 80 segments
//! and the queueing delay at most 1/PHY of the base RTT, a slow mode that
//! grows like Reno otherwise, a "precautionary decongestion" that removes
//! the estimated queue from cwnd when it exceeds ALPHA, and a loss
//! response that removes only the queue (at least cwnd/8) unless the flow
//! has competed with Reno flows for RHO rounds in a row.
//!
//! The RTT bookkeeping is Vegas's: YeAH embeds [`VegasState`] (Linux's
//! `struct vegas vegas; /* must be first */`) and uses tcp_vegas_init,
//! tcp_vegas_pkts_acked, tcp_vegas_state and tcp_vegas_cwnd_event. Linux
//! has no module parameters for YeAH; its constants are below.

use super::scalable::TCP_SCALABLE_AI_CNT;
use super::vegas::VegasState;
use super::{AckSample, CaState, CcInfo, ConnState, CongestionControl, CwndEvent};

/// TCP_YEAH_ALPHA: segments queued at the bottleneck above which YeAH
/// leaves fast mode and decongests.
pub const TCP_YEAH_ALPHA: u32 = 80;
/// TCP_YEAH_GAMMA: fraction (1/GAMMA) of the queue removed per RTT.
pub const TCP_YEAH_GAMMA: u32 = 1;
/// TCP_YEAH_DELTA: log2 of the smallest fraction of cwnd removed on loss.
pub const TCP_YEAH_DELTA: u32 = 3;
/// TCP_YEAH_EPSILON: log2 of the largest fraction removed by decongestion.
pub const TCP_YEAH_EPSILON: u32 = 1;
/// TCP_YEAH_PHY: queueing delay above baseRTT / PHY means slow mode.
pub const TCP_YEAH_PHY: u32 = 8;
/// TCP_YEAH_RHO: slow-mode rounds in a row after which a loss halves cwnd.
pub const TCP_YEAH_RHO: u32 = 16;
/// TCP_YEAH_ZETA: fast-mode rounds after which reno_count resets.
pub const TCP_YEAH_ZETA: u32 = 50;

/// `struct yeah`.
#[derive(Debug, Clone)]
pub struct Yeah {
    /// Vegas's RTT bookkeeping (`struct vegas vegas`).
    vegas: VegasState,
    /// The last round's queue estimate, segments (lastQ).
    last_q: u32,
    /// Slow-mode rounds in a row; 0 in fast mode (doing_reno_now).
    doing_reno_now: u32,
    /// Lower bound for decongestion, about half the cwnd at which slow
    /// mode began (reno_count).
    reno_count: u32,
    /// Fast-mode rounds since the last loss or reset (fast_count).
    fast_count: u32,
}

impl Default for Yeah {
    fn default() -> Yeah {
        Yeah { vegas: VegasState::default(), last_q: 0, doing_reno_now: 0, reno_count: 2, fast_count: 0 }
    }
}

impl Yeah {
    pub fn new() -> Yeah {
        Yeah::default()
    }

    /// The last round's queue estimate (segments).
    pub fn last_queue(&self) -> u32 {
        self.last_q
    }

    /// Slow-mode (Reno) rounds in a row; 0 in fast mode.
    pub fn doing_reno_now(&self) -> u32 {
        self.doing_reno_now
    }

    /// The once-per-round part of tcp_yeah_cong_avoid() (with more than two
    /// RTT samples): queue = cwnd · (rtt − baseRTT) / rtt with rtt the
    /// round's minimum. Above ALPHA, or a queueing delay above baseRTT/PHY,
    /// is slow mode, and above ALPHA cwnd also drops by the queue (at most
    /// half, not below reno_count); otherwise fast mode.
    fn round(&mut self, tp: &mut ConnState) {
        let rtt = self.vegas.min_rtt;
        let base = self.vegas.base_rtt;
        let qdelay = rtt.saturating_sub(base);
        let queue = (tp.snd_cwnd as u64 * qdelay as u64 / rtt.max(1) as u64) as u32;
        if queue > TCP_YEAH_ALPHA || qdelay > base / TCP_YEAH_PHY {
            if queue > TCP_YEAH_ALPHA && tp.snd_cwnd > self.reno_count {
                // Precautionary decongestion.
                let reduction = (queue / TCP_YEAH_GAMMA).min(tp.snd_cwnd >> TCP_YEAH_EPSILON);
                tp.snd_cwnd = (tp.snd_cwnd - reduction).max(self.reno_count);
                tp.snd_ssthresh = tp.snd_cwnd;
            }
            if self.reno_count <= 2 {
                self.reno_count = (tp.snd_cwnd >> 1).max(2);
            } else {
                self.reno_count += 1;
            }
            self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
        } else {
            self.fast_count += 1;
            if self.fast_count > TCP_YEAH_ZETA {
                self.reno_count = 2;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
        }
        self.last_q = queue;
    }
}

impl CongestionControl for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    /// tcp_yeah_init(): tcp_vegas_init, fast mode, reno_count 2, and
    /// cwnd_clamp at most 2^32/128 so the decrease arithmetic cannot wrap.
    fn init(&mut self, tp: &mut ConnState) {
        self.vegas.init(tp);
        self.doing_reno_now = 0;
        self.last_q = 0;
        self.reno_count = 2;
        tp.snd_cwnd_clamp = tp.snd_cwnd_clamp.min(u32::MAX / 128);
    }

    /// tcp_yeah_ssthresh(): below RHO slow-mode rounds remove the last
    /// queue estimate, clamped to [cwnd/8, max(cwnd/2, 2)]; after RHO (the
    /// flow competes with Reno) halve. Resets fast_count, halves reno_count.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        let cwnd = tp.snd_cwnd;
        let reduction = if self.doing_reno_now < TCP_YEAH_RHO {
            self.last_q.min((cwnd >> 1).max(2)).max(cwnd >> TCP_YEAH_DELTA)
        } else {
            (cwnd >> 1).max(2)
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        (cwnd as i64 - reduction as i64).max(2) as u32
    }

    /// tcp_yeah_cong_avoid(): only when cwnd-limited; slow start, then
    /// Scalable's tcp_cong_avoid_ai(min(cwnd, 100)) in fast mode or Reno's
    /// tcp_cong_avoid_ai(cwnd) in slow mode; at the end of each round
    /// (snd_una past beg_snd_nxt) the queue estimate, then a new round.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
        }
        if acked > 0 {
            let w = if self.doing_reno_now == 0 { tp.snd_cwnd.min(TCP_SCALABLE_AI_CNT) } else { tp.snd_cwnd };
            tp.cong_avoid_ai(w, acked);
        }
        if self.vegas.round_ended(tp) {
            if self.vegas.cnt_rtt > 2 {
                self.round(tp);
            }
            self.vegas.beg_snd_una = self.vegas.beg_snd_nxt;
            self.vegas.beg_snd_nxt = tp.snd_nxt;
            self.vegas.beg_snd_cwnd = tp.snd_cwnd;
            self.vegas.clear_round();
        }
    }

    /// tcp_vegas_pkts_acked.
    fn pkts_acked(&mut self, _tp: &mut ConnState, sample: &AckSample) {
        self.vegas.pkts_acked(sample);
    }

    /// tcp_vegas_state.
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        self.vegas.set_state(tp, new_state);
    }

    /// tcp_vegas_cwnd_event.
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        self.vegas.cwnd_event(tp, ev);
    }

    /// tcp_vegas_get_info.
    fn get_info(&self) -> Option<CcInfo> {
        Some(self.vegas.info())
    }

    fn state_label(&self, tp: &ConnState) -> &'static str {
        tp.window_label(if self.doing_reno_now > 0 { "reno" } else { "fast" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    fn started(cwnd: u32) -> (Yeah, ConnState) {
        let mut tp = ConnState::new(1448);
        let mut y = Yeah::new();
        y.init(&mut tp);
        (tp.snd_cwnd, tp.snd_ssthresh, tp.is_cwnd_limited) = (cwnd, 2, true);
        (y, tp)
    }

    /// Three RTT samples: one at `base_us` (sets baseRTT) and two at
    /// `rtt_us`; baseRTT and minRTT are `+ 1` (tcp_vegas_pkts_acked).
    fn samples(y: &mut Yeah, tp: &mut ConnState, rtt_us: u64) {
        for _ in 0..3 {
            y.pkts_acked(tp, &AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(rtt_us)), in_flight: 1 });
        }
    }

    /// Ends the round with an ACK of one segment.
    fn end_round(y: &mut Yeah, tp: &mut ConnState) {
        tp.snd_una = y.vegas.beg_snd_nxt + 1;
        tp.snd_nxt = tp.snd_una + tp.snd_cwnd as u64;
        y.cong_avoid(tp, 1);
    }

    /// A round at base RTT 100 ms (sets baseRTT) then a round at `rtt_us`.
    fn base_then(y: &mut Yeah, tp: &mut ConnState, rtt_us: u64) {
        samples(y, tp, 100_000);
        end_round(y, tp);
        samples(y, tp, rtt_us);
        end_round(y, tp);
    }

    #[test]
    fn tcp_yeah_init_clamps_cwnd_for_the_decrease_arithmetic() {
        let (y, tp) = started(10);
        assert_eq!(tp.snd_cwnd_clamp, u32::MAX / 128);
        assert_eq!((y.reno_count, y.doing_reno_now, y.state_label(&tp)), (2, 0, "fast"));
    }

    #[test]
    fn fast_mode_adds_one_per_min_cwnd_100_acked_like_scalable() {
        let (mut y, mut tp) = started(1000);
        y.vegas.beg_snd_nxt = u64::MAX;
        for _ in 0..1000 {
            y.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 1010);
        let (mut y, mut tp) = started(50);
        y.vegas.beg_snd_nxt = u64::MAX;
        for _ in 0..50 {
            y.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 51, "below 100: Reno's rate");
    }

    #[test]
    fn slow_mode_adds_one_per_cwnd_acked_like_reno() {
        let (mut y, mut tp) = started(1000);
        y.vegas.beg_snd_nxt = u64::MAX;
        y.doing_reno_now = 1;
        for _ in 0..1000 {
            y.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 1001);
    }

    #[test]
    fn a_queue_above_alpha_means_slow_mode_and_precautionary_decongestion() {
        let (mut y, mut tp) = started(1000);
        // rtt 110001 vs base 100001: queue = 1000 · 10000 / 110001 = 90.
        base_then(&mut y, &mut tp, 110_000);
        assert_eq!(y.last_q, 90);
        assert_eq!(y.state_label(&tp), "reno");
        // cwnd was 1000 + growth of the two rounds' single ACKs (0 here).
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (1000 - 90, 910));
        assert_eq!(y.reno_count, 455, "half the decongested cwnd");
    }

    #[test]
    fn decongestion_removes_at_most_half_and_stops_at_reno_count() {
        let (mut y, mut tp) = started(1000);
        // rtt 300001: queue = 1000 · 200000 / 300001 = 666 > cwnd/2.
        base_then(&mut y, &mut tp, 300_000);
        assert_eq!(tp.snd_cwnd, 500);
        let (mut y, mut tp) = started(1000);
        y.reno_count = 950;
        base_then(&mut y, &mut tp, 110_000);
        assert_eq!(tp.snd_cwnd, 950);
        assert_eq!(y.reno_count, 951, "reno_count > 2 grows by one per slow round");
    }

    #[test]
    fn a_queueing_delay_above_base_over_phy_means_slow_mode_without_decongestion() {
        let (mut y, mut tp) = started(100);
        // 100 segments, delay 20 ms > 100 ms / 8: queue = 100 · 20000 / 120001 = 16.
        base_then(&mut y, &mut tp, 120_000);
        assert_eq!((y.last_q, y.state_label(&tp), tp.snd_cwnd), (16, "reno", 100));
    }

    #[test]
    fn a_small_queue_and_delay_return_to_fast_mode_and_zeta_rounds_reset_reno_count() {
        let (mut y, mut tp) = started(1000);
        y.doing_reno_now = 3;
        y.reno_count = 400;
        base_then(&mut y, &mut tp, 100_500);
        assert_eq!((y.doing_reno_now, y.fast_count), (0, 2));
        for _ in 0..TCP_YEAH_ZETA {
            samples(&mut y, &mut tp, 100_000);
            end_round(&mut y, &mut tp);
        }
        assert_eq!((y.reno_count, y.fast_count), (2, 1));
    }

    #[test]
    fn tcp_yeah_ssthresh_removes_the_queue_between_an_eighth_and_a_half() {
        let (mut y, tp) = started(1000);
        y.last_q = 300;
        assert_eq!(y.ssthresh(&tp), 700);
        y.last_q = 10;
        assert_eq!(y.ssthresh(&tp), 875, "at least cwnd >> DELTA");
        y.last_q = 900;
        assert_eq!(y.ssthresh(&tp), 500, "at most max(cwnd / 2, 2)");
    }

    #[test]
    fn tcp_yeah_ssthresh_halves_after_rho_slow_rounds_and_halves_reno_count() {
        let (mut y, tp) = started(1000);
        y.last_q = 10;
        y.doing_reno_now = TCP_YEAH_RHO;
        y.reno_count = 300;
        y.fast_count = 7;
        assert_eq!(y.ssthresh(&tp), 500);
        assert_eq!((y.reno_count, y.fast_count), (150, 0));
    }

    #[test]
    fn yeah_skips_the_queue_estimate_with_two_samples_or_fewer() {
        let (mut y, mut tp) = started(1000);
        y.pkts_acked(&mut tp, &AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(300_000)), in_flight: 1 });
        end_round(&mut y, &mut tp);
        assert_eq!((y.last_q, y.doing_reno_now, y.fast_count), (0, 0, 0));
        assert_eq!(y.vegas.cnt_rtt, 0, "the round is wiped");
    }
}
