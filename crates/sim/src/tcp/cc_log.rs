//! The sender's log of its CCA's state changes: after each ACK's
//! `cong_control` (which runs after the ACK's other hooks: set_state,
//! undo_cwnd), and after each transmit start or timer that calls into the
//! CCA, the CCA's variables
//! (cc::CcVars) are compared with the last ones seen, and a change of
//! state, of v1's PROBE_BW cycle phase, or `full_bw_reached` becoming true
//! is logged with the instant and the variables right after it. Mainline
//! Linux has no trace event for BBR's mode changes (user space sees the
//! mode only by polling TCP_CC_INFO, as `ss -i` does); the simulator keeps
//! this log so that the BBR draft's checks read exact instants.
//!
//! Only a CCA that exposes variables gets a log (`Sender::cc_log` is
//! `None` otherwise), and only a CCA that owns cwnd and pacing may expose
//! them (CongestionControl::vars), so the per-ACK comparison sits in the
//! `cong_control` branch that other CCAs never take.

use crate::cc::{CcStateKey, CcVars};
use crate::units::Time;

use super::Sender;

/// One logged change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcEvent {
    pub at: Time,
    /// `cc_state`, `cc_cycle` or `full_bw_reached` (from the CCA's
    /// variables), or one of the sender's loss-recovery events
    /// [`RECOVERY_START`], [`LOSS_START`], [`UNDO`], [`RESTART_FROM_IDLE`]
    /// (trace::Events' `kind`).
    pub kind: &'static str,
    /// The state before the call that made the change.
    pub from_state: &'static str,
    /// The variables right after it (`vars.state`: the state after).
    pub vars: CcVars,
    /// The sender's cwnd (tp->snd_cwnd) right after it, segments.
    pub cwnd_segments: u32,
    /// tcp_packets_in_flight() right after it, segments.
    pub inflight_segments: u32,
}

/// The sender enters fast recovery (tcp_enter_recovery(): ca_state
/// becomes TCP_CA_Recovery), logged right after the CCA's ssthresh() and
/// set_state() hooks ran.
pub const RECOVERY_START: &str = "recovery_start";
/// The sender enters TCP_CA_Loss (tcp_enter_loss(), on an RTO).
pub const LOSS_START: &str = "loss_start";
/// A reduction was undone as spurious (tcp_undo_cwnd_reduction(), after
/// the CCA's undo_cwnd() hook: DSACKs or timestamps showed every
/// retransmission needless).
pub const UNDO: &str = "undo";

/// Sending restarts with nothing in flight after the flow was app-limited
/// and the CCA set its idle_restart (CA_EVENT_TX_START, BBR's
/// bbr_cwnd_event()).
pub const RESTART_FROM_IDLE: &str = "restart_from_idle";

/// The state last seen and the changes logged so far.
#[derive(Clone, Debug)]
pub struct CcLog {
    /// The compared fields as last seen.
    pub last: CcStateKey,
    pub events: Vec<CcEvent>,
}

impl CcLog {
    /// A log starting from the CCA's state at init.
    pub fn new(first: CcStateKey) -> CcLog {
        CcLog { last: first, events: Vec::new() }
    }

    /// Logs what changed between the last state seen and `v` (the
    /// variables at `at`): `full_bw_reached` first (on the ACK that ends
    /// STARTUP, the cause), then the state, else v1's cycle phase.
    pub fn note(&mut self, at: Time, v: CcVars, window: (u32, u32)) {
        let (cwnd_segments, inflight_segments) = window;
        let from_state = self.last.state;
        if v.full_bw_reached == Some(true) && self.last.full_bw_reached != Some(true) {
            self.events.push(CcEvent { at, kind: "full_bw_reached", from_state, vars: v, cwnd_segments, inflight_segments });
        }
        if v.state != from_state {
            self.events.push(CcEvent { at, kind: "cc_state", from_state, vars: v, cwnd_segments, inflight_segments });
        } else if v.cycle_index != self.last.cycle_index {
            self.events.push(CcEvent { at, kind: "cc_cycle", from_state, vars: v, cwnd_segments, inflight_segments });
        }
        self.last = v.key();
    }
}

impl CcLog {
    /// Logs the sender's event `kind` (the state unchanged by it).
    pub fn mark(&mut self, at: Time, kind: &'static str, v: CcVars, window: (u32, u32)) {
        let (cwnd_segments, inflight_segments) = window;
        self.events.push(CcEvent { at, kind, from_state: v.state, vars: v, cwnd_segments, inflight_segments });
    }
}

impl Sender {
    /// Logs what changed in the CCA's state since the last call, at `now`
    /// (nothing when the CCA exposes no variables). The compared fields are
    /// read on every call, the whole snapshot only on a change.
    #[inline]
    pub(super) fn note_cc_vars(&mut self, now: Time) {
        if let Some(log) = self.cc_log.as_deref_mut() {
            if self.cc.state_key(&self.tp).is_some_and(|k| k != log.last) {
                if let Some(v) = self.cc.vars(&self.tp) {
                    let window = (self.tp.snd_cwnd, self.tp.in_flight());
                    log.note(now, v.with_rate_sample(&self.rate.rs, self.tp.mss_bytes), window);
                }
            }
        }
    }

    /// Logs the sender's loss-recovery event `kind` at `now` with the
    /// CCA's variables (nothing when the CCA exposes none). Rare: once per
    /// recovery episode.
    pub(super) fn mark_cc_event(&mut self, now: Time, kind: &'static str) {
        if self.cc_log.is_some() {
            if let Some(v) = self.cc_vars() {
                let window = (self.tp.snd_cwnd, self.tp.in_flight());
                self.cc_log.as_deref_mut().expect("checked").mark(now, kind, v, window);
            }
        }
    }

    /// The CCA's logged state changes, in time order (empty when its CCA
    /// exposes no variables).
    pub fn cc_events(&self) -> &[CcEvent] {
        self.cc_log.as_deref().map_or(&[], |l| &l.events)
    }

    /// The CCA's variables now (cc::CongestionControl::vars).
    pub fn cc_vars(&self) -> Option<CcVars> {
        self.cc.vars(&self.tp).map(|v| v.with_rate_sample(&self.rate.rs, self.tp.mss_bytes))
    }
}
