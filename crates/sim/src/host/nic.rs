//! A host's NIC ceiling (`nic_rate`, issue P1.2): the total rate its
//! line, PCIe slot or memory lets all its streams send, and TCP Small
//! Queues, which keeps each socket's share of that queue small.
//!
//! The host's packets leave its NIC one after another at `nic_rate`
//! ([`Nic::send`]): a packet handed down at `t` leaves at
//! `max(t, free) + size / rate`, and enters the path then. TSQ
//! (tcp_small_queue_check()) stops a socket from handing down more once
//! its bytes still queued below TCP (sk_wmem_alloc: in the qdisc and the
//! NIC) exceed
//!
//!   limit = max(2 · packet truesize, sk_pacing_rate >> sk_pacing_shift)
//!
//! (sk_pacing_shift = 10: about 1 ms at the pacing rate), capped by
//! net.ipv4.tcp_limit_output_bytes when the socket is not paced; the
//! socket resumes when the NIC completes one of its packets (tcp_wfree(),
//! the TSQ handler). So a NIC slower than the path queues about a
//! millisecond per stream, drops nothing, and leaves the streams short of
//! their cwnd (not cwnd-limited, so loss-based windows stop growing).

use std::collections::VecDeque;

use crate::tcp::SmallQueueRoom;
use crate::units::{Bytes, Rate, Time};

/// net.ipv4.tcp_limit_output_bytes, Linux 6.x's default (4 MiB;
/// Documentation/networking/ip-sysctl.rst).
pub const TCP_LIMIT_OUTPUT_BYTES: u64 = 4 << 20;
/// sk_pacing_shift's default (sk_pacing_shift_update: 10, ~1 ms).
pub const SK_PACING_SHIFT: u32 = 10;

/// One host's NIC: the instant it finishes what it was handed.
#[derive(Clone, Debug)]
pub struct Nic {
    rate: Rate,
    free: Time,
}

impl Nic {
    pub fn new(rate: Rate) -> Nic {
        Nic { rate, free: Time::ZERO }
    }

    /// A packet of `frame_bytes` on the wire handed down at `now`: when it
    /// leaves the NIC.
    #[inline]
    pub fn send(&mut self, now: Time, frame_bytes: u32) -> Time {
        self.free = self.free.max(now) + self.rate.transmit_time(Bytes(frame_bytes as u64));
        self.free
    }

    /// When the NIC has sent everything handed to it.
    #[inline]
    pub fn free_at(&self) -> Time {
        self.free
    }
}

/// One socket's bytes below TCP (TSQ's sk_wmem_alloc): what it handed the
/// NIC and when each leaves.
#[derive(Clone, Debug, Default)]
pub struct SmallQueue {
    queued: VecDeque<(Time, u32)>,
    bytes: u64,
    /// The largest packet handed down (TSQ's 2 · truesize floor).
    largest_bytes: u32,
}

impl SmallQueue {
    /// `bytes` handed down, leaving the NIC at `departure`.
    #[inline]
    pub fn push(&mut self, departure: Time, bytes: u32) {
        self.queued.push_back((departure, bytes));
        self.bytes += bytes as u64;
        self.largest_bytes = self.largest_bytes.max(bytes);
    }

    /// tcp_small_queue_check() at `now` for a socket with this pacing rate
    /// (`paced`: sk_pacing_status is not SK_PACING_NONE) sending packets
    /// of `tso` segments of `frame_bytes`: how many segments it may hand
    /// down before the check stops it (it runs before each packet, so the
    /// last one may overshoot the limit), or, over the limit, the instant
    /// its next packet leaves the NIC, when the TSQ handler lets it try
    /// again.
    pub fn room(&mut self, now: Time, pacing_rate: Rate, paced: bool, tso: u32, frame_bytes: u32) -> SmallQueueRoom {
        while let Some(&(at, n)) = self.queued.front() {
            if at > now {
                break;
            }
            self.queued.pop_front();
            self.bytes -= n as u64;
        }
        let by_rate = (pacing_rate.bps() / 8) >> SK_PACING_SHIFT;
        let mut limit = (2 * self.largest_bytes as u64).max(by_rate);
        if !paced {
            limit = limit.min(TCP_LIMIT_OUTPUT_BYTES);
        }
        if self.bytes > limit {
            return SmallQueueRoom::Wait(self.queued.front().map_or(now, |&(at, _)| at));
        }
        let packet_bytes = tso.max(1) as u64 * frame_bytes.max(1) as u64;
        let packets = (limit - self.bytes) / packet_bytes + 1;
        SmallQueueRoom::Segments((packets * tso.max(1) as u64).min(u32::MAX as u64) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nic_serializes_at_its_rate() {
        let mut nic = Nic::new(Rate::from_gbps(10));
        // 1250 bytes at 10 Gbit/s: 1 µs each, back to back.
        assert_eq!(nic.send(Time::ZERO, 1250), Time::from_micros(1));
        assert_eq!(nic.send(Time::ZERO, 1250), Time::from_micros(2));
        assert_eq!(nic.send(Time::from_micros(10), 1250), Time::from_micros(11));
    }

    #[test]
    fn tsq_holds_about_a_millisecond_at_the_pacing_rate() {
        let mut q = SmallQueue::default();
        let rate = Rate::from_gbps(8); // 1 GB/s: a limit of ~976 KB
        // 64 KB packets, 1 µs apart in the NIC's future.
        let room = q.room(Time::ZERO, rate, false, 40, 1600);
        assert_eq!(room, SmallQueueRoom::Segments((976_562 / 64_000 + 1) * 40));
        let mut t = Time::ZERO;
        let mut sent = 0u64;
        while let SmallQueueRoom::Segments(_) = q.room(Time::ZERO, rate, false, 40, 1600) {
            t += Time::from_micros(64);
            q.push(t, 64_000);
            sent += 64_000;
        }
        assert!((976_562..976_562 + 64_000).contains(&sent), "{sent} bytes queued before TSQ stopped");
        // The socket may send again once its first packet has left.
        assert_eq!(q.room(Time::ZERO, rate, false, 40, 1600), SmallQueueRoom::Wait(Time::from_micros(64)));
        assert!(matches!(q.room(Time::from_micros(64), rate, false, 40, 1600), SmallQueueRoom::Segments(_)));
    }

    #[test]
    fn tsq_floor_is_two_packets_and_unpaced_sockets_are_capped() {
        let slow = Rate::from_mbps(1);
        let mut q = SmallQueue::default();
        q.push(Time::from_millis(1), 64_000);
        q.push(Time::from_millis(2), 64_000);
        // A slow socket may still queue two packets.
        assert!(matches!(q.room(Time::ZERO, slow, true, 40, 1600), SmallQueueRoom::Segments(40)));
        q.push(Time::from_millis(3), 64_000);
        assert!(matches!(q.room(Time::ZERO, slow, true, 40, 1600), SmallQueueRoom::Wait(_)));
        // An unpaced socket at 100 Gbit/s is capped by tcp_limit_output_bytes.
        let mut big = SmallQueue::default();
        for k in 0..80 {
            big.push(Time::from_millis(1 + k), 64_000);
        }
        let fast = Rate::from_gbps(100);
        assert!(matches!(big.room(Time::ZERO, fast, false, 40, 1600), SmallQueueRoom::Wait(_)), "5.1 MB over the 4 MiB cap");
        assert!(matches!(big.room(Time::ZERO, fast, true, 40, 1600), SmallQueueRoom::Segments(_)), "paced: ~12 MB by rate");
    }
}
