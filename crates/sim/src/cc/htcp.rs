//! H-TCP as Linux implements it in net/ipv4/tcp_htcp.c (torvalds/linux
//! 05909cd9). The module parameters are [`HtcpParams`], with Linux's
//! defaults use_rtt_scaling = 1 and use_bandwidth_switch = 1. The algorithm is Leith & Shorten, "H-TCP: TCP
//! for high-speed and long-distance networks" (PFLDnet 2004) and
//! draft-leith-tcp-htcp-06; each rule cites the Linux function it follows.
//!
//! Alpha and beta are fixed point with 7 fractional bits (1.0 = 128), as in
//! Linux. Linux keeps time in jiffies; we derive jiffies from
//! `ConnState::now` with a fixed `HZ` = 1000 (a jiffy is 1 ms), so minRTT,
//! maxRTT and the congestion timer have Linux's millisecond granularity.

use super::jiffies::{jiffies, msecs_to_jiffies, usecs_to_jiffies, HZ};
use super::{AckSample, CaState, ConnState, CongestionControl};
/// ALPHA_BASE: 1.0 << 7.
const ALPHA_BASE: u32 = 1 << 7;
/// BETA_MIN: 0.5 << 7.
const BETA_MIN: u32 = 1 << 6;
/// BETA_MAX: 0.8 << 7 (102/128 = 0.797).
const BETA_MAX: u32 = 102;

/// tcp_htcp.c's module parameters (`module_param`), with Linux's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HtcpParams {
    /// `use_rtt_scaling`: scale alpha by minRTT / 100 ms (htcp_alpha_update).
    pub use_rtt_scaling: bool,
    /// `use_bandwidth_switch`: fall back to beta 0.5 when the throughput
    /// estimate moved by more than ±20 % (htcp_beta_update), measuring it
    /// per ACK (htcp_pkts_acked).
    pub use_bandwidth_switch: bool,
}

impl Default for HtcpParams {
    fn default() -> HtcpParams {
        HtcpParams { use_rtt_scaling: true, use_bandwidth_switch: true }
    }
}

/// `struct htcp`.
#[derive(Debug, Clone)]
pub struct Htcp {
    params: HtcpParams,
    /// Additive increase per RTT, << 7.
    alpha: u32,
    /// Multiplicative decrease factor, << 7.
    beta: u32,
    /// Adaptive beta is enabled only after one congestion event with a
    /// stable bandwidth estimate.
    modeswitch: bool,
    /// Segments acked by the last ACK in Open state (Linux: u16).
    pkts_acked: u32,
    /// Segments acked since `lasttime` (throughput measurement).
    packetcount: u32,
    /// Min and max RTT in jiffies; 0 = no sample yet.
    min_rtt: u64,
    max_rtt: u64,
    /// Jiffies at the end of the last congestion event (Δ = now - last_cong).
    last_cong: u64,
    /// Saved for undo by htcp_reset(); None = nothing to undo (Linux: 0).
    undo_last_cong: Option<u64>,
    undo_max_rtt: u64,
    undo_old_max_b: u32,
    /// Throughput estimates in segments per second.
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    bi: u32,
    /// Jiffies at the start of the throughput measurement interval.
    lasttime: u64,
}

impl Default for Htcp {
    fn default() -> Htcp {
        Htcp::new()
    }
}

impl Htcp {
    /// htcp_init() at time zero: alpha 1, beta 0.5, everything else 0.
    pub fn new() -> Htcp {
        Htcp::with_params(HtcpParams::default())
    }

    /// H-TCP with the given module parameters.
    pub fn with_params(params: HtcpParams) -> Htcp {
        Htcp {
            params,
            alpha: ALPHA_BASE,
            beta: BETA_MIN,
            modeswitch: false,
            pkts_acked: 1,
            packetcount: 0,
            min_rtt: 0,
            max_rtt: 0,
            last_cong: 0,
            undo_last_cong: None,
            undo_max_rtt: 0,
            undo_old_max_b: 0,
            min_b: 0,
            max_b: 0,
            old_max_b: 0,
            bi: 0,
            lasttime: 0,
        }
    }

    /// htcp_cong_time(): jiffies since the last congestion event ended.
    fn cong_time(&self, now_j: u64) -> u64 {
        now_j.saturating_sub(self.last_cong)
    }

    /// htcp_ccount(): RTTs since the last congestion event.
    fn ccount(&self, now_j: u64) -> u64 {
        self.cong_time(now_j) / self.min_rtt.max(1)
    }

    /// htcp_reset(): a congestion event starts; remember what undo needs.
    fn reset(&mut self, now_j: u64) {
        self.undo_last_cong = Some(self.last_cong);
        self.undo_max_rtt = self.max_rtt;
        self.undo_old_max_b = self.old_max_b;
        self.last_cong = now_j;
    }

    /// measure_rtt(): minRTT is the minimum sample; maxRTT follows samples
    /// upward in Open state, but only by jumps of at most 20 ms (a larger
    /// jump is treated as an outlier).
    fn measure_rtt(&mut self, srtt: u64, ca_state: CaState) {
        if self.min_rtt > srtt || self.min_rtt == 0 {
            self.min_rtt = srtt;
        }
        if ca_state == CaState::Open {
            if self.max_rtt < self.min_rtt {
                self.max_rtt = self.min_rtt;
            }
            if self.max_rtt < srtt && srtt <= self.max_rtt + msecs_to_jiffies(20) {
                self.max_rtt = srtt;
            }
        }
    }

    /// htcp_beta_update(): beta = 0.5 if the bandwidth estimate moved by
    /// more than ±20 % since the last congestion event (bandwidth switch),
    /// else minRTT/maxRTT clamped to [0.5, 0.8] once modeswitch is on and
    /// minRTT > 10 ms.
    fn beta_update(&mut self, min_rtt: u64, max_rtt: u64) {
        // use_bandwidth_switch: between(5 maxB, 4 old_maxB, 6 old_maxB),
        // i.e. maxB within [0.8, 1.2] x old_maxB.
        if self.params.use_bandwidth_switch {
            let (max_b, old_max_b) = (self.max_b as u64, self.old_max_b as u64);
            self.old_max_b = self.max_b;
            if !(4 * old_max_b..=6 * old_max_b).contains(&(5 * max_b)) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        if self.modeswitch && min_rtt > msecs_to_jiffies(10) && max_rtt > 0 {
            let b = ((min_rtt << 7) / max_rtt).min(u32::MAX as u64) as u32;
            self.beta = b.clamp(BETA_MIN, BETA_MAX);
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
    }

    /// htcp_alpha_update(): alpha = 2 (1 - beta) * factor, where factor is 1
    /// for Δ <= Δ_L = 1 s and 1 + 10 (Δ - Δ_L) + ((Δ - Δ_L)/2)^2 after
    /// (Δ in seconds), then scaled by minRTT / 100 ms with the ratio
    /// 100 ms / minRTT clamped to [0.5, 10] (use_rtt_scaling).
    fn alpha_update(&mut self, now_j: u64) {
        let mut factor: u64 = 1;
        let diff = self.cong_time(now_j);
        if diff > HZ {
            let d = diff - HZ;
            factor = 1 + (10 * d + (d / 2) * (d / 2) / HZ) / HZ;
        }
        if self.params.use_rtt_scaling && self.min_rtt > 0 {
            // scale = 8 * 100 ms / minRTT, clamped to [0.5, 10] << 3.
            let scale = ((HZ << 3) / (10 * self.min_rtt)).clamp(1 << 2, 10 << 3);
            factor = ((factor << 3) / scale).max(1);
        }
        let a = 2 * factor * (128 - self.beta as u64);
        self.alpha = if a == 0 { ALPHA_BASE } else { a.min(u32::MAX as u64) as u32 };
    }

    /// htcp_param_update(): at a congestion event, update beta then alpha,
    /// and let maxRTT fade 5 % toward minRTT (route changes).
    fn param_update(&mut self, now_j: u64) {
        let (min_rtt, max_rtt) = (self.min_rtt, self.max_rtt);
        self.beta_update(min_rtt, max_rtt);
        self.alpha_update(now_j);
        if min_rtt > 0 && max_rtt > min_rtt {
            self.max_rtt = min_rtt + (max_rtt - min_rtt) * 95 / 100;
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    /// htcp_init(): alpha 1, beta 0.5, last_cong = now.
    fn init(&mut self, tp: &mut ConnState) {
        *self = Htcp::with_params(self.params);
        self.last_cong = jiffies(tp.now);
    }

    /// htcp_recalc_ssthresh(): update beta and alpha, then
    /// ssthresh = max(cwnd * beta, 2).
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        self.param_update(jiffies(tp.now));
        let s = (tp.snd_cwnd as u64 * self.beta as u64) >> 7;
        (s as u32).max(2)
    }

    /// htcp_cong_avoid(): only when cwnd-limited; slow start below ssthresh
    /// (leftover acks are dropped, as in Linux), else cwnd += 1 once
    /// snd_cwnd_cnt * alpha >= cwnd, i.e. alpha segments per RTT, with alpha
    /// recomputed at each increment. snd_cwnd_cnt counts the segments of
    /// the last ACK measured in pkts_acked, then 1 per call.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            tp.slow_start(acked);
            return;
        }
        if (tp.snd_cwnd_cnt as u64 * self.alpha as u64) >> 7 >= tp.snd_cwnd as u64 {
            if tp.snd_cwnd < tp.snd_cwnd_clamp {
                tp.snd_cwnd += 1;
            }
            tp.snd_cwnd_cnt = 0;
            self.alpha_update(jiffies(tp.now));
        } else {
            tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.saturating_add(self.pkts_acked);
        }
        self.pkts_acked = 1;
    }

    /// htcp_state(): entering CWR/Recovery/Loss starts a congestion event
    /// (htcp_reset); returning to Open after one restarts the Δ timer.
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        let now_j = jiffies(tp.now);
        match new_state {
            CaState::Open => {
                if self.undo_last_cong.is_some() {
                    self.last_cong = now_j;
                    self.undo_last_cong = None;
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(now_j),
            CaState::Disorder => {}
        }
    }

    /// measure_achieved_throughput(): RTT min/max, and the throughput
    /// estimate Bi (segments/s) sampled about once per cwnd of data and
    /// smoothed 3/4 old + 1/4 new, reset within 3 RTTs of a congestion event.
    fn pkts_acked(&mut self, tp: &mut ConnState, sample: &AckSample) {
        let now_j = jiffies(tp.now);
        if tp.ca_state == CaState::Open {
            self.pkts_acked = sample.pkts_acked.min(u16::MAX as u32);
        }
        if let Some(rtt) = sample.rtt {
            if rtt.as_micros() > 0 {
                self.measure_rtt(usecs_to_jiffies(rtt.as_micros()), tp.ca_state);
            }
        }
        // Throughput is measured only with use_bandwidth_switch, and only in
        // Open/Disorder.
        if !self.params.use_bandwidth_switch {
            return;
        }
        if !matches!(tp.ca_state, CaState::Open | CaState::Disorder) {
            self.packetcount = 0;
            self.lasttime = now_j;
            return;
        }
        self.packetcount = self.packetcount.saturating_add(sample.pkts_acked);
        // Linux computes snd_cwnd - max(alpha >> 7, 1) in u32; a negative
        // result wraps and the test never passes.
        let enough = tp
            .snd_cwnd
            .checked_sub((self.alpha >> 7).max(1))
            .is_some_and(|need| self.packetcount >= need);
        let elapsed = now_j.saturating_sub(self.lasttime);
        if enough && elapsed >= self.min_rtt && self.min_rtt > 0 {
            let cur_bi = (self.packetcount as u64 * HZ / elapsed).min(u32::MAX as u64) as u32;
            if self.ccount(now_j) <= 3 {
                // Just after backoff.
                self.min_b = cur_bi;
                self.max_b = cur_bi;
                self.bi = cur_bi;
            } else {
                self.bi = ((3 * self.bi as u64 + cur_bi as u64) / 4) as u32;
                self.max_b = self.max_b.max(self.bi);
                self.min_b = self.min_b.min(self.max_b);
            }
            self.packetcount = 0;
            self.lasttime = now_j;
        }
    }

    /// htcp_cwnd_undo(): restore the congestion timer, maxRTT and old_maxB
    /// saved by htcp_reset, then tcp_reno_undo_cwnd().
    fn undo_cwnd(&mut self, tp: &mut ConnState) -> u32 {
        if let Some(last_cong) = self.undo_last_cong.take() {
            self.last_cong = last_cong;
            self.max_rtt = self.undo_max_rtt;
            self.old_max_b = self.undo_old_max_b;
        }
        tp.snd_cwnd.max(tp.prior_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    fn conn(cwnd: u32, ssthresh: u32) -> ConnState {
        let mut tp = ConnState::new(1448);
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        tp
    }

    fn sample(rtt: Time) -> AckSample {
        AckSample { pkts_acked: 1, rtt: Some(rtt), in_flight: 0 }
    }

    /// ACK-clocked flow at a fixed RTT: one-segment ACKs spread evenly
    /// over each RTT, until `until`.
    fn run_until(h: &mut Htcp, tp: &mut ConnState, rtt: Time, until: Time) {
        while tp.now < until {
            let n = tp.snd_cwnd.max(1);
            for _ in 0..n {
                tp.now += rtt.div(n as u64);
                h.pkts_acked(tp, &sample(rtt));
                h.cong_avoid(tp, 1);
                if tp.now >= until {
                    return;
                }
            }
        }
    }

    /// A congestion event at `tp.now` as the engine raises it: ssthresh,
    /// Recovery, cwnd = ssthresh, back to Open.
    fn congestion_event(h: &mut Htcp, tp: &mut ConnState) {
        let s = h.ssthresh(tp);
        h.set_state(tp, CaState::Recovery);
        tp.ca_state = CaState::Recovery;
        tp.snd_ssthresh = s;
        tp.snd_cwnd = s;
        h.set_state(tp, CaState::Open);
        tp.ca_state = CaState::Open;
    }

    /// Alpha's time factor for Δ = `ms` after the last congestion event,
    /// with RTT scaling neutral (minRTT = 100 ms) and beta 0.5.
    fn factor_at(ms: u64) -> u32 {
        let mut h = Htcp::new();
        h.min_rtt = 100;
        h.alpha_update(ms);
        h.alpha / (2 * 64)
    }

    #[test]
    fn alpha_is_one_during_first_second_after_loss() {
        let rtt = Time::from_millis(100);
        let mut h = Htcp::new();
        let mut tp = conn(100, 50);
        h.init(&mut tp);
        run_until(&mut h, &mut tp, rtt, Time::from_secs(5));
        congestion_event(&mut h, &mut tp);
        let (t0, w0) = (tp.now, tp.snd_cwnd);
        run_until(&mut h, &mut tp, rtt, t0 + Time::from_millis(950));
        assert_eq!(h.alpha, ALPHA_BASE);
        let grown = tp.snd_cwnd - w0;
        assert!((8..=10).contains(&grown), "grew {grown} in ~9.5 RTTs");
        for ms in [0, 500, 1000] {
            assert_eq!(factor_at(ms), 1, "Δ = {ms} ms");
        }
    }

    #[test]
    fn alpha_grows_quadratically_after_delta_l() {
        // factor = 1 + 10 (Δ - 1) + ((Δ - 1) / 2)^2, Δ in s (integer math).
        assert_eq!(factor_at(2000), 11); // 1 + 10 + 0.25
        assert_eq!(factor_at(3000), 22); // 1 + 20 + 1
        assert_eq!(factor_at(5000), 45); // 1 + 40 + 4
        assert_eq!(factor_at(11_000), 126); // 1 + 100 + 25
        assert_eq!(factor_at(21_000), 301); // 1 + 200 + 100
        // The increase is 2 (1 - beta) * factor: alpha << 7.
        let mut h = Htcp::new();
        h.min_rtt = 100;
        h.beta = BETA_MAX;
        h.alpha_update(3000);
        assert_eq!(h.alpha, 2 * 22 * (128 - 102));
    }

    #[test]
    fn rtt_scaling_scales_alpha_by_min_rtt_over_100ms() {
        let factor = |min_rtt_ms: u64, delta_ms: u64| {
            let mut h = Htcp::new();
            h.min_rtt = min_rtt_ms;
            h.alpha_update(delta_ms);
            h.alpha / 128
        };
        assert_eq!(factor(100, 3000), 22);
        assert_eq!(factor(200, 3000), 44);
        assert_eq!(factor(50, 3000), 11);
        assert_eq!(factor(20, 3000), 4); // 22 * 8 / 40
        // Ratio 100 ms / minRTT clamped to [0.5, 10].
        assert_eq!(factor(400, 3000), 44, "as 200 ms");
        assert_eq!(factor(5, 3000), 2, "as 10 ms: 22 / 10");
        // Never below 1.
        assert_eq!(factor(10, 500), 1);
        // No RTT sample yet: unscaled.
        assert_eq!(factor(0, 3000), 22);
    }

    #[test]
    fn beta_clamped_between_half_and_0_8() {
        let beta = |min_rtt: u64, max_rtt: u64| {
            let mut h = Htcp::new();
            h.modeswitch = true;
            h.beta_update(min_rtt, max_rtt);
            h.beta
        };
        assert_eq!(beta(100, 150), 85); // 128 * 100 / 150
        assert_eq!(beta(100, 110), BETA_MAX, "0.91 clamped to 0.8");
        assert_eq!(beta(100, 100), BETA_MAX);
        assert_eq!(beta(100, 300), BETA_MIN, "0.33 clamped to 0.5");
    }

    #[test]
    fn adaptive_beta_needs_min_rtt_above_10ms_and_a_previous_event() {
        let mut h = Htcp::new();
        h.beta_update(100, 120);
        assert_eq!(h.beta, BETA_MIN, "first event: modeswitch was off");
        assert!(h.modeswitch);
        h.beta_update(100, 120);
        assert_eq!(h.beta, 106.min(BETA_MAX));
        h.beta_update(10, 12);
        assert_eq!(h.beta, BETA_MIN, "minRTT <= 10 ms");
    }

    #[test]
    fn bandwidth_switch_sets_beta_half_when_throughput_changes_by_more_than_20_percent() {
        let beta = |old_max_b: u32, max_b: u32| {
            let mut h = Htcp::new();
            h.modeswitch = true;
            h.old_max_b = old_max_b;
            h.max_b = max_b;
            h.beta_update(100, 150);
            assert_eq!(h.old_max_b, max_b, "old_maxB takes maxB");
            (h.beta, h.modeswitch)
        };
        assert_eq!(beta(1000, 1000), (85, true));
        assert_eq!(beta(1000, 1200), (85, true), "+20 % is still stable");
        assert_eq!(beta(1000, 800), (85, true), "-20 % is still stable");
        assert_eq!(beta(1000, 1201), (BETA_MIN, false));
        assert_eq!(beta(1000, 799), (BETA_MIN, false));
    }

    #[test]
    fn ssthresh_is_beta_times_cwnd_but_at_least_two() {
        let mut h = Htcp::new();
        h.modeswitch = true;
        h.min_rtt = 100;
        h.max_rtt = 100;
        assert_eq!(h.ssthresh(&conn(1000, 10)), 1000 * 102 / 128);
        let mut h = Htcp::new();
        assert_eq!(h.ssthresh(&conn(1000, 10)), 500, "first event: beta 0.5");
        assert_eq!(h.ssthresh(&conn(3, 10)), 2);
    }

    #[test]
    fn max_rtt_fades_five_percent_toward_min_rtt_at_each_congestion_event() {
        let mut h = Htcp::new();
        h.min_rtt = 100;
        h.max_rtt = 200;
        h.ssthresh(&conn(100, 10));
        assert_eq!(h.max_rtt, 195);
    }

    #[test]
    fn max_rtt_follows_samples_only_in_open_and_by_jumps_of_at_most_20ms() {
        let mut h = Htcp::new();
        let mut tp = conn(100, 50);
        h.pkts_acked(&mut tp, &sample(Time::from_millis(100)));
        assert_eq!((h.min_rtt, h.max_rtt), (100, 100));
        h.pkts_acked(&mut tp, &sample(Time::from_millis(120)));
        assert_eq!(h.max_rtt, 120);
        h.pkts_acked(&mut tp, &sample(Time::from_millis(141)));
        assert_eq!(h.max_rtt, 120, "a 21 ms jump is an outlier");
        tp.ca_state = CaState::Recovery;
        h.pkts_acked(&mut tp, &sample(Time::from_millis(130)));
        assert_eq!(h.max_rtt, 120, "not outside Open");
        h.pkts_acked(&mut tp, &sample(Time::from_millis(90)));
        assert_eq!(h.min_rtt, 90, "minRTT in any state");
        // RTT samples are rounded up to whole jiffies.
        h.pkts_acked(&mut tp, &sample(Time::from_micros(40_001)));
        assert_eq!(h.min_rtt, 41);
    }

    #[test]
    fn throughput_estimate_is_reset_just_after_backoff_then_smoothed() {
        let rtt = Time::from_millis(100);
        let mut h = Htcp::new();
        let mut tp = conn(100, 50);
        h.init(&mut tp);
        // 100 segments per 100 ms = 1000 segments/s; first 3 RTTs reset.
        run_until(&mut h, &mut tp, rtt, Time::from_millis(300));
        tp.is_cwnd_limited = false; // hold cwnd at 100
        run_until(&mut h, &mut tp, rtt, Time::from_millis(1000));
        assert!((990..=1040).contains(&h.max_b), "maxB {}", h.max_b);
        // The rate halves: Bi moves 1/4 of the way per sample, maxB holds.
        let mut t = tp.now;
        for _ in 0..4 {
            for _ in 0..100 {
                t += Time::from_millis(2);
                tp.now = t;
                h.pkts_acked(&mut tp, &sample(rtt));
            }
        }
        assert!(h.bi < 800 && h.bi > 600, "Bi {} after ~3 samples at half rate", h.bi);
        assert!(h.max_b >= 990, "maxB keeps the peak");
        // Outside Open/Disorder the interval restarts.
        tp.ca_state = CaState::Recovery;
        h.pkts_acked(&mut tp, &sample(rtt));
        assert_eq!((h.packetcount, h.lasttime), (0, jiffies(tp.now)));
    }

    #[test]
    fn congestion_avoidance_adds_alpha_segments_per_rtt() {
        // minRTT 200 ms doubles alpha in the first second: 2 segments/RTT.
        let rtt = Time::from_millis(200);
        let mut h = Htcp::new();
        let mut tp = conn(100, 50);
        h.init(&mut tp);
        h.pkts_acked(&mut tp, &sample(rtt));
        h.alpha_update(0);
        assert_eq!(h.alpha, 256);
        run_until(&mut h, &mut tp, rtt, Time::from_millis(800));
        assert!((7..=8).contains(&(tp.snd_cwnd - 100)), "cwnd {}", tp.snd_cwnd);
    }

    #[test]
    fn stretch_acks_count_all_segments_they_ack() {
        let mut h = Htcp::new();
        let mut tp = conn(100, 50);
        h.pkts_acked(&mut tp, &AckSample { pkts_acked: 4, rtt: None, in_flight: 0 });
        h.cong_avoid(&mut tp, 4);
        assert_eq!(tp.snd_cwnd_cnt, 4);
        h.cong_avoid(&mut tp, 1);
        assert_eq!(tp.snd_cwnd_cnt, 5, "then 1 per call until the next sample");
    }

    #[test]
    fn slow_start_below_ssthresh_drops_leftover_acks() {
        let mut h = Htcp::new();
        let mut tp = conn(10, 12);
        assert_eq!(h.state_label(&tp), "slow_start");
        h.cong_avoid(&mut tp, 4);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 0));
        assert_eq!(h.state_label(&tp), "cong_avoid", "cwnd reached ssthresh: tcp_in_slow_start() is false");
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut h = Htcp::new();
        let mut tp = conn(20, 10);
        tp.is_cwnd_limited = false;
        for _ in 0..100 {
            h.cong_avoid(&mut tp, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (20, 0));
        let mut tp = conn(10, 100);
        tp.is_cwnd_limited = false;
        h.cong_avoid(&mut tp, 10);
        assert_eq!(tp.snd_cwnd, 10);
    }

    #[test]
    fn set_state_starts_congestion_timer_and_open_restarts_it() {
        let mut h = Htcp::new();
        let mut tp = conn(100, 50);
        tp.now = Time::from_secs(2);
        h.set_state(&mut tp, CaState::Disorder);
        assert_eq!(h.last_cong, 0, "Disorder is no congestion event");
        for st in [CaState::Cwr, CaState::Recovery, CaState::Loss] {
            let mut h = Htcp::new();
            h.set_state(&mut tp, st);
            assert_eq!((h.last_cong, h.undo_last_cong), (2000, Some(0)), "{st:?}");
        }
        h.set_state(&mut tp, CaState::Recovery);
        tp.now = Time::from_secs(3);
        h.set_state(&mut tp, CaState::Open);
        assert_eq!((h.last_cong, h.undo_last_cong), (3000, None));
        tp.now = Time::from_secs(4);
        h.set_state(&mut tp, CaState::Open);
        assert_eq!(h.last_cong, 3000, "only after an event");
    }

    #[test]
    fn undo_restores_congestion_timer_max_rtt_and_old_max_b() {
        let mut h = Htcp::new();
        let mut tp = conn(70, 70);
        h.last_cong = 1000;
        h.max_rtt = 150;
        h.old_max_b = 800;
        tp.now = Time::from_secs(9);
        h.set_state(&mut tp, CaState::Recovery); // htcp_reset saves them
        h.max_rtt = 147;
        h.old_max_b = 900;
        tp.prior_cwnd = 100;
        assert_eq!(h.undo_cwnd(&mut tp), 100, "tcp_reno_undo_cwnd");
        assert_eq!((h.last_cong, h.max_rtt, h.old_max_b), (1000, 150, 800));
        assert_eq!(h.undo_last_cong, None);
        // Back in Open after an undo the timer is not restarted.
        tp.now = Time::from_secs(10);
        h.set_state(&mut tp, CaState::Open);
        assert_eq!(h.last_cong, 1000);
        // Nothing saved: undo changes nothing but cwnd.
        h.max_rtt = 120;
        assert_eq!(h.undo_cwnd(&mut tp), 100);
        assert_eq!(h.max_rtt, 120);
    }

    #[test]
    fn htcp_alpha_update_scales_by_min_rtt_only_with_use_rtt_scaling() {
        // minRTT 200 ms: scale = 8 · 100 ms / 200 ms = 4, factor 8/4 = 2.
        let mut h = Htcp::new();
        h.min_rtt = 200;
        h.alpha_update(500);
        assert_eq!(h.alpha, 2 * 2 * (128 - BETA_MIN));
        let mut h = Htcp::with_params(HtcpParams { use_rtt_scaling: false, ..HtcpParams::default() });
        h.min_rtt = 200;
        h.alpha_update(500);
        assert_eq!(h.alpha, 2 * (128 - BETA_MIN));
    }

    #[test]
    fn htcp_pkts_acked_measures_throughput_only_with_use_bandwidth_switch() {
        let mut tp = conn(20, 10);
        let mut h = Htcp::with_params(HtcpParams { use_bandwidth_switch: false, ..HtcpParams::default() });
        h.init(&mut tp);
        h.pkts_acked(&mut tp, &AckSample { pkts_acked: 4, rtt: None, in_flight: 0 });
        assert_eq!((h.packetcount, h.params.use_bandwidth_switch), (0, false), "init keeps the parameters");
        let mut h = Htcp::new();
        h.init(&mut tp);
        h.pkts_acked(&mut tp, &AckSample { pkts_acked: 4, rtt: None, in_flight: 0 });
        assert_eq!(h.packetcount, 4);
    }
}
