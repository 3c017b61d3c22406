//! The receiver's out-of-order queue: which segments above rcv_nxt are
//! held, as a bitmap of segments.
//!
//! Linux keeps out-of-order skbs in an rbtree (tp->out_of_order_queue;
//! tcp_data_queue_ofo() inserts, coalescing with the neighbours it
//! touches; tcp_ofo_queue() moves the skbs rcv_nxt reaches into the
//! receive queue). The receiver's rules need only which segments are
//! held and where the lowest held run ends, and sequence numbers count
//! segments here, so the queue is one bit per segment in a ring of words
//! covering [rcv_nxt, highest held segment]: a lookup or insertion is a
//! few word operations wherever it falls (a retransmission that fills a
//! hole deep in a queue of thousands of ranges costs what one at the front
//! does), and handing the lowest run to rcv_nxt clears its bits a word at
//! a time. The sender never sends beyond the advertised window, so the
//! ring stays within rcv_wnd segments; it grows (doubling) if it must.

/// Out-of-order segments held above rcv_nxt.
#[derive(Clone, Debug, Default)]
pub(super) struct OfoQueue {
    /// The ring: segment `s` is bit `s % 64` of word `(s / 64) % len`;
    /// `len` is 0 or a power of two. Bits of segments not held are clear.
    words: Vec<u64>,
    /// Maximal runs of held segments (the rbtree's coalesced skbs).
    ranges: usize,
    /// One past the highest held segment; 0 when nothing is held.
    end: u64,
}

/// Words of a new ring at least (1024 segments).
const MIN_WORDS: usize = 16;

impl OfoQueue {
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.ranges == 0
    }

    /// Maximal runs of held segments.
    #[inline]
    pub(super) fn ranges(&self) -> usize {
        self.ranges
    }

    /// One past the highest held segment (0 when nothing is held).
    #[inline]
    pub(super) fn end(&self) -> u64 {
        self.end
    }

    #[inline]
    fn mask(&self) -> usize {
        self.words.len().wrapping_sub(1)
    }

    /// Whether segment `seq` (at or above rcv_nxt) is held.
    #[inline]
    pub(super) fn contains(&self, seq: u64) -> bool {
        seq < self.end && self.words[(seq >> 6) as usize & self.mask()] >> (seq & 63) & 1 == 1
    }

    /// Segments `s..e`, none of them held, all above `rcv_nxt`, are queued:
    /// the run count grows by one less per held neighbour it joins
    /// (tcp_data_queue_ofo()'s coalescing with the skb before and after).
    #[inline]
    pub(super) fn insert(&mut self, rcv_nxt: u64, s: u64, e: u64) {
        debug_assert!(rcv_nxt < s && s < e);
        let end = self.end.max(e);
        if ((end - 1) >> 6) - (rcv_nxt >> 6) >= self.words.len() as u64 {
            self.grow(rcv_nxt, end);
        }
        let joins = self.contains(s - 1) as usize + self.contains(e) as usize;
        self.ranges = self.ranges + 1 - joins;
        self.end = end;
        let mask = self.mask();
        let mut pos = s;
        while pos < e {
            let off = pos & 63;
            let n = (64 - off).min(e - pos);
            let bits = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << off };
            self.words[(pos >> 6) as usize & mask] |= bits;
            pos += n;
        }
    }

    /// tcp_ofo_queue(): if segment `rcv_nxt` is held, its run leaves the
    /// queue and the new rcv_nxt (the run's end) is returned; otherwise
    /// `rcv_nxt` itself.
    #[inline]
    pub(super) fn take_front(&mut self, rcv_nxt: u64) -> u64 {
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

    /// A ring wide enough for held segments up to `end` above `rcv_nxt`,
    /// the held bits carried over.
    #[cold]
    fn grow(&mut self, rcv_nxt: u64, end: u64) {
        let span = (((end - 1) >> 6) - (rcv_nxt >> 6) + 1) as usize;
        let len = span.next_power_of_two().max(MIN_WORDS).max(2 * self.words.len());
        let mut words = vec![0u64; len];
        if self.ranges > 0 {
            let old_mask = self.mask();
            for w in (rcv_nxt >> 6)..=((self.end - 1) >> 6) {
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
        let mut q = OfoQueue::default();
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
        let mut q = OfoQueue::default();
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
            let (mut q, mut r) = (OfoQueue::default(), Ranges::default());
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
    fn a_run_inserted_whole_is_the_runs_of_its_segments() {
        // A GRO super-packet queued out of order (one skb in Linux) holds
        // the same segments and joins the same neighbours as its segments
        // queued one by one.
        let mut rng = Rng::new(11, 0x0F1);
        for _case in 0..200 {
            let (mut whole, mut each) = (OfoQueue::default(), OfoQueue::default());
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
