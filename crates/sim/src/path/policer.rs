//! A token-bucket policer in front of the bottleneck (path.policer): what
//! exceeds its rate and burst is dropped, never queued.

use crate::units::{Bytes, Rate, Time};

/// Linux's police action (net/sched/act_police.c, tcf_police_act()): the
/// bucket holds credit in time units, at most the burst's worth
/// (burst/rate); a packet conforms when the credit, refilled by the time
/// since the last conforming packet, covers its transmission time at the
/// rate (psched_l2t_ns), and only a conforming packet spends credit. Over
/// any interval of length t it passes at most rate·t + burst bytes.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: Rate,
    /// The burst's worth of credit.
    depth: Time,
    credit: Time,
    /// When the credit was last brought up to date.
    at: Time,
    /// Packets dropped for exceeding the profile.
    pub drops: u64,
}

impl TokenBucket {
    /// A full bucket of `burst_bytes` filling at `rate`.
    pub fn new(rate: Rate, burst_bytes: u64) -> TokenBucket {
        let depth = rate.transmit_time(Bytes(burst_bytes));
        TokenBucket { rate, depth, credit: depth, at: Time::ZERO, drops: 0 }
    }

    /// Whether a frame of `bytes` arriving at `now` conforms (and passes).
    pub fn admit(&mut self, now: Time, bytes: u32) -> bool {
        let credit = (self.credit + now.saturating_sub(self.at)).min(self.depth);
        let cost = self.rate.transmit_time(Bytes(bytes as u64));
        if credit >= cost {
            self.credit = credit - cost;
            self.at = now;
            return true;
        }
        self.drops += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policer_never_passes_more_than_rate_times_t_plus_burst() {
        // 10 Mbit/s, 15 KB burst, offered 100 Mbit/s of 1514-byte frames
        // (one every 121.12 µs) for 1 s: every window starting at 0 holds
        // at most rate·t + burst bytes.
        let (rate, burst) = (Rate::from_mbps(10), 15_000u64);
        let mut tb = TokenBucket::new(rate, burst);
        let mut passed = 0u64;
        for k in 0..8_256u64 {
            let now = Time(k * 121_120);
            if tb.admit(now, 1514) {
                passed += 1514;
            }
            let allowed = rate.bytes_in(now).0 + burst;
            assert!(passed <= allowed, "at {now}: passed {passed} > {allowed}");
        }
        // And it passes what the profile allows, within a frame.
        let allowed = rate.bytes_in(Time(8_256 * 121_120)).0 + burst;
        assert!(passed + 2 * 1514 >= allowed, "passed {passed}, allowed {allowed}");
        assert!(tb.drops > 7_000);
    }

    #[test]
    fn traffic_within_the_rate_is_never_dropped() {
        let mut tb = TokenBucket::new(Rate::from_mbps(10), 3_000);
        // 1514-byte frames every 1.3 ms: 9.3 Mbit/s.
        assert!((0..10_000u64).all(|k| tb.admit(Time(k * 1_300_000), 1514)));
    }

    #[test]
    fn a_full_bucket_passes_a_burst_of_its_depth_then_drops() {
        let mut tb = TokenBucket::new(Rate::from_mbps(100), 4 * 1514);
        let passed: Vec<bool> = (0..6).map(|_| tb.admit(Time(1_000_000), 1514)).collect();
        assert_eq!(passed, [true, true, true, true, false, false]);
        assert_eq!(tb.drops, 2);
    }
}
