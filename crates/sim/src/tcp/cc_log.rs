//! The sender's log of its CCA's state changes: after each ACK (and each
//! transmit start or timer that calls into the CCA) the CCA's variables
//! (cc::CcVars) are compared with the last ones seen, and a change of
//! state, of v1's PROBE_BW cycle phase, or `full_bw_reached` becoming true
//! is logged with the instant and the variables right after it. Linux has
//! no such log (its nearest is a tracepoint-free `ss -i` poll); the
//! simulator keeps it so that the BBR draft's checks read exact instants.
//!
//! Only a CCA that exposes variables gets a log (`Sender::cc_log` is
//! `None` otherwise), so other CCAs pay one branch per ACK.

use crate::cc::CcVars;
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

/// The variables last seen and the changes logged so far.
#[derive(Clone, Debug)]
pub struct CcLog {
    last: CcVars,
    pub events: Vec<CcEvent>,
}

impl CcLog {
    /// A log starting from the CCA's variables at init.
    pub fn new(first: CcVars) -> CcLog {
        CcLog { last: first, events: Vec::new() }
    }

    /// Compares `v` (the variables at `at`) with the last seen and logs
    /// what changed: `full_bw_reached` first (on the ACK that ends
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
        self.last = v;
    }
}

impl Sender {
    /// Logs what changed in the CCA's variables since the last call, at
    /// `now` (nothing when the CCA exposes none).
    #[inline]
    pub(super) fn note_cc_vars(&mut self, now: Time) {
        if let Some(log) = self.cc_log.as_deref_mut() {
            if let Some(v) = self.cc.vars(&self.tp) {
                log.note(now, v);
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
