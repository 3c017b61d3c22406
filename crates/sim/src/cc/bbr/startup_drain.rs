//! STARTUP and DRAIN (tcp_bbr.c: bbr_reset_startup_mode,
//! bbr_check_full_bw_reached, bbr_check_drain).
//!
//! > A BBR flow starts in STARTUP, and ramps up its sending rate quickly.
//! > When it estimates the pipe is full, it enters DRAIN to drain the queue.

use super::{Bbr, Mode, BBR_FULL_BW_CNT, BBR_FULL_BW_THRESH, BBR_SCALE, BBR_UNIT};
use crate::cc::{ConnState, RateSample};

impl Bbr {
    /// bbr_reset_startup_mode().
    pub(super) fn reset_startup_mode(&mut self) {
        self.mode = Mode::Startup;
    }

    /// bbr_check_full_bw_reached(): "BBR estimates that STARTUP filled the
    /// pipe if the estimated bw hasn't changed by at least
    /// bbr_full_bw_thresh (25%) after bbr_full_bw_cnt (3) non-app-limited
    /// rounds."
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }

        let bw_thresh = (self.full_bw as u128 * BBR_FULL_BW_THRESH as u128) >> BBR_SCALE;
        if self.max_bw() as u128 >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt = self.full_bw_cnt.saturating_add(1);
        self.full_bw_reached = self.full_bw_cnt >= BBR_FULL_BW_CNT;
    }

    /// bbr_check_drain(): "If pipe is probably full, drain the queue and
    /// then enter steady-state."
    pub(super) fn check_drain(&mut self, tp: &mut ConnState) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain; // drain queue we created
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
        } // fall through to check if in-flight is already small:
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.in_flight())
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tp); // we estimate queue is drained
        }
    }
}
