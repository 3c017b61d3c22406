//! The time-sorted list of transmissions RACK walks
//! (tp->tsorted_sent_queue of Linux net/ipv4/tcp_recovery.c).
//!
//! An entry is one transmission of consecutive segments at one time (a
//! TSO skb sent by tcp_write_xmit(), or retransmissions that follow one
//! another), kept in send order. An entry goes stale segment by segment:
//! a segment is live for RACK while this transmission is its latest one
//! (its `tx_id` still matches) and it is neither SACKed nor marked lost
//! without a retransmission in flight. Liveness only ever ends, so stale
//! parts are dropped lazily; the walk reads the segments' state from the
//! scoreboard's runs, a run piece at a time.

use std::collections::VecDeque;

use crate::units::Time;

use super::scoreboard::{Run, Scoreboard, FLAG_LOST, FLAG_RETRANS, FLAG_SACKED};

/// One transmission of segments `start..end` at `xmit`, as `tx_id` `id`.
#[derive(Clone, Copy, Debug)]
struct Entry {
    start: u64,
    end: u64,
    id: u32,
    xmit: Time,
}

#[derive(Debug, Default)]
pub struct Tsorted {
    q: VecDeque<Entry>,
}

impl Tsorted {
    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Appends a transmission of `seq` (tcp_rack's list_move_tail onto
    /// tsorted_sent_queue); it extends the last entry when it continues it.
    #[inline]
    pub fn note(&mut self, seq: u64, id: u32, xmit: Time) {
        self.note_range(seq, seq + 1, id, xmit);
    }

    /// Appends a transmission of segments `start..end` sent together (a
    /// TSO skb goes onto tsorted_sent_queue once, tcp_event_new_data_sent);
    /// the same as noting each in order.
    #[inline]
    pub fn note_range(&mut self, start: u64, end: u64, id: u32, xmit: Time) {
        match self.q.back_mut() {
            Some(e) if e.end == start && e.id == id && e.xmit == xmit => e.end = end,
            _ => self.q.push_back(Entry { start, end, id, xmit }),
        }
    }
}

/// Whether segments of `r` sent as transmission `id` are live for RACK.
#[inline]
fn live(r: &Run, id: u32) -> bool {
    let f = r.seg.flags;
    r.seg.tx_id == id && f & FLAG_SACKED == 0 && (f & FLAG_LOST == 0 || f & FLAG_RETRANS != 0)
}

/// What the walk's visitor decides for live segments `a..b` sent at one
/// time: segments `a..before` were sent before RACK's packet (the rest,
/// from `before` on, end the walk), and whether those are lost.
pub struct Verdict {
    pub before: u64,
    pub lost: bool,
}

impl Scoreboard {
    /// Oldest live transmission (its first live segment and send time),
    /// dropping stale entries on the way.
    pub fn oldest_live(&mut self) -> Option<(u64, Time)> {
        while let Some(&e) = self.tsorted.q.front() {
            let mut seq = e.start.max(self.snd_una);
            while seq < e.end {
                let r = *self.run_at(seq);
                if live(&r, e.id) {
                    self.tsorted.q[0].start = seq;
                    return Some((seq, r.seg.xmit));
                }
                seq = r.end.min(e.end);
            }
            self.tsorted.q.pop_front();
        }
        None
    }

    /// Visits live transmissions in send order (tcp_rack_detect_loss's
    /// walk), a run piece at a time: `visit(a, b, xmit)` judges live
    /// segments `a..b` sent at `xmit`. Segments judged lost are appended
    /// to `lost` as ranges in walk order (to be marked by
    /// tcp_mark_skb_lost()); the walk ends at the first segment not sent
    /// before RACK's packet. Dropped from the list: leading entries' stale
    /// and lost parts (the list_del_init() of the walk).
    pub fn walk_tsorted(&mut self, lost: &mut Vec<(u64, u64)>, mut visit: impl FnMut(u64, u64, Time) -> Verdict) {
        lost.clear();
        let mut i = 0;
        while i < self.tsorted.q.len() {
            let e = self.tsorted.q[i];
            // For the first entry: where its still-needed part begins.
            let mut keep_from = e.start.max(self.snd_una);
            let mut droppable = i == 0;
            let mut seq = keep_from;
            let mut stop = false;
            while seq < e.end {
                let r = *self.run_at(seq);
                let b = r.end.min(e.end);
                if live(&r, e.id) {
                    let v = visit(seq, b, r.seg.xmit);
                    if v.before > seq {
                        if v.lost {
                            match lost.last_mut() {
                                Some(l) if l.1 == seq => l.1 = v.before,
                                _ => lost.push((seq, v.before)),
                            }
                        } else {
                            droppable = false;
                        }
                    }
                    if droppable {
                        keep_from = v.before;
                    }
                    if v.before < b {
                        stop = true;
                        break;
                    }
                } else if droppable {
                    keep_from = b;
                }
                seq = b;
            }
            if i == 0 {
                if keep_from >= e.end {
                    self.tsorted.q.pop_front();
                } else {
                    self.tsorted.q[0].start = keep_from;
                    i = 1;
                }
            } else {
                i += 1;
            }
            if stop {
                break;
            }
        }
    }
}
