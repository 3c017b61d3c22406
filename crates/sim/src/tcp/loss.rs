//! The Loss state after an RTO: tcp_process_loss() with F-RTO (RFC 5682
//! §3.1, the SACK-enhanced version Linux runs with net.ipv4.tcp_frto = 2)
//! and tcp_try_undo_loss().

use crate::cc::CaState;

use super::ack::LossAck;
use super::scoreboard::FLAG_LOST;
use super::sender::Sender;

impl Sender {
    /// tcp_enter_loss()'s F-RTO decision (RFC 5682 §3.1 step 1): on when no
    /// recovery was under way, or on a repeated timeout of the same
    /// snd_una (§3.2).
    pub(super) fn frto_on_entering_loss(&mut self, prior_state: CaState) {
        self.frto = prior_state < CaState::Recovery || self.rto_retransmits > 0;
    }

    /// tcp_process_loss() for one ACK in Loss.
    pub(super) fn process_loss(&mut self, una_advanced: bool, ack: LossAck) {
        let recovered = self.sb.snd_una >= self.high_seq;
        if una_advanced && self.try_undo_loss(false) {
            return;
        }
        if self.frto {
            // Step 3.b: never-retransmitted data (s)acked, so not all was
            // lost: the timeout was spurious.
            if ack.orig_acked && self.try_undo_loss(true) {
                return;
            }
            if self.sb.snd_nxt > self.high_seq {
                // Step 3.a: new data went out and the peer still reports
                // a hole: the loss was real.
                if ack.sacked_or_dupack {
                    self.frto = false;
                }
            } else if una_advanced && !recovered {
                // Step 2.b: send new data instead of retransmitting (done
                // by tcp_xmit_recovery() with REXMIT_NEW after cwnd grows).
                self.high_seq = self.sb.snd_nxt;
                let unsent = self.sb.snd_nxt < self.write_seq && self.sb.snd_nxt - self.sb.snd_una < self.wmem_segs;
                if unsent && self.snd_wnd_end > self.sb.snd_nxt {
                    self.frto_new_data = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            // Step 2.a and the first part of 3.a.
            self.try_undo_recovery();
        }
    }

    /// tcp_try_undo_loss(): undo the RTO's reduction when every
    /// retransmission was D-SACKed (tcp_may_undo()) or F-RTO showed the
    /// timeout spurious, forgetting the lost marks
    /// (tcp_undo_cwnd_reduction(sk, true)), and reopen.
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if !(frto_undo || self.may_undo()) {
            return false;
        }
        self.undo_cwnd_reduction();
        if self.sb.snd_una < self.sb.snd_nxt {
            self.sb.set_flags(self.sb.snd_una, self.sb.snd_nxt, 0, FLAG_LOST);
        }
        self.sb.clear_lost();
        self.tp.lost_out = 0;
        self.rto_retransmits = 0;
        self.set_state(CaState::Open);
        true
    }

    /// tcp_xmit_recovery(): after an ACK, send; with F-RTO's REXMIT_NEW
    /// new data only, falling back to the retransmission queue when none
    /// could go.
    pub(super) fn xmit_recovery<E: super::sender::SenderEnv>(&mut self, now: crate::units::Time, env: &mut E) {
        if self.frto_new_data {
            self.push(now, env);
            self.frto_new_data = false;
            if self.sb.snd_nxt > self.high_seq {
                return;
            }
            self.frto = false;
        }
        self.push(now, env);
    }
}
