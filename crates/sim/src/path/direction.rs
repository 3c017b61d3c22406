//! One direction of a path that moves, after the bottleneck: the one-way
//! delay in effect, per-packet jitter (with or without reordering) and a
//! link that releases in slots (aggregation), turned into each packet's
//! arrival time.

use crate::rng::Rng;
use crate::units::Time;

/// How a packet's extra delay is drawn (netem's `delay D J [distribution]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JitterDistribution {
    /// Uniform in [−J, +J) (sch_netem.c tabledist() without a table).
    Uniform,
    /// Normal with standard deviation J (iproute2's `normal` table).
    Normal,
}

/// Per-packet delay variation: deviation J and its distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JitterSpec {
    pub deviation: Time,
    pub distribution: JitterDistribution,
    /// A packet may arrive before one sent earlier: netem's tfifo orders
    /// packets by their own time to send (tfifo_enqueue()). Without it, a
    /// packet never overtakes: it arrives no earlier than the one before.
    pub reorder: bool,
}

/// netem's reorder knob (`reorder P gap G`, netem_enqueue()): after
/// `gap` - 1 packets taken with their delay, the next is sent at once
/// (time_to_send = now, put at the head of the queue) with `probability`,
/// and the count starts again; otherwise it too takes its delay. A packet
/// sent at once skips the direction's whole delay, jitter and slots, as it
/// skips netem's (which holds the path's delay), so it overtakes those
/// sent before it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReorderSpec {
    pub probability: f64,
    /// At least 1 (tc's default when only a probability is given).
    pub gap: u32,
}

/// A link that releases what reached it at multiples of `interval` from
/// the run's start, each release carrying at most `budget_bytes` of frames
/// (what does not fit waits for the next): netem's `slot` with a fixed
/// interval and a byte budget (sch_netem.c get_slot_next(): a slot's
/// bytes left are refilled at each slot).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotSpec {
    pub interval: Time,
    pub budget_bytes: Option<u64>,
}

/// The state of one direction: its jitter draws and release slots, and
/// the latest arrival so far (arrivals never decrease without reordering).
#[derive(Clone, Debug)]
pub struct Direction {
    jitter: Option<(JitterSpec, Rng)>,
    /// The reorder knob, its draws and packets counted since the last
    /// packet sent at once (netem's q->counter).
    reorder: Option<(ReorderSpec, Rng, u32)>,
    slots: Option<SlotSpec>,
    /// The slot now filling and the bytes it carries.
    slot: Time,
    slot_bytes: u64,
    last: Time,
    /// Packets that arrived before one sent earlier.
    pub reordered: u64,
}

impl Direction {
    pub fn new(jitter: Option<JitterSpec>, slots: Option<SlotSpec>, rng: Rng) -> Direction {
        Direction { jitter: jitter.map(|j| (j, rng)), reorder: None, slots, slot: Time::ZERO, slot_bytes: 0, last: Time::ZERO, reordered: 0 }
    }

    /// This direction with netem's reorder knob, drawing from `rng`.
    pub fn with_reorder(mut self, reorder: Option<ReorderSpec>, rng: Rng) -> Direction {
        self.reorder = reorder.map(|r| (r, rng, 0));
        self
    }

    /// Whether packets may leave out of order (a pipe must then insert by
    /// time rather than append).
    pub fn reorders(&self) -> bool {
        self.jitter.as_ref().is_some_and(|(j, _)| j.reorder) || self.reorder.is_some()
    }

    /// netem_enqueue()'s reorder test for the next packet: true when it is
    /// sent at once. The draw is taken only once the gap has passed, as
    /// netem's condition short-circuits.
    fn at_once(&mut self) -> bool {
        let Some((r, rng, counter)) = self.reorder.as_mut() else {
            return false;
        };
        if *counter + 1 < r.gap || rng.next_f64() >= r.probability {
            *counter += 1;
            return false;
        }
        *counter = 0;
        true
    }

    /// The arrival of a `frame_bytes` packet that left the bottleneck (or
    /// its sender, on the ACK path) at `leave` with one-way delay `delay`:
    /// the delay plus its jitter (the total never below zero), then the
    /// next release slot that has room, never before the previous arrival
    /// unless the direction reorders.
    pub fn arrival(&mut self, leave: Time, delay: Time, frame_bytes: u32) -> Time {
        if self.at_once() {
            self.reordered += u64::from(leave < self.last);
            return leave;
        }
        let mut at = leave + delay;
        if let Some((j, rng)) = self.jitter.as_mut() {
            let d = j.deviation.as_nanos() as f64;
            let x = match j.distribution {
                JitterDistribution::Uniform => d * (2.0 * rng.next_f64() - 1.0),
                JitterDistribution::Normal => d * standard_normal(rng),
            };
            let total = (delay.as_nanos() as f64 + x).max(0.0);
            at = leave + Time(total.round() as u64);
            if j.reorder {
                if at < self.last {
                    self.reordered += 1;
                }
            } else {
                at = at.max(self.last);
            }
        }
        if let Some(s) = self.slots {
            at = self.slotted(at, frame_bytes, s);
        }
        self.last = self.last.max(at);
        at
    }

    /// The release time of a packet reaching the slotted link at `at`.
    fn slotted(&mut self, at: Time, frame_bytes: u32, s: SlotSpec) -> Time {
        let i = s.interval.as_nanos().max(1);
        let mut slot = Time(at.as_nanos().div_ceil(i) * i).max(self.slot);
        if slot == self.slot && self.slot_bytes > 0 && s.budget_bytes.is_some_and(|b| self.slot_bytes + frame_bytes as u64 > b) {
            slot += Time(i);
        }
        if slot != self.slot {
            self.slot = slot;
            self.slot_bytes = 0;
        }
        self.slot_bytes += frame_bytes as u64;
        slot
    }
}

/// A standard normal draw (Box–Muller, one of the pair).
fn standard_normal(rng: &mut Rng) -> f64 {
    let u = rng.next_f64_open0();
    let v = rng.next_f64();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jittered(reorder: bool, distribution: JitterDistribution) -> Direction {
        let spec = JitterSpec { deviation: Time::from_millis(2), distribution, reorder };
        Direction::new(Some(spec), None, Rng::new(3, 4))
    }

    #[test]
    fn without_jitter_or_slots_a_packet_arrives_after_the_delay() {
        let mut d = Direction::new(None, None, Rng::new(1, 1));
        assert_eq!(d.arrival(Time(5), Time(100), 1514), Time(105));
    }

    #[test]
    fn reordering_happens_only_when_asked() {
        for distribution in [JitterDistribution::Uniform, JitterDistribution::Normal] {
            let (mut fifo, mut tfifo) = (jittered(false, distribution), jittered(true, distribution));
            let (mut last_fifo, mut overtaken) = (Time::ZERO, 0);
            let mut last_tfifo = Time::ZERO;
            for k in 0..100_000u64 {
                // One packet every 10 µs, 10 ms one-way delay, ±2 ms jitter.
                let a = fifo.arrival(Time(k * 10_000), Time::from_millis(10), 1514);
                assert!(a >= last_fifo, "{distribution:?}: packet {k} overtook without reordering");
                last_fifo = a;
                let b = tfifo.arrival(Time(k * 10_000), Time::from_millis(10), 1514);
                overtaken += (b < last_tfifo) as u64;
                last_tfifo = last_tfifo.max(b);
            }
            assert_eq!(fifo.reordered, 0);
            assert!(overtaken > 50_000 && tfifo.reordered == overtaken, "{distribution:?}: {overtaken} overtook");
        }
    }

    #[test]
    fn jitter_has_the_deviation_asked_for() {
        for (distribution, sd) in [(JitterDistribution::Uniform, 2.0 / 3f64.sqrt()), (JitterDistribution::Normal, 2.0)] {
            let mut d = jittered(true, distribution);
            let n = 200_000;
            let xs: Vec<f64> = (0..n).map(|_| (d.arrival(Time::ZERO, Time::from_millis(10), 100).as_secs_f64() - 0.010) * 1e3).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            assert!(mean.abs() < 0.02, "{distribution:?}: mean {mean} ms");
            assert!((var.sqrt() - sd).abs() < 0.02 * sd, "{distribution:?}: sd {} ms, expected {sd}", var.sqrt());
        }
    }

    #[test]
    fn the_reorder_knob_sends_one_packet_in_gap_at_once_with_its_probability() {
        // reorder 25% gap 5 (netem_enqueue()): after 4 delayed packets,
        // the next goes at once with probability 0.25, else waits its
        // delay and the count goes on; a packet at once skips the 10 ms
        // delay and so overtakes the packets still in flight.
        let r = ReorderSpec { probability: 0.25, gap: 5 };
        let mut d = Direction::new(None, None, Rng::new(1, 1)).with_reorder(Some(r), Rng::new(7, 7));
        assert!(d.reorders());
        let (mut at_once, mut since, mut shortest_gap) = (0u64, 0u32, u32::MAX);
        let n = 200_000u64;
        for k in 0..n {
            let leave = Time(k * 10_000);
            let a = d.arrival(leave, Time::from_millis(10), 1514);
            if a == leave {
                at_once += 1;
                shortest_gap = shortest_gap.min(since + 1);
                since = 0;
            } else {
                assert_eq!(a, leave + Time::from_millis(10));
                since += 1;
            }
        }
        assert!(shortest_gap >= 5, "a packet at once after {shortest_gap} packets, not before the gap");
        // Each cycle: 4 packets, then a geometric number of trials with
        // p = 0.25 (mean 4): 8 packets per packet at once.
        let share = at_once as f64 / n as f64;
        assert!((share - 1.0 / 8.0).abs() < 0.005, "{share} of the packets at once, expected 1/8");
        assert_eq!(d.reordered, at_once, "each packet at once overtakes one still in flight");
        let mut off = Direction::new(None, None, Rng::new(1, 1)).with_reorder(None, Rng::new(7, 7));
        assert!(!off.reorders() && (0..1000).all(|k| off.arrival(Time(k), Time(100), 64) == Time(k + 100)));
    }

    #[test]
    fn a_delay_never_goes_below_zero() {
        let spec = JitterSpec { deviation: Time::from_millis(5), distribution: JitterDistribution::Uniform, reorder: true };
        let mut d = Direction::new(Some(spec), None, Rng::new(2, 2));
        assert!((0..10_000).all(|k| d.arrival(Time(k), Time::from_millis(1), 64) >= Time(k)));
    }

    #[test]
    fn slots_release_at_multiples_of_the_interval_within_their_budget() {
        let slots = SlotSpec { interval: Time::from_millis(1), budget_bytes: Some(3_000) };
        let mut d = Direction::new(None, Some(slots), Rng::new(1, 1));
        // Five 1500-byte frames reaching the link at 0.2, 0.3, 0.4, 0.5 and 2.0 ms.
        let at: Vec<Time> = [200u64, 300, 400, 500, 2_000].iter().map(|&us| d.arrival(Time::from_micros(us), Time::ZERO, 1_500)).collect();
        let ms = |m| Time::from_millis(m);
        assert_eq!(at, [ms(1), ms(1), ms(2), ms(2), ms(3)], "two per slot, the rest wait");
        let mut open = Direction::new(None, Some(SlotSpec { interval: Time::from_millis(1), budget_bytes: None }), Rng::new(1, 1));
        assert!((1..50).all(|k| open.arrival(Time::from_micros(10 * k), Time::ZERO, 1_500) == ms(1)));
        assert_eq!(open.arrival(Time::from_millis(1), Time::ZERO, 1_500), ms(1), "on the grid: released at once");
    }
}
