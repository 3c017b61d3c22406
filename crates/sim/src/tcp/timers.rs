//! Sender timers and timeout-driven recovery: RTO (tcp_retransmit_timer,
//! tcp_enter_loss), tail loss probes (RFC 8985 §7, tcp_send_loss_probe)
//! and RACK's reordering timer (tcp_rack_reo_timeout).

use crate::cc::{CaState, CwndEvent};
use crate::event::SenderTimer;
use crate::units::Time;

use super::chrono::ChronoKind;
use super::rtt::{RTO_MIN, TIMEOUT_INIT};
use super::scoreboard::{FLAG_LOST, FLAG_RETRANS, FLAG_SACKED};
use super::sender::{Sender, SenderEnv};

impl Sender {
    /// Arms a timer. RTO/TLP/REO run on Linux's jiffy timer wheel, so their
    /// deadlines are rounded up to a 1 ms boundary; pacing uses an hrtimer.
    pub(super) fn arm<E: SenderEnv>(&mut self, kind: SenderTimer, at: Time, env: &mut E) {
        let t = match kind {
            SenderTimer::Rto => {
                let at = jiffy_ceil(at);
                if let Some(at) = self.rto_timer.arm(at) {
                    env.schedule(at, kind);
                }
                return;
            }
            SenderTimer::Reo => &mut self.reo_timer,
            SenderTimer::Pace => &mut self.pace_timer,
        };
        if let Some(at) = t.arm(at) {
            env.schedule(at, kind);
        }
    }

    pub(super) fn arm_reo<E: SenderEnv>(&mut self, at: Time, env: &mut E) {
        self.arm(SenderTimer::Reo, at, env);
    }

    /// Deadline of the RTO for the oldest outstanding segment
    /// (tcp_rto_delta_us): rto - (now - head's send time).
    pub(super) fn rto_delta(&self, now: Time) -> Time {
        match self.sb.head_xmit() {
            None => self.current_rto(),
            Some(head) => (head + self.current_rto()).saturating_sub(now),
        }
    }

    /// tcp_rearm_rto().
    pub(super) fn rearm_rto<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        if self.tp.packets_out == 0 {
            self.rto_timer.disarm();
            self.rto_is_tlp = false;
            return;
        }
        let mut rto = self.current_rto();
        if self.rto_is_tlp {
            // Restarting after a probe/REO timer: keep the head's deadline.
            rto = self.rto_delta(now).max(Time(1));
        }
        self.rto_is_tlp = false;
        self.arm(SenderTimer::Rto, now + rto, env);
    }

    /// tcp_schedule_loss_probe(): TLP PTO = 2·srtt (+200 ms with a single
    /// packet out, else +2 ms), never later than the RTO (RFC 8985 §7.2).
    pub(super) fn schedule_loss_probe<E: SenderEnv>(&mut self, now: Time, advancing_rto: bool, env: &mut E) -> bool {
        if self.tp.packets_out == 0 || !matches!(self.tp.ca_state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let mut timeout = if self.tp.srtt.0 != 0 {
            let extra = if self.tp.packets_out == 1 { RTO_MIN } else { super::rack::TIMEOUT_MIN };
            self.tp.srtt.mul(2) + extra
        } else {
            TIMEOUT_INIT
        };
        let delta = if advancing_rto { self.current_rto() } else { self.rto_delta(now) };
        if delta > Time::ZERO {
            timeout = timeout.min(delta);
        }
        self.rto_is_tlp = true;
        self.arm(SenderTimer::Rto, now + timeout, env);
        true
    }

    /// tcp_set_xmit_timer().
    pub(super) fn set_xmit_timer<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        if !self.schedule_loss_probe(now, true, env) {
            self.rearm_rto(now, env);
        }
    }

    /// A timer event popped; dispatches it if the timer really expired.
    /// Returns whether the timer fired (a stale event of a re-armed or
    /// cancelled timer does nothing).
    pub fn on_timer<E: SenderEnv>(&mut self, kind: SenderTimer, now: Time, env: &mut E) -> bool {
        self.tp.now = now;
        let t = match kind {
            SenderTimer::Rto => &mut self.rto_timer,
            SenderTimer::Reo => &mut self.reo_timer,
            SenderTimer::Pace => &mut self.pace_timer,
        };
        let (fire, again) = t.on_event(now);
        if let Some(at) = again {
            env.schedule(at, kind);
        }
        if !fire {
            return false;
        }
        match kind {
            SenderTimer::Rto if self.rto_is_tlp => self.send_loss_probe(now, env),
            SenderTimer::Rto => self.retransmit_timer(now, env),
            SenderTimer::Reo => self.reo_timeout(now, env),
            SenderTimer::Pace => self.push(now, env),
        }
        if !matches!(kind, SenderTimer::Pace) {
            // A paced send's TX start is noted where it is sent.
            self.note_cc_vars(now);
        }
        true
    }

    /// tcp_send_loss_probe() (RFC 8985 §7.3): send one new segment if the
    /// window allows, else retransmit the highest sent segment.
    pub(super) fn send_loss_probe<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        self.rto_is_tlp = false;
        if self.tlp_high_seq.is_some() || self.tp.packets_out == 0 {
            self.rearm_rto(now, env);
            return;
        }
        self.tlp_retrans = false;
        let can_send_new = self.sb.snd_nxt < self.write_seq
            && self.sb.snd_nxt < self.snd_wnd_end
            && self.sb.snd_nxt - self.sb.snd_una < self.wmem_segs;
        if can_send_new {
            self.send_new(now, env);
        } else {
            let last = self.sb.snd_nxt - 1;
            if self.sb.get(last).has(FLAG_SACKED) {
                self.rearm_rto(now, env);
                return;
            }
            self.retransmit_probe(last, now, env);
            self.tlp_retrans = true;
        }
        self.stats.tlp_probes += 1;
        self.tlp_high_seq = Some(self.sb.snd_nxt);
        self.rearm_rto(now, env);
    }

    /// tcp_retransmit_timer() + tcp_enter_loss(): RTO expiry.
    pub(super) fn retransmit_timer<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        if self.tp.packets_out == 0 {
            return;
        }
        self.stats.rto_fired += 1;
        self.enter_loss(now);
        // tcp_retransmit_timer() → tcp_retransmit_skb(tcp_rtx_queue_head()):
        // the head goes again at once, ignoring cwnd, even when it is
        // already a retransmission in flight (a tail loss probe's, which
        // tcp_mark_skb_lost() leaves TCPCB_SACKED_RETRANS, so it is not in
        // the lost queue).
        let head = self.sb.snd_una;
        if !self.sb.get(head).has(FLAG_SACKED) {
            if self.sb.next_lost() == Some(head) {
                self.sb.pop_lost();
            }
            self.retransmit(head, now, env);
        } else if let Some(seq) = self.sb.next_lost() {
            self.sb.pop_lost();
            self.retransmit(seq, now, env);
        }
        self.backoff = self.backoff.saturating_add(1);
        self.refresh_rto();
        self.rto_retransmits = self.rto_retransmits.saturating_add(1);
        self.rto_is_tlp = false;
        let rto = self.current_rto();
        self.arm(SenderTimer::Rto, now + rto, env);
        self.chrono.set(now, ChronoKind::Busy);
    }

    /// tcp_enter_loss() with tcp_timeout_mark_lost().
    pub(super) fn enter_loss(&mut self, now: Time) {
        let st = self.tp.ca_state;
        if st <= CaState::Disorder
            || self.sb.snd_una >= self.high_seq
            || (st == CaState::Loss && self.rto_retransmits == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.tp.snd_ssthresh = self.cc.ssthresh(&self.tp);
            self.cc.cwnd_event(&mut self.tp, CwndEvent::Loss);
            self.init_undo();
        }
        self.frto_on_entering_loss(st);
        // "Timeout in disordered state after receiving substantial DUPACKs
        // suggests that the degree of reordering is over-estimated."
        if st <= CaState::Disorder && self.tp.sacked_out >= super::rack::REORDERING {
            self.reordering = self.reordering.min(super::rack::REORDERING);
        }
        self.ecn_queue_cwr(); // tcp_enter_loss()
        // Mark the head and every segment whose RACK timeout (with zero
        // reordering window) has expired as lost.
        // The retransmission queue is rebuilt in sequence order: Linux
        // retransmits from the head of the rtx queue after an RTO.
        let head = self.sb.snd_una;
        let rack_rtt = self.rack.rtt;
        self.sb.clear_lost();
        // A run at a time (its segments share flags and send time), in
        // sequence order; marking never changes the segments above it.
        let mut seq = head;
        while seq < self.sb.snd_nxt {
            let run = *self.sb.run_at(seq);
            let seg = run.seg;
            let end = run.end;
            if seg.has(FLAG_SACKED) {
                // SACKed: not lost.
            } else if seg.has(FLAG_LOST) && !seg.has(FLAG_RETRANS) {
                self.sb.queue_lost(seq, end); // already lost, not yet resent
            } else if seg.xmit + rack_rtt > now {
                // Recently sent: not lost yet, except the head.
                if seq == head {
                    self.mark_lost(seq, seq + 1);
                }
            } else {
                self.mark_lost(seq, end);
            }
            seq = end;
        }
        self.tp.snd_cwnd = self.tp.in_flight() + 1;
        self.tp.snd_cwnd_cnt = 0;
        self.set_state(CaState::Loss);
        self.high_seq = self.sb.snd_nxt;
        self.tlp_high_seq = None;
    }

    /// tcp_rack_reo_timeout().
    pub(super) fn reo_timeout<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        let prior_in_flight = self.tp.in_flight();
        self.rack_detect(now, env);
        if prior_in_flight != self.tp.in_flight() {
            if self.tp.ca_state != CaState::Recovery {
                self.enter_recovery(false);
                if !self.owns {
                    let in_flight = self.tp.in_flight();
                    if let Some(c) =
                        self.prr.cwnd(self.tp.snd_ssthresh, self.tp.prior_cwnd, in_flight, 1, false, false)
                    {
                        self.tp.snd_cwnd = c;
                    }
                }
            }
            self.push(now, env);
        }
        if self.rto_is_tlp || !self.rto_timer.is_armed() {
            self.rearm_rto(now, env);
        }
    }

    /// Runs RACK detection and marks lost segments; arms the reordering timer
    /// for the ones not yet overdue (tcp_rack_detect_loss + timer).
    pub(super) fn rack_detect<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        // Nothing was sent before the RACK packet and is still outstanding:
        // the walk would stop at once.
        match self.sb.oldest_live() {
            None => return,
            Some((seq, x)) => {
                if x > self.rack.mstamp || (x == self.rack.mstamp && seq >= self.rack.end_seq) {
                    return;
                }
            }
        }
        let reo = self.rack.reo_wnd(self.tp.ca_state, self.tp.sacked_out, self.rtt.min_rtt, self.rtt.srtt);
        let mut lost = std::mem::take(&mut self.lost_scratch);
        let wait = self.rack.detect_loss(&mut self.sb, now, reo, &mut lost);
        for &(start, end) in &lost {
            self.mark_lost(start, end);
        }
        self.lost_scratch = lost;
        if wait > Time::ZERO {
            // usecs_to_jiffies() + TCP_TIMEOUT_MIN: the timer expires on a
            // jiffy (1 ms at HZ=1000) boundary.
            let at = jiffy_ceil(now + wait) + super::rack::TIMEOUT_MIN;
            self.arm_reo(at, env);
        }
    }

}

/// Rounds up to the next jiffy (1 ms, HZ=1000): Linux's timer wheel fires
/// on tick boundaries.
pub fn jiffy_ceil(t: Time) -> Time {
    const J: u64 = 1_000_000;
    Time(t.0.div_ceil(J).saturating_mul(J))
}
