//! RACK-TLP loss detection (RFC 8985; Linux net/ipv4/tcp_recovery.c).

use crate::cc::CaState;
use crate::units::Time;

use super::scoreboard::{Scoreboard, FLAG_EVER_RETRANS, FLAG_RETRANS};
use super::tsorted::Verdict;

/// TCP_TIMEOUT_MIN (2 jiffies at HZ=1000), added to RACK's reordering timer.
pub const TIMEOUT_MIN: Time = Time::from_millis(2);
/// Default tp->reordering (sysctl_tcp_reordering, the DupThresh).
pub const REORDERING: u32 = 3;
/// TCP_RACK_RECOVERY_THRESH: recoveries a widened reo_wnd persists for.
pub const RECOVERY_THRESH: u32 = 16;

#[derive(Clone, Debug)]
pub struct Rack {
    /// Send time of the most recently sent delivered packet (rack.mstamp).
    pub mstamp: Time,
    /// Its sequence number (rack.end_seq, in segments).
    pub end_seq: u64,
    /// RTT of that delivery (rack.rtt_us).
    pub rtt: Time,
    /// Set when rack.mstamp advanced since the last detection run.
    pub advanced: bool,
    /// Reordering has been observed (tp->reord_seen).
    pub reord_seen: bool,
    /// reo_wnd in steps of min_rtt/4 (rack.reo_wnd_steps, from 1).
    pub reo_wnd_steps: u32,
    /// A D-SACK arrived that may come from RACK's own spurious
    /// retransmission (rack.dsack_seen).
    pub dsack_seen: bool,
    /// tp->delivered when reo_wnd last grew (rack.last_delivered).
    pub last_delivered: u64,
    /// Recoveries the widened reo_wnd is kept for (rack.reo_wnd_persist).
    pub reo_wnd_persist: u32,
}

impl Default for Rack {
    fn default() -> Rack {
        Rack {
            mstamp: Time::ZERO,
            end_seq: 0,
            rtt: Time::ZERO,
            advanced: false,
            reord_seen: false,
            reo_wnd_steps: 1, // tcp_init_sock(): tp->rack.reo_wnd_steps = 1
            dsack_seen: false,
            last_delivered: 0,
            reo_wnd_persist: 0,
        }
    }
}

#[inline]
fn sent_after(t1: Time, t2: Time, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// tcp_rack_advance(): a packet sent at `xmit` was (s)acked at `now`.
    pub fn advance(&mut self, flags: u8, seq: u64, xmit: Time, now: Time, min_rtt: Time) {
        let rtt = now.saturating_sub(xmit);
        // A retransmission acked faster than min RTT was probably acked by the
        // original transmission: ignore it (RFC 8985 §6.2 step 2).
        // TCPCB_RETRANS is both TCPCB_SACKED_RETRANS and TCPCB_EVER_RETRANS.
        if flags & (FLAG_RETRANS | FLAG_EVER_RETRANS) != 0 && rtt < min_rtt {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if sent_after(xmit, self.mstamp, seq, self.end_seq) {
            self.mstamp = xmit;
            self.end_seq = seq;
        }
    }

    /// tcp_rack_reo_wnd(): zero when no reordering was seen and we are in
    /// recovery or already have DupThresh SACKed segments; else
    /// min_rtt · reo_wnd_steps / 4, capped by srtt.
    pub fn reo_wnd(&self, ca_state: CaState, sacked_out: u32, min_rtt: Time, srtt: Time) -> Time {
        if !self.reord_seen && (ca_state >= CaState::Recovery || sacked_out >= REORDERING) {
            return Time::ZERO;
        }
        if min_rtt == Time::MAX {
            return Time::ZERO;
        }
        Time(min_rtt.as_nanos().saturating_mul(u64::from(self.reo_wnd_steps)) / 4).min(srtt)
    }

    /// tcp_rack_update_reo_wnd(), on each ACK before loss detection: a
    /// D-SACK seen (and no reo_wnd change within the last round trip:
    /// `prior_delivered`, the newest delivered packet's snapshot, before
    /// `last_delivered`) widens reo_wnd by a step (at most 0xFF) and keeps
    /// it for RECOVERY_THRESH recoveries; once those have passed without
    /// one it returns to one step. `prior_delivered` None: this ACK
    /// delivered no packet with a snapshot (rs->prior_delivered 0).
    pub fn update_reo_wnd(&mut self, prior_delivered: Option<u64>, delivered: u64) {
        let Some(prior) = prior_delivered.filter(|&p| p != 0) else {
            return;
        };
        if prior < self.last_delivered {
            self.dsack_seen = false; // "a rtt has not passed since we adjusted reo_wnd"
        }
        if self.dsack_seen {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xFF);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// tcp_rack_detect_loss(): marks (into `lost`, as ranges in walk
    /// order) every live packet sent before the RACK packet whose RTT +
    /// reo_wnd has elapsed. Returns the longest remaining wait of the
    /// others (zero if none). Segments sent at one time share their
    /// deadline, so a run piece is judged at once; only where the piece was
    /// sent at rack.mstamp does tcp_skb_sent_after()'s sequence tie-break
    /// cut it at rack.end_seq.
    #[inline]
    pub fn detect_loss(&self, sb: &mut Scoreboard, now: Time, reo_wnd: Time, lost: &mut Vec<(u64, u64)>) -> Time {
        let mut wait = Time::ZERO;
        let (mstamp, end_seq, rtt) = (self.mstamp, self.end_seq, self.rtt);
        sb.walk_tsorted(lost, |a, b, xmit| {
            // Segments seq in a..b with sent_after(mstamp, xmit, end_seq, seq).
            let before = if mstamp > xmit {
                b
            } else if mstamp == xmit {
                end_seq.clamp(a, b)
            } else {
                a
            };
            // RFC 8985 §6.2 step 5: lost if now >= xmit + rtt + reo_wnd.
            let deadline = xmit + rtt + reo_wnd;
            let lost = deadline <= now;
            if !lost && before > a {
                wait = wait.max(deadline - now);
            }
            Verdict { before, lost }
        });
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::scoreboard::Seg;

    #[test]
    fn rack_marks_a_hole_lost_only_after_rtt_plus_reo_wnd() {
        let mut sb = Scoreboard::default();
        for i in 0..4u64 {
            sb.push_new(Seg { xmit: Time::from_micros(i), tx_id: 1, ..Seg::default() });
        }
        let mut rack = Rack::default();
        let min_rtt = Time::from_millis(20);
        // Segment 3 is SACKed at t = 20 ms + 3 µs; segments 0..3 are holes.
        let now = Time::from_millis(20) + Time::from_micros(3);
        let _ = sb.sack_block(3, 4);
        sb.set_flags(3, 4, super::super::scoreboard::FLAG_SACKED, 0);
        rack.advance(0, 3, Time::from_micros(3), now, min_rtt);
        let reo = rack.reo_wnd(CaState::Open, 1, min_rtt, min_rtt);
        assert_eq!(reo, Time::from_millis(5));
        let mut lost = Vec::new();
        let wait = rack.detect_loss(&mut sb, now, reo, &mut lost);
        assert!(lost.is_empty());
        assert!(wait > Time::from_millis(4) && wait <= Time::from_millis(5));
        // After reo_wnd has passed, the holes are lost.
        let later = now + Time::from_millis(5);
        rack.detect_loss(&mut sb, later, reo, &mut lost);
        assert_eq!(lost, vec![(0, 3)]);
    }

    #[test]
    fn reo_wnd_is_zero_in_recovery_without_reordering() {
        let rack = Rack::default();
        let m = Time::from_millis(20);
        assert_eq!(rack.reo_wnd(CaState::Recovery, 0, m, m), Time::ZERO);
        assert_eq!(rack.reo_wnd(CaState::Open, 3, m, m), Time::ZERO);
        assert_eq!(rack.reo_wnd(CaState::Open, 2, m, m), Time::from_millis(5));
    }

    #[test]
    fn a_dsack_widens_reo_wnd_by_a_quarter_min_rtt_at_most_once_per_round_trip() {
        // tcp_rack_update_reo_wnd(): steps of min_rtt/4, capped by srtt.
        let (m, srtt) = (Time::from_millis(20), Time::from_millis(30));
        let mut rack = Rack { reord_seen: true, ..Rack::default() };
        assert_eq!(rack.reo_wnd(CaState::Open, 0, m, srtt), Time::from_millis(5));
        rack.dsack_seen = true;
        rack.update_reo_wnd(Some(100), 150);
        assert_eq!((rack.reo_wnd_steps, rack.reo_wnd_persist, rack.last_delivered), (2, RECOVERY_THRESH, 150));
        assert_eq!(rack.reo_wnd(CaState::Open, 0, m, srtt), Time::from_millis(10));
        // A D-SACK for a packet sent before the last widening (its
        // snapshot below last_delivered) is disregarded.
        rack.dsack_seen = true;
        rack.update_reo_wnd(Some(149), 160);
        assert_eq!(rack.reo_wnd_steps, 2);
        assert!(!rack.dsack_seen);
        // An ACK that delivered nothing with a snapshot changes nothing.
        rack.dsack_seen = true;
        rack.update_reo_wnd(None, 170);
        assert!(rack.dsack_seen && rack.reo_wnd_steps == 2);
        for _ in 0..6 {
            rack.dsack_seen = true;
            let d = rack.last_delivered + 10;
            rack.update_reo_wnd(Some(d), d);
        }
        assert_eq!(rack.reo_wnd(CaState::Open, 0, m, srtt), srtt, "capped by srtt");
        // Once the widened window has persisted its recoveries, one step again.
        rack.reo_wnd_persist = 0;
        rack.update_reo_wnd(Some(1_000), 1_000);
        assert_eq!(rack.reo_wnd_steps, 1);
    }
}
