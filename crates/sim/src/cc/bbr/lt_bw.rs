//! Long-term ("LT") bandwidth estimation: token-bucket policer detection
//! (tcp_bbr.c: bbr_reset_lt_bw_sampling_interval, bbr_reset_lt_bw_sampling,
//! bbr_lt_bw_interval_done, bbr_lt_bw_sampling).
//!
//! > Token-bucket traffic policers are common (see "An Internet-Wide
//! > Analysis of Traffic Policing", SIGCOMM 2016). BBR detects token-bucket
//! > policers and explicitly models their policed rate, to reduce
//! > unnecessary losses. We estimate that we're policed if we see 2
//! > consecutive sampling intervals with consistent throughput and high
//! > packet loss. If we think we're being policed, set lt_bw to the
//! > "long-term" average delivery rate from those 2 intervals.

use super::{
    Bbr, Mode, BBR_LT_BW_DIFF, BBR_LT_BW_MAX_RTTS, BBR_LT_BW_RATIO, BBR_LT_INTVL_MIN_RTTS,
    BBR_LT_LOSS_THRESH, BBR_SCALE, BBR_UNIT, BW_UNIT, USEC_PER_MSEC,
};
use crate::cc::{ConnState, RateSample};

impl Bbr {
    /// tp->delivered_mstamp in milliseconds (div_u64(.., USEC_PER_MSEC)).
    fn delivered_ms(tp: &ConnState) -> u64 {
        tp.delivered_mstamp.as_micros() / USEC_PER_MSEC
    }

    /// bbr_reset_lt_bw_sampling_interval(): "Start a new long-term sampling
    /// interval."
    fn reset_lt_bw_sampling_interval(&mut self, tp: &ConnState) {
        self.lt_last_stamp = Self::delivered_ms(tp);
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    /// bbr_reset_lt_bw_sampling(): "Completely reset long-term bandwidth
    /// sampling."
    pub(super) fn reset_lt_bw_sampling(&mut self, tp: &ConnState) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// bbr_lt_bw_interval_done(): "Long-term bw sampling interval is done.
    /// Estimate whether we're policed."
    fn lt_bw_interval_done(&mut self, tp: &ConnState, bw: u64) {
        if self.lt_bw != 0 {
            // do we have bw from a previous interval?
            // "Is new bw close to the lt_bw from the previous interval?"
            let diff = bw.abs_diff(self.lt_bw);
            if (diff as u128) * (BBR_UNIT as u128) <= (BBR_LT_BW_RATIO as u128) * (self.lt_bw as u128)
                || Self::rate_bytes_per_sec(tp, diff, BBR_UNIT) <= BBR_LT_BW_DIFF
            {
                // "All criteria are met; estimate we're policed."
                self.lt_bw = (bw + self.lt_bw) >> 1; // avg 2 intvls
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// bbr_lt_bw_sampling(): sample the delivery rate over intervals of 4
    /// to 16 rounds that start and end with a loss; two consecutive lossy
    /// (>= 50/256) intervals with consistent bw mean a policer.
    pub(super) fn lt_bw_sampling(&mut self, tp: &ConnState, rs: &RateSample) {
        if self.lt_use_bw {
            // already using long-term rate, lt_bw?
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt = self.lt_rtt_cnt.saturating_add(1);
                if self.lt_rtt_cnt >= BBR_LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tp); // stop using lt_bw
                    self.reset_probe_bw_mode(tp); // restart gain cycling
                }
            }
            return;
        }

        // "Wait for the first loss before sampling, to let the policer
        // exhaust its tokens and estimate the steady-state rate allowed by
        // the policer. Starting samples earlier includes bursts that
        // over-estimate the bw."
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }

        // "To avoid underestimates, reset sampling if we run out of data."
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }

        if self.round_start {
            self.lt_rtt_cnt = self.lt_rtt_cnt.saturating_add(1); // count round trips
        }
        if self.lt_rtt_cnt < BBR_LT_INTVL_MIN_RTTS {
            return; // sampling interval needs to be longer
        }
        if self.lt_rtt_cnt > 4 * BBR_LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tp); // interval is too long
            return;
        }

        // "End sampling interval when a packet is lost, so we estimate the
        // policer tokens were exhausted. Stopping the sampling before the
        // tokens are exhausted under-estimates the policed rate."
        if rs.losses == 0 {
            return;
        }

        // "Calculate packets lost and delivered in sampling interval."
        let lost = tp.lost.saturating_sub(self.lt_last_lost);
        let delivered = tp.delivered.saturating_sub(self.lt_last_delivered);
        // "Is loss rate (lost/delivered) >= lt_loss_thresh? If not, wait."
        if delivered == 0
            || (lost as u128) << BBR_SCALE < (BBR_LT_LOSS_THRESH as u128) * (delivered as u128)
        {
            return;
        }

        // "Find average delivery rate in this sampling interval."
        let t_ms = Self::delivered_ms(tp).saturating_sub(self.lt_last_stamp);
        if t_ms < 1 {
            return; // interval is less than one ms, so wait
        }
        // "Check if can multiply without overflow"
        if t_ms >= u64::from(u32::MAX) / USEC_PER_MSEC {
            self.reset_lt_bw_sampling(tp); // interval too long; reset
            return;
        }
        let t_us = t_ms * USEC_PER_MSEC;
        let bw = delivered.saturating_mul(BW_UNIT) / t_us;
        self.lt_bw_interval_done(tp, bw);
    }
}
