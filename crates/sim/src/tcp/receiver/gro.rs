//! GRO at the receiving host: back-to-back segments of one connection are
//! coalesced into one super-packet before TCP sees them, so TCP ACKs once
//! per super-packet rather than every second segment.
//!
//! Linux: the driver's NAPI poll hands each received frame to
//! napi_gro_receive(); dev_gro_receive() → inet_gro_receive() →
//! tcp_gro_receive() (net/ipv4/tcp_offload.c) merges it into the held skb
//! of the same flow when its sequence number follows that skb's end and
//! nothing sets `flush`: a sequence gap, a differing IP TOS (a CE mark;
//! inet_gro_receive compares `iph->tos`), CWR, or a super-packet that
//! would reach gro_max_size (skb_gro_receive: `p->len + len >=
//! gro_max_size` → -E2BIG; GRO_LEGACY_MAX_SIZE = 65536). Held packets are
//! flushed to the stack at the end of the poll (napi_complete_done →
//! gro_flush), and one poll takes at most its budget (NAPI_POLL_WEIGHT =
//! 64 frames). tcp_rcv_established() then takes the super-packet as one
//! skb of n·MSS bytes (tcp_measure_rcv_mss uses its gso_size, so rcv_mss
//! stays one MSS), and __tcp_ack_snd_check() sends an ACK at once because
//! "more than one full frame" arrived (`rcv_nxt - rcv_wup > rcv_mss`).
//!
//! The model (engine.rs `Net::admit_burst`): a GRO unit is a stretch of a
//! TSO burst that the bottleneck admitted whole and that no random loss
//! split (a lost segment is a sequence gap, which flushes), at most
//! [`gro_max_segs`] segments, delivered when its last segment arrives. It
//! assumes the receiver's NAPI poll sees the whole back-to-back stretch,
//! which holds when frames arrive faster than a poll per frame (the
//! multi-Gbit/s regime; at ~1 Gbit/s interrupt moderation decides how many
//! a poll finds). A unit never spans two TSO bursts (Linux may merge two
//! that arrive back to back; the model ACKs a little more often), and runs
//! that carry ECN or queue in fq_codel go segment by segment, without GRO.
//! GRO is a host option: on by default on a NIC (NETIF_F_GRO is one of
//! NETIF_F_SOFT_FEATURES, set by register_netdevice()). The kernel
//! backend's veth receiver has none (veth_xmit() hands frames to
//! netif_rx() unless XDP or GRO was asked for, veth_gro_requested()); for a
//! GRO receiver its delay line carries each TSO packet as one unit instead
//! (crates/linkem/src/units.rs), delivered at its last segment's departure.

use crate::units::Time;

use super::{Receiver, RxAction};

/// GRO_LEGACY_MAX_SIZE: the largest super-packet (bytes, IP headers of the
/// first frame included).
pub const GRO_MAX_SIZE: u64 = 65536;
/// NAPI_POLL_WEIGHT: frames one NAPI poll takes at most.
pub const NAPI_POLL_WEIGHT: u32 = 64;

/// Segments of `mss` payload (IP packets of `ip_len` bytes) GRO merges at
/// most: the first packet whole plus further payloads while the total
/// stays below GRO_MAX_SIZE, and no more than one poll's budget.
pub fn gro_max_segs(mss: u32, ip_len: u32) -> u32 {
    let room = GRO_MAX_SIZE.saturating_sub(1).saturating_sub(ip_len as u64);
    let segs = 1 + room / mss.max(1) as u64;
    segs.min(NAPI_POLL_WEIGHT as u64) as u32
}

impl Receiver {
    /// Whether a super-packet `seq..seq + n` holds only data not yet
    /// received, so `on_gro_segment` takes it as one skb. One that repeats
    /// received data (a spurious retransmission: Linux trims it and sends
    /// a D-SACK, tcp_data_queue() / tcp_data_queue_ofo()) is handed to the
    /// receiver segment by segment instead (`on_segment`, one D-SACK per
    /// duplicate segment); retransmissions here follow losses, so it is
    /// rare.
    #[inline]
    pub(crate) fn gro_takes_whole(&self, seq: u64, n: u32) -> bool {
        seq >= self.rcv_nxt && !self.ofo.holds_any(seq, seq + n as u64)
    }

    /// A GRO super-packet of `n` segments `seq..seq + n`, none received
    /// before and Not-ECT (`gro_takes_whole`), arrived at `now`: new data
    /// of a TSO burst, or retransmissions, which GRO merges as well when
    /// they arrive back to back (tcp_gro_receive checks only that each
    /// segment follows the held one and carries the same options).
    /// tcp_rcv_established() for one skb,
    /// then one ACK decision (__tcp_ack_snd_check).
    /// Its segments left the sender together, so they carry one TSval
    /// (`tsval`), as tcp_gro_receive() merges only segments whose options
    /// match.
    pub(crate) fn on_gro_segment(&mut self, seq: u64, n: u32, now: Time, tsval: u32) -> RxAction {
        let end = seq + n as u64;
        debug_assert!(self.gro_takes_whole(seq, n));
        self.note_arrival(now);
        self.replace_ts_recent(seq, tsval);
        let mut ack_now = false;
        if seq == self.rcv_nxt {
            self.rcv_nxt = end;
            if !self.ofo.is_empty() {
                // tcp_ofo_queue(): the run rcv_nxt reaches joins it.
                self.rcv_nxt = self.ofo.take_front(self.rcv_nxt);
                // tcp_data_queue(): ICSK_ACK_NOW when the gap is filled.
                ack_now |= self.ofo.is_empty();
            }
        } else {
            // tcp_data_queue_ofo(): queued above rcv_nxt, above everything
            // received (new data) or into a hole (retransmissions),
            // coalescing with the runs it touches.
            self.ofo.insert(self.rcv_nxt, seq, end);
            if let Some(flushed) = self.sack_new_ofo(seq, end) {
                return self.ack_snd_check_after_flush(now, ack_now, flushed);
            }
        }
        self.sack_remove();
        self.ack_snd_check(now, ack_now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::ecn::SegEcn;

    /// A receiver that has taken segments 0..20 one by one: past the
    /// quick-ACK start (16 segments ACKed one by one).
    fn receiver_past_quickack() -> Receiver {
        let mut r = Receiver::new(1 << 30, 1448, Time::from_millis(300));
        for s in 0..20 {
            r.on_data(s, Time(s), SegEcn::NOT_ECT);
        }
        r
    }

    #[test]
    fn gro_merges_up_to_64kb_of_segments_and_one_napi_budget() {
        // 1500 + 44 · 1448 = 65212 < 65536; a 46th segment would not fit.
        assert_eq!(gro_max_segs(1448, 1500), 45);
        // MTU 9000: 9000 + 6 · 8948 = 62688.
        assert_eq!(gro_max_segs(8948, 9000), 7);
        // Small segments: the poll's budget of 64 frames binds first.
        assert_eq!(gro_max_segs(100, 152), NAPI_POLL_WEIGHT);
    }

    #[test]
    fn a_gro_super_packet_in_order_is_acked_once_at_once() {
        let mut r = receiver_past_quickack();
        let before = r.acks_sent;
        match r.on_gro_segment(20, 45, Time(100), 0) {
            RxAction::AckNow(a) => assert_eq!((a.ack, a.nsacks), (65, 0)),
            other => panic!("expected one immediate ACK, got {other:?}"),
        }
        assert_eq!(r.acks_sent, before + 1);
    }

    #[test]
    fn a_gro_super_packet_above_a_hole_is_one_sack_block() {
        let mut r = receiver_past_quickack();
        // Segment 20 was lost: 21..66 arrive as one super-packet.
        match r.on_gro_segment(21, 45, Time(100), 0) {
            RxAction::AckNow(a) => assert_eq!((a.ack, a.sack_blocks()), (20, &[(21, 66)][..])),
            other => panic!("expected an immediate SACK, got {other:?}"),
        }
        // The next super-packet extends the block; the retransmission of
        // 20 then fills the hole and is acked at once.
        r.on_gro_segment(66, 45, Time(200), 0);
        match r.on_data(20, Time(300), SegEcn::NOT_ECT) {
            RxAction::AckNow(a) => assert_eq!((a.ack, a.nsacks), (111, 0)),
            other => panic!("expected the hole's ACK, got {other:?}"),
        }
    }

    #[test]
    fn retransmissions_merged_by_gro_fill_a_deep_hole_as_one_skb() {
        let mut r = receiver_past_quickack();
        // 20..30 and 40..50 were tail-dropped; 30..40 and 50..95 arrived.
        r.on_gro_segment(30, 10, Time(100), 0);
        r.on_gro_segment(50, 45, Time(110), 0);
        // The retransmission of 40..50, one TSO packet merged whole, fills
        // the upper hole: one run 30..95 (tcp_data_queue_ofo coalescing)
        // and one ACK that reports it first.
        assert!(r.gro_takes_whole(40, 10));
        let before = r.acks_sent;
        match r.on_gro_segment(40, 10, Time(200), 0) {
            RxAction::AckNow(a) => assert_eq!((a.ack, a.sack_blocks()), (20, &[(30, 95)][..])),
            other => panic!("expected an immediate SACK, got {other:?}"),
        }
        assert_eq!(r.acks_sent, before + 1);
        assert_eq!(r.ofo_ranges(), 1);
        // Then 20..30 closes the gap at rcv_nxt: everything is delivered.
        match r.on_gro_segment(20, 10, Time(210), 0) {
            RxAction::AckNow(a) => assert_eq!((a.ack, a.nsacks), (95, 0)),
            other => panic!("expected the filled hole's ACK, got {other:?}"),
        }
    }

    #[test]
    fn a_super_packet_repeating_received_data_is_not_taken_whole() {
        let mut r = receiver_past_quickack();
        r.on_gro_segment(30, 10, Time(100), 0);
        // Below rcv_nxt, or overlapping a queued run: Linux trims it and
        // D-SACKs the duplicate part; the engine hands it over per segment.
        assert!(!r.gro_takes_whole(15, 10));
        assert!(!r.gro_takes_whole(25, 6));
        assert!(!r.gro_takes_whole(39, 3));
        assert!(r.gro_takes_whole(20, 10));
        assert!(r.gro_takes_whole(40, 64));
    }
}
