//! The network path: a random-loss stage, one bottleneck FIFO (rate, a
//! byte buffer with tail drop, and a queue discipline, [`Aqm`]) and
//! constant-delay pipes. The bottleneck serves at its rate, at the rates of
//! a schedule (profile.rs) or at a delivery trace's opportunities
//! (trace.rs); cross traffic (cross.rs) is offered to it beside the flows'
//! packets.
//!
//! Neither the bottleneck nor a pipe needs an event per packet: a packet's
//! bottleneck departure is known when it is enqueued
//! (max(arrival, previous departure) + size/rate), so it goes straight into
//! the delay pipe stamped with its arrival time. A pipe is a FIFO that needs
//! one pending event, for its head, however many packets it holds (the
//! htsim pipe idea).

use std::collections::VecDeque;

use crate::fq_codel::FqCodelParams;
use crate::units::{Bytes, Rate, Time};

pub mod cross;
pub mod direction;
pub mod drops;
pub mod dynamics;
pub mod loss;
pub mod policer;
pub mod profile;
pub mod trace;
pub mod trigger;

pub use loss::{loss_stream, LossStage};
use profile::RateProfile;
use trace::TraceService;

/// A service other than one constant rate: the rates of a schedule, or a
/// delivery trace's opportunities.
#[derive(Clone, Debug)]
enum Service {
    Profile(RateProfile),
    Trace(TraceService),
}

/// The bottleneck's queue discipline, chosen when the path is built. Every
/// discipline tail-drops when the byte buffer is full; they differ in what
/// they do to ECN-capable packets they accept. A drop-tail path never looks
/// at the discipline: only an ECT packet asks it (`Bottleneck::offer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Aqm {
    /// Tail drop only; ECT packets pass unmarked.
    #[default]
    DropTail,
    /// DCTCP's recommended switch setting (RFC 8257 §3.1, the DCTCP paper
    /// §3.1): an arriving ECT packet is marked CE when the instantaneous
    /// queue it joins exceeds K. Non-ECT packets are only tail-dropped.
    CeThreshold(CeThreshold),
    /// fq_codel (fq_codel.rs): per-flow queues, DRR, CoDel at dequeue.
    /// The engine serves it through an event when the link frees; the
    /// FIFO `Bottleneck` then only serializes what fq_codel hands it.
    FqCodel(FqCodelParams),
}

/// The threshold K of [`Aqm::CeThreshold`], in one of three measures of
/// the queue an arriving packet finds (including the packet being sent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CeThreshold {
    /// Packets queued.
    Packets(u32),
    /// Bytes queued (frames, as the buffer counts them).
    Bytes(u64),
    /// Queueing delay: the time until the queue ahead of the packet drains.
    Delay(Time),
}

/// A packet the bottleneck accepted: when it leaves, and whether it was
/// marked CE on the way in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admitted {
    pub departure: Time,
    pub ce: bool,
}

/// The admitted prefix of a burst (`Bottleneck::offer_burst`): `packets`
/// back-to-back, the j-th (from 0) leaving at `first_departure + j·spacing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdmittedBurst {
    pub packets: u32,
    pub first_departure: Time,
    pub spacing: Time,
}

/// Back-to-back packets of one size in the bottleneck's queue: the j-th
/// (from 0) departs at `first_departure + j·tx`.
#[derive(Clone, Copy, Debug)]
struct QueuedRun {
    first_departure: Time,
    tx: Time,
    packets: u32,
    bytes: u32,
}

impl QueuedRun {
    /// Packets of the run not yet departed at `now`.
    #[inline(always)]
    fn left_at(&self, now: Time) -> u32 {
        if now < self.first_departure {
            return self.packets;
        }
        if self.tx == Time::ZERO {
            return 0;
        }
        let gone = (now - self.first_departure).0 / self.tx.0 + 1;
        self.packets.saturating_sub(gone.min(u32::MAX as u64) as u32)
    }
}

/// The bottleneck: a FIFO served at `rate` with a tail-drop byte buffer and
/// a queue discipline.
#[derive(Clone, Debug)]
pub struct Bottleneck {
    rate: Rate,
    buffer: u64,
    aqm: Aqm,
    last_departure: Time,
    /// Packets not yet fully sent at the last enqueue, as runs of
    /// back-to-back packets of one size (a burst admitted at one instant
    /// is one entry); the queue occupancy is their byte sum.
    queue: VecDeque<QueuedRun>,
    queued: u64,
    /// Packets in `queue` (what a packet-count threshold compares).
    queued_packets: u64,
    pub drops: u64,
    /// ECT packets marked CE by the discipline.
    pub ce_marks: u64,
    pub bytes_departed: u64,
    /// Total time spent serializing (busy time).
    pub busy: Time,
    /// Cached serialization time of the last packet size seen.
    tx_cache: (u32, Time),
    /// The rate over time when a schedule changes it ([[path.schedule]]),
    /// or a delivery trace (path.trace); `None`: `rate` throughout.
    service: Option<Box<Service>>,
}

impl Bottleneck {
    /// `buffer` below one packet is raised to one packet at enqueue time
    /// (an empty queue always accepts a packet).
    pub fn new(rate: Rate, buffer: Bytes) -> Bottleneck {
        Bottleneck::with_aqm(rate, buffer, Aqm::DropTail)
    }

    /// A bottleneck with queue discipline `aqm`.
    pub fn with_aqm(rate: Rate, buffer: Bytes, aqm: Aqm) -> Bottleneck {
        Bottleneck {
            rate,
            buffer: buffer.get(),
            aqm,
            last_departure: Time::ZERO,
            queue: VecDeque::new(),
            queued: 0,
            queued_packets: 0,
            drops: 0,
            ce_marks: 0,
            bytes_departed: 0,
            busy: Time::ZERO,
            tx_cache: (0, rate.transmit_time(Bytes(0))),
            service: None,
        }
    }

    /// Serves at the rates of `profile` over time instead of one rate
    /// (its first step is the rate from time zero). Packets are then
    /// admitted one at a time: `offer_burst` is for a constant rate.
    pub fn set_rate_profile(&mut self, profile: RateProfile) {
        self.service = Some(Box::new(Service::Profile(profile)));
    }

    /// Serves at `rate` from `at` on (a step a state trigger decided,
    /// path/trigger.rs), up to the next scheduled change. A packet's
    /// departure is fixed when it is admitted, so packets already queued
    /// keep theirs and the new rate serves the packets admitted from now
    /// on, as netem's rate does (sch_netem.c netem_enqueue() computes
    /// time_to_send when a packet is queued). A trace's service has no
    /// rate to change (the plan refuses a rate step with a trace).
    pub fn step_rate(&mut self, at: Time, rate: Rate) {
        match self.service.as_deref_mut() {
            None => self.set_rate_profile(RateProfile::new(profile::Steps::new(self.rate, [(at, rate)]))),
            Some(Service::Profile(p)) => p.insert(at, rate),
            Some(Service::Trace(_)) => debug_assert!(false, "a rate step with a delivery trace"),
        }
    }

    /// Serves at a delivery trace's opportunities (path.trace, trace.rs)
    /// instead of a rate. Packets are admitted one at a time.
    pub fn set_trace(&mut self, trace: TraceService) {
        self.service = Some(Box::new(Service::Trace(trace)));
    }

    /// Offers a non-ECT packet at `now`; returns its departure time, or
    /// `None` if the buffer is full (tail drop).
    #[inline]
    pub fn enqueue(&mut self, now: Time, bytes: u32) -> Option<Time> {
        self.offer(now, bytes, false).map(|a| a.departure)
    }

    /// Offers a packet at `now`, ECN-capable (ECT) or not; returns its
    /// departure and whether the discipline marked it CE, or `None` if the
    /// buffer is full (tail drop).
    #[inline(always)]
    pub fn offer(&mut self, now: Time, bytes: u32, ect: bool) -> Option<Admitted> {
        self.drain(now);
        if self.queued > 0 && self.queued + bytes as u64 > self.buffer {
            self.drops += 1;
            return None;
        }
        // Only an ECT packet consults the discipline (non-ECT traffic on
        // any path, and every packet on a drop-tail path, skips it).
        let ce = ect && self.marks(now);
        self.ce_marks += ce as u64;
        let dep = self.admit(now, bytes, 1);
        Some(Admitted { departure: dep, ce })
    }

    /// Offers `n` non-ECT packets of `bytes` arriving together at `now` (a
    /// TSO burst): the same as `n` calls of `offer(now, bytes, false)`, in
    /// one step. Packets arriving at one instant find the queue only
    /// growing, so the buffer admits a prefix of the burst and tail-drops
    /// the rest.
    #[inline]
    pub fn offer_burst(&mut self, now: Time, bytes: u32, n: u32) -> AdmittedBurst {
        debug_assert!(self.service.is_none(), "a burst's spacing needs a constant rate");
        self.drain(now);
        let b = bytes as u64;
        // Packet j is admitted iff the queue it finds is empty or it fits:
        // queued + (j + 1)·bytes <= buffer (the check of `offer`).
        let fit = if self.queued + b <= self.buffer { (self.buffer - self.queued) / b } else { 0 };
        let fit = if self.queued == 0 { fit.max(1) } else { fit };
        let k = fit.min(n as u64) as u32;
        self.drops += (n - k) as u64;
        if k == 0 {
            return AdmittedBurst { packets: 0, first_departure: Time::ZERO, spacing: Time::ZERO };
        }
        let last = self.admit(now, bytes, k);
        let spacing = self.tx_time(bytes);
        AdmittedBurst { packets: k, first_departure: last - spacing.mul((k - 1) as u64), spacing }
    }

    /// Serialization time of a `bytes` frame (cached for the last size).
    #[inline(always)]
    fn tx_time(&mut self, bytes: u32) -> Time {
        if self.tx_cache.0 != bytes {
            self.tx_cache = (bytes, self.rate.transmit_time(Bytes(bytes as u64)));
        }
        self.tx_cache.1
    }

    /// Forgets packets fully sent by `now`; a run partly sent keeps the
    /// packets still to go.
    #[inline(always)]
    fn drain(&mut self, now: Time) {
        while let Some(r) = self.queue.front_mut() {
            if r.first_departure > now {
                break;
            }
            // Packets of the run with departure <= now have left.
            let gone = r.packets - r.left_at(now);
            self.queued -= gone as u64 * r.bytes as u64;
            self.queued_packets -= gone as u64;
            if gone == r.packets {
                self.queue.pop_front();
            } else {
                r.packets -= gone;
                r.first_departure += r.tx.mul(gone as u64);
            }
        }
    }

    /// Queues `n` packets of `bytes` behind the last departure; returns
    /// the last one's departure.
    #[inline(always)]
    fn admit(&mut self, now: Time, bytes: u32, n: u32) -> Time {
        if self.service.is_some() {
            return self.admit_served(now, bytes, n);
        }
        let tx = self.tx_time(bytes);
        let first = self.last_departure.max(now) + tx;
        let last = first + tx.mul((n - 1) as u64);
        self.last_departure = last;
        self.queue.push_back(QueuedRun { first_departure: first, tx, packets: n, bytes });
        let total = n as u64 * bytes as u64;
        self.queued += total;
        self.queued_packets += n as u64;
        self.bytes_departed += total;
        self.busy += tx.mul(n as u64);
        last
    }

    /// `admit` on a rate that changes or a trace: each packet is served
    /// from when the link frees at the rates in effect meanwhile
    /// (RateProfile::finish), or leaves at the opportunity the trace gives
    /// it (TraceService::serve), and is queued as a run of its own.
    #[cold]
    #[inline(never)]
    fn admit_served(&mut self, now: Time, bytes: u32, n: u32) -> Time {
        let service = self.service.as_deref_mut().expect("served");
        for _ in 0..n {
            let start = self.last_departure.max(now);
            let done = match service {
                Service::Profile(profile) => profile.finish(start, bytes),
                Service::Trace(trace) => trace.serve(now, bytes).max(start),
            };
            self.queue.push_back(QueuedRun { first_departure: done, tx: done - start, packets: 1, bytes });
            self.last_departure = done;
            self.busy += done - start;
        }
        let total = n as u64 * bytes as u64;
        self.queued += total;
        self.queued_packets += n as u64;
        self.bytes_departed += total;
        self.last_departure
    }

    /// Whether the discipline marks an ECT packet arriving at `now` (the
    /// queue already drained to `now`, the packet not yet in it).
    #[inline]
    fn marks(&self, now: Time) -> bool {
        match self.aqm {
            Aqm::DropTail | Aqm::FqCodel(_) => false,
            Aqm::CeThreshold(k) => match k {
                CeThreshold::Packets(n) => self.queued_packets > n as u64,
                CeThreshold::Bytes(b) => self.queued > b,
                CeThreshold::Delay(d) => self.last_departure.saturating_sub(now) > d,
            },
        }
    }

    /// The queue at `now` (packets, bytes), including the packet being
    /// serialized: what a packet arriving at `now` would find. For tests
    /// and observers; costs a walk of the queue.
    pub fn occupancy(&self, now: Time) -> (usize, u64) {
        self.queue.iter().fold((0, 0), |(n, b), r| {
            let left = r.left_at(now) as usize;
            (n + left, b + left as u64 * r.bytes as u64)
        })
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

    /// Inserts an item arriving at `at` behind every item arriving no
    /// later (a path that reorders: an item may overtake ones pushed
    /// before it).
    pub fn push_sorted(&mut self, at: Time, item: T) {
        if self.q.back().is_none_or(|b| b.0 <= at) {
            self.q.push_back((at, item));
        } else {
            let k = self.q.partition_point(|x| x.0 <= at);
            self.q.insert(k, (at, item));
        }
    }

    /// Puts an item due at `at` (no later than any held) at the head,
    /// behind the leading items for which `leading` holds (so items put
    /// back this way leave in the order they were put back).
    pub fn insert_behind(&mut self, at: Time, item: T, leading: impl Fn(&T) -> bool) {
        debug_assert!(self.q.front().is_none_or(|f| at <= f.0));
        let k = self.q.iter().take_while(|x| leading(&x.1)).count();
        self.q.insert(k, (at, item));
    }

    /// Arrival time of the head, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.q.front().map(|x| x.0)
    }

    /// The head's arrival time and item, to change in place (a head that
    /// stands for several arrivals moves on to the next of them).
    #[inline]
    pub fn front_mut(&mut self) -> Option<(&mut Time, &mut T)> {
        self.q.front_mut().map(|x| (&mut x.0, &mut x.1))
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

    fn ce_path(k: CeThreshold) -> Bottleneck {
        // 10 Gbit/s: a 1500-byte frame takes 1.2 µs.
        Bottleneck::with_aqm(Rate::from_gbps(10), Bytes(1_000_000), Aqm::CeThreshold(k))
    }

    /// Offers `n` back-to-back packets at t = 0 and returns which were marked.
    fn marks_of_burst(b: &mut Bottleneck, n: usize, ect: bool) -> Vec<bool> {
        (0..n).map(|_| b.offer(Time(0), 1500, ect).expect("room").ce).collect()
    }

    #[test]
    fn ce_threshold_in_packets_marks_ect_arrivals_finding_more_than_k_queued() {
        let mut b = ce_path(CeThreshold::Packets(3));
        // Arrivals find 0, 1, 2, 3 packets (unmarked), then 4, 5 (> K).
        assert_eq!(marks_of_burst(&mut b, 6, true), [false, false, false, false, true, true]);
        assert_eq!(b.ce_marks, 2);
    }

    #[test]
    fn ce_threshold_in_bytes_marks_when_queued_bytes_exceed_k() {
        let mut b = ce_path(CeThreshold::Bytes(4000));
        // Queued before each arrival: 0, 1500, 3000, 4500 > 4000.
        assert_eq!(marks_of_burst(&mut b, 4, true), [false, false, false, true]);
    }

    #[test]
    fn ce_threshold_in_time_marks_when_the_queue_delay_exceeds_k() {
        let mut b = ce_path(CeThreshold::Delay(Time::from_nanos(2500)));
        // Queue delay found: 0, 1.2, 2.4, 3.6 µs.
        assert_eq!(marks_of_burst(&mut b, 4, true), [false, false, false, true]);
        // The queue drains: at 3.6 µs one packet (1.2 µs) remains.
        assert!(!b.offer(Time(3600), 1500, true).unwrap().ce);
    }

    #[test]
    fn ce_threshold_never_marks_non_ect_packets_and_tail_drops_them() {
        let mut b = Bottleneck::with_aqm(Rate::from_gbps(10), Bytes(3000), Aqm::CeThreshold(CeThreshold::Packets(0)));
        assert_eq!(marks_of_burst(&mut b, 2, false), [false, false]);
        assert_eq!(b.offer(Time(0), 1500, false), None);
        assert_eq!((b.ce_marks, b.drops), (0, 1));
    }

    #[test]
    fn drop_tail_passes_ect_packets_unmarked() {
        let mut b = Bottleneck::new(Rate::from_gbps(10), Bytes(1_000_000));
        assert!(marks_of_burst(&mut b, 50, true).iter().all(|&m| !m));
    }

    #[test]
    fn occupancy_counts_packets_not_yet_departed() {
        let mut b = ce_path(CeThreshold::Packets(100));
        marks_of_burst(&mut b, 3, true);
        assert_eq!(b.occupancy(Time(0)), (3, 4500));
        assert_eq!(b.occupancy(Time(1200)), (2, 3000));
    }

    #[test]
    fn a_burst_is_admitted_and_tail_dropped_as_its_packets_would_be_one_by_one() {
        // Bursts arriving into a queue that drains between them, some
        // finding it part-way through a burst's departures.
        let arrivals = [(0u64, 5u32), (0, 3), (2_500, 4), (3_000, 40), (60_000, 2), (61_300, 6), (200_000, 1)];
        let mut one = Bottleneck::new(Rate::from_gbps(10), Bytes(10_000));
        let mut burst = Bottleneck::new(Rate::from_gbps(10), Bytes(10_000));
        for &(t, n) in &arrivals {
            let deps: Vec<Time> = (0..n).filter_map(|_| one.enqueue(Time(t), 1500)).collect();
            let a = burst.offer_burst(Time(t), 1500, n);
            let burst_deps: Vec<Time> = (0..a.packets).map(|j| a.first_departure + a.spacing.mul(j as u64)).collect();
            assert_eq!(deps, burst_deps, "burst at {t}");
            assert_eq!(one.drops, burst.drops);
            assert_eq!(one.occupancy(Time(t + 1_000)), burst.occupancy(Time(t + 1_000)));
        }
        assert!(one.drops > 0);
    }

    #[test]
    fn a_rate_step_changes_the_bottlenecks_service_at_the_scheduled_instant() {
        // 10 Gbit/s, then 1 Gbit/s from 5 µs: 1500-byte frames take 1.2 µs, then 12 µs.
        let mut b = Bottleneck::new(Rate::from_gbps(10), Bytes(1_000_000));
        b.set_rate_profile(RateProfile::new(profile::Steps::new(Rate::from_gbps(10), [(Time(5_000), Rate::from_gbps(1))])));
        let deps: Vec<Time> = (0..6).map(|_| b.enqueue(Time(0), 1500).expect("room")).collect();
        // Four leave by 4.8 µs; the fifth starts at 4.8 µs, sends 250 bytes
        // in 0.2 µs at 10 Gbit/s and 1250 at 1 Gbit/s (10 µs).
        assert_eq!(deps, [Time(1_200), Time(2_400), Time(3_600), Time(4_800), Time(15_000), Time(27_000)]);
        assert_eq!(b.occupancy(Time(4_800)), (2, 3000));
        assert_eq!(b.occupancy(Time(27_000)), (0, 0));
    }

    #[test]
    fn a_trace_serves_the_bottleneck_whose_buffer_still_tail_drops() {
        // One opportunity every 2 ms; a buffer of three 1514-byte frames.
        let mut b = Bottleneck::new(Rate::from_gbps(1), Bytes(3 * 1514));
        b.set_trace(TraceService::new(trace::DeliveryTrace::from_timestamps(&[2]).unwrap(), 14));
        let deps: Vec<Option<Time>> = (0..4).map(|_| b.enqueue(Time::ZERO, 1514)).collect();
        let ms = Time::from_millis;
        assert_eq!(deps, [Some(ms(2)), Some(ms(4)), Some(ms(6)), None]);
        assert_eq!(b.occupancy(ms(2)), (2, 2 * 1514), "the first left at its opportunity");
        assert_eq!(b.enqueue(ms(3), 1514), Some(ms(8)), "room again behind the queue");
        assert_eq!(b.drops, 1);
    }

    #[test]
    fn a_pipe_that_reorders_delivers_by_arrival_time() {
        let mut p: Pipe<u32> = Pipe::default();
        for (at, x) in [(10u64, 1u32), (30, 2), (20, 3), (30, 4), (5, 5)] {
            p.push_sorted(Time(at), x);
        }
        let order: Vec<u32> = std::iter::from_fn(|| p.pop_front()).collect();
        assert_eq!(order, [5, 1, 3, 2, 4]);
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
