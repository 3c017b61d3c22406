//! The end hosts' CPU (`cpu_cores` and the per-packet costs, issue P1.2):
//! what a host's cores spend on each packet, byte, ACK, SACK block and
//! timer, and how a busy core delays the work queued behind it.
//!
//! A host's streams run on its cores by application thread: stream `k` of
//! the host is served by thread `k mod app_threads` (one thread per stream
//! unless `app_threads` is set; iperf3 before 3.16 ran one thread for all
//! its streams), thread `t` on core `(offset + t) mod cores`. All of a
//! stream's work at that host runs on its thread's core: the application's
//! copies, and the softirq work of its packets, which Receive Flow
//! Steering places on the CPU where the consuming thread last ran (Linux
//! Documentation/networking/scaling.rst, "RFS"). Hosts that name the same
//! `machine` share its cores, their threads placed one after another.
//!
//! A core serves its work in arrival order, one item at a time
//! ([`Core`]): a data unit reaching the receiver, an ACK reaching the
//! sender, a sender timer that fires. An item ready at `t` with cost `c`
//! starts at `max(t, free)` and is handed to TCP when done; the sends TCP
//! makes then are booked on the core before the next item starts (the
//! packets leave at the instant TCP emits them, the core stays busy for
//! their cost), as one softirq pass handles an ACK and the transmissions
//! it clocks out. So a saturated core stretches the flow's ACK clock
//! (ACK compression) and caps its rate. Received packets beyond the
//! receive ring while the core is behind are dropped, as a NIC drops what
//! its full ring cannot take (`rx_missed_errors`).

use std::collections::VecDeque;

use crate::units::Time;

/// CPU time of each kind of work, as the host profile gives it
/// (docs/host-model.md lists each value's source). Byte costs are in
/// picoseconds per byte, the rest in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuCosts {
    /// Per packet handed to the device: one TSO/GSO packet or a single
    /// segment (tcp_transmit_skb down to the driver's xmit).
    pub send_packet_ns: u64,
    /// Per payload byte sent (the application's copy into the socket,
    /// checksum where not offloaded).
    pub send_byte_ps: u64,
    /// Per wire packet received (driver, NAPI, GRO's per-packet work).
    pub receive_packet_ns: u64,
    /// Per unit handed to TCP (a GRO super-packet, or one packet without
    /// GRO): tcp_v4_rcv, the ACK it sends.
    pub receive_unit_ns: u64,
    /// Per payload byte received (the copy to the application).
    pub receive_byte_ps: u64,
    /// Per ACK the sender processes (tcp_ack, clean_rtx_queue).
    pub ack_ns: u64,
    /// Per SACK block of an ACK (tcp_sacktag_write_queue).
    pub sack_block_ns: u64,
    /// Per sender timer that fires (RTO, TLP, RACK reordering, pacing).
    pub timer_ns: u64,
    /// Per segment of the retransmission queue an ACK's SACK processing
    /// walks, when the host keeps that queue as a linked list (Linux
    /// before 4.15, `rtx_queue = "list"`; [`list_walk_segments`]); 0 for
    /// the rb-tree of 4.15 and later, which finds a block in O(log n).
    pub rtx_walk_ps: u64,
}

impl CpuCosts {
    /// Sending `segments` segments of `mss` payload bytes in one packet.
    #[inline]
    pub fn send(&self, segments: u32, mss: u32) -> Time {
        let bytes = segments as u64 * mss as u64;
        Time::from_nanos(self.send_packet_ns + (bytes * self.send_byte_ps).div_ceil(1000))
    }

    /// Receiving one unit of `segments` wire packets of `mss` payload bytes.
    #[inline]
    pub fn receive(&self, segments: u32, mss: u32) -> Time {
        let bytes = segments as u64 * mss as u64;
        Time::from_nanos(
            self.receive_unit_ns + segments as u64 * self.receive_packet_ns + (bytes * self.receive_byte_ps).div_ceil(1000),
        )
    }

    /// Processing one ACK carrying `sack_blocks` SACK blocks, whose SACK
    /// processing walks `walked` segments of a list retransmission queue.
    #[inline]
    pub fn ack(&self, sack_blocks: usize, walked: u64) -> Time {
        Time::from_nanos(self.ack_ns + sack_blocks as u64 * self.sack_block_ns + (walked * self.rtx_walk_ps).div_ceil(1000))
    }
}

/// Where a stream's work runs at one host: a core of a machine, with the
/// host's costs and receive ring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuSeat {
    pub machine: u32,
    pub core: u32,
    pub costs: CpuCosts,
    /// Packets the receive ring holds while the core is behind.
    pub rx_ring_packets: u32,
}

/// A unit of work waiting for a core: what it is, for which stream, when
/// it can start, what it costs and how many received packets it holds in
/// the ring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work<K> {
    pub stream: u32,
    pub kind: K,
    pub ready: Time,
    pub cost: Time,
    pub ring_packets: u32,
}

/// One core: its queue of work, served one item at a time in arrival
/// order. An item starts at `max(ready, free)`; the core is `free` again
/// once the item and the sends it triggers (booked when it is done) are
/// through, and only then does the next item start, so an ACK's sends
/// keep the next ACK waiting as in a real softirq loop.
#[derive(Clone, Debug)]
pub struct Core<K> {
    free: Time,
    busy: Time,
    /// An item has started and is not done yet.
    serving: bool,
    queue: VecDeque<Work<K>>,
    /// Received packets waiting in the ring (queued or being processed).
    ring_packets: u32,
}

impl<K> Default for Core<K> {
    fn default() -> Self {
        Core { free: Time::ZERO, busy: Time::ZERO, serving: false, queue: VecDeque::new(), ring_packets: 0 }
    }
}

impl<K: Copy> Core<K> {
    /// Work of `cost` done outside the queue (sends an event made), from
    /// `at` or once the core is free.
    #[inline]
    pub fn book(&mut self, at: Time, cost: Time) {
        self.free = self.free.max(at) + cost;
        self.busy += cost;
    }

    /// CPU time spent so far.
    pub fn busy(&self) -> Time {
        self.busy
    }

    /// Whether an item is being served or waiting.
    pub fn is_busy(&self) -> bool {
        self.serving || !self.queue.is_empty()
    }

    /// Whether the ring (`ring_capacity` packets) has room for a unit of
    /// `packets` received packets. An empty ring takes a unit larger than
    /// itself (a real ring would have taken a GRO unit's packets one by
    /// one).
    pub fn ring_has_room(&self, packets: u32, ring_capacity: u32) -> bool {
        self.ring_packets == 0 || self.ring_packets + packets <= ring_capacity
    }

    /// Queues `work` (the caller checked the ring's room).
    pub fn enqueue(&mut self, work: Work<K>) {
        self.ring_packets += work.ring_packets;
        self.queue.push_back(work);
    }

    /// Starts the next item if the core is idle: returns it and when it
    /// is done (its start is `max(now, ready, free)`).
    pub fn start_next(&mut self, now: Time) -> Option<(Work<K>, Time)> {
        if self.serving {
            return None;
        }
        let w = *self.queue.front()?;
        self.serving = true;
        let start = now.max(w.ready).max(self.free);
        self.free = start + w.cost;
        self.busy += w.cost;
        Some((w, self.free))
    }

    /// The item being served is done: it leaves the queue (and its
    /// packets the ring).
    pub fn finish(&mut self) -> Option<Work<K>> {
        self.serving = false;
        let w = self.queue.pop_front()?;
        self.ring_packets -= w.ring_packets;
        Some(w)
    }
}

/// The cores of every machine of a run.
#[derive(Clone, Debug)]
pub struct Machines<K> {
    cores: Vec<Vec<Core<K>>>,
}

impl<K: Copy> Machines<K> {
    /// Machines with these numbers of cores.
    pub fn new(cores: &[u32]) -> Machines<K> {
        Machines { cores: cores.iter().map(|&n| vec![Core::default(); n as usize]).collect() }
    }

    #[inline]
    pub fn core(&mut self, seat: &CpuSeat) -> &mut Core<K> {
        &mut self.cores[seat.machine as usize][seat.core as usize]
    }

    /// CPU time booked on each core of each machine.
    pub fn busy(&self) -> Vec<Vec<Time>> {
        self.cores.iter().map(|m| m.iter().map(|c| c.busy()).collect()).collect()
    }
}

/// Core (within its machine) of a host's `k`-th stream: thread
/// `k mod app_threads` (`None`: a thread per stream), the host's threads
/// placed from `offset` on (hosts sharing a machine come one after
/// another).
pub fn core_of(k: u32, app_threads: Option<u32>, offset: u32, cores: u32) -> u32 {
    let thread = app_threads.map_or(k, |t| k % t);
    (offset + thread) % cores
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(stream: u32, ready_us: u64, cost_us: u64, ring_packets: u32) -> Work<()> {
        Work { stream, kind: (), ready: Time::from_micros(ready_us), cost: Time::from_micros(cost_us), ring_packets }
    }

    #[test]
    fn a_core_serves_in_order_one_at_a_time_and_never_before_ready() {
        let mut c = Core::default();
        c.enqueue(work(0, 10, 5, 0));
        c.enqueue(work(1, 12, 5, 0));
        let (w, done) = c.start_next(Time::from_micros(10)).unwrap();
        assert_eq!((w.stream, done), (0, Time::from_micros(15)));
        // One item at a time.
        assert!(c.start_next(Time::from_micros(11)).is_none());
        c.finish();
        // The first item's sends keep the core busy 3 µs more.
        c.book(Time::from_micros(15), Time::from_micros(3));
        let (w, done) = c.start_next(Time::from_micros(15)).unwrap();
        assert_eq!((w.stream, done), (1, Time::from_micros(23)));
        c.finish();
        assert!(!c.is_busy());
        assert_eq!(c.busy(), Time::from_micros(13));
    }

    #[test]
    fn the_ring_holds_what_waits_for_the_core() {
        let mut c = Core::default();
        for k in 0..3 {
            assert!(c.ring_has_room(1, 3));
            c.enqueue(work(0, k, 10, 1));
        }
        assert!(!c.ring_has_room(1, 3), "a full ring of 3 has room for a fourth packet");
        c.start_next(Time::ZERO);
        assert!(!c.ring_has_room(1, 3), "the packet being processed still holds its slot");
        c.finish();
        assert!(c.ring_has_room(1, 3), "room again once one is processed");
        // An empty ring takes a unit larger than itself.
        let empty: Core<()> = Core::default();
        assert!(empty.ring_has_room(64, 16));
    }

    #[test]
    fn threads_map_to_cores() {
        // One thread for all: every stream on the first core.
        assert!((0..8).all(|k| core_of(k, Some(1), 0, 4) == 0));
        // A thread per stream: round robin over the cores.
        assert_eq!((0..6).map(|k| core_of(k, None, 0, 4)).collect::<Vec<_>>(), [0, 1, 2, 3, 0, 1]);
        // A second host on the same machine continues after the first's threads.
        assert_eq!((0..2).map(|k| core_of(k, None, 1, 2)).collect::<Vec<_>>(), [1, 0]);
    }

    #[test]
    fn costs_add_up() {
        let c = CpuCosts { send_packet_ns: 1000, send_byte_ps: 100, receive_packet_ns: 500, receive_unit_ns: 2000,
                           receive_byte_ps: 200, ack_ns: 700, sack_block_ns: 300, timer_ns: 0, rtx_walk_ps: 0 };
        assert_eq!(c.send(10, 1448), Time::from_nanos(1000 + 1448));
        assert_eq!(c.receive(4, 1000), Time::from_nanos(2000 + 4 * 500 + 800));
        assert_eq!(c.ack(2, 0), Time::from_nanos(1300));
        let listed = CpuCosts { rtx_walk_ps: 50_000, ..c };
        assert_eq!(listed.ack(2, 1000), Time::from_nanos(1300 + 50_000));
    }
}
