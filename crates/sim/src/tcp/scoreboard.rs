//! The sender's retransmission queue and SACK scoreboard.
//!
//! Sequence numbers count segments (all segments of a stream are MSS-sized).
//! Like Linux, which keeps the retransmission queue as skbs of up to a
//! TSO burst each (one tcp_skb_cb per skb: one transmit time, one
//! rate-sample snapshot, one set of SACK/loss flags), the queue holds
//! [`Run`]s: maximal runs of consecutive segments whose state is the same
//! (their `in_flight` snapshots step by one, as tcp_set_tx_in_flight()
//! counts each segment of a burst). A run is split exactly where an
//! ACK, SACK, loss mark or retransmission boundary falls (tcp_fragment(),
//! called from tcp_sacktag_walk()/tcp_match_skb_to_sack(),
//! tcp_mark_head_lost() and __tcp_retransmit_skb()), and neighbours whose
//! state becomes the same are merged again (tcp_shifted_skb(),
//! tcp_collapse_retrans()). The result is a run-length encoding of the
//! per-segment state: every rule reads the same per-segment values as
//! before, but the ACK, SACK and RACK paths handle a run at once where all
//! its segments get the same treatment.
//!
//! Like Linux (tcp_sacktag_write_queue), SACK blocks are processed
//! incrementally: a set of already-SACKed segments (a bitmap,
//! `segbits.rs`) means each segment is tagged once, however often a block
//! is repeated. The time-sorted
//! transmission list RACK walks lives in `tsorted.rs`.

use std::collections::VecDeque;

use crate::units::Time;

use super::segbits::SegBits;
use super::tsorted::Tsorted;

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// Segments `start..end` sharing one state (an skb's tcp_skb_cb): segment
/// `start + k` has `seg` with `in_flight + k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: u64,
    pub end: u64,
    /// The state of the run's first segment.
    pub seg: Seg,
}

impl Run {
    #[inline]
    pub fn len(&self) -> u32 {
        (self.end - self.start) as u32
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    #[inline]
    pub fn contains(&self, seq: u64) -> bool {
        self.start <= seq && seq < self.end
    }

    /// The state of segment `seq` of this run.
    #[inline]
    pub fn seg_at(&self, seq: u64) -> Seg {
        let k = (seq - self.start) as u32;
        Seg { in_flight: self.seg.in_flight.wrapping_add(k), ..self.seg }
    }

    /// The state of the run's last segment.
    #[inline]
    pub fn last_seg(&self) -> Seg {
        self.seg_at(self.end - 1)
    }

    /// Whether `next` continues this run with the same state, so that the
    /// two can be one run (tcp_skb_can_collapse() / tcp_shifted_skb()).
    #[inline]
    fn continued_by(&self, next: &Run) -> bool {
        self.end == next.start && next.seg == self.seg_at(self.end)
    }
}

#[derive(Debug, Default)]
pub struct Scoreboard {
    /// First unacknowledged segment.
    pub snd_una: u64,
    /// Next new segment to send.
    pub snd_nxt: u64,
    /// The run of each segment of [snd_una, snd_nxt), by id: finding a
    /// segment's run is one index, and a split rewrites only the ids of
    /// the run it cuts (no shifting of other runs).
    ids: VecDeque<u32>,
    /// The runs by id (a slab; `free` holds unused ids, reused so that
    /// the steady state allocates nothing).
    runs: Vec<Run>,
    free: Vec<u32>,
    live_runs: usize,
    /// SACKed segments above snd_una (tcp/segbits.rs), and the lowest
    /// segment the set may hold (snd_una when it was last trimmed).
    sacked: SegBits,
    sacked_from: u64,
    /// Transmissions in send-time order (tp->tsorted_sent_queue).
    pub(super) tsorted: Tsorted,
    /// Segments marked lost, in marking order, awaiting retransmission:
    /// ranges [start, end), each of segments queued one after the other
    /// in sequence order (a run-length encoding of the per-segment queue).
    lost_q: VecDeque<(u64, u64)>,
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
        (self.snd_nxt - self.snd_una) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.snd_nxt == self.snd_una
    }

    /// Number of runs the queue holds.
    pub fn run_count(&self) -> usize {
        self.live_runs
    }

    /// Entries currently held by the queue and side lists.
    pub fn footprint(&self) -> usize {
        self.live_runs + self.tsorted.len() + self.lost_q.len() + self.sacked.ranges()
    }

    /// Id of the run holding `seq` (snd_una <= seq < snd_nxt).
    #[inline]
    pub fn id_at(&self, seq: u64) -> u32 {
        self.ids[(seq - self.snd_una) as usize]
    }

    /// The state of segment `seq`.
    #[inline]
    pub fn get(&self, seq: u64) -> Seg {
        self.run_at(seq).seg_at(seq)
    }

    /// The run with id `id`.
    #[inline]
    pub fn run(&self, id: u32) -> &Run {
        &self.runs[id as usize]
    }

    #[inline]
    pub fn run_mut(&mut self, id: u32) -> &mut Run {
        &mut self.runs[id as usize]
    }

    /// The run holding `seq`.
    #[inline]
    pub fn run_at(&self, seq: u64) -> &Run {
        self.run(self.id_at(seq))
    }

    /// Send time of the oldest outstanding segment (the rtx queue head).
    #[inline]
    pub fn head_xmit(&self) -> Option<Time> {
        self.ids.front().map(|&id| self.run(id).seg.xmit)
    }

    #[inline]
    fn alloc(&mut self, r: Run) -> u32 {
        self.live_runs += 1;
        match self.free.pop() {
            Some(id) => {
                self.runs[id as usize] = r;
                id
            }
            None => {
                self.runs.push(r);
                (self.runs.len() - 1) as u32
            }
        }
    }

    #[inline]
    fn release(&mut self, id: u32) {
        self.live_runs -= 1;
        self.free.push(id);
    }

    /// Points segments `start..end` at run `id`.
    #[inline]
    fn set_ids(&mut self, start: u64, end: u64, id: u32) {
        // An indexed loop: most rewrites are of one or a few ids, where
        // setting up range_mut() costs more than the loop.
        let una = self.snd_una;
        for s in start..end {
            self.ids[(s - una) as usize] = id;
        }
    }

    /// Makes a run start at `seq` (tcp_fragment() at that boundary). The
    /// shorter side gets the new id, so a split rewrites at most half the
    /// run's ids (a segment cut out of a long run costs little).
    pub(super) fn split_at(&mut self, seq: u64) {
        if seq <= self.snd_una || seq >= self.snd_nxt {
            return;
        }
        let id = self.id_at(seq);
        let r = *self.run(id);
        if r.start == seq {
            return;
        }
        if r.end - seq <= seq - r.start {
            let new = self.alloc(Run { start: seq, end: r.end, seg: r.seg_at(seq) });
            self.run_mut(id).end = seq;
            self.set_ids(seq, r.end, new);
        } else {
            let new = self.alloc(Run { start: r.start, end: seq, seg: r.seg });
            *self.run_mut(id) = Run { start: seq, end: r.end, seg: r.seg_at(seq) };
            self.set_ids(r.start, seq, new);
        }
    }

    /// Splits runs so that runs start at `start` and `end` (tcp_fragment()
    /// at both edges, as tcp_match_skb_to_sack() does for a SACK block's
    /// edges inside an skb).
    pub fn isolate(&mut self, start: u64, end: u64) {
        self.split_at(start);
        self.split_at(end);
    }

    /// Merges run `id` into the run before it if it continues it with the
    /// same state (tcp_shifted_skb()); returns the id now holding its
    /// segments (the longer run's: only the shorter one's ids are
    /// rewritten). Run ids are only valid until the next split or merge.
    pub fn merge_back(&mut self, id: u32) -> u32 {
        let r = *self.run(id);
        if r.start <= self.snd_una {
            return id;
        }
        let prev = self.id_at(r.start - 1);
        let p = *self.run(prev);
        if !p.continued_by(&r) {
            return id;
        }
        let (keep, gone) = if r.len() <= p.len() { (prev, id) } else { (id, prev) };
        *self.run_mut(keep) = Run { start: p.start, end: r.end, seg: p.seg };
        let (a, b) = if keep == prev { (r.start, r.end) } else { (p.start, p.end) };
        self.set_ids(a, b, keep);
        self.release(gone);
        keep
    }

    /// Merges the run starting at `seq`, if any, into the one before it.
    pub fn merge_at(&mut self, seq: u64) {
        if seq > self.snd_una && seq < self.snd_nxt {
            let id = self.id_at(seq);
            if self.run(id).start == seq {
                self.merge_back(id);
            }
        }
    }

    /// Sets and clears flags of every segment in [start, end) (tests and
    /// rare paths; the hot paths work on runs directly).
    pub fn set_flags(&mut self, start: u64, end: u64, set: u8, clear: u8) {
        self.isolate(start, end);
        let mut seq = start;
        while seq < end {
            let id = self.id_at(seq);
            let f = &mut self.run_mut(id).seg.flags;
            *f = (*f & !clear) | set;
            let id = self.merge_back(id);
            seq = self.run(id).end;
        }
        self.merge_at(end);
    }

    /// Appends a new segment (snd_nxt advances); returns its seq. It joins
    /// the tail run when it continues it (the next segment of the same
    /// TSO burst: same send time and snapshot).
    #[inline]
    pub fn push_new(&mut self, seg: Seg) -> u64 {
        self.push_new_range(seg, 1)
    }

    /// Appends `n` (≥ 1) new segments sent together, the first with `seg`
    /// and each next one's `in_flight` one higher (one TSO skb of
    /// tcp_write_xmit(): one snapshot, tcp_set_tx_in_flight() counting
    /// its segments); the same as `n` calls of [`Scoreboard::push_new`]
    /// with those states. Returns the first seq. The range joins the tail
    /// run when it continues it.
    #[inline]
    pub fn push_new_range(&mut self, seg: Seg, n: u32) -> u64 {
        debug_assert!(n >= 1);
        let seq = self.snd_nxt;
        let end = seq + n as u64;
        let new = Run { start: seq, end, seg };
        let id = match self.ids.back() {
            Some(&tail) if self.runs[tail as usize].continued_by(&new) => {
                self.runs[tail as usize].end = end;
                tail
            }
            _ => self.alloc(new),
        };
        self.ids.extend(std::iter::repeat_n(id, n as usize));
        self.snd_nxt = end;
        self.tsorted.note_range(seq, end, seg.tx_id, seg.xmit);
        seq
    }

    /// Records a retransmission of `start..end` (a run of its own, see
    /// [`Scoreboard::isolate`]) in the time-sorted list and merges its run
    /// with its neighbours where they now share its state
    /// (tcp_collapse_retrans()).
    #[inline]
    pub fn note_retransmit(&mut self, start: u64, end: u64) {
        let seg = self.get(start);
        self.tsorted.note_range(start, end, seg.tx_id, seg.xmit);
        let id = self.merge_back(self.id_at(start));
        let end = self.run(id).end;
        self.merge_at(end);
    }

    /// Queues segments `start..end` for retransmission, in that order
    /// (they were just marked lost).
    #[inline]
    pub fn queue_lost(&mut self, start: u64, end: u64) {
        match self.lost_q.back_mut() {
            Some(back) if back.1 == start => back.1 = end,
            _ => self.lost_q.push_back((start, end)),
        }
    }

    /// The next lost segment that still needs a retransmission. Queued
    /// segments that no longer do (acked, SACKed or already resent) are
    /// dropped from the queue, a run at a time: a run's segments share
    /// their flags.
    pub fn next_lost(&mut self) -> Option<u64> {
        while let Some(&(start, end)) = self.lost_q.front() {
            let seq = start.max(self.snd_una);
            if seq >= end {
                self.lost_q.pop_front();
                continue;
            }
            let r = self.run_at(seq);
            let (s, run_end) = (r.seg, r.end);
            self.advance_lost_front(seq);
            if s.has(FLAG_LOST) && !s.has(FLAG_SACKED) && !s.has(FLAG_RETRANS) {
                return Some(seq);
            }
            self.advance_lost_front(run_end);
        }
        None
    }

    /// Empties the retransmission queue (it is rebuilt in sequence order
    /// when entering Loss).
    pub fn clear_lost(&mut self) {
        self.lost_q.clear();
    }

    /// Pops the segment [`Scoreboard::next_lost`] just returned.
    pub fn pop_lost(&mut self) {
        if let Some(&(seq, _)) = self.lost_q.front() {
            self.advance_lost_front(seq + 1);
        }
    }

    /// Drops the queued segments of the front range below `to`, and the
    /// range once none is left.
    fn advance_lost_front(&mut self, to: u64) {
        if let Some(front) = self.lost_q.front_mut() {
            front.0 = front.0.max(to);
            if front.0 >= front.1 {
                self.lost_q.pop_front();
            }
        }
    }

    /// Pops `seq` (what [`Scoreboard::next_lost`] just returned) and the
    /// entries queued right after it for the segments that follow it
    /// inside its run, at most `max` (≥ 1) in all; returns how many. They
    /// share `seq`'s state, so each would be `next_lost()` in turn.
    pub fn pop_lost_run(&mut self, seq: u64, max: u32) -> u32 {
        let run_end = self.run_at(seq).end;
        let queued_end = self.lost_q.front().map_or(seq + 1, |&(_, end)| end);
        let k = (max.max(1) as u64).min(run_end - seq).min(queued_end - seq);
        self.advance_lost_front(seq + k);
        k as u32
    }

    /// Tags SACK block [start, end) and returns the newly SACKed sub-ranges
    /// (borrowed scratch, valid until the next call).
    #[inline]
    pub fn sack_block(&mut self, start: u64, end: u64) -> &[(u64, u64)] {
        self.scratch.clear();
        let s = start.max(self.snd_una);
        let e = end.min(self.snd_nxt);
        if s >= e {
            return &self.scratch;
        }
        // tcp_sacktag_walk() tags the segments of the block not yet
        // SACKed.
        if self.sacked.is_empty() {
            self.sacked_from = self.snd_una;
        }
        self.sacked.insert_new(self.sacked_from, s, e, &mut self.scratch);
        &self.scratch
    }

    /// Highest SACKed segment + 1 (for reordering detection), 0 if none.
    pub fn highest_sacked(&self) -> u64 {
        self.sacked.end()
    }

    /// Removes the head run's segments below `upto` (> snd_una) from the
    /// queue and returns them as a run: tcp_clean_rtx_queue() frees a
    /// fully acked skb and trims a partly acked TSO skb
    /// (tcp_tso_acked() / tcp_trim_head()).
    #[inline]
    pub fn pop_acked(&mut self, upto: u64) -> Run {
        let id = *self.ids.front().expect("pop_acked on empty queue");
        let r = *self.run(id);
        if r.end <= upto {
            self.ids.drain(..r.len() as usize);
            self.release(id);
            self.snd_una = r.end;
            r
        } else {
            self.ids.drain(..(upto - r.start) as usize);
            let head = self.run_mut(id);
            head.seg = r.seg_at(upto);
            head.start = upto;
            self.snd_una = upto;
            Run { start: r.start, end: upto, seg: r.seg }
        }
    }

    /// Drops SACK ranges fully below snd_una (after cumulative ACK).
    #[inline]
    pub fn trim_sacked(&mut self) {
        self.sacked.remove_below(self.sacked_from, self.snd_una);
        self.sacked_from = self.snd_una;
    }

    /// Sequence numbers in [snd_una, snd_nxt).
    pub fn range(&self) -> std::ops::Range<u64> {
        self.snd_una..self.snd_nxt
    }
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
        while b.snd_una < 5 {
            b.pop_acked(5);
        }
        b.trim_sacked();
        assert_eq!(b.sack_block(5, 7), &[(6, 7)]);
    }

    #[test]
    fn segments_of_one_burst_form_one_run_with_stepping_in_flight() {
        let mut b = Scoreboard::default();
        for k in 0..8u32 {
            b.push_new(Seg { xmit: Time(5), tx_id: 1, in_flight: 10 + k, ..Seg::default() });
        }
        // A different send time starts a new run (a new skb).
        b.push_new(Seg { xmit: Time(6), tx_id: 1, in_flight: 18, ..Seg::default() });
        assert_eq!(b.run_count(), 2);
        assert_eq!(b.get(3).in_flight, 13);
        assert_eq!(b.get(8).xmit, Time(6));
    }

    #[test]
    fn a_flag_change_inside_a_run_splits_it_at_the_edges_and_undoing_it_merges_back() {
        let mut b = Scoreboard::default();
        for k in 0..10u32 {
            b.push_new(Seg { xmit: Time(5), tx_id: 1, in_flight: 1 + k, ..Seg::default() });
        }
        b.set_flags(3, 6, FLAG_LOST, 0);
        assert_eq!(b.run_count(), 3);
        assert_eq!(b.run_at(3), &Run { start: 3, end: 6, seg: Seg { xmit: Time(5), tx_id: 1, in_flight: 4, flags: FLAG_LOST, ..Seg::default() } });
        assert_eq!(b.get(7).in_flight, 8);
        b.set_flags(3, 6, 0, FLAG_LOST);
        assert_eq!(b.run_count(), 1);
    }

    #[test]
    fn lost_segments_leave_the_queue_in_marking_order_a_run_at_a_time() {
        let mut b = Scoreboard::default();
        for k in 0..20u32 {
            b.push_new(Seg { xmit: Time(5), tx_id: 1, in_flight: 1 + k, ..Seg::default() });
        }
        // Marked lost in two steps that continue each other, then an
        // earlier stretch: the queue keeps marking order.
        b.set_flags(4, 10, FLAG_LOST, 0);
        b.queue_lost(4, 6);
        b.queue_lost(6, 10);
        b.set_flags(1, 3, FLAG_LOST, 0);
        b.queue_lost(1, 3);
        // 4..6 SACKed meanwhile: skipped whole; a burst stops at the end
        // of the run holding its first segment.
        b.set_flags(4, 6, FLAG_SACKED, 0);
        assert_eq!(b.next_lost(), Some(6));
        assert_eq!(b.pop_lost_run(6, 3), 3);
        assert_eq!(b.next_lost(), Some(9));
        assert_eq!(b.pop_lost_run(9, 8), 1);
        // The next queued range does not continue 9: a new burst.
        assert_eq!(b.next_lost(), Some(1));
        b.pop_lost();
        assert_eq!(b.next_lost(), Some(2));
        // Acked past it: nothing left to resend.
        while b.snd_una < 3 {
            b.pop_acked(3);
        }
        assert_eq!(b.next_lost(), None);
    }

    #[test]
    fn a_partial_cumulative_ack_trims_the_head_run() {
        let mut b = Scoreboard::default();
        for k in 0..10u32 {
            b.push_new(Seg { xmit: Time(5), tx_id: 1, in_flight: 1 + k, ..Seg::default() });
        }
        let r = b.pop_acked(4);
        assert_eq!((r.start, r.end, r.last_seg().in_flight), (0, 4, 4));
        assert_eq!((b.snd_una, b.run_at(4).start, b.run_at(4).seg.in_flight), (4, 4, 5));
    }
}
