//! BIC TCP (Xu, Harfoush and Rhee, "Binary Increase Congestion Control for
//! Fast, Long Distance Networks", INFOCOM 2004) as Linux implements it in
//! net/ipv4/tcp_bic.c: below the window of the last loss (W_max) cwnd
//! grows by a binary search toward it (at most `max_increment` per RTT),
//! above it by "max probing", slowly first and then linearly; a loss cuts
//! cwnd to beta = 819/1024 ≈ 0.8. The module parameters are
//! [`BicParams`], with Linux's defaults; undo is tcp_reno_undo_cwnd (the
//! trait's default). Time is tcp_jiffies32 (`cc::jiffies`).

use super::jiffies::{jiffies, HZ};
use super::{AckSample, CaState, ConnState, CongestionControl};

/// BICTCP_BETA_SCALE: beta is in units of 1/1024.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// BICTCP_B: the binary search goes to (max + min) / B.
pub const BICTCP_B: u32 = 4;
/// ACK_RATIO_SHIFT: delayed_ack is packets per ACK << 4.
const ACK_RATIO_SHIFT: u32 = 4;

/// tcp_bic.c's module parameters (`module_param`), with Linux's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BicParams {
    /// `fast_convergence`: after a loss below the previous W_max, remember
    /// only (1 + beta)/2 of cwnd as W_max, yielding to newer flows.
    pub fast_convergence: bool,
    /// `max_increment`: limit on the increase per RTT during the binary
    /// search, in segments.
    pub max_increment: u32,
    /// `low_window`: at or below this cwnd BIC behaves like Reno.
    pub low_window: u32,
    /// `beta`: multiplicative decrease, in 1/1024 (819 ≈ 0.8).
    pub beta: u32,
    /// `initial_ssthresh`: slow-start threshold at init; 0 leaves it
    /// infinite.
    pub initial_ssthresh: u32,
    /// `smooth_part`: RTTs spent going from W_max - B to W_max.
    pub smooth_part: u32,
}

impl Default for BicParams {
    fn default() -> BicParams {
        BicParams {
            fast_convergence: true,
            max_increment: 16,
            low_window: 14,
            beta: 819,
            initial_ssthresh: 0,
            smooth_part: 20,
        }
    }
}

/// `struct bictcp`. Linux also records `epoch_start` but BIC never reads
/// it; it is left out.
#[derive(Debug, Clone)]
pub struct Bic {
    params: BicParams,
    /// Increase cwnd by 1 after this many acked segments.
    cnt: u32,
    /// W_max: cwnd before the last reduction (after fast convergence).
    last_max_cwnd: u32,
    /// cwnd and jiffies of the last full bictcp_update().
    last_cwnd: u32,
    last_time: u64,
    /// Packets per ACK << ACK_RATIO_SHIFT, a 1/16 moving average.
    delayed_ack: u32,
}

impl Default for Bic {
    fn default() -> Bic {
        Bic::with_params(BicParams::default())
    }
}

impl Bic {
    pub fn new() -> Bic {
        Bic::default()
    }

    /// BIC with the given module parameters.
    pub fn with_params(params: BicParams) -> Bic {
        let mut b = Bic {
            params,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            delayed_ack: 0,
        };
        b.reset();
        b
    }

    /// bictcp_reset().
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.delayed_ack = 2 << ACK_RATIO_SHIFT;
    }

    /// W_max, the window of the last loss (tests and traces).
    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }

    /// bictcp_update(): compute `cnt`, the acked segments per one-segment
    /// increase, at most 32 times a second while cwnd is unchanged.
    fn update(&mut self, cwnd: u32, now_j: u64) {
        if self.last_cwnd == cwnd && now_j.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now_j;

        let p = &self.params;
        // Start off normal: Reno below low_window.
        if cwnd <= p.low_window {
            self.cnt = cwnd;
            return;
        }
        let max = self.last_max_cwnd;
        let max_inc = p.max_increment.max(1);
        if cwnd < max {
            // Binary increase: jump to the midpoint (max - cwnd) / B per RTT,
            // at most max_increment, at least smooth_part RTTs for the last B.
            let dist = (max - cwnd) / BICTCP_B;
            self.cnt = if dist > max_inc {
                cwnd / max_inc // linear increase
            } else if dist <= 1 {
                cwnd.saturating_mul(p.smooth_part) / BICTCP_B
            } else {
                cwnd / dist
            };
        } else {
            // Max probing: slow start-like growth away from W_max, then linear.
            self.cnt = if cwnd < max.saturating_add(BICTCP_B) {
                cwnd.saturating_mul(p.smooth_part) / BICTCP_B
            } else if cwnd < max.saturating_add(max_inc.saturating_mul(BICTCP_B - 1)) {
                cwnd.saturating_mul(BICTCP_B - 1) / (cwnd - max)
            } else {
                cwnd / max_inc // linear increase
            };
        }
        // Before the first loss (or with very low utilisation): at least 5 %
        // growth per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        // Scale by the delayed-ACK ratio; cnt cannot be zero.
        self.cnt = ((self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack.max(1)).max(1);
    }
}

impl Bic {
    /// The branch bictcp_update() takes at `cwnd` (the `cc_mode` label
    /// outside slow start): Reno at or below low_window, the binary search
    /// below W_max, max probing above it.
    fn update_branch(&self, cwnd: u32) -> &'static str {
        if cwnd <= self.params.low_window {
            "reno"
        } else if cwnd < self.last_max_cwnd {
            "binary_search"
        } else {
            "max_probing"
        }
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    /// bictcp_init(): reset; a non-zero initial_ssthresh sets ssthresh.
    fn init(&mut self, tp: &mut ConnState) {
        self.reset();
        if self.params.initial_ssthresh != 0 {
            tp.snd_ssthresh = self.params.initial_ssthresh;
        }
    }

    /// bictcp_recalc_ssthresh(): remember W_max (with fast convergence
    /// when cwnd is below the previous one), then halve at or below
    /// low_window, else cut to beta · cwnd; at least 2.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        let p = &self.params;
        let cwnd = tp.snd_cwnd;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && p.fast_convergence {
            ((cwnd as u64 * (BICTCP_BETA_SCALE + p.beta) as u64) / (2 * BICTCP_BETA_SCALE) as u64) as u32
        } else {
            cwnd
        };
        if cwnd <= p.low_window {
            (cwnd >> 1).max(2)
        } else {
            ((cwnd as u64 * p.beta as u64 / BICTCP_BETA_SCALE as u64) as u32).max(2)
        }
    }

    /// bictcp_cong_avoid(): only when cwnd-limited; slow start below
    /// ssthresh, the leftover to bictcp_update() + tcp_cong_avoid_ai(cnt).
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tp.snd_cwnd, jiffies(tp.now));
        let cnt = self.cnt;
        tp.cong_avoid_ai(cnt, acked);
    }

    /// bictcp_state(): an RTO (Loss) forgets W_max and the ACK ratio.
    fn set_state(&mut self, _tp: &mut ConnState, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
        }
    }

    /// bictcp_acked(): in Open, delayed_ack += pkts_acked - delayed_ack/16,
    /// i.e. ratio = (15 ratio + sample) / 16 (u32 arithmetic, as Linux).
    fn pkts_acked(&mut self, tp: &mut ConnState, sample: &AckSample) {
        if tp.ca_state == CaState::Open {
            let decay = self.delayed_ack >> ACK_RATIO_SHIFT;
            self.delayed_ack = self.delayed_ack.wrapping_add(sample.pkts_acked.wrapping_sub(decay));
        }
    }

    fn state_label(&self, tp: &ConnState) -> &'static str {
        tp.window_label(self.update_branch(tp.snd_cwnd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::TCP_INFINITE_SSTHRESH;
    use crate::units::Time;

    use crate::cc::test_support::cwnd_limited as limited;

    /// BIC whose ACK ratio is one packet per ACK (delayed_ack = 16).
    fn per_packet_acks(b: &mut Bic) {
        b.delayed_ack = 1 << ACK_RATIO_SHIFT;
    }

    fn cnt_at(b: &mut Bic, cwnd: u32) -> u32 {
        b.last_cwnd = 0; // force a recomputation
        b.update(cwnd, 1000);
        b.cnt
    }

    #[test]
    fn bictcp_init_keeps_ssthresh_infinite_unless_initial_ssthresh_is_set() {
        let mut tp = ConnState::new(1448);
        Bic::new().init(&mut tp);
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        let p = BicParams { initial_ssthresh: 100, ..BicParams::default() };
        Bic::with_params(p).init(&mut tp);
        assert_eq!(tp.snd_ssthresh, 100);
    }

    #[test]
    fn bictcp_recalc_ssthresh_is_beta_819_above_low_window_and_half_below() {
        let mut b = Bic::new();
        assert_eq!(b.ssthresh(&limited(1000, 10)), 1000 * 819 / 1024);
        assert_eq!(b.last_max_cwnd(), 1000);
        assert_eq!(b.ssthresh(&limited(14, 10)), 7);
        assert_eq!(b.ssthresh(&limited(3, 10)), 2);
    }

    #[test]
    fn bictcp_recalc_ssthresh_fast_convergence_remembers_1_plus_beta_over_2() {
        let mut b = Bic::new();
        b.ssthresh(&limited(1000, 10));
        b.ssthresh(&limited(800, 10));
        assert_eq!(b.last_max_cwnd(), 800 * (1024 + 819) / 2048);
        let mut b = Bic::with_params(BicParams { fast_convergence: false, ..BicParams::default() });
        b.ssthresh(&limited(1000, 10));
        b.ssthresh(&limited(800, 10));
        assert_eq!(b.last_max_cwnd(), 800);
    }

    #[test]
    fn bictcp_update_is_reno_at_or_below_low_window() {
        let mut b = Bic::new();
        per_packet_acks(&mut b);
        assert_eq!(cnt_at(&mut b, 14), 14);
    }

    #[test]
    fn bictcp_update_binary_search_goes_a_quarter_of_the_way_at_most_max_increment() {
        let mut b = Bic::new();
        per_packet_acks(&mut b);
        b.last_max_cwnd = 1000;
        // Far below: linear, +16 per RTT.
        assert_eq!(cnt_at(&mut b, 500), 500 / 16);
        // dist = (1000 - 960) / 4 = 10: +10 per RTT.
        assert_eq!(cnt_at(&mut b, 960), 96);
        // dist <= 1: smooth_part RTTs for the last B segments.
        assert_eq!(cnt_at(&mut b, 996), 996 * 20 / 4);
    }

    #[test]
    fn bictcp_update_max_probing_starts_slowly_then_turns_linear() {
        let mut b = Bic::new();
        per_packet_acks(&mut b);
        b.last_max_cwnd = 1000;
        assert_eq!(cnt_at(&mut b, 1002), 1002 * 20 / 4);
        assert_eq!(cnt_at(&mut b, 1010), 1010 * 3 / 10);
        assert_eq!(cnt_at(&mut b, 1048), 1048 / 16);
    }

    #[test]
    fn bictcp_update_grows_at_least_5_percent_per_rtt_before_the_first_loss() {
        let mut b = Bic::new();
        per_packet_acks(&mut b);
        assert_eq!(cnt_at(&mut b, 1000), 20);
    }

    #[test]
    fn bictcp_update_scales_cnt_by_the_delayed_ack_ratio() {
        let mut b = Bic::new(); // reset: 2 packets per ACK
        b.last_max_cwnd = 1000;
        assert_eq!(cnt_at(&mut b, 960), 48);
    }

    #[test]
    fn bictcp_update_recomputes_at_most_32_times_a_second_for_the_same_cwnd() {
        let mut b = Bic::new();
        per_packet_acks(&mut b);
        b.last_max_cwnd = 1000;
        b.update(960, 1000);
        b.last_max_cwnd = 2000;
        b.update(960, 1000 + HZ / 32);
        assert_eq!(b.cnt, 96, "within HZ/32: unchanged");
        b.update(960, 1001 + HZ / 32);
        assert_eq!(b.cnt, 960 / 16);
    }

    #[test]
    fn bictcp_acked_tracks_packets_per_ack_in_open_only() {
        let mut b = Bic::new();
        let mut tp = limited(100, 10);
        let s = AckSample { pkts_acked: 1, rtt: Some(Time::from_millis(10)), in_flight: 100 };
        for _ in 0..200 {
            b.pkts_acked(&mut tp, &s);
        }
        // (15 r + 1) / 16 in << 4 integer steps converges to 1 packet per ACK
        // plus the truncation floor.
        assert!((16..=31).contains(&b.delayed_ack), "{}", b.delayed_ack);
        let before = b.delayed_ack;
        tp.ca_state = CaState::Recovery;
        b.pkts_acked(&mut tp, &AckSample { pkts_acked: 10, ..s });
        assert_eq!(b.delayed_ack, before);
    }

    #[test]
    fn bictcp_state_loss_resets_w_max_and_the_ack_ratio() {
        let mut b = Bic::new();
        let mut tp = limited(1000, 10);
        b.ssthresh(&tp);
        b.delayed_ack = 16;
        b.set_state(&mut tp, CaState::Recovery);
        assert_eq!(b.last_max_cwnd(), 1000);
        b.set_state(&mut tp, CaState::Loss);
        assert_eq!((b.last_max_cwnd(), b.delayed_ack), (0, 32));
    }

    #[test]
    fn bic_undo_is_tcp_reno_undo_cwnd() {
        let mut b = Bic::new();
        let mut tp = limited(500, 10);
        tp.prior_cwnd = 800;
        assert_eq!(b.undo_cwnd(&mut tp), 800);
    }

    #[test]
    fn bictcp_cong_avoid_binary_search_reaches_w_max_in_a_few_rtts() {
        // After a loss at 1000 (ssthresh 799), per-packet ACKs, one RTT =
        // cwnd ACKs 100 ms apart: the search closes most of the gap fast.
        let mut b = Bic::new();
        per_packet_acks(&mut b);
        let mut tp = limited(1000, 10);
        tp.snd_ssthresh = b.ssthresh(&tp);
        tp.snd_cwnd = tp.snd_ssthresh;
        let mut per_rtt = Vec::new();
        for _ in 0..30 {
            let w = tp.snd_cwnd;
            for _ in 0..w {
                b.cong_avoid(&mut tp, 1);
            }
            tp.now += Time::from_millis(100);
            per_rtt.push(tp.snd_cwnd - w);
        }
        // Far below W_max the step is max_increment (16), then shrinks
        // as the gap halves; near W_max it is below 1 per RTT.
        assert_eq!(per_rtt[0], 16);
        assert!(tp.snd_cwnd < 1000 + 4, "{per_rtt:?}");
        assert!(tp.snd_cwnd >= 990, "{per_rtt:?}");
    }
}
