//! The sender's retransmission queue and SACK scoreboard.
//!
//! Sequence numbers count segments (all segments of a stream are MSS-sized),
//! so the queue is a ring indexed by `seq - snd_una`. Its size is
//! `snd_nxt - snd_una`, bounded by the window and the send buffer.
//! Like Linux (tcp_sacktag_write_queue), SACK blocks are processed
//! incrementally: a sorted list of already-SACKed ranges means each segment
//! is tagged once, however often a block is repeated.

use std::collections::VecDeque;

use crate::units::Time;

/// TCPCB_SACKED_ACKED.
pub const FLAG_SACKED: u8 = 1;
/// TCPCB_LOST.
pub const FLAG_LOST: u8 = 2;
/// TCPCB_SACKED_RETRANS: a retransmitted copy is in flight.
pub const FLAG_RETRANS: u8 = 4;
/// TCPCB_EVER_RETRANS: retransmitted at least once (Karn: no RTT sample).
pub const FLAG_EVER_RETRANS: u8 = 8;
/// tx.is_app_limited of the rate sampler.
pub const FLAG_APP_LIMITED: u8 = 16;

/// Per-segment state (the parts of tcp_skb_cb the engine uses).
#[derive(Clone, Copy, Debug, Default)]
pub struct Seg {
    /// Time of the latest (re)transmission (skb->skb_mstamp_ns).
    pub xmit: Time,
    /// tx.first_tx_mstamp snapshot.
    pub first_tx: Time,
    /// tx.delivered_mstamp snapshot; zero once used by a SACK sample.
    pub delivered_mstamp: Time,
    /// tx.delivered snapshot, kept in 32 bits as Linux does (widen with
    /// [`widen`] against the current count).
    pub delivered: u32,
    /// tx.lost snapshot (BBRv3), 32 bits.
    pub lost: u32,
    /// tx.delivered_ce snapshot, 32 bits.
    pub delivered_ce: u32,
    /// tx.in_flight (BBRv3's tcp_set_tx_in_flight()): packets in flight
    /// including this one when it was sent.
    pub in_flight: u32,
    /// Transmission counter, to recognise stale time-sorted entries.
    pub tx_id: u32,
    pub flags: u8,
}

/// The full value of a counter snapshotted in 32 bits (Linux's u32
/// tx.delivered / tx.lost): `now` minus the wrapped distance back to the
/// snapshot, exact while fewer than 2^32 segments passed since.
#[inline]
pub fn widen(now: u64, snapshot: u32) -> u64 {
    now.saturating_sub((now as u32).wrapping_sub(snapshot) as u64)
}

impl Seg {
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

#[derive(Debug, Default)]
pub struct Scoreboard {
    /// First unacknowledged segment.
    pub snd_una: u64,
    /// Next new segment to send.
    pub snd_nxt: u64,
    segs: VecDeque<Seg>,
    /// SACKed ranges [start, end) above snd_una: sorted, disjoint.
    sacked: VecDeque<(u64, u64)>,
    /// Transmissions in send-time order (tp->tsorted_sent_queue), as
    /// (seq, tx_id); entries go stale lazily.
    tsorted: VecDeque<(u64, u32)>,
    /// Segments marked lost, in marking order, awaiting retransmission.
    lost_q: VecDeque<u64>,
    /// Scratch for newly SACKed ranges.
    scratch: Vec<(u64, u64)>,
}

impl Scoreboard {
    /// Segments sent and not cumulatively acked (tp->packets_out).
    #[inline]
    pub fn packets_out(&self) -> u32 {
        (self.snd_nxt - self.snd_una) as u32
    }

    /// Number of queued segments (for memory-bound checks).
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Capacity currently allocated by the ring and side lists.
    pub fn footprint(&self) -> usize {
        self.segs.len() + self.tsorted.len() + self.lost_q.len() + self.sacked.len()
    }

    #[inline]
    pub fn get(&self, seq: u64) -> &Seg {
        &self.segs[(seq - self.snd_una) as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, seq: u64) -> &mut Seg {
        &mut self.segs[(seq - self.snd_una) as usize]
    }

    /// Appends a new segment (snd_nxt advances); returns its seq.
    #[inline]
    pub fn push_new(&mut self, seg: Seg) -> u64 {
        let seq = self.snd_nxt;
        self.segs.push_back(seg);
        self.snd_nxt += 1;
        self.tsorted.push_back((seq, seg.tx_id));
        seq
    }

    /// Records a retransmission of `seq` in the time-sorted list.
    #[inline]
    pub fn note_retransmit(&mut self, seq: u64) {
        let id = self.get(seq).tx_id;
        self.tsorted.push_back((seq, id));
    }

    /// Queues `seq` for retransmission (it was just marked lost).
    #[inline]
    pub fn queue_lost(&mut self, seq: u64) {
        self.lost_q.push_back(seq);
    }

    /// The next lost segment that still needs a retransmission.
    pub fn next_lost(&mut self) -> Option<u64> {
        while let Some(&seq) = self.lost_q.front() {
            if seq >= self.snd_una {
                let s = self.get(seq);
                if s.has(FLAG_LOST) && !s.has(FLAG_SACKED) && !s.has(FLAG_RETRANS) {
                    return Some(seq);
                }
            }
            self.lost_q.pop_front();
        }
        None
    }

    /// Empties the retransmission queue (it is rebuilt in sequence order
    /// when entering Loss).
    pub fn clear_lost(&mut self) {
        self.lost_q.clear();
    }

    pub fn pop_lost(&mut self) {
        self.lost_q.pop_front();
    }

    /// Whether a time-sorted entry still describes an in-flight transmission
    /// that RACK may have to mark lost.
    #[inline]
    fn live(&self, seq: u64, id: u32) -> bool {
        if seq < self.snd_una {
            return false;
        }
        let s = self.get(seq);
        s.tx_id == id && !s.has(FLAG_SACKED) && (!s.has(FLAG_LOST) || s.has(FLAG_RETRANS))
    }

    /// Oldest live transmission, dropping stale entries on the way.
    pub fn oldest_live(&mut self) -> Option<u64> {
        while let Some(&(seq, id)) = self.tsorted.front() {
            if self.live(seq, id) {
                return Some(seq);
            }
            self.tsorted.pop_front();
        }
        None
    }

    /// Visits live transmissions in send order (tcp_rack_detect_loss's walk).
    /// `f` returns `Walk::Continue`, `Walk::Remove` (marked lost) or `Walk::Stop`.
    pub fn walk_tsorted(&mut self, lost: &mut Vec<u64>, mut f: impl FnMut(u64, &Seg) -> Walk) {
        lost.clear();
        let mut i = 0;
        while i < self.tsorted.len() {
            let (seq, id) = self.tsorted[i];
            if !self.live(seq, id) {
                if i == 0 {
                    self.tsorted.pop_front();
                } else {
                    i += 1;
                }
                continue;
            }
            match f(seq, self.get(seq)) {
                Walk::Continue => i += 1,
                Walk::Remove => {
                    lost.push(seq);
                    if i == 0 {
                        self.tsorted.pop_front();
                    } else {
                        i += 1;
                    }
                }
                Walk::Stop => break,
            }
        }
    }

    /// Tags SACK block [start, end) and returns the newly SACKed sub-ranges
    /// (borrowed scratch, valid until the next call).
    pub fn sack_block(&mut self, start: u64, end: u64) -> &[(u64, u64)] {
        self.scratch.clear();
        let s = start.max(self.snd_una);
        let e = end.min(self.snd_nxt);
        if s >= e {
            return &self.scratch;
        }
        // Fast path: the block starts inside or above the highest range
        // (new SACKs usually extend it), so no other range is involved.
        if let Some(last) = self.sacked.back_mut() {
            if s >= last.0 {
                if s > last.1 {
                    self.sacked.push_back((s, e));
                    self.scratch.push((s, e));
                } else if e > last.1 {
                    self.scratch.push((last.1, e));
                    last.1 = e;
                }
                return &self.scratch;
            }
        } else {
            self.sacked.push_back((s, e));
            self.scratch.push((s, e));
            return &self.scratch;
        }
        // Ranges overlapping or touching [s, e).
        let first = self.sacked.partition_point(|r| r.1 < s);
        let mut last = first;
        let mut cursor = s;
        let mut ns = s;
        let mut ne = e;
        while last < self.sacked.len() && self.sacked[last].0 <= e {
            let (rs, re) = self.sacked[last];
            if rs > cursor {
                self.scratch.push((cursor, rs.min(e)));
            }
            cursor = cursor.max(re);
            ns = ns.min(rs);
            ne = ne.max(re);
            last += 1;
        }
        if cursor < e {
            self.scratch.push((cursor, e));
        }
        // Replace sacked[first..last] by the merged range; usually this only
        // extends one range near the tail.
        if last == first {
            self.sacked.insert(first, (ns, ne));
        } else {
            self.sacked[first] = (ns, ne);
            if last > first + 1 {
                self.sacked.drain(first + 1..last);
            }
        }
        &self.scratch
    }

    /// Highest SACKed segment + 1 (for reordering detection), 0 if none.
    pub fn highest_sacked(&self) -> u64 {
        self.sacked.back().map_or(0, |r| r.1)
    }

    /// Pops the head segment when the cumulative ACK passes it.
    #[inline]
    pub fn pop_acked(&mut self) -> Seg {
        let seg = self.segs.pop_front().expect("pop_acked on empty queue");
        self.snd_una += 1;
        seg
    }

    /// Drops SACK ranges fully below snd_una (after cumulative ACK).
    pub fn trim_sacked(&mut self) {
        let una = self.snd_una;
        while self.sacked.front().is_some_and(|r| r.1 <= una) {
            self.sacked.pop_front();
        }
        if let Some(r) = self.sacked.front_mut() {
            r.0 = r.0.max(una);
        }
    }

    /// Forgets every SACKed range (SACK reneging is not modelled; this is
    /// only used when rebuilding after an RTO).
    pub fn reset_tsorted(&mut self) {
        self.tsorted.clear();
        for i in 0..self.segs.len() {
            let seq = self.snd_una + i as u64;
            let id = self.segs[i].tx_id;
            self.tsorted.push_back((seq, id));
        }
        self.tsorted.make_contiguous().sort_by_key(|&(seq, _)| (self.segs[(seq - self.snd_una) as usize].xmit, seq));
    }

    /// Sequence numbers in [snd_una, snd_nxt).
    pub fn range(&self) -> std::ops::Range<u64> {
        self.snd_una..self.snd_nxt
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    Continue,
    Remove,
    Stop,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push_new(Seg { xmit: Time(i), tx_id: 1, ..Seg::default() });
        }
        b
    }

    #[test]
    fn a_repeated_sack_block_tags_each_segment_once() {
        let mut b = board(20);
        assert_eq!(b.sack_block(5, 8), &[(5, 8)]);
        assert_eq!(b.sack_block(5, 10), &[(8, 10)]);
        assert_eq!(b.sack_block(5, 10), &[] as &[(u64, u64)]);
        assert_eq!(b.sack_block(12, 14), &[(12, 14)]);
        assert_eq!(b.sack_block(3, 16), &[(3, 5), (10, 12), (14, 16)]);
        assert_eq!(b.highest_sacked(), 16);
    }

    #[test]
    fn cumulative_ack_trims_sack_ranges() {
        let mut b = board(10);
        let _ = b.sack_block(4, 6);
        for _ in 0..5 {
            b.pop_acked();
        }
        b.trim_sacked();
        assert_eq!(b.sack_block(5, 7), &[(6, 7)]);
    }
}
