//! GSO units: for a GRO receiver, a sender's TSO/GSO super-packet crosses
//! the delay line as one unit unless something happens to one of its
//! segments.
//!
//! A queue in unit mode (`units_split=N`) is configured with
//! NFQA_CFG_F_GSO, so the kernel queues a GSO packet whole (up to 64 KB)
//! instead of segmenting it first. linkem decides every segment's fate at
//! once, in sequence order, with the same loss stage and bottleneck that
//! per-segment queueing uses: the n-th data segment is lost exactly when it
//! would be (common random numbers with the simulator hold), and each
//! segment is charged its own frame and departs at its own time. Then:
//!
//! * nothing happens to any segment: the packet is held whole and leaves
//!   when its last segment departs the bottleneck. The receiver takes it as
//!   one skb and ACKs once, as Linux's GRO hands a coalesced super-packet to
//!   TCP after its last segment arrived (tcp_gro_receive; the simulator's
//!   GRO model, fatpipe_sim `tcp/receiver/gro.rs`, delivers a unit at its
//!   last segment's arrival too);
//! * a segment is lost, tail-dropped or to be CE-marked: the packet goes to
//!   the split queue N with an NF_QUEUE verdict; N has no F_GSO, so the
//!   kernel segments it there (nfqnl_enqueue_packet → skb_gso_segment), and
//!   linkem applies the decided fates segment by segment ([`SplitFates`]).
//!
//! The segment size of a GSO packet (its gso_size) is not in the netlink
//! message (NFQA_SKB_INFO carries only flags); it is the flow's MSS, which
//! fatpipe knows per receiver port ([`MssMap`]). A split segment whose
//! sequence number is not the one expected is passed at once and counted
//! (`unit_mismatches`), so a wrong MSS shows in the statistics.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// What the delay line does with one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Dropped by the random loss stage.
    Lost,
    /// Tail-dropped by the bottleneck's buffer.
    QueueDrop,
    /// Leaves at `due_ns` (CLOCK_MONOTONIC), CE-marked or not.
    Pass { due_ns: u64, ce: bool },
}

/// Segments of `mss` payload bytes that a TCP payload of `payload` bytes
/// makes (skb_gso_segment cuts gso_size bytes per segment, the last one
/// shorter); at least 1.
pub fn segment_count(payload: u32, mss: u32) -> u32 {
    payload.div_ceil(mss.max(1)).max(1)
}

/// Payload bytes of segment `i` of a `payload`-byte packet cut at `mss`.
pub fn segment_payload(payload: u32, mss: u32, i: u32) -> u32 {
    payload.saturating_sub(i.saturating_mul(mss)).min(mss)
}

/// Whether a unit can leave whole: every segment passes unmarked.
pub fn whole(fates: &[Fate]) -> bool {
    fates.iter().all(|f| matches!(f, Fate::Pass { ce: false, .. }))
}

/// Whether no segment of a unit passes (each is lost or tail-dropped), so
/// the unit can be dropped whole instead of split.
pub fn none_pass(fates: &[Fate]) -> bool {
    !fates.iter().any(|f| matches!(f, Fate::Pass { .. }))
}

/// When a whole unit leaves: its last segment's departure.
pub fn unit_due(fates: &[Fate]) -> Option<u64> {
    fates.iter().rev().find_map(|f| match f {
        Fate::Pass { due_ns, .. } => Some(*due_ns),
        _ => None,
    })
}

/// The flows' segment payload size by TCP port (a data packet matches by
/// its source or destination port: the receiver's listening port of its
/// flow group), and the size for any other port.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MssMap {
    pub by_port: Vec<(u16, u32)>,
    pub default_mss: u32,
}

impl MssMap {
    pub fn mss(&self, ports: Option<(u16, u16)>) -> u32 {
        let found = ports.and_then(|(src, dst)| {
            self.by_port.iter().find(|&&(p, _)| p == dst || p == src).map(|&(_, m)| m)
        });
        found.unwrap_or(self.default_mss)
    }
}

/// One split unit: the fates of its segments, the first starting at
/// `first_seq`, each `mss` bytes of sequence space after the previous.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitUnit {
    pub first_seq: u32,
    pub mss: u32,
    pub fates: Vec<Fate>,
}

/// A unit-mode queue's split fates, shared with its split queue, which may
/// run on another thread (main.rs).
pub type SharedSplitFates = Arc<Mutex<SplitFates>>;

/// Locks `fates`; a thread that panicked holding it left whole units only
/// (push and take do not unwind halfway), so a poisoned lock is used as is.
pub fn lock(fates: &SharedSplitFates) -> MutexGuard<'_, SplitFates> {
    fates.lock().unwrap_or_else(|e| e.into_inner())
}

/// The split queue's fates, in the order its segments arrive (the units
/// were requeued in order, and the kernel queues a unit's segments in
/// sequence order).
#[derive(Debug, Default)]
pub struct SplitFates {
    units: VecDeque<(SplitUnit, usize)>,
}

impl SplitFates {
    pub fn push(&mut self, unit: SplitUnit) {
        if !unit.fates.is_empty() {
            self.units.push_back((unit, 0));
        }
    }

    /// The fate of the split queue's next segment, which starts at `seq`:
    /// None when it is not the segment the oldest unit expects next (that
    /// unit is then given up, as its segments cannot be matched any more).
    pub fn take(&mut self, seq: u32) -> Option<Fate> {
        let (unit, next) = self.units.front_mut()?;
        let expected = unit.first_seq.wrapping_add(unit.mss.wrapping_mul(*next as u32));
        if seq != expected {
            self.units.pop_front();
            return None;
        }
        let fate = unit.fates[*next];
        *next += 1;
        if *next == unit.fates.len() {
            self.units.pop_front();
        }
        Some(fate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(due_ns: u64) -> Fate {
        Fate::Pass { due_ns, ce: false }
    }

    #[test]
    fn a_gso_packet_is_cut_into_mss_segments_the_last_one_shorter() {
        // 64 KiB of payload at MSS 1448: 46 segments; 45 full ones and 376 bytes.
        assert_eq!(segment_count(65_536, 1448), 46);
        assert_eq!(segment_count(45 * 1448, 1448), 45);
        assert_eq!(segment_payload(45 * 1448 + 376, 1448, 0), 1448);
        assert_eq!(segment_payload(45 * 1448 + 376, 1448, 45), 376);
        assert_eq!(segment_payload(45 * 1448 + 376, 1448, 46), 0);
        assert_eq!(segment_count(0, 1448), 1, "a packet is at least one segment");
    }

    #[test]
    fn a_unit_leaves_whole_only_if_every_segment_passes_unmarked_at_its_last_departure() {
        assert!(whole(&[pass(1), pass(2)]));
        assert_eq!(unit_due(&[pass(1), pass(2)]), Some(2));
        assert!(!whole(&[pass(1), Fate::Lost]));
        assert!(!whole(&[pass(1), Fate::QueueDrop]));
        assert!(!whole(&[pass(1), Fate::Pass { due_ns: 2, ce: true }]));
    }

    #[test]
    fn a_unit_is_dropped_whole_only_if_no_segment_passes() {
        assert!(none_pass(&[Fate::QueueDrop, Fate::Lost, Fate::QueueDrop]));
        assert!(!none_pass(&[Fate::QueueDrop, pass(3)]));
        assert!(!none_pass(&[Fate::Pass { due_ns: 1, ce: true }, Fate::QueueDrop]), "a marked segment passes");
    }

    #[test]
    fn the_segment_size_is_the_flows_by_either_port_else_the_default() {
        let m = MssMap { by_port: vec![(5201, 1448), (5202, 8948)], default_mss: 1000 };
        assert_eq!(m.mss(Some((40000, 5202))), 8948, "data toward the receiver's port");
        assert_eq!(m.mss(Some((5201, 40000))), 1448, "an RPC server's response from its port");
        assert_eq!(m.mss(Some((1, 2))), 1000);
        assert_eq!(m.mss(None), 1000);
    }

    #[test]
    fn split_segments_take_their_units_fates_in_sequence_order() {
        let mut f = SplitFates::default();
        f.push(SplitUnit { first_seq: u32::MAX - 1447, mss: 1448, fates: vec![pass(5), Fate::Lost] });
        f.push(SplitUnit { first_seq: 7, mss: 100, fates: vec![Fate::QueueDrop] });
        assert_eq!(f.take(u32::MAX - 1447), Some(pass(5)));
        assert_eq!(f.take(0), Some(Fate::Lost), "sequence numbers wrap");
        assert_eq!(f.take(7), Some(Fate::QueueDrop));
        assert_eq!(f.take(7), None, "no unit waits");
    }

    #[test]
    fn a_segment_out_of_place_gives_up_its_unit_and_is_not_matched() {
        let mut f = SplitFates::default();
        f.push(SplitUnit { first_seq: 0, mss: 100, fates: vec![pass(1), pass(2), pass(3)] });
        f.push(SplitUnit { first_seq: 1000, mss: 100, fates: vec![pass(9)] });
        assert_eq!(f.take(0), Some(pass(1)));
        assert_eq!(f.take(150), None, "a wrong MSS shows as a mismatch");
        assert_eq!(f.take(1000), Some(pass(9)), "the next unit still matches");
    }
}
