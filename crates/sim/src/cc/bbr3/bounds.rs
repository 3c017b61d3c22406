//! The model's bounds (tcp_bbr.c v3): the long-term upper bound
//! inflight_hi (bbr_adapt_upper_bounds, bbr_is_inflight_too_high,
//! bbr_inflight_hi_from_lost_skb, bbr_handle_inflight_too_high,
//! bbr_inflight_with_headroom) and the short-term lower bounds
//! bw_lo / inflight_lo (bbr_adapt_lower_bounds, bbr_init_lower_bounds,
//! bbr_loss_lower_bounds, bbr_ecn_lower_bounds, bbr_reset_lower_bounds),
//! applied to cwnd by bbr_bound_cwnd_for_inflight_model.

use super::{
    AckPhase, Bbr3, Mode, Phase, BBR_SCALE, BBR_UNIT, BETA, CWND_MIN_TARGET, ECN_FACTOR,
    ECN_THRESH, INFLIGHT_HEADROOM, LOSS_THRESH, NO_BW_BOUND, NO_INFLIGHT_BOUND,
};
use crate::cc::{ConnState, RateSample};

impl Bbr3 {
    /// bbr_is_inflight_too_high(): "Does loss/ECN rate for this sample
    /// suggest inflight is "too high"?" Loss above bbr_loss_thresh (2 %)
    /// of the flight the sample was sent in, or (ECN-eligible) CE above
    /// bbr_ecn_thresh (50 %) of what it delivered.
    pub(crate) fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight != 0 {
            let loss_thresh = (u64::from(rs.tx_in_flight) * u64::from(LOSS_THRESH)) >> BBR_SCALE;
            if u64::from(rs.lost) > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible && ECN_THRESH != 0 {
            let ecn_thresh = ((rs.delivered as u64) * u64::from(ECN_THRESH)) >> BBR_SCALE;
            if u64::from(rs.delivered_ce) > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// bbr_inflight_hi_from_lost_skb(): "Calculate the tx_in_flight level
    /// that corresponded to excessive loss": solve
    /// (lost_prev + lost_prefix) / (inflight_prev + lost_prefix) >=
    /// loss_thresh for lost_prefix, in fixed point, rounded up.
    pub(crate) fn inflight_hi_from_lost_skb(rs: &RateSample, pcount: u32) -> u32 {
        // "How much data was in flight before this skb?"
        let Some(inflight_prev) = rs.tx_in_flight.checked_sub(pcount) else {
            return u32::MAX;
        };
        // "How much inflight data was marked lost before this skb?"
        let Some(lost_prev) = rs.lost.checked_sub(pcount) else {
            return u32::MAX;
        };
        // "At what prefix of this lost skb did losss rate exceed loss_thresh?"
        let loss_budget = (u64::from(inflight_prev) * u64::from(LOSS_THRESH) + u64::from(BBR_UNIT) - 1) >> BBR_SCALE;
        let lost_prefix = if u64::from(lost_prev) >= loss_budget {
            0 // previous losses crossed loss_thresh
        } else {
            ((loss_budget - u64::from(lost_prev)) << BBR_SCALE) / u64::from(BBR_UNIT - LOSS_THRESH)
        };
        (u64::from(inflight_prev) + lost_prefix).min(u64::from(u32::MAX)) as u32
    }

    /// bbr_inflight_with_headroom(): "If loss/ECN rates during probing
    /// indicated we may have overfilled a buffer, return an operating point
    /// that tries to leave unutilized headroom in the path for other
    /// flows": inflight_hi less 15 %, at least bbr_cwnd_min_target.
    pub(crate) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == NO_INFLIGHT_BOUND {
            return NO_INFLIGHT_BOUND;
        }
        let headroom = ((u64::from(self.inflight_hi) * u64::from(INFLIGHT_HEADROOM)) >> BBR_SCALE) as u32;
        let headroom = headroom.max(1);
        self.inflight_hi.saturating_sub(headroom).max(CWND_MIN_TARGET)
    }

    /// bbr_handle_inflight_too_high(): "Loss and/or ECN rate is too high
    /// while probing. Adapt (once per bw probe) by cutting inflight_hi and
    /// then restarting cycle": inflight_hi = max(tx_in_flight,
    /// target_inflight * (1 - beta)).
    pub(crate) fn handle_inflight_too_high(&mut self, tp: &ConnState, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false; // only react once per probe
        // "If we are app-limited then we are not robustly probing the max
        // volume of inflight data we think might be safe"
        if !rs.is_app_limited {
            let cut = ((u64::from(self.target_inflight(tp)) * u64::from(BBR_UNIT - BETA)) >> BBR_SCALE) as u32;
            self.inflight_hi = rs.tx_in_flight.max(cut);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(tp);
        }
    }

    /// bbr_adapt_upper_bounds(): "If we're seeing bw and loss samples
    /// reflecting our bw probing, adapt using the signals we see. If loss
    /// or ECN mark rate gets too high, then adapt inflight_hi downward. If
    /// we're able to push inflight higher without such signals, push
    /// higher: adapt inflight_hi upward." Returns true when it decided a
    /// state transition.
    pub(crate) fn adapt_upper_bounds(&mut self, tp: &ConnState, rs: &RateSample) -> bool {
        // "Track when we'll see bw/loss samples resulting from our bw probes."
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // "End of samples from bw probing phase."
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            // "now is the best time to forget the bw samples from the
            // previous cycle, by advancing the window."
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            // "If we had an inflight_hi, then probed and pushed inflight all
            // the way up to hit that inflight_hi without seeing any high
            // loss/ECN in all the resulting ACKs from that probing, then
            // probe up again"
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(tp, 0);
                return true; // yes, decided state transition
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                // sample is from bw probing?
                self.handle_inflight_too_high(tp, rs);
            }
        } else {
            // "Loss/ECN rate is declared safe. Adjust upper bound upward."
            if self.inflight_hi == NO_INFLIGHT_BOUND {
                return false; // no excess queue signals yet
            }
            // "To be resilient to random loss, we must raise bw/inflight_hi
            // if we observe in any phase that a higher level is safe."
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(tp, rs);
            }
        }
        false
    }

    /// bbr_bound_cwnd_for_inflight_model(): "Bound cwnd to a sensible
    /// level, based on our current probing state machine phase and model
    /// of a good inflight level (inflight_lo, inflight_hi)."
    pub(crate) fn bound_cwnd_for_inflight_model(&mut self, tp: &mut ConnState) {
        if !self.initialized {
            return;
        }
        let mut cap = NO_INFLIGHT_BOUND;
        if self.mode == Mode::ProbeBw && self.cycle_idx != Phase::Cruise {
            // "Probe to see if more packets fit in the path."
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || (self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Cruise) {
            cap = self.inflight_with_headroom();
        }
        // "Adapt to any loss/ECN since our last bw probe."
        cap = cap.min(self.inflight_lo);
        cap = cap.max(CWND_MIN_TARGET);
        tp.snd_cwnd = cap.min(tp.snd_cwnd);
    }

    /// bbr_init_lower_bounds(): "Init lower bounds if have not inited yet."
    fn init_lower_bounds(&mut self, tp: &ConnState, init_bw: bool) {
        if init_bw && self.bw_lo == NO_BW_BOUND {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == NO_INFLIGHT_BOUND {
            self.inflight_lo = tp.snd_cwnd;
        }
    }

    /// bbr_loss_lower_bounds(): "Reduce bw and inflight to (1 - beta)",
    /// but not below the latest round's delivered rate and volume.
    fn loss_lower_bounds(&mut self) {
        let loss_cut = u128::from(BBR_UNIT - BETA);
        let bw = ((u128::from(self.bw_lo) * loss_cut) >> BBR_SCALE).min(u128::from(u64::MAX)) as u64;
        self.bw_lo = self.bw_latest.max(bw);
        let inflight = ((u64::from(self.inflight_lo) * loss_cut as u64) >> BBR_SCALE) as u32;
        self.inflight_lo = self.inflight_latest.max(inflight);
    }

    /// bbr_ecn_lower_bounds(): "Reduce inflight to (1 - alpha*ecn_factor)."
    fn ecn_lower_bounds(&self) -> u32 {
        ((u64::from(self.inflight_lo) * u64::from(self.ecn_cut())) >> BBR_SCALE) as u32
    }

    /// bbr_adapt_lower_bounds(): "When we are seeing loss/ECN at times when
    /// we are not probing bw, then conservatively move toward flow balance
    /// by multiplicatively cutting our short-term estimated safe rate and
    /// volume of data (bw_lo and inflight_lo)." Once per loss round.
    pub(crate) fn adapt_lower_bounds(&mut self, tp: &ConnState) {
        let mut ecn_inflight_lo = NO_INFLIGHT_BOUND;
        // "We only use lower-bound estimates when not probing bw."
        if self.is_probing_bandwidth() {
            return;
        }
        // "ECN response."
        if self.ecn_in_round && ECN_FACTOR != 0 {
            self.init_lower_bounds(tp, false);
            ecn_inflight_lo = self.ecn_lower_bounds();
        }
        // "Loss response."
        if self.loss_in_round {
            self.init_lower_bounds(tp, true);
            self.loss_lower_bounds();
        }
        // "Adjust to the lower of the levels implied by loss/ECN."
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.max(1);
    }

    /// bbr_reset_lower_bounds(): "Reset any short-term lower-bound
    /// adaptation to congestion, so that we can push our inflight up."
    pub(crate) fn reset_lower_bounds(&mut self) {
        self.bw_lo = NO_BW_BOUND;
        self.inflight_lo = NO_INFLIGHT_BOUND;
    }

    /// bbr_reset_congestion_signals(): "After bw probing (STARTUP/PROBE_UP),
    /// reset signals before entering a state machine phase where we adapt
    /// our lower bound based on congestion signals."
    pub(crate) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// bbr_exit_loss_recovery(): restore the cwnd saved before the RTO.
    pub(crate) fn exit_loss_recovery(&mut self, tp: &mut ConnState) {
        tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        self.try_fast_path = false; // bound cwnd using latest model
    }

    /// bbr_is_probing_bandwidth(): STARTUP, or PROBE_BW's REFILL or UP.
    pub(crate) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle_idx, Phase::Refill | Phase::Up))
    }
}
