//! Leaving STARTUP and DRAIN (tcp_bbr.c v3: bbr_check_full_bw_reached,
//! bbr_check_loss_too_high_in_startup, bbr_check_ecn_too_high_in_startup,
//! bbr_handle_queue_too_high_in_startup, bbr_reset_full_bw,
//! bbr_check_drain).
//!
//! STARTUP ends on a bandwidth plateau (3 rounds below 1.25× growth, as
//! v1), on high loss (≥ 6 loss events in a Recovery round with loss above
//! 2 % of the flight) or on high ECN (2 rounds above 50 % CE).

use super::{
    Bbr3, Ctx, Mode, BBR_SCALE, BBR_UNIT, ECN_THRESH, FULL_BW_CNT, FULL_BW_THRESH, FULL_ECN_CNT,
    FULL_LOSS_CNT,
};
use crate::cc::{CaState, ConnState, RateSample};

impl Bbr3 {
    /// bbr_reset_full_bw(): "Reset the estimator for reaching full
    /// bandwidth based on bw plateau."
    pub(crate) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// bbr_handle_queue_too_high_in_startup(): the pipe is full; start
    /// inflight_hi at the larger of the BDP and the last round's delivered
    /// volume.
    fn handle_queue_too_high_in_startup(&mut self, tp: &ConnState) {
        self.full_bw_reached = true;
        let bdp = self.inflight(tp, self.max_bw(), BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    /// bbr_check_ecn_too_high_in_startup(): "Exit STARTUP upon N
    /// consecutive rounds with ECN mark rate > ecn_thresh."
    pub(crate) fn check_ecn_too_high_in_startup(&mut self, tp: &ConnState, ce_ratio: u32) {
        if self.full_bw_reached || !self.ecn_eligible || FULL_ECN_CNT == 0 || ECN_THRESH == 0 {
            return;
        }
        if ce_ratio >= ECN_THRESH {
            self.startup_ecn_rounds = (self.startup_ecn_rounds + 1).min(3); // 2-bit field
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= FULL_ECN_CNT {
            self.handle_queue_too_high_in_startup(tp);
        }
    }

    /// bbr_check_loss_too_high_in_startup(): "Exit STARTUP based on loss
    /// rate > 1% and loss gaps in round >= N. Wait until the end of the
    /// round in recovery to get a good estimate of how many packets have
    /// been lost". (The comment's 1 % predates bbr_loss_thresh = 2 %, which
    /// bbr_is_inflight_too_high() applies.)
    pub(crate) fn check_loss_too_high_in_startup(&mut self, tp: &ConnState, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1; // update saturating counter
        }
        if FULL_LOSS_CNT != 0
            && self.loss_round_start
            && tp.ca_state == CaState::Recovery
            && self.loss_events_in_round >= FULL_LOSS_CNT
            && self.is_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup(tp);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// bbr_check_full_bw_reached(): "BBR estimates bw probing filled the
    /// pipe if the estimated bw hasn't changed by at least
    /// bbr_full_bw_thresh (25%) after bbr_full_bw_cnt (3) non-app-limited
    /// rounds." In v3 it compares this ACK's sample and also serves
    /// PROBE_UP (full_bw_now).
    pub(crate) fn check_full_bw_reached(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let bw_thresh = (u128::from(self.full_bw) * u128::from(FULL_BW_THRESH)) >> BBR_SCALE;
        if u128::from(ctx.sample_bw) >= bw_thresh {
            self.reset_full_bw();
            self.full_bw = ctx.sample_bw;
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt = (self.full_bw_cnt + 1).min(3); // 2-bit field
        self.full_bw_now = self.full_bw_cnt >= FULL_BW_CNT;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// bbr_check_drain(): "If pipe is probably full, drain the queue and
    /// then enter steady-state."
    pub(crate) fn check_drain(&mut self, tp: &mut ConnState) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain; // drain queue we created
            // "Set ssthresh to export purely for monitoring, to signal
            // completion of initial STARTUP"
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        } // fall through to check if in-flight is already small:
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.in_flight()) <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
        }
    }
}
