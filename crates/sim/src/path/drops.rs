//! Losses at chosen instants (`[[path.drops]]`, docs/path-dynamics.md):
//! from the first data packet that reaches the path at or after an
//! instant, `count` consecutive data packets (of one flow group, or of
//! any) are dropped. No randomness: the same packets are lost on every
//! run of a plan, on the simulator's path and on linkem's alike.

use crate::units::Time;

/// One burst of drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropSpec {
    /// From the first data packet at or after this instant.
    pub at: Time,
    /// Consecutive data packets dropped.
    pub count: u64,
    /// Only this flow group's packets (`None`: any flow's).
    pub group: Option<usize>,
}

/// The bursts still to drop, and the packets dropped so far.
#[derive(Clone, Debug, Default)]
pub struct ScheduledDrops {
    /// (burst, packets of it still to drop), by instant.
    pending: Vec<(DropSpec, u64)>,
    pub dropped: u64,
}

impl ScheduledDrops {
    pub fn new(specs: &[DropSpec]) -> ScheduledDrops {
        let mut d = ScheduledDrops::default();
        for &s in specs {
            d.add(s);
        }
        d
    }

    /// Adds a burst (one scheduled while the run goes: a state trigger).
    pub fn add(&mut self, spec: DropSpec) {
        if spec.count > 0 {
            let i = self.pending.partition_point(|p| p.0.at <= spec.at);
            self.pending.insert(i, (spec, spec.count));
        }
    }

    /// Whether the data packet of flow group `group` reaching the path at
    /// `now` is dropped: it is when a due burst (its instant reached, its
    /// group this one or any) still has packets to drop, the earliest
    /// such burst paying for it.
    #[inline]
    pub fn drop(&mut self, now: Time, group: Option<usize>) -> bool {
        let Some(first) = self.pending.first() else { return false };
        if first.0.at > now {
            return false;
        }
        let due = self.pending.iter().position(|(s, _)| s.at <= now && (s.group.is_none() || s.group == group));
        let Some(i) = due else { return false };
        self.pending[i].1 -= 1;
        if self.pending[i].1 == 0 {
            self.pending.remove(i);
        }
        self.dropped += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_drops_count_packets_from_the_first_at_its_instant() {
        let mut d = ScheduledDrops::new(&[DropSpec { at: Time(100), count: 3, group: None }]);
        let fates: Vec<bool> = [50, 99, 100, 101, 150, 151, 152].iter().map(|&t| d.drop(Time(t), Some(0))).collect();
        assert_eq!(fates, [false, false, true, true, true, false, false]);
        assert_eq!(d.dropped, 3);
    }

    #[test]
    fn a_burst_of_one_group_spares_the_others() {
        let mut d = ScheduledDrops::new(&[DropSpec { at: Time(10), count: 2, group: Some(1) }]);
        assert!(!d.drop(Time(10), Some(0)));
        assert!(!d.drop(Time(11), None));
        assert!(d.drop(Time(12), Some(1)));
        assert!(!d.drop(Time(13), Some(0)));
        assert!(d.drop(Time(14), Some(1)));
        assert!(!d.drop(Time(15), Some(1)));
    }

    #[test]
    fn a_burst_added_later_drops_from_its_own_instant() {
        let mut d = ScheduledDrops::new(&[]);
        assert!(!d.drop(Time(5), Some(0)));
        d.add(DropSpec { at: Time(20), count: 1, group: None });
        assert!(!d.drop(Time(19), Some(0)));
        assert!(d.drop(Time(20), Some(0)));
        assert!(!d.drop(Time(21), Some(0)));
    }
}
