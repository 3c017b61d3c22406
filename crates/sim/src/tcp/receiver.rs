//! The receiving TCP: cumulative ACK, SACK blocks (RFC 2018), D-SACK
//! (RFC 2883) and Linux's delayed-ACK rules (__tcp_ack_snd_check).
//!
//! Receive window: Linux with tcp_adv_win_scale = 1 advertises about half
//! of the receive buffer; we advertise a constant rmem_max / 2, rounded
//! down to whole segments (no receive-buffer autotuning ramp: the buffer is
//! assumed to have grown to rmem_max already).

use std::collections::VecDeque;

use crate::units::Time;

/// Delayed-ACK timeout (TCP_DELACK_MIN, 40 ms).
pub const DELACK: Time = Time::from_millis(40);
/// SACK blocks per ACK (3 fit next to the timestamp option).
pub const MAX_SACKS: usize = 3;
/// TCP_MAX_QUICKACKS.
pub const MAX_QUICKACKS: u32 = 16;

/// An ACK as the sender sees it. Sequence numbers count segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// Next expected segment (cumulative ACK).
    pub ack: u64,
    /// SACK blocks [start, end); the first holds the most recent arrival.
    pub sacks: [(u64, u64); MAX_SACKS],
    pub nsacks: u8,
    /// D-SACK: the ACK reports a duplicate arrival of this segment.
    pub dsack: Option<u64>,
    /// Advertised window in segments, relative to `ack`.
    pub wnd: u32,
}

impl Ack {
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sacks[..self.nsacks as usize]
    }
}

/// What the receiver wants done after a segment arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxAction {
    /// Send this ACK now.
    AckNow(Ack),
    /// Arm the delayed-ACK timer for this time (if not armed).
    Delay(Time),
    /// Nothing: the delayed-ACK timer is already armed.
    None,
}

#[derive(Clone, Debug)]
pub struct Receiver {
    /// Next expected segment.
    pub rcv_nxt: u64,
    /// Out-of-order ranges [start, end), sorted, disjoint, above rcv_nxt.
    ofo: VecDeque<(u64, u64)>,
    /// Segment most recently received out of order (first SACK block).
    last_ofo: u64,
    /// In-order segments received since the last ACK.
    unacked: u32,
    /// Delayed-ACK timer armed.
    pub delack_armed: bool,
    /// Advertised window in segments.
    pub wnd: u32,
    /// ACKs sent (statistics).
    pub acks_sent: u64,
    /// Quick-ACK budget (icsk_ack.quick): ACK every segment while > 0.
    quick: u32,
    /// Time of the last data arrival (icsk_ack.lrcvtime).
    last_rcv: Option<Time>,
    /// Idle gap after which quick-ACK mode restarts (the receiver's RTO).
    idle_gap: Time,
}

impl Receiver {
    /// `idle_gap`: the receiver's RTO (from its handshake RTT sample);
    /// data after a longer silence re-enters quick-ACK mode.
    pub fn new(rmem_bytes: u64, mss: u32, idle_gap: Time) -> Receiver {
        let wnd = ((rmem_bytes / 2) / mss.max(1) as u64).clamp(1, u32::MAX as u64) as u32;
        Receiver {
            rcv_nxt: 0,
            ofo: VecDeque::new(),
            last_ofo: 0,
            unacked: 0,
            delack_armed: false,
            wnd,
            acks_sent: 0,
            quick: 0,
            last_rcv: None,
            idle_gap,
        }
    }

    /// tcp_event_data_recv(): the first data, or data after an idle gap
    /// longer than the RTO, starts quick-ACK mode (tcp_incr_quickack:
    /// rcv_wnd / (2·MSS) ACKs, at least 2, at most 16).
    fn note_arrival(&mut self, now: Time) {
        let restart = match self.last_rcv {
            None => true,
            Some(t) => now.saturating_sub(t) > self.idle_gap,
        };
        if restart {
            let q = (self.wnd / 2).clamp(2, MAX_QUICKACKS);
            self.quick = self.quick.max(q);
        }
        self.last_rcv = Some(now);
    }

    /// Segment `seq` arrived at `now`.
    pub fn on_data(&mut self, seq: u64, now: Time) -> RxAction {
        self.note_arrival(now);
        if seq < self.rcv_nxt || self.ofo_contains(seq) {
            // Duplicate: immediate ACK with D-SACK (tcp_send_dupack).
            return RxAction::AckNow(self.make_ack(Some(seq)));
        }
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            self.unacked += 1;
            let had_ofo = !self.ofo.is_empty();
            if had_ofo && self.ofo[0].0 == self.rcv_nxt {
                self.rcv_nxt = self.ofo[0].1;
                self.ofo.pop_front();
            }
            // RFC 5681 §4.2: ACK at once when out-of-order data exists or a
            // gap was just filled; else every second full segment
            // (rcv_nxt - rcv_wup > rcv_mss); else delay.
            if had_ofo || self.unacked >= 2 || self.quick > 0 {
                return RxAction::AckNow(self.make_ack(None));
            }
            if self.delack_armed {
                return RxAction::None;
            }
            self.delack_armed = true;
            return RxAction::Delay(now + DELACK);
        }
        // Out of order: queue and ACK immediately with SACK blocks.
        self.insert_ofo(seq);
        self.last_ofo = seq;
        RxAction::AckNow(self.make_ack(None))
    }

    /// The delayed-ACK timer fired.
    pub fn on_delack_timer(&mut self) -> Option<Ack> {
        self.delack_armed = false;
        if self.unacked == 0 {
            return None;
        }
        Some(self.make_ack(None))
    }

    /// The client sends a request on this connection: a pending delayed ACK
    /// rides on it (piggybacking).
    pub fn piggyback_ack(&mut self) -> Option<Ack> {
        if self.unacked == 0 {
            return None;
        }
        self.delack_armed = false;
        Some(self.make_ack(None))
    }

    fn ofo_contains(&self, seq: u64) -> bool {
        match self.ofo.back() {
            None => return false,
            Some(b) if seq >= b.1 => return false, // new data above every range
            Some(b) if seq >= b.0 => return true,
            _ => {}
        }
        let i = self.ofo.partition_point(|r| r.1 <= seq);
        i < self.ofo.len() && self.ofo[i].0 <= seq
    }

    fn insert_ofo(&mut self, seq: u64) {
        if let Some(b) = self.ofo.back_mut() {
            if b.1 == seq {
                b.1 = seq + 1; // the common case: extends the highest range
                return;
            }
            if seq > b.1 {
                self.ofo.push_back((seq, seq + 1));
                return;
            }
        }
        let i = self.ofo.partition_point(|r| r.1 < seq);
        // Extend a range that ends at seq, or one that starts at seq + 1.
        if i < self.ofo.len() && self.ofo[i].1 == seq {
            self.ofo[i].1 = seq + 1;
            if i + 1 < self.ofo.len() && self.ofo[i + 1].0 == seq + 1 {
                self.ofo[i].1 = self.ofo[i + 1].1;
                self.ofo.remove(i + 1);
            }
        } else if i < self.ofo.len() && self.ofo[i].0 == seq + 1 {
            self.ofo[i].0 = seq;
        } else {
            self.ofo.insert(i, (seq, seq + 1));
        }
    }

    /// Builds an ACK: first SACK block holds the latest out-of-order arrival
    /// (RFC 2018 §4), then the highest other blocks.
    fn make_ack(&mut self, dsack: Option<u64>) -> Ack {
        // tcp_event_ack_sent(): sending an ACK clears the delayed-ACK timer.
        self.unacked = 0;
        self.delack_armed = false;
        self.quick = self.quick.saturating_sub(1); // tcp_dec_quickack_mode()
        self.acks_sent += 1;
        let mut ack = Ack { ack: self.rcv_nxt, dsack, wnd: self.wnd, ..Ack::default() };
        if self.ofo.is_empty() {
            return ack;
        }
        let mut n = 0;
        let last = self.ofo.len() - 1;
        let first = if self.ofo[last].0 <= self.last_ofo && self.last_ofo < self.ofo[last].1 {
            last
        } else {
            self.ofo.partition_point(|r| r.1 <= self.last_ofo)
        };
        let first = if first < self.ofo.len() && self.ofo[first].0 <= self.last_ofo {
            ack.sacks[0] = self.ofo[first];
            n = 1;
            Some(first)
        } else {
            None
        };
        for (i, r) in self.ofo.iter().enumerate().rev() {
            if n == MAX_SACKS {
                break;
            }
            if Some(i) != first {
                ack.sacks[n] = *r;
                n += 1;
            }
        }
        ack.nsacks = n as u8;
        ack
    }

    /// Out-of-order ranges held (for memory-bound checks).
    pub fn ofo_ranges(&self) -> usize {
        self.ofo.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_acks_at_start_then_delayed_ack_every_second_full_segment() {
        let mut r = Receiver::new(1 << 20, 1448, Time::from_millis(200));
        let t = Time::from_millis(1);
        for seq in 0..MAX_QUICKACKS as u64 {
            assert!(matches!(r.on_data(seq, t), RxAction::AckNow(_)), "quick ACK {seq}");
        }
        r.rcv_nxt = 0; // restart the sequence space for the rest of the test
        let t = t + Time::from_millis(1);
        assert_eq!(r.on_data(0, t), RxAction::Delay(t + DELACK));
        match r.on_data(1, t) {
            RxAction::AckNow(a) => assert_eq!(a.ack, 2),
            x => panic!("expected an ACK, got {x:?}"),
        }
        // The ACK cleared the timer: the next lone segment starts a fresh one.
        let t2 = t + Time::from_millis(5);
        assert_eq!(r.on_data(2, t2), RxAction::Delay(t2 + DELACK));
        assert!(matches!(r.on_data(4, t2), RxAction::AckNow(_))); // out of order
        assert_eq!(r.on_delack_timer(), None);
    }

    #[test]
    fn out_of_order_data_is_acked_at_once_with_the_newest_block_first() {
        let mut r = Receiver::new(1 << 20, 1448, Time::from_millis(200));
        let t = Time::ZERO;
        let _ = r.on_data(0, t);
        let _ = r.on_data(2, t);
        let a = match r.on_data(5, t) {
            RxAction::AckNow(a) => a,
            x => panic!("{x:?}"),
        };
        assert_eq!(a.ack, 1);
        assert_eq!(a.sack_blocks(), &[(5, 6), (2, 3)]);
        let a = match r.on_data(1, t) {
            RxAction::AckNow(a) => a,
            x => panic!("{x:?}"),
        };
        assert_eq!(a.ack, 3);
        let a = match r.on_data(1, t) {
            RxAction::AckNow(a) => a,
            x => panic!("{x:?}"),
        };
        assert_eq!(a.dsack, Some(1));
    }

    #[test]
    fn advertised_window_is_half_of_rmem() {
        let r = Receiver::new(6_000_000, 1448, Time::from_millis(200));
        assert_eq!(r.wnd, 3_000_000 / 1448);
    }
}

#[cfg(test)]
mod quickack_tests {
    use super::*;

    #[test]
    fn data_after_an_idle_gap_longer_than_the_rto_is_acked_at_once() {
        let mut r = Receiver::new(1 << 20, 1448, Time::from_millis(200));
        for seq in 0..40 {
            let _ = r.on_data(seq, Time::from_millis(1));
        }
        assert!(matches!(r.on_data(40, Time::from_millis(2)), RxAction::Delay(_)));
        assert!(matches!(r.on_data(41, Time::from_millis(500)), RxAction::AckNow(_)));
    }
}
