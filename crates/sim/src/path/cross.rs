//! Cross traffic (a flow group of kind "cross"): unresponsive packets
//! offered to the bottleneck beside the TCP flows', so they take queue
//! space, are tail-dropped and delay the TCP flows as any packet would.
//! They reach no receiver; what left the bottleneck is counted.
//!
//! Each group has `streams` independent sources, each with its own seeded
//! random stream. A source sends packets back to back at `rate` while on:
//! always (constant), or in on and off periods whose lengths are drawn
//! from a Pareto distribution with the configured means and shape, the
//! heavy-tailed ON/OFF source whose superposition is self-similar with
//! Hurst parameter H = (3 − shape)/2 for 1 < shape < 2 (Willinger, Taqqu,
//! Sherman and Wilson, "Self-Similarity Through High-Variability:
//! Statistical Analysis of Ethernet LAN Traffic at the Source Level",
//! IEEE/ACM Transactions on Networking 5(1), 1997).
//!
//! The sources need no event per packet: [`CrossTraffic::advance`] offers
//! every packet due up to a time, in time order across all sources, and
//! the engine calls it before it offers a packet of its own and before it
//! samples the queue, so the bottleneck always sees times in order.

use std::collections::VecDeque;

use crate::rng::Rng;
use crate::units::{Bytes, Rate, Time};

use super::Bottleneck;

/// How a source alternates between sending and silence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CrossPattern {
    /// Always on.
    Constant,
    /// On and off periods, each Pareto with its mean and `shape` (> 1).
    OnOff { on_mean: Time, off_mean: Time, shape: f64 },
}

/// One cross-traffic group, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct CrossSpec {
    /// Its flow group (the series rows' flow_group).
    pub group: u32,
    pub streams: u32,
    /// Each source's rate while on, in frame bits on the link.
    pub rate: Rate,
    /// The IP packet's bytes (what delivered_bytes counts); the frame on
    /// the link adds the Ethernet header (`frame_bytes`).
    pub packet_bytes: u32,
    pub frame_bytes: u32,
    pub start: Time,
    /// No packet is sent at or after `stop`.
    pub stop: Time,
    pub pattern: CrossPattern,
}

/// RNG stream labels of the sources: one per (group, stream).
const CROSS_STREAM: u64 = 0xC055_0000_0000;

/// A Pareto draw with mean `mean` and shape `shape` (> 1): scale
/// x_m = mean·(shape − 1)/shape, x_m·U^(−1/shape) for U uniform in (0, 1]
/// (inverse transform sampling of P(X > x) = (x_m/x)^shape).
pub fn pareto(rng: &mut Rng, mean: Time, shape: f64) -> Time {
    let scale = mean.as_nanos() as f64 * (shape - 1.0) / shape;
    let u = rng.next_f64_open0();
    Time((scale * u.powf(-1.0 / shape)).min(u64::MAX as f64 / 2.0).round() as u64)
}

/// One source's state.
#[derive(Clone, Debug)]
struct Source {
    group: u32,
    stream: u32,
    rng: Rng,
    /// When its next packet is due (`Time::MAX`: none).
    next: Time,
    /// The end of the on period in progress (on/off only).
    on_until: Time,
    /// Admitted packets not yet departed by the last count: (departure, bytes).
    in_queue: VecDeque<(Time, u32)>,
    /// IP bytes that left the bottleneck by the last count.
    delivered: u64,
}

impl Source {
    /// Moves the packets that left the bottleneck by `now` (departures
    /// are in order: the queue is a FIFO) into `delivered`.
    fn count_departed(&mut self, now: Time) {
        while let Some(&(dep, bytes)) = self.in_queue.front() {
            if dep > now {
                break;
            }
            self.delivered += bytes as u64;
            self.in_queue.pop_front();
        }
    }
}

/// Every cross-traffic source of a run.
#[derive(Clone, Debug)]
pub struct CrossTraffic {
    specs: Vec<CrossSpec>,
    sources: Vec<Source>,
    /// Cross packets the bottleneck tail-dropped.
    pub drops: u64,
    /// The same, per group: (group, drops), in the order of `specs`.
    pub group_drops: Vec<(u32, u64)>,
}

impl CrossTraffic {
    /// The sources of `specs`, seeded from `seed`. Each source's first
    /// packet is due at a uniform offset below one packet time after its
    /// group's start, so the streams of a constant group do not send in
    /// lockstep.
    pub fn new(specs: &[CrossSpec], seed: u64) -> CrossTraffic {
        let mut sources = Vec::new();
        for spec in specs {
            let gap = spec.rate.transmit_time(Bytes(spec.frame_bytes as u64));
            for stream in 0..spec.streams {
                let mut rng = Rng::new(seed, CROSS_STREAM + ((spec.group as u64) << 16) + stream as u64);
                let first = spec.start + Time((rng.next_f64() * gap.as_nanos() as f64) as u64);
                let on_until = match spec.pattern {
                    CrossPattern::Constant => Time::MAX,
                    CrossPattern::OnOff { on_mean, shape, .. } => first + pareto(&mut rng, on_mean, shape),
                };
                let next = if first < spec.stop { first } else { Time::MAX };
                sources.push(Source { group: spec.group, stream, rng, next, on_until, in_queue: VecDeque::new(), delivered: 0 });
            }
        }
        CrossTraffic { specs: specs.to_vec(), sources, drops: 0, group_drops: specs.iter().map(|s| (s.group, 0)).collect() }
    }

    fn spec(&self, group: u32) -> &CrossSpec {
        self.specs.iter().find(|s| s.group == group).expect("a source's group")
    }

    /// Offers `bottleneck` every packet due at or before `to`, in time
    /// order (ties: the source first in group and stream order).
    pub fn advance(&mut self, to: Time, bottleneck: &mut Bottleneck) {
        loop {
            let Some((k, at)) = self.sources.iter().enumerate().map(|(k, s)| (k, s.next)).filter(|&(_, t)| t <= to).min_by_key(|&(k, t)| (t, k))
            else {
                return;
            };
            let spec = self.spec(self.sources[k].group).clone();
            let admitted = bottleneck.offer(at, spec.frame_bytes, false);
            let s = &mut self.sources[k];
            // What left by `at` is counted now, so the source holds only
            // its packets still in the bottleneck's queue.
            s.count_departed(at);
            match admitted {
                Some(a) => s.in_queue.push_back((a.departure, spec.packet_bytes)),
                None => {
                    self.drops += 1;
                    if let Some(g) = self.group_drops.iter_mut().find(|g| g.0 == spec.group) {
                        g.1 += 1;
                    }
                }
            }
            let mut next = at + spec.rate.transmit_time(Bytes(spec.frame_bytes as u64));
            if let CrossPattern::OnOff { on_mean, off_mean, shape } = spec.pattern {
                if next >= s.on_until {
                    let on_start = s.on_until + pareto(&mut s.rng, off_mean, shape);
                    s.on_until = on_start + pareto(&mut s.rng, on_mean, shape);
                    next = on_start;
                }
            }
            s.next = if next < spec.stop { next } else { Time::MAX };
        }
    }

    /// Each source's (group, stream, IP bytes that left the bottleneck by
    /// `now`), for sources whose group has started by `now`. Call after
    /// `advance(now)`.
    pub fn delivered(&mut self, now: Time) -> Vec<(u32, u32, u64)> {
        let mut out = Vec::new();
        for s in &mut self.sources {
            if self.specs.iter().any(|c| c.group == s.group && c.start > now) {
                continue;
            }
            s.count_departed(now);
            out.push((s.group, s.stream, s.delivered));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(rate: Rate, pattern: CrossPattern) -> CrossSpec {
        CrossSpec { group: 1, streams: 1, rate, packet_bytes: 1500, frame_bytes: 1514, start: Time::ZERO, stop: Time::MAX, pattern }
    }

    #[test]
    fn pareto_draws_have_the_mean_and_median_asked_for() {
        // Shape 2.5 (finite variance): the sample mean within 5 standard
        // errors; shape 1.5 (infinite variance, the default): the fraction
        // below the median x_m·2^(1/shape) within 5 binomial standard errors.
        let n = 200_000;
        let mut rng = Rng::new(7, 7);
        let mean = Time::from_millis(10);
        let xs: Vec<f64> = (0..n).map(|_| pareto(&mut rng, mean, 2.5).as_secs_f64() * 1e3).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        // Var = x_m² a / ((a − 1)² (a − 2)), x_m = 6 ms, a = 2.5: 80 ms².
        let se = (80.0f64 / n as f64).sqrt();
        assert!((m - 10.0).abs() < 5.0 * se, "mean {m} ms, se {se}");
        let median_ms = 10.0 * 0.5 / 1.5 * 2f64.powf(1.0 / 1.5);
        let below = (0..n).filter(|_| pareto(&mut rng, mean, 1.5).as_secs_f64() * 1e3 < median_ms).count() as f64 / n as f64;
        assert!((below - 0.5).abs() < 5.0 * (0.25 / n as f64).sqrt(), "{below} below the median");
        assert!(xs.iter().all(|&x| x >= 6.0 - 1e-6), "never below the scale x_m");
    }

    #[test]
    fn on_off_periods_have_the_configured_means() {
        // 100 Mbit/s while on, on 5 ms and off 15 ms on average (shape
        // 2.5, whose sample mean obeys the central limit theorem): the
        // long-run rate is 100 × 5/20 = 25 Mbit/s within 5 standard errors
        // of the renewal-reward estimate, and the on periods (runs of
        // back-to-back packets) average 5 ms.
        let rate = Rate::from_mbps(100);
        let pattern = CrossPattern::OnOff { on_mean: Time::from_millis(5), off_mean: Time::from_millis(15), shape: 2.5 };
        let mut cross = CrossTraffic::new(&[spec(rate, pattern)], 3);
        let mut b = Bottleneck::new(Rate::from_gbps(100), Bytes(1 << 40));
        let end = Time::from_secs(400);
        cross.advance(end, &mut b);
        let delivered = cross.delivered(end)[0].2 as f64;
        let packets = delivered / 1500.0;
        let frac_on = packets * 1514.0 * 8.0 / (100e6 * 400.0);
        // Cycles of 20 ms on average: 20 000; on and off periods have
        // variance 80·(5/10)² = 20 ms² and 180 ms²; the ratio's standard
        // error ≈ sqrt(var(on − 0.25·cycle)/n)/20 ms.
        let var = 0.75f64.powi(2) * 20.0 + 0.25f64.powi(2) * 180.0;
        let se = (var / 20_000.0).sqrt() / 20.0;
        assert!((frac_on - 0.25).abs() < 5.0 * se + 1514.0 * 8.0 / 100e6 / 0.020, "on {frac_on}, se {se}");
    }

    #[test]
    fn a_constant_source_sends_at_its_rate_and_stops() {
        let mut s = spec(Rate::from_mbps(12), CrossPattern::Constant);
        s.start = Time::from_secs(1);
        s.stop = Time::from_secs(2);
        let mut cross = CrossTraffic::new(&[s], 1);
        let mut b = Bottleneck::new(Rate::from_gbps(1), Bytes(1 << 30));
        cross.advance(Time::from_millis(999), &mut b);
        assert!(cross.delivered(Time::from_millis(999)).is_empty(), "not started: no row");
        cross.advance(Time::from_secs(5), &mut b);
        // 12 Mbit/s of 1514-byte frames: one per 1.00933 ms, 990 or 991 in the second.
        let packets = cross.delivered(Time::from_secs(5))[0].2 / 1500;
        assert!((990..=991).contains(&packets), "{packets}");
    }

    #[test]
    fn cross_packets_are_dropped_when_the_buffer_is_full() {
        // 20 Mbit/s offered to a 10 Mbit/s link with a 10-packet buffer:
        // about half is dropped, and the queue never holds more than the buffer.
        let mut cross = CrossTraffic::new(&[spec(Rate::from_mbps(20), CrossPattern::Constant)], 1);
        let mut b = Bottleneck::new(Rate::from_mbps(10), Bytes(10 * 1514));
        for ms in 1..=1000 {
            cross.advance(Time::from_millis(ms), &mut b);
            assert!(b.occupancy(Time::from_millis(ms)).1 <= 10 * 1514);
        }
        let sent = 1000 * 20_000_000 / (1514 * 8 * 1000);
        let delivered = cross.delivered(Time::from_secs(1))[0].2 / 1500;
        assert!(cross.drops > sent * 4 / 10 && cross.drops < sent * 6 / 10, "{} of {sent} dropped", cross.drops);
        assert!((delivered as i64 - (sent / 2) as i64).abs() < 20, "{delivered} delivered");
        assert_eq!(cross.drops, b.drops);
        assert_eq!(cross.group_drops, vec![(1, cross.drops)]);
    }
}
