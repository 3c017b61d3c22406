//! RACK-TLP loss detection (RFC 8985; Linux net/ipv4/tcp_recovery.c).

use crate::cc::CaState;
use crate::units::Time;

use super::scoreboard::{Scoreboard, FLAG_RETRANS};
use super::tsorted::Verdict;

/// TCP_TIMEOUT_MIN (2 jiffies at HZ=1000), added to RACK's reordering timer.
pub const TIMEOUT_MIN: Time = Time::from_millis(2);
/// Default tp->reordering (sysctl_tcp_reordering, the DupThresh).
pub const REORDERING: u32 = 3;

#[derive(Clone, Debug, Default)]
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
        if flags & FLAG_RETRANS != 0 && rtt < min_rtt {
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
    /// recovery or already have DupThresh SACKed segments; else min_rtt/4,
    /// capped by srtt.
    pub fn reo_wnd(&self, ca_state: CaState, sacked_out: u32, min_rtt: Time, srtt: Time) -> Time {
        if !self.reord_seen && (ca_state >= CaState::Recovery || sacked_out >= REORDERING) {
            return Time::ZERO;
        }
        if min_rtt == Time::MAX {
            return Time::ZERO;
        }
        min_rtt.div(4).min(srtt)
    }

    /// tcp_rack_detect_loss(): marks (into `lost`, as ranges in walk
    /// order) every live packet sent before the RACK packet whose RTT +
    /// reo_wnd has elapsed. Returns the longest remaining wait of the
    /// others (zero if none). Segments sent at one time share their
    /// deadline, so a run piece is judged at once; only where the piece was
    /// sent at rack.mstamp does tcp_skb_sent_after()'s sequence tie-break
    /// cut it at rack.end_seq.
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
}
