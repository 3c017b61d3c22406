//! The event queue: a binary heap ordered by (time, seq), compared as one
//! u128. `seq` increases monotonically on every push, so events at equal
//! times run in the order they were scheduled and the simulation is
//! deterministic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::units::Time;

/// A timer of the sending TCP (icsk timers and the pacing hrtimer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderTimer {
    /// Retransmission timer slot (RTO or TLP, like icsk_retransmit_timer).
    Rto,
    /// RACK reordering timer (ICSK_TIME_REO_TIMEOUT).
    Reo,
    /// Pacing timer (tcp_pacing_check's hrtimer).
    Pace,
}

/// A timer of the receiving TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiverTimer {
    /// Delayed-ACK timer (ICSK_TIME_DACK).
    DelAck,
    /// SACK-compression timer (tp->compressed_ack_timer).
    SackCompress,
}

/// A timer of the stream's application (app.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppTimer {
    /// The stream's application starts (connection established).
    Start,
    /// An RPC request reaches the server (the sender's host).
    RpcRequest,
    /// The next open-loop RPC is issued by the client.
    RpcIssue,
    /// An application-limited writer's tick (app_rate.rs).
    Write,
}

/// A unit an end host held for processing (host.rs) is handed to TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostStep {
    /// The receiving host's next held data segment or GRO unit.
    Data,
    /// The sending host's next held ACK.
    Ack,
    /// A sender timer that waited for its stream's busy core (host/cpu.rs).
    Timer(SenderTimer),
}

/// Which timer of a stream an event belongs to, by owner: the engine hands
/// each event to its owner without knowing the kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    Sender(SenderTimer),
    Receiver(ReceiverTimer),
    App(AppTimer),
    Host(HostStep),
}

/// What the heap schedules. Packets in flight are not events: the delay
/// pipes are polled by the event loop (engine.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A timer of stream `n`.
    Timer(u32, TimerKind),
    /// Periodic sampling of every stream.
    Sample,
    /// The bottleneck link finished a packet: a dequeue-driven discipline
    /// (fq_codel) hands it the next one. At most one is pending.
    LinkFree,
    /// A host's receive interrupt (host/coalesce.rs): 0 the receiver's,
    /// `k + 1` sender host `k`'s.
    Interrupt(u32),
}

/// A pending event and its order: time in the high 64 bits, push order
/// (seq) in the low ones, compared as one u128.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    ev: Event,
}

impl Entry {
    #[inline(always)]
    fn time(&self) -> Time {
        Time((self.key >> 64) as u64)
    }
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed so that BinaryHeap (a max-heap) pops the earliest first.
    #[inline(always)]
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    /// Events popped so far (for statistics).
    pub popped: u64,
    /// Largest number of pending events seen.
    pub max_len: usize,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, at: Time, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry { key: ((at.0 as u128) << 64) | self.seq as u128, ev });
        self.max_len = self.max_len.max(self.heap.len());
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((e.time(), e.ev))
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(Entry::time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// A one-shot timer that keeps at most one useful pending heap event:
/// re-arming later (as TCP does for the RTO on every ACK) only moves the
/// deadline; the pending event reschedules itself when it fires early.
#[derive(Clone, Copy, Debug)]
pub struct Timer {
    deadline: Time,
    pending: Time,
}

impl Default for Timer {
    fn default() -> Self {
        Timer { deadline: Time::MAX, pending: Time::MAX }
    }
}

impl Timer {
    /// Sets the deadline; returns the time at which a heap event must be
    /// pushed, if one is needed.
    #[must_use]
    pub fn arm(&mut self, at: Time) -> Option<Time> {
        self.deadline = at;
        if at < self.pending {
            self.pending = at;
            Some(at)
        } else {
            None
        }
    }

    pub fn disarm(&mut self) {
        self.deadline = Time::MAX;
    }

    pub fn is_armed(&self) -> bool {
        self.deadline != Time::MAX
    }

    pub fn deadline(&self) -> Time {
        self.deadline
    }

    /// Called when a heap event of this timer pops at `now`, or runs late
    /// (a busy host's core delayed it: host/cpu.rs). Returns (whether the
    /// timer expires now, a time at which to push a new event). The
    /// pending event is this one if it was due by now: events pop in time
    /// order, so an earlier one would have popped already.
    #[must_use]
    pub fn on_event(&mut self, now: Time) -> (bool, Option<Time>) {
        if self.pending <= now {
            self.pending = Time::MAX;
        }
        if self.deadline <= now {
            self.deadline = Time::MAX;
            return (true, None);
        }
        if self.deadline != Time::MAX && self.pending == Time::MAX {
            self.pending = self.deadline;
            return (false, Some(self.deadline));
        }
        (false, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_push_order() {
        let mut q = EventQueue::new();
        let rto = TimerKind::Sender(SenderTimer::Rto);
        q.push(Time(5), Event::Timer(1, rto));
        q.push(Time(5), Event::Timer(2, rto));
        q.push(Time(3), Event::Sample);
        assert_eq!(q.pop().unwrap().1, Event::Sample);
        assert_eq!(q.pop().unwrap().1, Event::Timer(1, rto));
        assert_eq!(q.pop().unwrap().1, Event::Timer(2, rto));
    }

    #[test]
    fn pops_in_time_then_push_order_under_interleaving() {
        // Against a sort of the same entries: pushes and pops interleaved,
        // times drawn from a small range so that many are equal.
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u32)> = Vec::new();
        let mut x: u64 = 12345;
        let mut next_id = 0u32;
        for step in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if step % 3 != 2 || model.is_empty() {
                let t = (x >> 33) % 64;
                q.push(Time(t), Event::Timer(next_id, TimerKind::Sender(SenderTimer::Pace)));
                model.push((t, next_id));
                next_id += 1;
            } else {
                // The model's earliest: smallest time, then smallest id (push order).
                let &(t, id) = model.iter().min().unwrap();
                let pos = model.iter().position(|e| *e == (t, id)).unwrap();
                model.remove(pos);
                let (pt, ev) = q.pop().unwrap();
                assert_eq!((pt, ev), (Time(t), Event::Timer(id, TimerKind::Sender(SenderTimer::Pace))), "step {step}");
            }
        }
        assert_eq!(q.len(), model.len());
    }

    #[test]
    fn rearming_a_timer_later_needs_no_new_event() {
        let mut t = Timer::default();
        assert_eq!(t.arm(Time(10)), Some(Time(10)));
        assert_eq!(t.arm(Time(20)), None);
        assert_eq!(t.on_event(Time(10)), (false, Some(Time(20))));
        assert_eq!(t.on_event(Time(20)), (true, None));
        assert!(!t.is_armed());
    }
}
