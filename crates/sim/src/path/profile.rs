//! Values of the path that change at scheduled instants ([[path.schedule]]):
//! a step function of time, and the bottleneck's rate over time with the
//! time a packet takes to cross it.

use crate::units::{Rate, Time};

/// A value that holds from each instant to the next: `(from, value)`, the
/// first from time zero, instants strictly increasing.
#[derive(Clone, Debug, PartialEq)]
pub struct Steps<T> {
    steps: Vec<(Time, T)>,
}

impl<T: Copy> Steps<T> {
    /// `initial` from time zero, then each change at its instant (changes
    /// sorted, none at zero: a change at zero replaces the initial value).
    pub fn new(initial: T, changes: impl IntoIterator<Item = (Time, T)>) -> Steps<T> {
        let mut steps = vec![(Time::ZERO, initial)];
        for (at, v) in changes {
            debug_assert!(at >= steps.last().expect("one step").0, "changes must be sorted");
            if at == steps.last().expect("one step").0 {
                steps.last_mut().expect("one step").1 = v;
            } else {
                steps.push((at, v));
            }
        }
        Steps { steps }
    }

    /// Index of the step in effect at `t`.
    fn index_at(&self, t: Time) -> usize {
        self.steps.partition_point(|s| s.0 <= t) - 1
    }

    /// The value in effect at `t`.
    pub fn at(&self, t: Time) -> T {
        self.steps[self.index_at(t)].1
    }

    /// Whether the value ever changes.
    pub fn changes(&self) -> bool {
        self.steps.len() > 1
    }

    /// Sets the value from `at` on, up to the next change already
    /// scheduled after `at` (which still takes over at its instant): a
    /// step decided while the run goes (a state trigger, trigger.rs). A
    /// change already at `at` is replaced.
    pub fn insert(&mut self, at: Time, v: T) {
        let i = self.steps.partition_point(|s| s.0 <= at);
        if self.steps[i - 1].0 == at {
            self.steps[i - 1].1 = v;
        } else {
            self.steps.insert(i, (at, v));
        }
    }
}

/// The bottleneck's service rate over time. A packet's bits are served at
/// the rate in effect while they are sent: one that starts before a change
/// and ends after it is sent partly at each rate (a fluid link, as a
/// serializer whose clock changes mid-frame would; tbf reconfigured with
/// `tc qdisc change` applies the new rate from the next dequeue instead, a
/// difference below one packet time at each step).
#[derive(Clone, Debug, PartialEq)]
pub struct RateProfile {
    rates: Steps<Rate>,
}

impl RateProfile {
    pub fn new(rates: Steps<Rate>) -> RateProfile {
        RateProfile { rates }
    }

    /// The rate from `at` on (Steps::insert): bits served after `at` by
    /// packets admitted from now on go at `rate`.
    pub fn insert(&mut self, at: Time, rate: Rate) {
        self.rates.insert(at, rate);
    }

    /// When the last bit of `bytes` whose first bit starts at `start` has
    /// left. At a constant rate this is `start + rate.transmit_time(bytes)`
    /// (rounded up to the nanosecond the same way); a rate of zero (an
    /// outage) serves nothing until the next change, and a last step of
    /// zero never finishes (`Time::MAX`).
    pub fn finish(&self, start: Time, bytes: u32) -> Time {
        let steps = &self.rates.steps;
        let mut i = self.rates.index_at(start);
        let mut t = start;
        // Work left in bit·ns/s: a rate of r bit/s serves r of it per ns.
        let mut left = bytes as u128 * 8 * 1_000_000_000;
        loop {
            let rate = steps[i].1.bps() as u128;
            let end = steps.get(i + 1).map(|s| s.0);
            if rate > 0 {
                let need = left.div_ceil(rate);
                let done = t.0 as u128 + need;
                if end.is_none_or(|e| done <= e.0 as u128) {
                    return Time(done.min(u64::MAX as u128) as u64);
                }
            }
            let Some(end) = end else { return Time::MAX };
            left -= (rate * (end.0 - t.0) as u128).min(left);
            t = end;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(changes: &[(u64, u64)]) -> RateProfile {
        // Starts at 1 Gbit/s; changes as (ns, bit/s).
        RateProfile::new(Steps::new(Rate::from_gbps(1), changes.iter().map(|&(t, r)| (Time(t), Rate(r)))))
    }

    #[test]
    fn a_constant_rate_serves_as_transmit_time_says() {
        let p = profile(&[]);
        for bytes in [1u32, 64, 1514, 9014, 65_000] {
            assert_eq!(p.finish(Time(777), bytes), Time(777) + Rate::from_gbps(1).transmit_time(crate::units::Bytes(bytes as u64)));
        }
    }

    #[test]
    fn a_rate_step_changes_the_service_at_the_scheduled_instant() {
        // 1 Gbit/s until 10 µs, then 100 Mbit/s: a 1500-byte packet (12 µs
        // at 1 Gbit/s, 120 µs at 100 Mbit/s).
        let p = profile(&[(10_000, 100_000_000)]);
        assert_eq!(p.finish(Time(0), 1000), Time(8_000), "done before the step");
        assert_eq!(p.finish(Time(10_000), 1500), Time(130_000), "all after the step");
        // Straddling: 4 µs at 1 Gbit/s sends 500 bytes, the other 1000 take 80 µs.
        assert_eq!(p.finish(Time(6_000), 1500), Time(90_000));
    }

    #[test]
    fn an_outage_serves_nothing_until_the_rate_returns() {
        let p = profile(&[(1_000, 0), (1_000_000, 1_000_000_000)]);
        // 1 µs sends 125 bytes; the other 1375 bytes wait out the outage.
        assert_eq!(p.finish(Time(0), 1500), Time(1_000_000 + 11_000));
        let dead = profile(&[(1_000, 0)]);
        assert_eq!(dead.finish(Time(0), 1500), Time::MAX);
    }

    #[test]
    fn steps_give_the_value_in_effect() {
        let s = Steps::new(5u32, [(Time(10), 7), (Time(20), 9)]);
        assert_eq!((s.at(Time(0)), s.at(Time(9)), s.at(Time(10)), s.at(Time(25))), (5, 5, 7, 9));
        assert!(s.changes());
        assert_eq!(Steps::new(1u32, [(Time::ZERO, 3)]).at(Time(0)), 3);
    }

    #[test]
    fn an_inserted_step_holds_until_the_next_scheduled_one() {
        let mut s = Steps::new(5u32, [(Time(10), 7), (Time(20), 9)]);
        s.insert(Time(15), 8);
        assert_eq!((s.at(Time(14)), s.at(Time(15)), s.at(Time(19)), s.at(Time(20))), (7, 8, 8, 9));
        s.insert(Time(20), 1);
        s.insert(Time(30), 2);
        assert_eq!((s.at(Time(20)), s.at(Time(29)), s.at(Time(30))), (1, 1, 2));
    }
}
