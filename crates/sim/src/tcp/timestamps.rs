//! TCP timestamps (RFC 7323) as Linux uses them by default
//! (net.ipv4.tcp_timestamps = 1): every segment carries TSval, the
//! sender's millisecond clock (tcp_time_stamp_ts(): TCP_TS_HZ = 1000 unless
//! the route enables microsecond timestamps), and every ACK echoes in TSecr
//! the receiver's `ts_recent`.
//!
//! * Receiver, tcp_replace_ts_recent(): a segment that starts at or before
//!   rcv_wup (the rcv_nxt of the last ACK sent) and passes PAWS
//!   (tcp_paws_check(): TSval not older than ts_recent) becomes ts_recent;
//!   out-of-order segments above it do not (RFC 7323 §4.3).
//! * Sender, tcp_ack_update_rtt(): when Karn's rule leaves an ACK without an
//!   RTT sample (it acks retransmitted data) and no SACK gave one, an ACK
//!   that acks new data (FLAG_ACKED) takes `now − TSecr` in whole
//!   milliseconds (at least 1) as both the RTT and the CCA's sample.
//!
//! A TSecr of 0 means "no echo" (tcp_ack_update_rtt()'s
//! `tp->rx_opt.rcv_tsecr` test): a connection without the option (the MSS
//! leaves no room for it, wire.rs) sends TSval 0. Linux adds a random
//! per-connection offset (tsoffset) so a TSval is 0 no more often than any
//! other value; here the clock starts at 1.

use crate::units::Time;

const NANOS_PER_MS: u64 = 1_000_000;

/// TSval of a segment sent at `now`: the millisecond clock, from 1.
#[inline]
pub fn tsval(now: Time) -> u32 {
    ((now.0 / NANOS_PER_MS) as u32).wrapping_add(1)
}

/// tcp_paws_check()'s order test: `tsval` is not older than `ts_recent`
/// ((s32)(tsval − ts_recent) >= 0).
#[inline]
pub fn not_older(tsval: u32, ts_recent: u32) -> bool {
    (tsval.wrapping_sub(ts_recent) as i32) >= 0
}

/// tcp_ack_update_rtt()'s timestamp sample for an ACK echoing `tsecr` at
/// `now`: whole milliseconds, 0 counted as 1; None when nothing is echoed
/// or the echo lies in the future (the kernel's `delta < INT_MAX / …` test).
#[inline]
pub fn echo_rtt(now: Time, tsecr: u32) -> Option<Time> {
    if tsecr == 0 {
        return None;
    }
    let delta = tsval(now).wrapping_sub(tsecr);
    if delta as i32 >= 0 {
        Some(Time::from_millis(delta.max(1) as u64))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsval_counts_whole_milliseconds_from_one() {
        assert_eq!(tsval(Time::ZERO), 1);
        assert_eq!(tsval(Time::from_micros(999)), 1);
        assert_eq!(tsval(Time::from_millis(20)), 21);
    }

    #[test]
    fn echo_rtt_is_whole_milliseconds_and_at_least_one() {
        let sent = tsval(Time::from_micros(10_900));
        assert_eq!(echo_rtt(Time::from_micros(31_100), sent), Some(Time::from_millis(21)));
        assert_eq!(echo_rtt(Time::from_micros(10_950), sent), Some(Time::from_millis(1)));
        assert_eq!(echo_rtt(Time::from_millis(5), 0), None);
        assert_eq!(echo_rtt(Time::from_millis(5), tsval(Time::from_millis(9))), None);
    }

    #[test]
    fn paws_order_survives_wraparound() {
        assert!(not_older(5, 5));
        assert!(not_older(2, u32::MAX - 3));
        assert!(!not_older(u32::MAX - 3, 2));
    }
}

#[cfg(test)]
mod receiver_tests {
    use super::tsval;
    use crate::tcp::receiver::{Receiver, RxAction};
    use crate::tcp::SegEcn;
    use crate::units::Time;

    fn echoed(a: RxAction) -> u32 {
        match a {
            RxAction::AckNow(a) => a.tsecr,
            x => panic!("expected an ACK, got {x:?}"),
        }
    }

    /// tcp_replace_ts_recent(): only a segment at or below rcv_wup sets
    /// ts_recent, so the ACKs of data above a hole echo the segment that
    /// last advanced the window, and the ACK of the retransmission that
    /// fills the hole echoes the retransmission.
    #[test]
    fn acks_echo_the_segment_at_rcv_wup_not_later_out_of_order_ones() {
        let mut r = Receiver::new(1 << 20, 1000, Time::from_millis(200));
        let t = Time::from_millis(1);
        assert_eq!(echoed(r.on_segment::<false>(0, t, SegEcn::NOT_ECT, 5)), 5);
        // Segment 1 is lost; 2 and 3 arrive out of order later.
        assert_eq!(echoed(r.on_segment::<false>(2, t, SegEcn::NOT_ECT, 7)), 5);
        assert_eq!(echoed(r.on_segment::<false>(3, t, SegEcn::NOT_ECT, 8)), 5);
        // The retransmission of 1 fills the hole.
        assert_eq!(echoed(r.on_segment::<false>(1, t, SegEcn::NOT_ECT, 40)), 40);
    }

    #[test]
    fn paws_keeps_an_older_tsval_from_replacing_ts_recent() {
        let mut r = Receiver::new(1 << 20, 1000, Time::from_millis(200));
        let t = Time::from_millis(1);
        assert_eq!(echoed(r.on_segment::<false>(0, t, SegEcn::NOT_ECT, tsval(Time::from_millis(9)))), 10);
        // A duplicate of segment 0 sent earlier (at 3 ms) arrives late.
        assert_eq!(echoed(r.on_segment::<false>(0, t, SegEcn::NOT_ECT, tsval(Time::from_millis(3)))), 10);
    }
}
