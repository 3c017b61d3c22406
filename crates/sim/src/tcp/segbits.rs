//! Sets of segments as bitmaps: the receiver's out-of-order queue and the
//! sender's SACKed segments.
//!
//! Linux keeps out-of-order skbs in an rbtree (tp->out_of_order_queue;
//! tcp_data_queue_ofo() inserts, coalescing with the neighbours it
//! touches; tcp_ofo_queue() moves the skbs rcv_nxt reaches into the
//! receive queue), and the sender finds SACKed skbs by walking its
//! retransmission queue (tcp_sacktag_walk()). The rules built on them need
//! only which segments are in the set, which sub-ranges of a new SACK
//! block were not, and where the lowest run of the set ends; sequence
//! numbers count segments here, so a set is one bit per segment in a ring
//! of words covering [lowest segment the set may hold, highest held]: a
//! lookup or insertion is a few word operations wherever it falls (a
//! retransmission that fills a hole deep among thousands of ranges costs
//! what one at the front does), and clearing a run costs a word per 64
//! segments. Senders stay within the advertised window, so a ring stays
//! within rcv_wnd segments; it grows (doubling) if it must.

/// A set of segments above a floor (the receiver's rcv_nxt, the sender's
/// snd_una): the ring covers [floor, end); the caller passes the floor.
#[derive(Clone, Debug, Default)]
pub(crate) struct SegBits {
    /// The ring: segment `s` is bit `s % 64` of word `(s / 64) % len`;
    /// `len` is 0 or a power of two. Bits of segments not held are clear.
    words: Vec<u64>,
    /// Maximal runs of held segments (Linux's coalesced skbs, the
    /// scoreboard's SACKed ranges).
    ranges: usize,
    /// One past the highest held segment; 0 when nothing is held.
    end: u64,
}

/// Words of a new ring at least (1024 segments).
const MIN_WORDS: usize = 16;

impl SegBits {
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges == 0
    }

    /// Maximal runs of held segments.
    #[inline]
    pub(crate) fn ranges(&self) -> usize {
        self.ranges
    }

    /// One past the highest held segment (0 when nothing is held).
    #[inline]
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    #[inline]
    fn mask(&self) -> usize {
        self.words.len().wrapping_sub(1)
    }

    /// Whether segment `seq` (at or above the floor) is held.
    #[inline]
    pub(crate) fn contains(&self, seq: u64) -> bool {
        seq < self.end && self.words[(seq >> 6) as usize & self.mask()] >> (seq & 63) & 1 == 1
    }

    /// Whether any segment of `s..e` (at or above the floor) is held.
    #[inline]
    pub(crate) fn holds_any(&self, s: u64, e: u64) -> bool {
        let e = e.min(self.end);
        if s >= e {
            return false;
        }
        let mask = self.mask();
        let (ws, we) = (s >> 6, (e - 1) >> 6);
        let head = u64::MAX << (s & 63);
        let tail = u64::MAX >> (63 - ((e - 1) & 63));
        if ws == we {
            return self.words[ws as usize & mask] & head & tail != 0;
        }
        self.words[ws as usize & mask] & head != 0
            || (ws + 1..we).any(|w| self.words[w as usize & mask] != 0)
            || self.words[we as usize & mask] & tail != 0
    }

    /// Segments `s..e`, none of them held, all above `floor`, join the
    /// set: the run count grows by one less per held neighbour it joins
    /// (tcp_data_queue_ofo()'s coalescing with the skb before and after).
    #[inline]
    pub(crate) fn insert(&mut self, floor: u64, s: u64, e: u64) {
        debug_assert!(floor < s && s < e);
        self.reserve(floor, e);
        let joins = self.contains(s - 1) as usize + self.contains(e) as usize;
        self.ranges = self.ranges + 1 - joins;
        self.fill(s, e);
    }

    /// Segments `s..e` (at or above `floor`) join the set; the maximal
    /// sub-ranges that were not in it are appended to `new`, in order
    /// (tcp_sacktag_walk(): the segments a SACK block newly covers).
    pub(crate) fn insert_new(&mut self, floor: u64, s: u64, e: u64, new: &mut Vec<(u64, u64)>) {
        debug_assert!(floor <= s && s < e);
        self.reserve(floor, e);
        let first = new.len();
        let mask = self.mask();
        let mut pos = s;
        while pos < e {
            let off = pos & 63;
            let n = (64 - off).min(e - pos);
            let span = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << off };
            let mut missing = !self.words[(pos >> 6) as usize & mask] & span;
            let base = pos & !63;
            while missing != 0 {
                let a = missing.trailing_zeros() as u64;
                let run = (!(missing >> a)).trailing_zeros() as u64;
                let (rs, re) = (base + a, base + a + run);
                let joined = new.len() > first;
                match new.last_mut() {
                    Some(last) if joined && last.1 == rs => last.1 = re,
                    _ => new.push((rs, re)),
                }
                missing &= if a + run == 64 { 0 } else { u64::MAX << (a + run) };
            }
            pos += n;
        }
        for &(rs, re) in &new[first..] {
            let joins = (rs > floor && self.contains(rs - 1)) as usize + self.contains(re) as usize;
            self.ranges = self.ranges + 1 - joins;
            self.fill(rs, re);
        }
    }

    /// Segments below `floor`, at or above `from` (the last floor), leave
    /// the set; a run that reaches `floor` keeps its part above it.
    pub(crate) fn remove_below(&mut self, from: u64, floor: u64) {
        if self.ranges == 0 || floor <= from {
            return;
        }
        if floor >= self.end {
            self.clear_range(from, self.end);
            self.ranges = 0;
            self.end = 0;
            return;
        }
        // Runs that start in [from, floor): gone, but for one that goes on
        // past the floor.
        let mask = self.mask();
        let mut starts = 0usize;
        let mut prev_held = false;
        let mut pos = from;
        while pos < floor {
            let off = pos & 63;
            let n = (64 - off).min(floor - pos);
            let span = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << off };
            let w = &mut self.words[(pos >> 6) as usize & mask];
            let held = *w & span;
            let before = (held << 1) | ((prev_held as u64) << off);
            starts += (held & !before).count_ones() as usize;
            prev_held = held >> (off + n - 1) & 1 == 1;
            *w &= !span;
            pos += n;
        }
        let straddles = prev_held && self.contains(floor);
        self.ranges -= starts - straddles as usize;
    }

    /// Room in the ring for segments up to `e` above `floor`.
    #[inline]
    fn reserve(&mut self, floor: u64, e: u64) {
        let end = self.end.max(e);
        if ((end - 1) >> 6) - (floor >> 6) >= self.words.len() as u64 {
            self.grow(floor, end);
        }
        self.end = end;
    }

    /// Sets the bits of `s..e` (room reserved).
    #[inline]
    fn fill(&mut self, s: u64, e: u64) {
        self.apply(s, e, |w, bits| *w |= bits);
    }

    /// Clears the bits of `s..e`.
    fn clear_range(&mut self, s: u64, e: u64) {
        if s < e {
            self.apply(s, e, |w, bits| *w &= !bits);
        }
    }

    /// Calls `f` on each ring word `s..e` covers, with the bits of `s..e`
    /// in it (s < e).
    #[inline]
    fn apply(&mut self, s: u64, e: u64, f: impl Fn(&mut u64, u64)) {
        let mask = self.mask();
        let (ws, we) = (s >> 6, (e - 1) >> 6);
        let head = u64::MAX << (s & 63);
        let tail = u64::MAX >> (63 - ((e - 1) & 63));
        if ws == we {
            f(&mut self.words[ws as usize & mask], head & tail);
            return;
        }
        f(&mut self.words[ws as usize & mask], head);
        for w in ws + 1..we {
            f(&mut self.words[w as usize & mask], u64::MAX);
        }
        f(&mut self.words[we as usize & mask], tail);
    }

    /// tcp_ofo_queue(): if segment `rcv_nxt` is held, its run leaves the
    /// queue and the new rcv_nxt (the run's end) is returned; otherwise
    /// `rcv_nxt` itself.
    #[inline]
    pub(crate) fn take_front(&mut self, rcv_nxt: u64) -> u64 {
        if !self.contains(rcv_nxt) {
            return rcv_nxt;
        }
        let mask = self.mask();
        let mut pos = rcv_nxt;
        loop {
            let w = &mut self.words[(pos >> 6) as usize & mask];
            let off = pos & 63;
            // Held segments from `off` up: the trailing ones of the word
            // shifted down (its vacated top bits are clear, so at most
            // 64 - off).
            let n = (!(*w >> off)).trailing_zeros() as u64;
            *w &= !(if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << off });
            pos += n;
            if off + n < 64 {
                break;
            }
        }
        self.ranges -= 1;
        if self.ranges == 0 {
            self.end = 0;
        }
        pos
    }

    /// A ring wide enough for held segments up to `end` above `floor`,
    /// the held bits carried over.
    #[cold]
    fn grow(&mut self, floor: u64, end: u64) {
        let span = (((end - 1) >> 6) - (floor >> 6) + 1) as usize;
        let len = span.next_power_of_two().max(MIN_WORDS).max(2 * self.words.len());
        let mut words = vec![0u64; len];
        if self.ranges > 0 {
            let old_mask = self.mask();
            for w in (floor >> 6)..=((self.end - 1) >> 6) {
                words[w as usize & (len - 1)] = self.words[w as usize & old_mask];
            }
        }
        self.words = words;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::rng::Rng;

    /// The queue as sorted, disjoint, non-adjacent ranges (the reference
    /// the bitmap must agree with).
    #[derive(Default)]
    struct Ranges(VecDeque<(u64, u64)>);

    impl Ranges {
        fn contains(&self, seq: u64) -> bool {
            self.0.iter().any(|&(s, e)| s <= seq && seq < e)
        }
        fn insert(&mut self, s: u64, e: u64) {
            let mut r = (s, e);
            self.0.retain(|&(os, oe)| {
                let touches = os <= r.1 && r.0 <= oe;
                if touches {
                    r = (r.0.min(os), r.1.max(oe));
                }
                !touches
            });
            let i = self.0.partition_point(|&(os, _)| os < r.0);
            self.0.insert(i, r);
        }
        fn take_front(&mut self, rcv_nxt: u64) -> u64 {
            match self.0.front() {
                Some(&(s, e)) if s == rcv_nxt => {
                    self.0.pop_front();
                    e
                }
                _ => rcv_nxt,
            }
        }
    }

    fn below(rng: &mut Rng, n: u64) -> u64 {
        rng.next_u64() % n
    }

    #[test]
    fn a_segment_joining_two_runs_merges_them_into_one() {
        // tcp_data_queue_ofo(): the new skb coalesces with the one before
        // it and the ones after it that it now touches.
        let mut q = SegBits::default();
        q.insert(0, 2, 3);
        q.insert(0, 4, 6);
        assert_eq!(q.ranges(), 2);
        q.insert(0, 3, 4);
        assert_eq!(q.ranges(), 1);
        assert!((2..6).all(|s| q.contains(s)) && !q.contains(1) && !q.contains(6));
        assert_eq!(q.take_front(1), 1, "rcv_nxt 1 is not held: nothing moves");
        assert_eq!(q.take_front(2), 6);
        assert!(q.is_empty() && !q.contains(2) && q.end() == 0);
    }

    #[test]
    fn the_ring_grows_past_its_width_and_keeps_what_it_holds() {
        let mut q = SegBits::default();
        q.insert(100, 130, 131);
        q.insert(100, 200, 264);
        // Far above the first ring's 1024 segments, and across a word edge.
        q.insert(100, 5_000, 5_070);
        assert_eq!(q.ranges(), 3);
        assert!(q.contains(130) && q.contains(263) && q.contains(5_069) && !q.contains(5_070));
        assert_eq!(q.end(), 5_070);
        assert_eq!(q.take_front(130), 131);
        assert_eq!(q.take_front(200), 264);
        assert_eq!(q.take_front(5_000), 5_070);
        assert!(q.is_empty());
    }

    #[test]
    fn bitmap_queue_agrees_with_sorted_ranges_under_random_arrivals() {
        // Random arrivals of single segments and runs, in and out of
        // order, over a window that slides far past the ring's width:
        // every lookup, run count and hand-over to rcv_nxt is the
        // reference's.
        let mut rng = Rng::new(7, 0x0F0);
        for _case in 0..40 {
            let (mut q, mut r) = (SegBits::default(), Ranges::default());
            let mut rcv_nxt = 0u64;
            let window = 64 + below(&mut rng, 3_000);
            for _step in 0..3_000 {
                let s = rcv_nxt + below(&mut rng, window);
                let long = below(&mut rng, 4) == 0;
                let e = (s + 1 + below(&mut rng, if long { 150 } else { 2 })).min(rcv_nxt + window);
                if s == rcv_nxt {
                    // In order: rcv_nxt passes what is not held, then
                    // takes the run it reaches.
                    let mut n = s;
                    while n < e && !r.contains(n) {
                        n += 1;
                    }
                    rcv_nxt = r.take_front(n);
                    assert_eq!(q.take_front(n), rcv_nxt);
                } else {
                    let any = (s..e).any(|seg| r.contains(seg));
                    assert_eq!(q.holds_any(s, e), any, "holds_any({s}, {e})");
                    for seg in s..e {
                        assert_eq!(q.contains(seg), r.contains(seg), "segment {seg}");
                        if !r.contains(seg) {
                            q.insert(rcv_nxt, seg, seg + 1);
                            r.insert(seg, seg + 1);
                        }
                    }
                }
                assert_eq!(q.ranges(), r.0.len());
                assert_eq!(q.end(), r.0.back().map_or(0, |b| b.1));
                for probe in rcv_nxt..rcv_nxt + 70 {
                    assert_eq!(q.contains(probe), r.contains(probe), "probe {probe}");
                }
            }
        }
    }

    #[test]
    fn a_sack_block_yields_the_sub_ranges_it_newly_covers_and_trimming_keeps_the_count() {
        // tcp_sacktag_walk(): only segments not yet SACKed are tagged; the
        // cumulative ACK drops what lies below snd_una (the scoreboard's
        // sorted SACKed ranges are the reference).
        let mut rng = Rng::new(13, 0x0F2);
        for _case in 0..40 {
            let (mut q, mut r) = (SegBits::default(), Ranges::default());
            let (mut una, mut nxt) = (0u64, 0u64);
            let mut new = Vec::new();
            for _step in 0..2_000 {
                nxt += below(&mut rng, 200);
                if below(&mut rng, 3) == 0 {
                    // A cumulative ACK: the set keeps only what is above.
                    let to = (una + below(&mut rng, 400)).min(nxt);
                    q.remove_below(una, to);
                    r.0.retain(|&(_, e)| e > to);
                    if let Some(f) = r.0.front_mut() {
                        f.0 = f.0.max(to);
                    }
                    una = to;
                } else if nxt > una {
                    let s = una + below(&mut rng, nxt - una);
                    let long = below(&mut rng, 5) == 0;
                    let e = (s + 1 + below(&mut rng, if long { 3_000 } else { 70 })).min(nxt);
                    let want: Vec<(u64, u64)> = {
                        let mut v: Vec<(u64, u64)> = Vec::new();
                        for seg in s..e {
                            if !r.contains(seg) {
                                match v.last_mut() {
                                    Some(l) if l.1 == seg => l.1 = seg + 1,
                                    _ => v.push((seg, seg + 1)),
                                }
                            }
                        }
                        v
                    };
                    new.clear();
                    q.insert_new(una, s, e, &mut new);
                    assert_eq!(new, want, "block {s}..{e}");
                    r.insert(s, e);
                }
                assert_eq!(q.ranges(), r.0.len());
                assert_eq!(q.end(), r.0.back().map_or(0, |b| b.1));
                for probe in una..(una + 300).min(nxt) {
                    assert_eq!(q.contains(probe), r.contains(probe), "probe {probe}");
                }
            }
        }
    }

    #[test]
    fn a_run_inserted_whole_is_the_runs_of_its_segments() {
        // A GRO super-packet queued out of order (one skb in Linux) holds
        // the same segments and joins the same neighbours as its segments
        // queued one by one.
        let mut rng = Rng::new(11, 0x0F1);
        for _case in 0..200 {
            let (mut whole, mut each) = (SegBits::default(), SegBits::default());
            let mut top = 1u64;
            for _ in 0..50 {
                let s = top + below(&mut rng, 3);
                let e = s + 1 + below(&mut rng, 100);
                whole.insert(0, s, e);
                for seg in s..e {
                    each.insert(0, seg, seg + 1);
                }
                top = e;
                assert_eq!((whole.ranges(), whole.end()), (each.ranges(), each.end()));
                assert!((0..top + 2).all(|seg| whole.contains(seg) == each.contains(seg)));
            }
        }
    }
}
