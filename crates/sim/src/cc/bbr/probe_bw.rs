//! PROBE_BW gain cycling (tcp_bbr.c: bbr_is_next_cycle_phase,
//! bbr_advance_cycle_phase, bbr_update_cycle_phase,
//! bbr_reset_probe_bw_mode, bbr_reset_mode).
//!
//! > Gain cycling: cycle pacing gain to converge to fair share of available
//! > bw.

use super::{Bbr, Mode, BBR_CYCLE_RAND, BBR_UNIT, CYCLE_LEN};
use crate::cc::{ConnState, RateSample};

impl Bbr {
    /// bbr_is_next_cycle_phase(): "End cycle phase if it's time and/or we
    /// hit the phase's in-flight target."
    fn is_next_cycle_phase(&self, tp: &ConnState, rs: &RateSample) -> bool {
        // tcp_stamp_us_delta(tp->delivered_mstamp, bbr->cycle_mstamp) >
        // bbr->min_rtt_us
        let elapsed_us = tp
            .delivered_mstamp
            .as_micros()
            .saturating_sub(self.cycle_mstamp.as_micros());
        let is_full_length = elapsed_us > u64::from(self.min_rtt_us);

        // "The pacing_gain of 1.0 paces at the estimated bw to try to fully
        // use the pipe without increasing the queue."
        if self.pacing_gain == BBR_UNIT {
            return is_full_length; // just use wall clock time
        }

        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();

        // "A pacing_gain > 1.0 probes for bw by trying to raise inflight to
        // at least pacing_gain*BDP; this may take more than min_rtt if
        // min_rtt is small (e.g. on a LAN). We do not persist if packets
        // are lost, since a path with small buffers may not hold that much."
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 // perhaps pacing_gain*BDP won't fit
                    || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }

        // "A pacing_gain < 1.0 tries to drain extra queue we added if bw
        // probing didn't find more bw. If inflight falls to match BDP then
        // we estimate queue is drained; persisting would underutilize the
        // pipe."
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// bbr_advance_cycle_phase().
    fn advance_cycle_phase(&mut self, tp: &ConnState) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tp.delivered_mstamp;
    }

    /// bbr_update_cycle_phase().
    pub(super) fn update_cycle_phase(&mut self, tp: &ConnState, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(tp, rs) {
            self.advance_cycle_phase(tp);
        }
    }

    /// bbr_reset_probe_bw_mode(): enter PROBE_BW at a random phase of the
    /// cycle: cycle_idx = CYCLE_LEN - 1 - prandom_u32_max(bbr_cycle_rand),
    /// then advance, so the start phase is any but 1 (the 3/4 phase).
    pub(super) fn reset_probe_bw_mode(&mut self, tp: &ConnState) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.u32_max(BBR_CYCLE_RAND);
        self.advance_cycle_phase(tp); // flip to next phase of gain cycle
    }

    /// bbr_reset_mode(): back to STARTUP unless the pipe was filled.
    pub(super) fn reset_mode(&mut self, tp: &ConnState) {
        if !self.full_bw_reached {
            self.reset_startup_mode();
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }
}
