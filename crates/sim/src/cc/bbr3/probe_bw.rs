//! PROBE_BW's state machine: DOWN → CRUISE → REFILL → UP → DOWN
//! (tcp_bbr.c v3: bbr_update_cycle_phase, bbr_start_bw_probe_down,
//! bbr_start_bw_probe_cruise, bbr_start_bw_probe_refill,
//! bbr_start_bw_probe_up, bbr_check_time_to_probe_bw,
//! bbr_check_time_to_cruise, bbr_is_reno_coexistence_probe_time,
//! bbr_pick_probe_wait, bbr_raise_inflight_hi_slope,
//! bbr_probe_inflight_hi_upward, bbr_has_elapsed_in_phase).

use super::{
    AckPhase, Bbr3, Ctx, Mode, Phase, BBR_SCALE, BBR_UNIT, BW_PROBE_BASE_US, BW_PROBE_MAX_ROUNDS,
    BW_PROBE_RAND_ROUNDS, BW_PROBE_RAND_US, ECN_REPROBE_GAIN,
};
use crate::cc::{CaState, ConnState, RateSample};

impl Bbr3 {
    /// bbr_set_cycle_idx(): "New phase, so need to update cwnd and pacing
    /// rate."
    fn set_cycle_idx(&mut self, phase: Phase) {
        self.cycle_idx = phase;
        self.try_fast_path = false;
    }

    /// bbr_pick_probe_wait(): "We randomize the wait, for better mixing
    /// and fairness convergence": 0-1 rounds already counted towards the
    /// Reno-coexistence bound, and a wall-clock wait of 2 s plus up to 1 s.
    pub(crate) fn pick_probe_wait(&mut self) {
        // "Decide the random round-trip bound for wait until probe:"
        self.rounds_since_probe = self.rng.u32_max(BW_PROBE_RAND_ROUNDS);
        // "Decide the random wall clock bound for wait until probe:"
        self.probe_wait_us = BW_PROBE_BASE_US + self.rng.u32_max(BW_PROBE_RAND_US);
    }

    /// bbr_has_elapsed_in_phase(): "Has the given amount of time elapsed
    /// since we marked the phase start?"
    pub(crate) fn has_elapsed_in_phase(&self, tp: &ConnState, interval_us: u32) -> bool {
        tp.now.as_micros() > self.cycle_mstamp.as_micros().saturating_add(u64::from(interval_us))
    }

    /// bbr_target_inflight(): "How much do we want in flight? Our BDP,
    /// unless congestion cut cwnd."
    pub(crate) fn target_inflight(&self, tp: &ConnState) -> u32 {
        let bdp = self.inflight(tp, self.bw(), BBR_UNIT);
        bdp.min(tp.snd_cwnd)
    }

    /// bbr_is_reno_coexistence_probe_time(): "the time required between
    /// loss epochs for an idealized Reno flow is a number of round trips
    /// that is the BDP of that flow", bounded by bbr_bw_probe_max_rounds.
    fn is_reno_coexistence_probe_time(&self, tp: &ConnState) -> bool {
        let rounds = BW_PROBE_MAX_ROUNDS.min(self.target_inflight(tp));
        self.rounds_since_probe >= rounds
    }

    /// bbr_start_bw_probe_refill(): "Send at estimated bw to fill the pipe,
    /// but not queue."
    pub(crate) fn start_bw_probe_refill(&mut self, tp: &ConnState, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(Phase::Refill);
    }

    /// bbr_start_bw_probe_up(): "Now probe max deliverable data rate and
    /// volume."
    fn start_bw_probe_up(&mut self, tp: &ConnState, ctx: &Ctx) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_mstamp = tp.now;
        self.reset_full_bw();
        self.full_bw = ctx.sample_bw;
        self.set_cycle_idx(Phase::Up);
        self.raise_inflight_hi_slope(tp);
    }

    /// bbr_start_bw_probe_down(): "Start a new PROBE_BW probing cycle of
    /// some wall clock length. Pick a wall clock time at which to probe
    /// beyond an inflight that we think to be safe."
    pub(crate) fn start_bw_probe_down(&mut self, tp: &ConnState) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = u32::MAX; // not growing inflight_hi any more
        self.pick_probe_wait();
        self.cycle_mstamp = tp.now; // start wall clock
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(Phase::Down);
    }

    /// bbr_start_bw_probe_cruise(): "maintain what we estimate to be a
    /// neutral, conservative operating point".
    pub(crate) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != super::NO_INFLIGHT_BOUND {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_cycle_idx(Phase::Cruise);
    }

    /// bbr_raise_inflight_hi_slope(): "Each round trip of BBR_BW_PROBE_UP,
    /// double volume of probing data."
    fn raise_inflight_hi_slope(&mut self, tp: &ConnState) {
        // 'Calculate "slope": packets S/Acked per inflight_hi increment.'
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(31);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tp.snd_cwnd / growth_this_round).max(1);
    }

    /// bbr_probe_inflight_hi_upward(): "In BBR_BW_PROBE_UP, not seeing high
    /// loss/ECN/queue, so raise inflight_hi."
    pub(crate) fn probe_inflight_hi_upward(&mut self, tp: &ConnState, rs: &RateSample) {
        if !tp.is_cwnd_limited || tp.snd_cwnd < self.inflight_hi {
            return; // not fully using inflight_hi, so don't grow it
        }
        // "For each bw_probe_up_cnt packets ACKed, increase inflight_hi by 1."
        self.bw_probe_up_acks = self.bw_probe_up_acks.saturating_add(rs.acked_sacked);
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
            self.try_fast_path = false; // Need to update cwnd
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tp);
        }
    }

    /// bbr_check_time_to_probe_bw(): "Check if it's time to probe for
    /// bandwidth now, and if so, kick it off."
    fn check_time_to_probe_bw(&mut self, tp: &ConnState) -> bool {
        // "If we seem to be at an operating point where we are not seeing
        // loss but we are seeing ECN marks, then when the ECN marks cease
        // we reprobe quickly"
        if ECN_REPROBE_GAIN != 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && tp.ca_state == CaState::Open
        {
            let target = (u64::from(self.inflight_hi) * u64::from(ECN_REPROBE_GAIN)) >> BBR_SCALE;
            // ilog2(); ilog2(0) is undefined in Linux, taken as 0 here.
            let n = if target == 0 { 0 } else { 63 - target.leading_zeros() };
            self.start_bw_probe_refill(tp, n);
            return true;
        }
        if self.has_elapsed_in_phase(tp, self.probe_wait_us) || self.is_reno_coexistence_probe_time(tp) {
            self.start_bw_probe_refill(tp, 0);
            return true;
        }
        false
    }

    /// bbr_check_time_to_cruise(): "Is it time to transition from
    /// PROBE_DOWN to PROBE_CRUISE?" Once inflight leaves headroom below
    /// inflight_hi and is at most the BDP.
    fn check_time_to_cruise(&self, tp: &ConnState, inflight: u32, bw: u64) -> bool {
        // "Always need to pull inflight down to leave headroom in queue."
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// bbr_update_cycle_phase(): "PROBE_BW state machine: cruise, refill,
    /// probe for bw, or drain?"
    pub(crate) fn update_cycle_phase(&mut self, tp: &ConnState, rs: &RateSample, ctx: &Ctx) {
        if !self.full_bw_reached {
            return;
        }
        // "In DRAIN, PROBE_BW, or PROBE_RTT, adjust upper bounds."
        if self.adapt_upper_bounds(tp, rs) {
            return; // already decided state transition
        }
        if self.mode != Mode::ProbeBw {
            return;
        }

        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();

        match self.cycle_idx {
            // "First we spend most of our time cruising with a pacing_gain
            // of 1.0 ... If we encounter loss/ECN marks, we adapt by
            // slowing down."
            Phase::Cruise => {
                self.check_time_to_probe_bw(tp);
            }
            // "After cruising, when it's time to probe, we first "refill":
            // we send at the estimated bw to fill the pipe"
            Phase::Refill => {
                if self.round_start {
                    // "After one full round trip of sending in REFILL, we
                    // start to see bw samples reflecting our REFILL"
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tp, ctx);
                }
            }
            // "We terminate PROBE_UP bandwidth probing upon any of: (1)
            // We've pushed inflight up to hit the inflight_hi target set in
            // the most recent previous bw probe phase ... (2) ... delivered
            // bandwidth has not increased much recently (bbr->full_bw_now).
            // (3) Loss filter says loss rate is "too high". (4) ECN filter
            // says ECN mark rate is "too high"." (3) and (4) are in
            // bbr_adapt_upper_bounds().
            Phase::Up => {
                let mut is_bw_probe_done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    is_bw_probe_done = true;
                } else if tp.is_cwnd_limited && tp.snd_cwnd >= self.inflight_hi {
                    // "inflight_hi is limiting bw growth"
                    self.reset_full_bw();
                    self.full_bw = ctx.sample_bw;
                } else if self.full_bw_now {
                    // "Plateau in estimated bw. Pipe looks full."
                    is_bw_probe_done = true;
                }
                if is_bw_probe_done {
                    self.prev_probe_too_high = false; // no loss/ECN (yet)
                    self.start_bw_probe_down(tp); // restart w/ down
                }
            }
            // "we use a pacing_gain < 1.0. We hold this pacing gain until
            // our inflight is less then that target cruising point, which is
            // the minimum of (a) the amount needed to leave headroom, and
            // (b) the estimated BDP."
            Phase::Down => {
                if self.check_time_to_probe_bw(tp) {
                    return; // already decided state transition
                }
                if self.check_time_to_cruise(tp, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }
}
