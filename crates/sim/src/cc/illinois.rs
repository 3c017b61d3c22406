//! TCP Illinois (Liu, Başar and Srikant, "TCP-Illinois: A Loss- and
//! Delay-Based Congestion Control Algorithm for High-Speed Networks",
//! Performance Evaluation 65(6), 2008) as Linux implements it in
//! net/ipv4/tcp_illinois.c: loss decides *whether* to change cwnd, queueing
//! delay *how much*. Once per RTT the average queueing delay da of the
//! round, against the largest seen dm, sets the additive increase alpha
//! (10 segments per RTT with no queue, falling to 0.3 as da nears dm) and
//! the multiplicative decrease beta (1/8 to 1/2). Below `win_thresh` it
//! is Reno. The module parameters are [`IllinoisParams`]; undo is
//! tcp_reno_undo_cwnd (the trait's default). RTTs in µs.

use super::{AckSample, CaState, CcInfo, ConnState, CongestionControl};

/// ALPHA_SHIFT: alpha is in 1/128.
pub const ALPHA_SHIFT: u32 = 7;
/// ALPHA_SCALE.
pub const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// ALPHA_MIN ≈ 0.3.
pub const ALPHA_MIN: u32 = (3 * ALPHA_SCALE) / 10;
/// ALPHA_MAX = 10.0.
pub const ALPHA_MAX: u32 = 10 * ALPHA_SCALE;
/// ALPHA_BASE = 1.0 (Reno).
pub const ALPHA_BASE: u32 = ALPHA_SCALE;
/// RTT_MAX: larger samples are clipped so the alpha arithmetic cannot
/// wrap (about 3.3 s).
pub const RTT_MAX: u32 = u32::MAX / ALPHA_MAX;
/// BETA_SHIFT: beta is in 1/64.
pub const BETA_SHIFT: u32 = 6;
/// BETA_SCALE.
pub const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// BETA_MIN = 0.125.
pub const BETA_MIN: u32 = BETA_SCALE / 8;
/// BETA_MAX = 0.5.
pub const BETA_MAX: u32 = BETA_SCALE / 2;
/// BETA_BASE = BETA_MAX (Reno).
pub const BETA_BASE: u32 = BETA_MAX;

/// tcp_illinois.c's module parameters, with Linux's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllinoisParams {
    /// `win_thresh`: below this cwnd alpha and beta are Reno's.
    pub win_thresh: u32,
    /// `theta`: RTTs of low delay before alpha returns to ALPHA_MAX.
    pub theta: u32,
}

impl Default for IllinoisParams {
    fn default() -> IllinoisParams {
        IllinoisParams { win_thresh: 15, theta: 5 }
    }
}

/// `struct illinois`.
#[derive(Debug, Clone)]
pub struct Illinois {
    params: IllinoisParams,
    /// Sum of the RTTs (µs) measured within the current round.
    sum_rtt: u64,
    /// RTTs measured within the current round (u16 as Linux).
    cnt_rtt: u16,
    /// Minimum RTT ever seen (µs).
    base_rtt: u32,
    /// Maximum RTT ever seen (µs).
    max_rtt: u32,
    /// Right edge of the current round (snd_nxt at its start, segments).
    end_seq: u64,
    /// Additive increase, in 1/ALPHA_SCALE segments per RTT.
    alpha: u32,
    /// Multiplicative decrease, in 1/BETA_SCALE.
    beta: u32,
    /// Segments acked by the current ACK (u16 as Linux).
    acked: u16,
    /// The average delay has gone above the low threshold.
    rtt_above: bool,
    /// Rounds in a row with the average delay below the low threshold.
    rtt_low: u8,
}

impl Default for Illinois {
    fn default() -> Illinois {
        Illinois::with_params(IllinoisParams::default())
    }
}

impl Illinois {
    pub fn new() -> Illinois {
        Illinois::default()
    }

    /// Illinois with the given module parameters (state as tcp_illinois_init).
    pub fn with_params(params: IllinoisParams) -> Illinois {
        Illinois {
            params,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: 0x7fff_ffff,
            max_rtt: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_BASE,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        }
    }

    /// The additive increase, in 1/ALPHA_SCALE segments per RTT.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// The multiplicative decrease, in 1/BETA_SCALE.
    pub fn beta(&self) -> u32 {
        self.beta
    }

    /// rtt_reset(): a new round from snd_nxt. (Linux never ages max_rtt.)
    fn rtt_reset(&mut self, tp: &ConnState) {
        self.end_seq = tp.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// max_delay(): the largest queueing delay seen, µs.
    fn max_delay(&self) -> u32 {
        self.max_rtt.wrapping_sub(self.base_rtt)
    }

    /// avg_delay(): the round's average queueing delay, µs.
    fn avg_delay(&self) -> u32 {
        let t = self.sum_rtt / self.cnt_rtt.max(1) as u64;
        t.wrapping_sub(self.base_rtt as u64) as u32
    }

    /// alpha(): ALPHA_MAX while the average delay da stays within 1 % of
    /// the maximum dm (and only after `theta` such rounds once it has been
    /// above); else k1 / (k2 + da), falling from ALPHA_MAX at d1 = dm/100
    /// to ALPHA_MIN at dm.
    fn compute_alpha(&mut self, da: u32, dm: u32) -> u32 {
        let d1 = dm / 100;
        if da <= d1 {
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            // Wait for theta good RTTs before going back to ALPHA_MAX.
            self.rtt_low = self.rtt_low.wrapping_add(1);
            if (self.rtt_low as u32) < self.params.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        let dm = dm - d1;
        let da = da - d1;
        dm.wrapping_mul(ALPHA_MAX)
            / dm.wrapping_add(da.wrapping_mul(ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN)
    }

    /// beta(): BETA_MIN up to d2 = dm/10, BETA_MAX from d3 = 8 dm/10, linear
    /// in between.
    fn compute_beta(da: u32, dm: u32) -> u32 {
        let d2 = dm / 10;
        if da <= d2 {
            return BETA_MIN;
        }
        let d3 = (8 * dm as u64 / 10) as u32;
        if da >= d3 || d3 <= d2 {
            return BETA_MAX;
        }
        (BETA_MIN * d3 - BETA_MAX * d2 + (BETA_MAX - BETA_MIN) * da) / (d3 - d2)
    }

    /// update_params(): once per round, Reno's alpha/beta below
    /// win_thresh, else from the round's delays if it had samples.
    fn update_params(&mut self, tp: &ConnState) {
        if tp.snd_cwnd < self.params.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if self.cnt_rtt > 0 {
            let dm = self.max_delay();
            let da = self.avg_delay();
            self.alpha = self.compute_alpha(da, dm);
            self.beta = Illinois::compute_beta(da, dm);
        }
        self.rtt_reset(tp);
    }
}

impl CongestionControl for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }

    /// tcp_illinois_init().
    fn init(&mut self, tp: &mut ConnState) {
        *self = Illinois::with_params(self.params);
        self.rtt_reset(tp);
    }

    /// tcp_illinois_ssthresh(): cwnd - cwnd · beta, at least 2.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        let cut = ((tp.snd_cwnd as u64 * self.beta as u64) >> BETA_SHIFT) as u32;
        (tp.snd_cwnd - cut).max(2)
    }

    /// tcp_illinois_cong_avoid(): new alpha/beta when snd_una passes the
    /// round's end; only when cwnd-limited (RFC 2861) slow start, or
    /// cwnd += alpha / cwnd per acked segment, accumulated in snd_cwnd_cnt
    /// (the first ACK of a stretch counts all it acked, later ones one).
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if tp.snd_una > self.end_seq {
            self.update_params(tp);
        }
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            tp.slow_start(acked);
            return;
        }
        tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(self.acked as u32);
        self.acked = 1;
        let delta = ((tp.snd_cwnd_cnt as u64 * self.alpha as u64) >> ALPHA_SHIFT) as u32;
        if delta >= tp.snd_cwnd {
            tp.snd_cwnd = (tp.snd_cwnd + delta / tp.snd_cwnd.max(1)).min(tp.snd_cwnd_clamp);
            tp.snd_cwnd_cnt = 0;
        }
    }

    /// tcp_illinois_acked(): the acked count, and per RTT sample (clipped
    /// to RTT_MAX) the base and max RTT and the round's sum and count.
    fn pkts_acked(&mut self, _tp: &mut ConnState, sample: &AckSample) {
        self.acked = sample.pkts_acked as u16;
        let Some(rtt) = sample.rtt else { return };
        let rtt_us = rtt.as_micros().min(RTT_MAX as u64) as u32;
        self.base_rtt = self.base_rtt.min(rtt_us);
        self.max_rtt = self.max_rtt.max(rtt_us);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
        self.sum_rtt += rtt_us as u64;
    }

    /// tcp_illinois_state(): on an RTO, back to Reno's alpha and beta.
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        if new_state == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(tp);
        }
    }

    /// tcp_illinois_info(): base RTT and the round's average RTT.
    fn get_info(&self) -> Option<CcInfo> {
        let avg = if self.cnt_rtt > 0 { (self.sum_rtt / self.cnt_rtt as u64) as u32 } else { 0 };
        Some(CcInfo::Vegas { enabled: true, rttcnt: self.cnt_rtt as u32, rtt_us: avg, minrtt_us: self.base_rtt })
    }

    fn state_label(&self, tp: &ConnState) -> &'static str {
        tp.window_label(if self.alpha >= ALPHA_MAX {
            "alpha_max"
        } else if self.alpha == ALPHA_BASE && self.beta == BETA_BASE {
            "reno"
        } else {
            "delay_adaptive"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    fn started(cwnd: u32) -> (Illinois, ConnState) {
        let mut tp = ConnState::new(1448);
        let mut c = Illinois::new();
        c.init(&mut tp);
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = 2;
        tp.is_cwnd_limited = true;
        (c, tp)
    }

    fn sample(c: &mut Illinois, tp: &mut ConnState, us: u64) {
        c.pkts_acked(tp, &AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(us)), in_flight: 1 });
    }

    /// Ends the round: the next ACK passes end_seq.
    fn end_round(c: &mut Illinois, tp: &mut ConnState) {
        tp.snd_una = c.end_seq + 1;
        tp.snd_nxt = tp.snd_una + tp.snd_cwnd as u64;
        c.cong_avoid(tp, 1);
    }

    #[test]
    fn constants_are_linux_fixed_point() {
        assert_eq!((ALPHA_MIN, ALPHA_MAX, ALPHA_BASE), (38, 1280, 128));
        assert_eq!((BETA_MIN, BETA_MAX, BETA_BASE), (8, 32, 32));
        assert_eq!(RTT_MAX, 3_355_443);
        assert_eq!(IllinoisParams::default(), IllinoisParams { win_thresh: 15, theta: 5 });
    }

    #[test]
    fn tcp_illinois_init_starts_at_alpha_max_and_beta_base() {
        let (c, _) = started(100);
        assert_eq!((c.alpha, c.beta), (ALPHA_MAX, BETA_BASE));
    }

    #[test]
    fn tcp_illinois_acked_tracks_base_max_sum_and_count_clipped_to_rtt_max() {
        let (mut c, mut tp) = started(100);
        sample(&mut c, &mut tp, 20_000);
        sample(&mut c, &mut tp, 30_000);
        c.pkts_acked(&mut tp, &AckSample { pkts_acked: 3, rtt: None, in_flight: 1 });
        assert_eq!((c.base_rtt, c.max_rtt, c.sum_rtt, c.cnt_rtt, c.acked), (20_000, 30_000, 50_000, 2, 3));
        sample(&mut c, &mut tp, 10_000_000);
        assert_eq!(c.max_rtt, RTT_MAX);
    }

    #[test]
    fn alpha_is_max_at_base_delay_and_min_at_max_delay() {
        let mut c = Illinois::new();
        assert_eq!(c.compute_alpha(0, 10_000), ALPHA_MAX);
        assert_eq!(c.compute_alpha(10_000, 10_000), ALPHA_MIN);
        // In between: k1 / (k2 + da), convex and falling.
        let mid = c.compute_alpha(5_000, 10_000);
        let q = c.compute_alpha(2_500, 10_000);
        assert!(ALPHA_MIN < mid && mid < q && q < ALPHA_MAX, "{mid} {q}");
        // dm' = 9900, da' = 4900: 9900 · 1280 / (9900 + 4900 · 1242 / 38).
        assert_eq!(mid, 9900 * 1280 / (9900 + 4900 * 1242 / 38));
    }

    #[test]
    fn alpha_returns_to_max_only_after_theta_low_delay_rounds() {
        let mut c = Illinois::new();
        c.alpha = c.compute_alpha(5_000, 10_000);
        let a = c.alpha;
        for _ in 0..4 {
            assert_eq!(c.compute_alpha(0, 10_000), a, "theta = 5");
        }
        assert_eq!(c.compute_alpha(0, 10_000), ALPHA_MAX);
        assert!(!c.rtt_above);
    }

    #[test]
    fn beta_is_one_eighth_below_a_tenth_of_max_delay_half_above_eight_tenths() {
        assert_eq!(Illinois::compute_beta(1_000, 10_000), BETA_MIN);
        assert_eq!(Illinois::compute_beta(8_000, 10_000), BETA_MAX);
        // Linear: at da = 4500, halfway between d2 = 1000 and d3 = 8000.
        assert_eq!(Illinois::compute_beta(4_500, 10_000), (8 * 8000 - 32 * 1000 + 24 * 4500) / 7000);
        assert_eq!(Illinois::compute_beta(4_500, 10_000), 20);
    }

    #[test]
    fn update_params_uses_reno_values_below_win_thresh() {
        let (mut c, mut tp) = started(14);
        sample(&mut c, &mut tp, 20_000);
        sample(&mut c, &mut tp, 30_000);
        end_round(&mut c, &mut tp);
        assert_eq!((c.alpha, c.beta), (ALPHA_BASE, BETA_BASE));
        assert_eq!((c.cnt_rtt, c.sum_rtt), (0, 0), "rtt_reset");
    }

    #[test]
    fn update_params_sets_alpha_and_beta_from_the_round_average_delay() {
        let (mut c, mut tp) = started(100);
        sample(&mut c, &mut tp, 20_000);
        sample(&mut c, &mut tp, 30_000);
        // Round average 25 ms: da = 5000, dm = 10000.
        end_round(&mut c, &mut tp);
        assert_eq!(c.alpha, 9900 * 1280 / (9900 + 4900 * 1242 / 38));
        assert_eq!(c.beta, Illinois::compute_beta(5_000, 10_000));
    }

    #[test]
    fn tcp_illinois_cong_avoid_adds_alpha_over_cwnd_per_acked_segment() {
        let (mut c, mut tp) = started(100);
        c.end_seq = u64::MAX; // no parameter update
        // alpha = 10: +1 segment every cwnd / 10 acked segments. The first
        // ACK adds its stored `acked` (0 after init), later ones one each.
        for _ in 0..10 {
            c.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 100);
        c.cong_avoid(&mut tp, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (101, 0), "delta = 10 · 10 >= 100");
        for _ in 0..11 {
            c.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 102, "delta = 11 · 10 >= 101");
        // alpha = 1.0 (Reno): one per cwnd.
        c.alpha = ALPHA_BASE;
        let w = tp.snd_cwnd;
        tp.snd_cwnd_cnt = 0;
        for _ in 0..w {
            c.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, w + 1);
    }

    #[test]
    fn tcp_illinois_cong_avoid_grows_only_when_cwnd_limited() {
        let (mut c, mut tp) = started(100);
        c.end_seq = u64::MAX;
        tp.is_cwnd_limited = false;
        for _ in 0..1000 {
            c.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 100);
    }

    #[test]
    fn tcp_illinois_ssthresh_is_cwnd_minus_beta_times_cwnd() {
        let (mut c, tp) = started(1000);
        assert_eq!(c.ssthresh(&tp), 500);
        c.beta = BETA_MIN;
        assert_eq!(c.ssthresh(&tp), 875);
        let (mut c, tp) = started(3);
        assert_eq!(c.ssthresh(&tp), 2);
    }

    #[test]
    fn tcp_illinois_state_loss_resets_to_reno_values() {
        let (mut c, mut tp) = started(100);
        c.alpha = ALPHA_MIN;
        c.beta = BETA_MIN;
        c.rtt_above = true;
        c.set_state(&mut tp, CaState::Recovery);
        assert_eq!(c.alpha, ALPHA_MIN);
        c.set_state(&mut tp, CaState::Loss);
        assert_eq!((c.alpha, c.beta, c.rtt_above), (ALPHA_BASE, BETA_BASE, false));
    }
}
