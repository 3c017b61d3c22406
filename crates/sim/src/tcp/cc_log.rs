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
    /// `cc_state`, `cc_cycle` or `full_bw_reached` (trace::Events' `kind`).
    pub kind: &'static str,
    /// The state before the call that made the change.
    pub from_state: &'static str,
    /// The variables right after it (`vars.state`: the state after).
    pub vars: CcVars,
}

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
    pub fn note(&mut self, at: Time, v: CcVars) {
        let from_state = self.last.state;
        if v.full_bw_reached == Some(true) && self.last.full_bw_reached != Some(true) {
            self.events.push(CcEvent { at, kind: "full_bw_reached", from_state, vars: v });
        }
        if v.state != from_state {
            self.events.push(CcEvent { at, kind: "cc_state", from_state, vars: v });
        } else if v.cycle_index != self.last.cycle_index {
            self.events.push(CcEvent { at, kind: "cc_cycle", from_state, vars: v });
        }
        self.last = v.key();
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
                    log.note(now, v);
                }
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
        self.cc.vars(&self.tp)
    }
}
