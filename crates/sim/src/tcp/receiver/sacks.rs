//! The SACK blocks the receiver remembers (tp->selective_acks, at most
//! TCP_NUM_SACKS), most recently changed first, in a fixed array: the
//! list is a handful of blocks that tcp_sack_new_ofo_skb() and
//! tcp_sack_remove() shift, grow and drop on every out-of-order arrival,
//! so it lives inline in the receiver (as in struct tcp_sock) rather than
//! in a ring on the heap.

use std::ops::{Index, IndexMut};

use super::NUM_SACKS;

/// SACK blocks [start, end), most recently changed first.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SackList {
    /// One slot more than NUM_SACKS: a new block goes in front before the
    /// oldest is forgotten (`truncate`).
    blocks: [(u64, u64); NUM_SACKS + 1],
    len: usize,
}

impl SackList {
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len]
    }

    #[inline]
    pub(super) fn iter(&self) -> std::slice::Iter<'_, (u64, u64)> {
        self.as_slice().iter()
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&(u64, u64)> {
        self.as_slice().first()
    }

    /// Removes and returns block `i` (< len).
    #[inline]
    pub(super) fn remove(&mut self, i: usize) -> (u64, u64) {
        let b = self.blocks[i];
        self.blocks.copy_within(i + 1..self.len, i);
        self.len -= 1;
        b
    }

    /// Keeps the blocks `keep` accepts, in order.
    #[inline]
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&(u64, u64)) -> bool) {
        let mut n = 0;
        for i in 0..self.len {
            let b = self.blocks[i];
            if keep(&b) {
                self.blocks[n] = b;
                n += 1;
            }
        }
        self.len = n;
    }

    /// Puts `b` in front (room for one more than NUM_SACKS; `truncate`
    /// forgets the oldest).
    #[inline]
    pub(super) fn push_front(&mut self, b: (u64, u64)) {
        debug_assert!(self.len <= NUM_SACKS);
        self.blocks.copy_within(0..self.len, 1);
        self.blocks[0] = b;
        self.len += 1;
    }

    #[inline]
    pub(super) fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    #[inline]
    pub(super) fn clear(&mut self) {
        self.len = 0;
    }
}

impl Index<usize> for SackList {
    type Output = (u64, u64);

    #[inline]
    fn index(&self, i: usize) -> &(u64, u64) {
        &self.as_slice()[i]
    }
}

impl IndexMut<usize> for SackList {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut (u64, u64) {
        &mut self.blocks[..self.len][i]
    }
}

impl<const N: usize> PartialEq<[(u64, u64); N]> for SackList {
    fn eq(&self, other: &[(u64, u64); N]) -> bool {
        self.as_slice() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_block_goes_in_front_and_the_oldest_past_num_sacks_is_forgotten() {
        // tcp_sack_new_ofo_skb(): "new block in front", then the list is
        // cut to TCP_NUM_SACKS.
        let mut l = SackList::default();
        for k in 0..NUM_SACKS as u64 + 1 {
            l.push_front((10 * k, 10 * k + 1));
            l.truncate(NUM_SACKS);
        }
        assert_eq!(l, [(40, 41), (30, 31), (20, 21), (10, 11)]);
        assert_eq!(l.remove(1), (30, 31));
        l.retain(|&(s, _)| s != 20);
        assert_eq!(l, [(40, 41), (10, 11)]);
        l[1].1 = 15;
        assert_eq!((l.front(), l.len()), (Some(&(40, 41)), 2));
        assert_eq!(l, [(40, 41), (10, 15)]);
        l.clear();
        assert_eq!(l.iter().count(), 0);
    }
}
