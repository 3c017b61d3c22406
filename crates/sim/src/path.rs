//! The network path: a random-loss stage, one bottleneck FIFO (rate and a
//! drop-tail byte buffer) and constant-delay pipes.
//!
//! Neither the bottleneck nor a pipe needs an event per packet: a packet's
//! bottleneck departure is known when it is enqueued
//! (max(arrival, previous departure) + size/rate), so it goes straight into
//! the delay pipe stamped with its arrival time. A pipe is a FIFO that needs
//! one pending event, for its head, however many packets it holds (the
//! htsim pipe idea).

use std::collections::VecDeque;

use crate::rng::Rng;
use crate::units::{Bytes, Rate, Time};

/// Random per-packet loss whose cost grows with losses, not packets: the gap
/// to the next loss is drawn geometrically.
#[derive(Clone, Debug)]
pub struct LossStage {
    p: f64,
    rng: Rng,
    /// Packets still to pass before the next loss.
    gap: u64,
}

impl LossStage {
    pub fn new(p: f64, rng: Rng) -> LossStage {
        let mut s = LossStage { p, rng, gap: 0 };
        s.gap = s.rng.geometric(p);
        s
    }

    /// Whether the next packet is lost.
    #[inline]
    pub fn lose(&mut self) -> bool {
        if self.gap > 0 {
            if self.gap != u64::MAX {
                self.gap -= 1;
            }
            return false;
        }
        self.gap = self.rng.geometric(self.p);
        true
    }
}

/// The bottleneck: a FIFO served at `rate` with a drop-tail byte buffer.
#[derive(Clone, Debug)]
pub struct Bottleneck {
    rate: Rate,
    buffer: u64,
    last_departure: Time,
    /// (departure time, bytes) of packets not yet fully sent at the last
    /// enqueue; the queue occupancy is their byte sum.
    queue: VecDeque<(Time, u32)>,
    queued: u64,
    pub drops: u64,
    pub bytes_departed: u64,
    /// Total time spent serializing (busy time).
    pub busy: Time,
    /// Cached serialization time of the last packet size seen.
    tx_cache: (u32, Time),
}

impl Bottleneck {
    /// `buffer` below one packet is raised to one packet at enqueue time
    /// (an empty queue always accepts a packet).
    pub fn new(rate: Rate, buffer: Bytes) -> Bottleneck {
        Bottleneck {
            rate,
            buffer: buffer.get(),
            last_departure: Time::ZERO,
            queue: VecDeque::new(),
            queued: 0,
            drops: 0,
            bytes_departed: 0,
            busy: Time::ZERO,
            tx_cache: (0, rate.transmit_time(Bytes(0))),
        }
    }

    /// Offers a packet at `now`; returns its departure time, or `None` if
    /// the buffer is full (drop-tail).
    #[inline]
    pub fn enqueue(&mut self, now: Time, bytes: u32) -> Option<Time> {
        while let Some(&(dep, b)) = self.queue.front() {
            if dep > now {
                break;
            }
            self.queued -= b as u64;
            self.queue.pop_front();
        }
        if self.queued > 0 && self.queued + bytes as u64 > self.buffer {
            self.drops += 1;
            return None;
        }
        if self.tx_cache.0 != bytes {
            self.tx_cache = (bytes, self.rate.transmit_time(Bytes(bytes as u64)));
        }
        let tx = self.tx_cache.1;
        let dep = self.last_departure.max(now) + tx;
        self.last_departure = dep;
        self.queue.push_back((dep, bytes));
        self.queued += bytes as u64;
        self.bytes_departed += bytes as u64;
        self.busy += tx;
        Some(dep)
    }

    /// Bytes queued (including the packet being serialized) at the last
    /// enqueue.
    pub fn queued_bytes(&self) -> u64 {
        self.queued
    }

    /// Mean throughput through the bottleneck over `run`: bytes departed
    /// over the run's duration (the same measure the kernel backend reports).
    pub fn mean_rate(&self, run: Time) -> Option<f64> {
        if run == Time::ZERO {
            None
        } else {
            Some(self.bytes_departed as f64 * 8.0 / run.as_secs_f64())
        }
    }
}

/// A constant-delay FIFO pipe. Items carry their arrival time, which never
/// decreases along the pipe; the event loop polls the head instead of
/// keeping an event per item.
#[derive(Clone, Debug)]
pub struct Pipe<T> {
    q: VecDeque<(Time, T)>,
}

impl<T> Default for Pipe<T> {
    fn default() -> Self {
        Pipe { q: VecDeque::new() }
    }
}

impl<T: Copy> Pipe<T> {
    /// Appends an item arriving at `at` (arrival times must not decrease).
    #[inline]
    pub fn push(&mut self, at: Time, item: T) {
        debug_assert!(self.q.back().is_none_or(|b| b.0 <= at));
        self.q.push_back((at, item));
    }

    /// Arrival time of the head, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.q.front().map(|x| x.0)
    }

    /// Pops the head.
    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        self.q.pop_front().map(|x| x.1)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bottleneck_serializes_back_to_back_and_drops_when_buffer_full() {
        let mut b = Bottleneck::new(Rate::from_gbps(10), Bytes(3000));
        assert_eq!(b.enqueue(Time(0), 1500), Some(Time(1200)));
        assert_eq!(b.enqueue(Time(0), 1500), Some(Time(2400)));
        assert_eq!(b.enqueue(Time(0), 1500), None);
        assert_eq!(b.drops, 1);
        // After the first departed, there is room again.
        assert_eq!(b.enqueue(Time(1200), 1500), Some(Time(3600)));
    }

    #[test]
    fn loss_stage_drops_about_p_of_packets() {
        let mut l = LossStage::new(0.01, Rng::new(3, 9));
        let lost = (0..1_000_000).filter(|_| l.lose()).count();
        assert!((9_000..11_000).contains(&lost), "{lost}");
    }

    #[test]
    fn pipe_delivers_in_arrival_order() {
        let mut p: Pipe<u32> = Pipe::default();
        p.push(Time(10), 1);
        p.push(Time(11), 2);
        assert_eq!(p.peek_time(), Some(Time(10)));
        assert_eq!(p.pop_front(), Some(1));
        assert_eq!(p.peek_time(), Some(Time(11)));
    }
}
