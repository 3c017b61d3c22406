//! The bottleneck after the delay line: the simulator's own
//! [`fatpipe_sim::path::Bottleneck`] (a FIFO of fixed rate with a drop-tail
//! byte buffer, departure computed at arrival, an empty queue always
//! accepts a packet), charged by [`fatpipe_sim::wire::frame_bytes`] (IP
//! length + 14-byte Ethernet header, as tbf counts skb->len on a veth). So a
//! path rate and buffer mean the same on the kernel backend's delay line as
//! in the simulator. Its discipline is the simulator's too: with
//! [`Aqm::CeThreshold`] an ECN-capable packet is marked CE when the
//! instantaneous queue it joins exceeds K (`Bottleneck::offer`). This module
//! only converts linkem's clock (CLOCK_MONOTONIC ns) and arguments at the
//! boundary.

use fatpipe_sim::path::{Aqm, Bottleneck};
use fatpipe_sim::units::{Bytes, Rate, Time};
use fatpipe_sim::wire::frame_bytes;

/// The bottleneck of one queue direction: `rate_bps` (rounded to whole bits
/// per second), `buffer_bytes` of frames, discipline `aqm`.
pub fn bottleneck(rate_bps: f64, buffer_bytes: u64, aqm: Aqm) -> Bottleneck {
    Bottleneck::with_aqm(Rate::from_bps(rate_bps.round() as u64), Bytes(buffer_bytes), aqm)
}

/// What the bottleneck did with an accepted packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    /// When its last bit leaves (CLOCK_MONOTONIC ns).
    pub depart_ns: u64,
    /// Wire bytes charged (frame_bytes).
    pub frame_bytes: u64,
    /// The discipline marked it CE.
    pub ce: bool,
}

/// Offers an IP packet of `ip_len` bytes to `b` at `enqueue_ns`, ECN-capable
/// (`ect`) or not: its departure, the bytes charged and whether it is to be
/// marked CE, or `None` on a tail drop.
pub fn admit(b: &mut Bottleneck, enqueue_ns: u64, ip_len: u32, ect: bool) -> Option<Admission> {
    let frame = frame_bytes(ip_len);
    b.offer(Time::from_nanos(enqueue_ns), frame, ect).map(|a| Admission {
        depart_ns: a.departure.as_nanos(),
        frame_bytes: frame as u64,
        ce: a.ce,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fatpipe_sim::path::CeThreshold;

    const IP_LEN: u32 = 1500; // a 1514-byte frame

    fn bottleneck(rate_bps: f64, buffer_bytes: u64) -> Bottleneck {
        super::bottleneck(rate_bps, buffer_bytes, Aqm::DropTail)
    }

    /// (departure, frame bytes) of a non-ECT packet, as before marking existed.
    fn admit(b: &mut Bottleneck, enqueue_ns: u64, ip_len: u32) -> Option<(u64, u64)> {
        super::admit(b, enqueue_ns, ip_len, false).map(|a| (a.depart_ns, a.frame_bytes))
    }

    #[test]
    fn back_to_back_packets_leave_at_the_rate() {
        let mut b = bottleneck(1e9, 1_000_000);
        assert_eq!(admit(&mut b, 0, IP_LEN), Some((12_112, 1514)));
        assert_eq!(admit(&mut b, 0, IP_LEN), Some((24_224, 1514)));
    }

    #[test]
    fn idle_link_sends_immediately_after_serialization() {
        let mut b = bottleneck(1e9, 1_000_000);
        admit(&mut b, 0, IP_LEN);
        assert_eq!(admit(&mut b, 1_000_000, IP_LEN).map(|d| d.0), Some(1_012_112));
    }

    #[test]
    fn tail_drop_when_buffer_full() {
        let mut b = bottleneck(1e9, 3 * 1514);
        assert!(admit(&mut b, 0, IP_LEN).is_some());
        assert!(admit(&mut b, 0, IP_LEN).is_some());
        assert!(admit(&mut b, 0, IP_LEN).is_some());
        assert!(admit(&mut b, 0, IP_LEN).is_none());
        assert_eq!(b.drops, 1);
        // Once the first packet has left (12 112 ns) there is room for one more.
        assert!(admit(&mut b, 12_200, IP_LEN).is_some());
    }

    #[test]
    fn an_empty_queue_accepts_a_packet_larger_than_the_buffer() {
        let mut b = bottleneck(1e9, 1000);
        assert!(admit(&mut b, 0, IP_LEN).is_some());
        assert!(admit(&mut b, 0, IP_LEN).is_none());
    }

    #[test]
    fn long_run_rate_is_never_above_the_configured_rate_and_within_a_nanosecond_per_packet() {
        // Serialization times are whole nanoseconds rounded up (1211.2 ns ->
        // 1212 ns at 10 Gbit/s), as in the simulator: the link is never
        // faster than configured.
        let mut b = bottleneck(10e9, u64::MAX);
        let n = 1_000_000u64;
        let mut last = 0;
        for _ in 0..n {
            last = admit(&mut b, 0, IP_LEN).unwrap().0;
        }
        let exact = n as f64 * 1514.0 * 8.0 / 10.0; // ns
        assert!(last as f64 >= exact);
        assert!((last as f64) < exact + n as f64);
    }

    fn ce_path(k: CeThreshold, buffer_bytes: u64) -> Bottleneck {
        super::bottleneck(100e6, buffer_bytes, Aqm::CeThreshold(k))
    }

    /// Offers `n` back-to-back 1500-byte packets at t = 0: which were marked
    /// (None for a tail drop).
    fn burst(b: &mut Bottleneck, n: usize, ect: bool) -> Vec<Option<bool>> {
        (0..n).map(|_| super::admit(b, 0, IP_LEN, ect).map(|a| a.ce)).collect()
    }

    #[test]
    fn ce_threshold_in_packets_marks_ect_packets_joining_more_than_k_queued() {
        // K = 20: arrival i (from 0) finds i packets queued, the one being
        // sent included (the simulator's rule); i > 20 is marked.
        let mut b = ce_path(CeThreshold::Packets(20), 1_000_000);
        let marks = burst(&mut b, 23, true);
        assert!(marks[..21].iter().all(|&m| m == Some(false)));
        assert_eq!(&marks[21..], &[Some(true), Some(true)]);
        assert_eq!(b.ce_marks, 2);
    }

    #[test]
    fn ce_threshold_in_bytes_and_time_use_frames_and_the_rate() {
        // 100 Mbit/s: a 1514-byte frame takes 121.12 us.
        let mut b = ce_path(CeThreshold::Bytes(3 * 1514), 1_000_000);
        // Bytes found: 0, 1514, 3028, 4542 (= K, not above), 6056.
        assert_eq!(burst(&mut b, 5, true), [Some(false), Some(false), Some(false), Some(false), Some(true)]);
        let mut b = ce_path(CeThreshold::Delay(Time::from_micros(300)), 1_000_000);
        // Delay found: 0, 121, 242, 363 us.
        assert_eq!(burst(&mut b, 4, true), [Some(false), Some(false), Some(false), Some(true)]);
    }

    #[test]
    fn ce_threshold_never_marks_non_ect_packets_which_only_overflow_drops() {
        let mut b = ce_path(CeThreshold::Packets(0), 3 * 1514);
        assert_eq!(burst(&mut b, 4, false), [Some(false), Some(false), Some(false), None]);
        assert_eq!((b.ce_marks, b.drops), (0, 1));
    }

    #[test]
    fn marking_queues_still_tail_drop_ect_packets_when_the_buffer_is_full() {
        let mut b = ce_path(CeThreshold::Packets(1), 3 * 1514);
        assert_eq!(burst(&mut b, 4, true), [Some(false), Some(false), Some(true), None]);
        assert_eq!((b.ce_marks, b.drops), (1, 1));
    }
}
