//! A Mahimahi delivery trace as the bottleneck's service (path.trace).
//!
//! A trace lists the milliseconds at which the link may deliver: each line
//! is one delivery opportunity of [`OPPORTUNITY_BYTES`], several lines may
//! share a millisecond, and the trace repeats with its last timestamp as
//! the period. The rule is mahimahi's `LinkQueue::rationalize()`
//! (src/frontend/link_queue.cc), followed here at enqueue time:
//!
//! * at each opportunity, its bytes are spent on the packets queued then,
//!   in FIFO order: a packet that fits leaves at that opportunity and the
//!   bytes left go to the next packet; a packet that does not fit spends
//!   them and goes on in the next opportunity (it is "in transit"), leaving
//!   at the opportunity that carries its last byte;
//! * bytes of an opportunity that no queued packet needs are lost: a packet
//!   arriving later does not use them;
//! * a packet arriving at the very instant of an opportunity does not use
//!   it (mahimahi serves the opportunities due by `now` before it enqueues
//!   a packet arriving at `now`).
//!
//! A packet is charged its IP packet's bytes, as mahimahi (which sees IP
//! packets on its TUN device) does: the bottleneck's frame less
//! [`TraceService`]'s `overhead_bytes`. Mahimahi refuses a packet larger
//! than an opportunity; here it spans several, as its in-transit rule
//! extends to.

use crate::units::Time;

/// The bytes of one delivery opportunity: mahimahi's `LinkQueue::PACKET_SIZE`
/// (src/frontend/link_queue.hh, "default max TUN payload size").
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// A delivery trace: the distinct milliseconds of one period with the
/// opportunities at each, repeated with the last millisecond as period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryTrace {
    /// (millisecond in the period, opportunities), milliseconds strictly
    /// increasing, counts at least 1; the last is the period.
    slots: Vec<(u64, u32)>,
}

impl DeliveryTrace {
    /// From the run-length form the run plan carries: the gaps between
    /// successive distinct milliseconds (the first from 0) and the
    /// opportunities at each. Errors say what is wrong (as mahimahi's
    /// loader refuses an empty trace or one of zero length).
    pub fn from_run_lengths(ms_gaps: &[u64], counts: &[u64]) -> Result<DeliveryTrace, String> {
        if ms_gaps.len() != counts.len() {
            return Err(format!("ms_gaps has {} entries but counts {}", ms_gaps.len(), counts.len()));
        }
        if ms_gaps.is_empty() {
            return Err("a trace needs at least one delivery opportunity".into());
        }
        let mut slots = Vec::with_capacity(ms_gaps.len());
        let mut ms = 0u64;
        for (i, (&gap, &count)) in ms_gaps.iter().zip(counts).enumerate() {
            if i > 0 && gap == 0 {
                return Err(format!("ms_gaps[{i}] is 0: distinct milliseconds must increase"));
            }
            if count == 0 || count > u32::MAX as u64 {
                return Err(format!("counts[{i}] must be from 1 to {}, got {count}", u32::MAX));
            }
            ms = ms.checked_add(gap).filter(|&m| m <= MAX_PERIOD_MS).ok_or_else(|| format!("the trace exceeds {MAX_PERIOD_MS} ms"))?;
            slots.push((ms, count as u32));
        }
        if ms == 0 {
            return Err("the trace must last a nonzero time (its last timestamp is its period)".into());
        }
        Ok(DeliveryTrace { slots })
    }

    /// From a trace's timestamps, one per opportunity, non-decreasing.
    pub fn from_timestamps(ms: &[u64]) -> Result<DeliveryTrace, String> {
        let (mut gaps, mut counts) = (Vec::new(), Vec::new());
        let mut last = 0u64;
        for (i, &t) in ms.iter().enumerate() {
            if t < last {
                return Err(format!("timestamp {i} ({t} ms) is before the one before it ({last} ms)"));
            }
            if i > 0 && t == last {
                *counts.last_mut().expect("one slot") += 1;
            } else {
                gaps.push(t - last);
                counts.push(1);
            }
            last = t;
        }
        DeliveryTrace::from_run_lengths(&gaps, &counts)
    }

    /// The period: the last timestamp, in milliseconds.
    pub fn period_ms(&self) -> u64 {
        self.slots.last().expect("validated: one slot").0
    }

    /// Opportunities per period.
    pub fn opportunities(&self) -> u64 {
        self.slots.iter().map(|s| s.1 as u64).sum()
    }

    /// When opportunity `o` occurs.
    fn time(&self, o: Opportunity) -> Time {
        Time::from_millis(o.period * self.period_ms() + self.slots[o.slot].0)
    }

    /// The opportunity after `o`.
    fn next(&self, o: Opportunity) -> Opportunity {
        if o.k + 1 < self.slots[o.slot].1 {
            Opportunity { k: o.k + 1, ..o }
        } else if o.slot + 1 < self.slots.len() {
            Opportunity { period: o.period, slot: o.slot + 1, k: 0 }
        } else {
            Opportunity { period: o.period + 1, slot: 0, k: 0 }
        }
    }

    /// The first opportunity strictly after `t`.
    fn first_after(&self, t: Time) -> Opportunity {
        let period_ns = self.period_ms() * 1_000_000;
        let period = t.as_nanos() / period_ns;
        let within = t.as_nanos() - period * period_ns;
        let slot = self.slots.partition_point(|s| s.0 * 1_000_000 <= within);
        if slot == self.slots.len() {
            Opportunity { period: period + 1, slot: 0, k: 0 }
        } else {
            Opportunity { period, slot, k: 0 }
        }
    }
}

/// Longest trace period accepted (about 31 years: beyond any run).
pub const MAX_PERIOD_MS: u64 = 1 << 40;

/// One delivery opportunity: the `k`-th of slot `slot` in period `period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Opportunity {
    period: u64,
    slot: usize,
    k: u32,
}

/// The state of a link served by a trace: the opportunity the last packet
/// left in and the bytes it left unused.
#[derive(Clone, Debug)]
pub struct TraceService {
    trace: DeliveryTrace,
    last: Option<(Opportunity, u32)>,
    /// Bytes of each offered frame not charged (the Ethernet header).
    overhead_bytes: u32,
}

impl TraceService {
    pub fn new(trace: DeliveryTrace, overhead_bytes: u32) -> TraceService {
        TraceService { trace, last: None, overhead_bytes }
    }

    /// When a frame of `frame_bytes` arriving at `arrival` (behind every
    /// packet served before it: calls in arrival order) leaves.
    pub fn serve(&mut self, arrival: Time, frame_bytes: u32) -> Time {
        let mut need = frame_bytes.saturating_sub(self.overhead_bytes).max(1);
        let (mut at, mut left) = match self.last {
            // The packet before is still being delivered at an opportunity
            // after this arrival: this one follows it there.
            Some((o, left)) if self.trace.time(o) > arrival => {
                if left > 0 {
                    (o, left)
                } else {
                    (self.trace.next(o), OPPORTUNITY_BYTES)
                }
            }
            // The queue is empty by `arrival`: unused bytes are gone.
            _ => (self.trace.first_after(arrival), OPPORTUNITY_BYTES),
        };
        loop {
            let spent = need.min(left);
            need -= spent;
            left -= spent;
            if need == 0 {
                break;
            }
            at = self.trace.next(at);
            left = OPPORTUNITY_BYTES;
        }
        self.last = Some((at, left));
        self.trace.time(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(ms: &[u64]) -> TraceService {
        TraceService::new(DeliveryTrace::from_timestamps(ms).expect("a trace"), 14)
    }

    fn ms(m: u64) -> Time {
        Time::from_millis(m)
    }

    #[test]
    fn a_trace_with_n_opportunities_per_second_serves_n_full_packets_per_second() {
        // 1000 opportunities per 1 s period, spread over 250 milliseconds
        // (4 at each): a backlog of full-sized packets (1504-byte IP
        // packets, 1518-byte frames) leaves at 1000 packets per second.
        let stamps: Vec<u64> = (1..=250).flat_map(|m| [m * 4; 4]).collect();
        let mut s = service(&stamps);
        assert_eq!(s.trace.opportunities(), 1000);
        let deps: Vec<Time> = (0..10_000).map(|_| s.serve(Time::ZERO, 1518)).collect();
        let in_first_s = deps.iter().filter(|&&d| d <= Time::from_secs(1)).count();
        assert_eq!(in_first_s, 1000);
        assert_eq!(deps[9_999], Time::from_secs(10), "10 periods carry 10 000 packets");
        // N·1504 bytes per second of IP packets of any size.
        let mut small = service(&stamps);
        let deps: Vec<Time> = (0..1504u64 * 1000 / 94).map(|_| small.serve(Time::ZERO, 94 + 14)).collect();
        assert_eq!(*deps.last().unwrap(), Time::from_secs(1));
    }

    #[test]
    fn a_packet_departs_at_the_opportunity_mahimahis_rule_gives() {
        let mut s = service(&[5, 5, 7, 20]);
        // Arriving at 0: the first opportunity after, 5 ms.
        assert_eq!(s.serve(ms(0), 1014), ms(5), "1000 bytes at 5 ms (504 left)");
        assert_eq!(s.serve(ms(1), 514), ms(5), "500 more fit in the 504 left");
        assert_eq!(s.serve(ms(2), 1514), ms(5), "4 bytes, then 1496 of the second opportunity at 5 ms");
        assert_eq!(s.serve(ms(3), 1514), ms(7), "the 8 bytes left at 5 ms, the other 1492 at 7 ms");
        // Nothing queued after 7 ms: its 0 bytes left; a packet arriving at
        // 8 ms waits for 20 ms; the next period's 5 ms is 25 ms.
        assert_eq!(s.serve(ms(8), 100), ms(20));
        assert_eq!(s.serve(ms(21), 100), ms(25), "the 20 ms opportunity's unused bytes are lost");
        // Arriving at an opportunity's instant: that one is already gone.
        let mut t = service(&[5, 10]);
        assert_eq!(t.serve(ms(5), 100), ms(10));
        assert_eq!(t.serve(ms(10), 100), ms(15), "period 10 ms: the next at 15");
    }

    #[test]
    fn a_packet_larger_than_an_opportunity_spans_several() {
        let mut s = service(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // A 9000-byte IP packet needs 6 opportunities (5 full, 9000 - 7520 of the sixth).
        assert_eq!(s.serve(ms(0), 9014), ms(6));
        assert_eq!(s.serve(ms(0), 1014), ms(7), "the 24 bytes left at 6 ms, then 976 at 7 ms");
    }

    #[test]
    fn the_run_length_form_is_checked() {
        assert!(DeliveryTrace::from_timestamps(&[0, 0]).unwrap_err().contains("nonzero"));
        assert!(DeliveryTrace::from_timestamps(&[3, 2]).unwrap_err().contains("before"));
        assert!(DeliveryTrace::from_run_lengths(&[1, 0], &[1, 1]).unwrap_err().contains("ms_gaps[1]"));
        assert!(DeliveryTrace::from_run_lengths(&[1], &[0]).unwrap_err().contains("counts[0]"));
        assert!(DeliveryTrace::from_run_lengths(&[], &[]).is_err());
        let t = DeliveryTrace::from_timestamps(&[0, 3, 3, 3, 8]).unwrap();
        assert_eq!(t, DeliveryTrace::from_run_lengths(&[0, 3, 5], &[1, 3, 1]).unwrap());
        assert_eq!((t.period_ms(), t.opportunities()), (8, 5));
    }
}
