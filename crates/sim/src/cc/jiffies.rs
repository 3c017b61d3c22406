//! The kernel's coarse clock for congestion control: tcp_jiffies32 and the
//! conversions CCAs use (include/linux/jiffies.h), derived from
//! `ConnState::now` with a fixed `HZ` = 1000, so a jiffy is 1 ms, and the
//! time-unit constants of include/vdso/time64.h. One definition for every
//! CCA that keeps time in jiffies (CUBIC, H-TCP, BIC, Westwood, NV, BBR v1
//! and v3).

use crate::units::Time;

/// Jiffies per second (CONFIG_HZ). 1000 is the common distribution value.
pub const HZ: u64 = 1000;
/// USEC_PER_SEC (include/vdso/time64.h).
pub const USEC_PER_SEC: u64 = 1_000_000;
/// USEC_PER_MSEC (include/vdso/time64.h).
pub const USEC_PER_MSEC: u64 = 1_000;

/// tcp_jiffies32 derived from simulated time.
#[inline]
pub fn jiffies(now: Time) -> u64 {
    now.as_nanos() / (1_000_000_000 / HZ)
}

/// msecs_to_jiffies().
pub const fn msecs_to_jiffies(ms: u64) -> u64 {
    ms * HZ / 1000
}

/// usecs_to_jiffies(): rounds up (_usecs_to_jiffies with HZ <= USEC_PER_SEC).
#[inline]
pub fn usecs_to_jiffies(us: u64) -> u64 {
    us.div_ceil(1_000_000 / HZ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jiffy_is_one_millisecond_and_truncates() {
        assert_eq!(jiffies(Time::from_nanos(1_999_999)), 1);
        assert_eq!(jiffies(Time::from_nanos(2_000_000)), 2);
    }

    #[test]
    fn usecs_to_jiffies_rounds_up() {
        assert_eq!(usecs_to_jiffies(0), 0);
        assert_eq!(usecs_to_jiffies(1), 1);
        assert_eq!(usecs_to_jiffies(1000), 1);
        assert_eq!(usecs_to_jiffies(1001), 2);
        assert_eq!(msecs_to_jiffies(50), 50);
    }
}
