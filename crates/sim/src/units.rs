//! Units live in types: simulated time in nanoseconds, sizes in bytes, rates
//! in bits per second. Arithmetic saturates instead of wrapping
//! (docs/architecture.md, Invariants: window and rate arithmetic saturates).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time or a duration, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    pub const fn from_micros(us: u64) -> Time {
        Time(us.saturating_mul(1_000))
    }
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(1_000_000))
    }
    pub const fn from_secs(s: u64) -> Time {
        Time(s.saturating_mul(1_000_000_000))
    }
    /// Rounds to the nearest nanosecond; negative and NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Time {
        if s.is_nan() || s <= 0.0 {
            Time(0)
        } else {
            Time((s * 1e9).round().min(u64::MAX as f64) as u64)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub const fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }
    pub const fn mul(self, k: u64) -> Time {
        Time(self.0.saturating_mul(k))
    }
    /// Divides by `k`; division by zero saturates to `Time::MAX`.
    pub const fn div(self, k: u64) -> Time {
        match self.0.checked_div(k) {
            Some(t) => Time(t),
            None => Time::MAX,
        }
    }
    /// Scales by a rational factor num/den without intermediate overflow.
    pub fn mul_ratio(self, num: u64, den: u64) -> Time {
        if den == 0 {
            return Time::MAX;
        }
        let v = (self.0 as u128) * (num as u128) / (den as u128);
        Time(v.min(u64::MAX as u128) as u64)
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, rhs: Time) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, rhs: Time) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
impl Sub for Time {
    type Output = Time;
    /// Saturating: an earlier minus a later time is zero, never a wrap.
    fn sub(self, rhs: Time) -> Time {
        Time(self.0.saturating_sub(rhs.0))
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    pub const fn get(self) -> u64 {
        self.0
    }
    pub const fn bits(self) -> u64 {
        self.0.saturating_mul(8)
    }
    pub const fn saturating_sub(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(o.0))
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, rhs: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, rhs: Bytes) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub const ZERO: Rate = Rate(0);
    pub const fn from_bps(bps: u64) -> Rate {
        Rate(bps)
    }
    pub const fn from_mbps(m: u64) -> Rate {
        Rate(m.saturating_mul(1_000_000))
    }
    pub const fn from_gbps(g: u64) -> Rate {
        Rate(g.saturating_mul(1_000_000_000))
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// The rate at which `bytes` are delivered over `interval`.
    pub fn from_bytes_per(bytes: Bytes, interval: Time) -> Rate {
        if interval.0 == 0 {
            return Rate(0);
        }
        let v = (bytes.0 as u128) * 8 * 1_000_000_000 / (interval.0 as u128);
        Rate(v.min(u64::MAX as u128) as u64)
    }
    /// Serialization time of `bytes` at this rate (rounded up, so a link is
    /// never faster than configured). A zero rate never finishes.
    pub fn transmit_time(self, bytes: Bytes) -> Time {
        if self.0 == 0 {
            return Time::MAX;
        }
        let ns = ((bytes.0 as u128) * 8 * 1_000_000_000).div_ceil(self.0 as u128);
        Time(ns.min(u64::MAX as u128) as u64)
    }
    /// Bytes sent at this rate during `t` (rounded down).
    pub fn bytes_in(self, t: Time) -> Bytes {
        let v = (self.0 as u128) * (t.0 as u128) / 8 / 1_000_000_000;
        Bytes(v.min(u64::MAX as u128) as u64)
    }
    /// Scales by num/den without overflow (e.g. a pacing gain of 2.885 as
    /// 2885/1000, or BBR's gains in units of 1/256).
    pub fn mul_ratio(self, num: u64, den: u64) -> Rate {
        if den == 0 {
            return Rate(u64::MAX);
        }
        let v = (self.0 as u128) * (num as u128) / (den as u128);
        Rate(v.min(u64::MAX as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmit_time_of_a_1500_byte_packet_at_10gbit_is_1200ns() {
        assert_eq!(Rate::from_gbps(10).transmit_time(Bytes(1500)), Time(1200));
    }

    #[test]
    fn rate_from_bytes_per_interval_roundtrips() {
        let r = Rate::from_bytes_per(Bytes(1_250_000), Time::from_millis(1));
        assert_eq!(r, Rate::from_gbps(10));
        assert_eq!(r.bytes_in(Time::from_millis(1)), Bytes(1_250_000));
    }

    #[test]
    fn time_subtraction_saturates_instead_of_wrapping() {
        assert_eq!(Time(5) - Time(10), Time::ZERO);
    }
}
