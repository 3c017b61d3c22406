//! Undoing a cwnd reduction shown to be spurious by D-SACK (RFC 2883,
//! RFC 3708): Linux's tcp_init_undo, undo_retrans accounting,
//! tcp_try_undo_recovery / tcp_try_undo_dsack / tcp_try_undo_loss.
//! (The timestamp-based Eifel check, tcp_packet_delayed(), is not modelled:
//! ACKs carry the echo, tcp/timestamps.rs, but undo counts D-SACKs only.)

use crate::cc::CaState;

use super::sender::Sender;

impl Sender {
    /// tcp_init_undo(): remember where the episode began; retransmissions
    /// still in flight may be D-SACKed later.
    pub(super) fn init_undo(&mut self) {
        self.undo_marker = true;
        self.undo_seq = self.sb.snd_una;
        self.undo_retrans = if self.tp.retrans_out > 0 { self.tp.retrans_out as i64 } else { -1 };
    }

    /// `n` retransmissions during an undoable episode.
    pub(super) fn undo_count_retransmit(&mut self, n: u32) {
        if self.undo_marker {
            if self.undo_retrans < 0 {
                self.undo_retrans = 0;
            }
            self.undo_retrans += n as i64;
        }
    }

    /// tcp_check_dsack(): a D-SACK for a segment at or above undo_marker
    /// shows that one retransmission was unnecessary.
    pub(super) fn undo_on_dsack(&mut self, seq: u64) {
        if self.undo_marker && self.undo_retrans > 0 && seq >= self.undo_seq {
            self.undo_retrans -= 1;
        }
    }

    /// tcp_may_undo(): every retransmission of the episode was D-SACKed.
    pub(super) fn may_undo(&self) -> bool {
        self.undo_marker && self.undo_retrans == 0
    }

    /// tcp_undo_cwnd_reduction(): restore cwnd (the CCA's undo_cwnd) and
    /// ssthresh.
    pub(super) fn undo_cwnd_reduction(&mut self) {
        if self.prior_ssthresh > 0 {
            self.tp.snd_cwnd = self.cc.undo_cwnd(&mut self.tp).min(self.tp.snd_cwnd_clamp);
            if self.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.prior_ssthresh;
                self.queue_cwr = false; // tcp_ecn_withdraw_cwr()
            }
        }
        self.stats.undos += 1;
        self.undo_marker = false;
        self.mark_cc_event(self.tp.now, super::cc_log::UNDO);
        self.rack.advanced = true; // re-examine losses
    }

    /// tcp_try_undo_recovery() at the end of Recovery or Loss: undo if
    /// spurious, then open.
    /// A recovery that is not undone counts down the widened RACK
    /// reordering window's persistence (rack.reo_wnd_persist).
    pub(super) fn try_undo_recovery(&mut self) {
        if self.may_undo() {
            self.undo_cwnd_reduction();
        } else {
            self.rack.reo_wnd_persist = self.rack.reo_wnd_persist.saturating_sub(1);
        }
        self.set_state(CaState::Open);
    }

    /// tcp_try_undo_dsack() during Recovery; an undo keeps the widened RACK
    /// window one recovery longer (reo_wnd_persist + 1, at most
    /// TCP_RACK_RECOVERY_THRESH).
    pub(super) fn try_undo_dsack(&mut self) -> bool {
        if self.may_undo() {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(super::rack::RECOVERY_THRESH);
            self.undo_cwnd_reduction();
            return true;
        }
        false
    }
}
