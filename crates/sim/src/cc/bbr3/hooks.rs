//! The `tcp_congestion_ops` hooks of BBRv3 (tcp_bbr.c v3: bbr_init,
//! bbr_ssthresh, bbr_main as cong_control, bbr_skb_marked_lost,
//! bbr_tso_segs, bbr_set_state, bbr_cwnd_event, bbr_undo_cwnd,
//! bbr_get_info, bbr_get_phase).

use super::{
    AckPhase, Bbr3, Mode, Phase, BBR_UNIT, BBR_VERSION, ECN_ALPHA_INIT, NO_BW_BOUND, NO_INFLIGHT_BOUND,
};
use crate::cc::vars::{bbr_bw_bps, bbr_gain, bbr_min_rtt_s, jiffies_s};
use crate::cc::{
    CaState, CcInfo, CcStateKey, CcVars, CongestionControl, ConnState, CwndEvent, RateSample, TxSnapshot, CA_ACK_ECE, GSO_MAX_SIZE,
    TCP_INFINITE_SSTHRESH,
};
use crate::units::{Rate, Time};

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    /// bbr_sndbuf_expand() (BBRv3 keeps v1's): 3 × cwnd.
    fn sndbuf_expand(&self) -> u32 {
        3
    }

    /// bbr_init().
    fn init(&mut self, tp: &mut ConnState) {
        self.initialized = true;
        self.init_cwnd = tp.snd_cwnd.min(0x7F);
        self.prior_cwnd = tp.prior_cwnd;
        tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        self.next_rtt_delivered = tp.delivered;
        self.prev_ca_state = CaState::Open;

        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        // tcp_min_rtt(tp): ~0U before any sample.
        let min_rtt = if tp.min_rtt == Time::MAX {
            u32::MAX
        } else {
            tp.min_rtt.as_micros().min(u64::from(u32::MAX)) as u32
        };
        self.probe_rtt_min_us = min_rtt;
        self.probe_rtt_min_stamp = Self::jiffies(tp);
        self.min_rtt_us = min_rtt;
        self.min_rtt_stamp = Self::jiffies(tp);

        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);

        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = Time::ZERO;
        self.cycle_idx = Phase::Up;

        self.mode = Mode::Startup; // bbr_reset_startup_mode()

        self.aggr.reset(tp.now);
        self.try_fast_path = false;

        // SK_PACING_NEEDED
        tp.pacing_enabled = true;

        // "Start sampling ECN mark rate after first full flight is ACKed:"
        self.loss_round_delivered = tp.delivered + 1;
        self.loss_round_start = false;
        self.undo_bw_lo = 0;
        self.undo_inflight_lo = 0;
        self.undo_inflight_hi = 0;
        self.loss_events_in_round = 0;
        self.startup_ecn_rounds = 0;
        self.reset_congestion_signals();
        self.bw_lo = NO_BW_BOUND;
        self.bw_hi = [0; 2];
        self.inflight_lo = NO_INFLIGHT_BOUND;
        self.inflight_hi = NO_INFLIGHT_BOUND;
        self.reset_full_bw();
        self.bw_probe_up_cnt = u32::MAX;
        self.bw_probe_up_acks = 0;
        self.bw_probe_up_rounds = 0;
        self.probe_wait_us = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Init;
        self.rounds_since_probe = 0;
        self.bw_probe_samples = false;
        self.prev_probe_too_high = false;
        self.ecn_eligible = false;
        self.ecn_alpha = ECN_ALPHA_INIT;
        self.alpha_last_delivered = 0;
        self.alpha_last_delivered_ce = 0;
        self.ack_is_ece = false;
    }

    /// bbr_ssthresh(): "Entering loss recovery, so save state for when we
    /// undo recovery." ssthresh itself is left as it is.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        self.save_cwnd(tp);
        // "For undo, save state that adapts based on loss signal."
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tp.snd_ssthresh
    }

    fn owns_cwnd_and_pacing(&self) -> bool {
        true
    }

    fn cong_control(&mut self, tp: &mut ConnState, rs: &RateSample) {
        self.main(tp, rs);
    }

    /// rs->is_ece is FLAG_ECE of the ACK (tcp_ack()).
    fn in_ack_event(&mut self, _tp: &mut ConnState, flags: u32) {
        self.ack_is_ece = flags & CA_ACK_ECE != 0;
    }

    fn wants_skb_marked_lost(&self) -> bool {
        true
    }

    /// bbr_skb_marked_lost().
    fn skb_marked_lost(&mut self, tp: &mut ConnState, _seq: u64, tx: &TxSnapshot) {
        self.on_skb_marked_lost(tp, tx);
    }

    /// bbr_tso_segs(): bbr_tso_segs_generic() with sk_gso_max_size.
    fn tso_segs(&self, tp: &ConnState, pacing_rate: Rate) -> u32 {
        self.tso_segs_generic(tp, pacing_rate, tp.mss_bytes, GSO_MAX_SIZE)
    }

    /// bbr_set_state().
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        if new_state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            // tcp_plb_update_state_upon_rto(): PLB not modelled.
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == NO_INFLIGHT_BOUND {
                // "bbr_adapt_lower_bounds() needs cwnd before we suffered
                // an RTO, to update inflight_lo:"
                self.inflight_lo = tp.snd_cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss && new_state != CaState::Loss {
            self.exit_loss_recovery(tp);
        }
    }

    /// bbr_cwnd_event(): CA_EVENT_TX_START after idle. (The ECN CE events
    /// drive the receiver's precise echo and CA_EVENT_TLP_RECOVERY is not
    /// raised by the simulator: see the module docs.)
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        if ev != CwndEvent::TxStart || tp.app_limited == 0 {
            return;
        }
        self.idle_restart = true;
        self.aggr.restart_epoch(tp.now);
        // "Avoid pointless buffer overflows: pace at est. bw if we don't
        // need more speed (we're restarting from idle and app-limited)."
        if self.mode == Mode::ProbeBw {
            let bw = self.bw();
            self.set_pacing_rate(tp, bw, BBR_UNIT);
        } else if self.mode == Mode::ProbeRtt {
            self.check_probe_rtt_done(tp);
        }
    }

    /// bbr_undo_cwnd(): "Revert short-term model if current loss recovery
    /// event was spurious."
    fn undo_cwnd(&mut self, _tp: &mut ConnState) -> u32 {
        self.reset_full_bw(); // spurious slow-down; reset full bw detector
        self.loss_in_round = false;
        // "Revert to cwnd and other state saved before loss episode."
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.try_fast_path = false; // take slow path to set proper cwnd, pacing
        self.prior_cwnd
    }

    /// bbr_get_info(): the `struct tcp_bbr_info` fields a sender has.
    fn get_info(&self) -> Option<CcInfo> {
        Some(CcInfo::Bbr {
            version: BBR_VERSION,
            min_rtt_us: self.min_rtt_us,
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
            inflight_lo: self.inflight_lo,
            inflight_hi: self.inflight_hi,
        })
    }

    /// The recorder's snapshot, read from `struct bbr` as it is (unset
    /// bounds, Linux's ~0U, are `None`).
    fn vars(&self, tp: &ConnState) -> Option<CcVars> {
        let bound = |v: u32| (v != NO_INFLIGHT_BOUND).then_some(v as i64);
        Some(CcVars {
            round: Some(self.round_count as i64),
            max_bw_bps: Some(bbr_bw_bps(tp, self.max_bw())),
            min_rtt_s: bbr_min_rtt_s(self.min_rtt_us),
            pacing_gain: Some(bbr_gain(self.pacing_gain)),
            cwnd_gain: Some(bbr_gain(self.cwnd_gain)),
            full_bw_bps: Some(bbr_bw_bps(tp, self.full_bw)),
            full_bw_count: Some(self.full_bw_cnt as i64),
            inflight_hi_segments: bound(self.inflight_hi),
            inflight_lo_segments: bound(self.inflight_lo),
            bw_hi_bps: Some(bbr_bw_bps(tp, self.bw_hi[1])),
            bw_lo_bps: (self.bw_lo != NO_BW_BOUND).then(|| bbr_bw_bps(tp, self.bw_lo)),
            extra_acked_segments: Some(self.aggr.extra_acked_max() as i64),
            bdp_segments: Some(self.inflight(tp, self.max_bw(), BBR_UNIT) as i64),
            full_bw_now: Some(self.full_bw_now),
            bw_probe_up_rounds: Some(self.bw_probe_up_rounds as i64),
            prev_probe_too_high: Some(self.prev_probe_too_high),
            undo_bw_lo_bps: (self.undo_bw_lo != NO_BW_BOUND).then(|| bbr_bw_bps(tp, self.undo_bw_lo)),
            undo_inflight_lo_segments: bound(self.undo_inflight_lo),
            undo_inflight_hi_segments: bound(self.undo_inflight_hi),
            lt_bw_bps: None,
            lt_use_bw: None,
            loss_events_in_round: Some(self.loss_events_in_round as i64),
            probe_rtt_min_stamp_s: Some(jiffies_s(self.probe_rtt_min_stamp)),
            idle_restart: Some(self.idle_restart),
            ..CcVars::with_key(self.state_key(tp)?)
        })
    }

    fn state_key(&self, tp: &ConnState) -> Option<CcStateKey> {
        Some(CcStateKey {
            state: self.state_label(tp),
            cycle_index: Some(self.cycle_idx as i64),
            full_bw_reached: Some(self.full_bw_reached),
        })
    }

    fn state_labels(&self) -> &'static [&'static str] {
        &["startup", "drain", "probe_rtt", "probe_bw_up", "probe_bw_down", "probe_bw_cruise", "probe_bw_refill"]
    }

    /// bbr_get_phase() spelled as the kernel's BBR_PHASE_* names.
    fn state_label(&self, _tp: &ConnState) -> &'static str {
        match (self.mode, self.cycle_idx) {
            (Mode::Startup, _) => "startup",
            (Mode::Drain, _) => "drain",
            (Mode::ProbeRtt, _) => "probe_rtt",
            (Mode::ProbeBw, Phase::Up) => "probe_bw_up",
            (Mode::ProbeBw, Phase::Down) => "probe_bw_down",
            (Mode::ProbeBw, Phase::Cruise) => "probe_bw_cruise",
            (Mode::ProbeBw, Phase::Refill) => "probe_bw_refill",
        }
    }
}

