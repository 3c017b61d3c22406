//! The bottleneck after the delay line: the simulator's own
//! [`fatpipe_sim::path::Bottleneck`] (a FIFO of fixed rate with a drop-tail
//! byte buffer, departure computed at arrival, an empty queue always
//! accepts a packet), charged by [`fatpipe_sim::wire::frame_bytes`] (IP
//! length + 14-byte Ethernet header, as tbf counts skb->len on a veth). So a
//! path rate and buffer mean the same on the kernel backend's delay line as
//! in the simulator. This module only converts linkem's clock (CLOCK_MONOTONIC
//! ns) and arguments at the boundary.

use fatpipe_sim::path::Bottleneck;
use fatpipe_sim::units::{Bytes, Rate, Time};
use fatpipe_sim::wire::frame_bytes;

/// The bottleneck of one queue direction: `rate_bps` (rounded to whole bits
/// per second), `buffer_bytes` of frames.
pub fn bottleneck(rate_bps: f64, buffer_bytes: u64) -> Bottleneck {
    Bottleneck::new(Rate::from_bps(rate_bps.round() as u64), Bytes(buffer_bytes))
}

/// Offers an IP packet of `ip_len` bytes to `b` at `enqueue_ns`: its
/// departure time (ns) and the bytes charged, or `None` on a tail drop.
pub fn admit(b: &mut Bottleneck, enqueue_ns: u64, ip_len: u32) -> Option<(u64, u64)> {
    let frame = frame_bytes(ip_len);
    b.enqueue(Time::from_nanos(enqueue_ns), frame).map(|t| (t.as_nanos(), frame as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP_LEN: u32 = 1500; // a 1514-byte frame

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
}
