//! The sender's congestion-avoidance state machine (Linux's
//! tcp_set_ca_state() and its neighbours in tcp_input.c): entering CWR and
//! fast recovery, starting and ending a cwnd reduction, and marking
//! segments lost.

use crate::cc::{CaState, CwndEvent, TCP_INFINITE_SSTHRESH};

use super::rate::RateState;
use super::scoreboard::{FLAG_LOST, FLAG_RETRANS, FLAG_SACKED};
use super::sender::Sender;

impl Sender {
    pub(super) fn in_cwnd_reduction(&self) -> bool {
        matches!(self.tp.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// tcp_set_ca_state().
    pub(super) fn set_state(&mut self, st: CaState) {
        self.cc.set_state(&mut self.tp, st);
        let entered = st != self.tp.ca_state;
        self.tp.ca_state = st;
        if entered && matches!(st, CaState::Recovery | CaState::Loss) {
            let kind = if st == CaState::Recovery { super::cc_log::RECOVERY_START } else { super::cc_log::LOSS_START };
            self.mark_cc_event(self.tp.now, kind);
        }
    }

    /// tcp_current_ssthresh().
    pub(super) fn current_ssthresh(&self) -> u32 {
        self.tp.current_ssthresh()
    }

    /// tcp_init_cwnd_reduction().
    pub(super) fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.sb.snd_nxt;
        self.tlp_high_seq = None;
        self.tp.snd_cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.snd_cwnd;
        self.prr.reset();
        self.tp.snd_ssthresh = self.cc.ssthresh(&self.tp);
        self.ecn_queue_cwr();
    }

    /// tcp_ecn_queue_cwr(): on an ECN connection, tell the receiver about
    /// the reduction (CWR on the next new data segment).
    pub(super) fn ecn_queue_cwr(&mut self) {
        if self.tp.ecn_ok {
            self.queue_cwr = true;
        }
    }

    /// tcp_enter_cwr(): an ECN-Echo reduces cwnd once, through the same
    /// tcp_init_cwnd_reduction() and PRR as a loss; no undo
    /// (prior_ssthresh = 0, undo_marker = 0). In CWR or a deeper state the
    /// reduction under way is the one for this window.
    pub(super) fn enter_cwr(&mut self) {
        self.prior_ssthresh = 0;
        if self.tp.ca_state < CaState::Cwr {
            self.stats.ecn_reductions += 1;
            self.undo_marker = false;
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
        }
    }

    /// tcp_end_cwnd_reduction().
    pub(super) fn end_cwnd_reduction(&mut self) {
        if self.owns {
            return;
        }
        if self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH && (self.tp.ca_state == CaState::Cwr || self.undo_marker) {
            self.tp.snd_cwnd = self.tp.snd_ssthresh;
        }
        self.cc.cwnd_event(&mut self.tp, CwndEvent::CompleteCwr);
    }

    /// tcp_enter_recovery(sk, ece_ack): an ECE on the ACK forbids undo.
    pub(super) fn enter_recovery(&mut self, ece_ack: bool) {
        self.stats.recoveries += 1;
        self.prior_ssthresh = 0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            if !ece_ack {
                self.prior_ssthresh = self.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.set_state(CaState::Recovery);
    }

    /// tcp_mark_skb_lost() for every segment of `start..end` in order:
    /// tcp_notify_skb_loss_event() counts tp->lost and calls the
    /// algorithm's skb_marked_lost with each segment's send snapshot. The
    /// range's edges split runs (tcp_fragment() as in tcp_mark_head_lost());
    /// a run's flags change at once, the counts and calls stay per segment.
    pub(super) fn mark_lost(&mut self, start: u64, end: u64) {
        self.sb.isolate(start, end);
        let mut at = start;
        while at < end {
            let id = self.sb.id_at(at);
            let run = *self.sb.run(id);
            at = run.end;
            let f = run.seg.flags;
            let retrans_lost = if f & FLAG_SACKED != 0 {
                continue;
            } else if f & FLAG_LOST != 0 {
                if f & FLAG_RETRANS == 0 {
                    continue;
                }
                // A retransmission was lost again.
                self.sb.run_mut(id).seg.flags &= !FLAG_RETRANS;
                true
            } else {
                self.sb.run_mut(id).seg.flags |= FLAG_LOST;
                false
            };
            // tcp_mark_skb_lost() for each segment of the run: the
            // counters move by the run's length at once unless the
            // algorithm's skb_marked_lost hook must see each segment with
            // tp->lost counting it.
            let n = run.len();
            if retrans_lost {
                self.tp.retrans_out = self.tp.retrans_out.saturating_sub(n);
            } else {
                self.tp.lost_out += n;
            }
            if self.cc_marks_lost {
                for seq in run.start..run.end {
                    self.tp.lost += 1;
                    let tx = RateState::tx_snapshot(&run.seg_at(seq), &self.tp);
                    self.cc.skb_marked_lost(&mut self.tp, seq, &tx);
                }
            } else {
                self.tp.lost += n as u64;
            }
            self.sb.queue_lost(run.start, run.end);
            self.sb.merge_back(id);
        }
        self.sb.merge_at(end);
    }
}
