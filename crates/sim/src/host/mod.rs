//! The end hosts: their processing delay (`processing_jitter`, here), their
//! CPU ([`cpu`]: cores, per-packet costs, application threads) and their
//! NIC ceiling ([`nic`]).
//!
//! The processing delay (`processing_jitter`) is what a real host
//! adds between a packet's arrival at its NIC and TCP's handling of it
//! (interrupt and softirq scheduling, the backlog of the CPU that runs the
//! flow). With it, repetitions of a loss-free run differ as real ones do,
//! and stay reproducible per seed.
//!
//! The exponential form is chosen from a measurement (docs/host-model.md,
//! bench/host_processing.py): on fatpipe's kernel backend (Linux 6.18, its
//! emulated path), one thin lossless flow's per-ACK RTT samples exceed the
//! ideal host's by a floor of 64-104 µs (fixed hop costs, not modelled
//! here) plus a variable part of median 50-88, p90 77-185 and p99 163-278
//! µs over five runs; an exponential of 30 µs mean at each end gives that
//! flow 61, 130 and 215 µs. The measured extreme tail (p99.9 0.4-4.7 ms)
//! is longer than an exponential's.
//!
//! Each stream has one [`HostDelay`] per direction it is processed in: at
//! the receiving host for its data segments (or GRO units), at the sending
//! host for its ACKs. A unit arriving at `arrival` is handed to TCP at
//!
//! done_i = max(done_{i-1}, arrival_i + jitter_i),
//!
//! jitter_i exponential with the host's mean, drawn from the stream's own
//! seeded stream (crate::rng), so adding a host or a stream never shifts
//! another's draws. Linux processes one flow's packets in order on one CPU
//! (RPS/RFS and the NIC's RSS hash steer a flow to one queue and one CPU;
//! the socket backlog is drained in order by release_sock /
//! tcp_v4_do_rcv): a later packet never overtakes an earlier one, so the
//! delay never reorders a flow.

use std::collections::VecDeque;

use crate::rng::Rng;

pub mod coalesce;
pub mod cpu;
pub mod nic;
use crate::units::Time;

/// RNG stream label of stream `stream`'s processing at the receiving host
/// (data) and at the sending host (ACKs): one stream per host and stream.
pub fn jitter_stream(stream: u64, at_sender: bool) -> u64 {
    0x4057_0000_0000 + 2 * stream + at_sender as u64
}

/// One host's processing of one stream in one direction: units wait here
/// until their `done` time, in arrival order. A unit is ready when the
/// host's core is done with it (cpu.rs; its arrival on a host without a
/// CPU model), and handed to TCP after its jitter, if the host has one.
#[derive(Clone, Debug)]
pub struct HostDelay<T> {
    rng: Rng,
    /// Mean jitter; 0: none (a CPU model alone holds the units).
    mean_ns: f64,
    /// When the last unit admitted is handed to TCP.
    done: Time,
    held: VecDeque<T>,
}

impl<T> HostDelay<T> {
    /// A host adding an exponential delay of mean `mean` per unit (zero:
    /// no jitter, units are only held until ready).
    pub fn new(mean: Time, rng: Rng) -> HostDelay<T> {
        HostDelay { rng, mean_ns: mean.as_nanos() as f64, done: Time::ZERO, held: VecDeque::new() }
    }

    /// A unit ready at `ready` (its arrival, or when the host's core is
    /// done with it): it is held, and the time at which TCP gets it is
    /// returned (never before an earlier unit's).
    pub fn admit(&mut self, ready: Time, unit: T) -> Time {
        let jitter = if self.mean_ns > 0.0 {
            Time::from_nanos(self.rng.exponential(self.mean_ns).round() as u64)
        } else {
            Time::ZERO
        };
        self.done = self.done.max(ready + jitter);
        self.held.push_back(unit);
        self.done
    }

    /// The oldest unit held: the one whose `done` time has come (units are
    /// released in the order admitted, at non-decreasing times).
    pub fn release(&mut self) -> Option<T> {
        self.held.pop_front()
    }

    /// Units held now.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(seed: u64) -> HostDelay<u32> {
        HostDelay::new(Time::from_micros(50), Rng::new(seed, jitter_stream(0, false)))
    }

    #[test]
    fn done_times_never_decrease_and_never_precede_arrival() {
        let mut h = host(1);
        let mut last = Time::ZERO;
        for k in 0..10_000u32 {
            // Arrivals 1 µs apart: far closer than the mean delay, so
            // later units often draw less and would overtake.
            let arrival = Time::from_micros(k as u64);
            let done = h.admit(arrival, k);
            assert!(done >= arrival && done >= last, "unit {k}: done {done:?} after {last:?}");
            last = done;
        }
        for k in 0..10_000u32 {
            assert_eq!(h.release(), Some(k), "released out of order");
        }
        assert!(h.is_empty());
    }

    #[test]
    fn same_seed_same_delays_and_seeds_differ() {
        let run = |seed| {
            let mut h = host(seed);
            (0..100u32).map(|k| h.admit(Time::from_millis(k as u64), k)).collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn sparse_arrivals_see_the_mean_delay() {
        // Arrivals 10 ms apart never queue behind each other: the mean
        // delay is the distribution's.
        let mut h = host(9);
        let n = 20_000u64;
        let total: u64 = (0..n).map(|k| {
            let arrival = Time::from_millis(10 * k);
            (h.admit(arrival, 0) - arrival).as_nanos()
        }).sum();
        let mean_us = total as f64 / n as f64 / 1e3;
        assert!((mean_us - 50.0).abs() < 2.0, "mean {mean_us} µs");
    }

    #[test]
    fn labels_separate_hosts_and_streams() {
        let labels = [jitter_stream(0, false), jitter_stream(0, true), jitter_stream(1, false), jitter_stream(1, true)];
        for (a, x) in labels.iter().enumerate() {
            for y in &labels[a + 1..] {
                assert_ne!(x, y);
            }
        }
    }
}
