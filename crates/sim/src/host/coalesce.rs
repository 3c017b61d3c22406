//! Interrupt coalescing (`interrupt_coalescing`, issue P1.2): a host's NIC
//! raises its receive interrupt `usecs` after the first packet that
//! arrived since the last one, or as soon as `frames` packets are waiting
//! (ethtool -C rx-usecs / rx-frames; adaptive moderation is not modelled).
//! NAPI then hands every waiting packet to the stack at once, so a flow's
//! packets reach TCP in batches: the receiver ACKs in bursts, and a sender
//! processes its ACKs in bursts (ACK compression).
//!
//! A [`Coalescer`] holds one host's arrivals until its interrupt; the
//! engine schedules the interrupt at the deadline the first arrival opens
//! and fires it early when the frame count is reached.

use crate::units::Time;

/// One host's receive interrupt moderation and the packets waiting for it.
#[derive(Clone, Debug)]
pub struct Coalescer<T> {
    usecs: Time,
    /// 0: no frame limit.
    frames: u32,
    held: Vec<T>,
    packets: u32,
    deadline: Option<Time>,
}

/// What an arrival did to the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch {
    /// It opened a batch whose interrupt fires at this instant.
    Opened(Time),
    /// It joined the open batch.
    Joined,
    /// It reached the frame limit: the interrupt fires now.
    Full,
}

impl<T> Coalescer<T> {
    pub fn new(usecs: Time, frames: Option<u32>) -> Coalescer<T> {
        Coalescer { usecs, frames: frames.unwrap_or(0), held: Vec::new(), packets: 0, deadline: None }
    }

    /// A unit of `packets` packets arrives at `now`.
    pub fn add(&mut self, now: Time, unit: T, packets: u32) -> Batch {
        self.held.push(unit);
        self.packets += packets;
        if self.frames > 0 && self.packets >= self.frames {
            return Batch::Full;
        }
        match self.deadline {
            Some(_) => Batch::Joined,
            None => {
                let at = now + self.usecs;
                self.deadline = Some(at);
                Batch::Opened(at)
            }
        }
    }

    /// The interrupt scheduled for `deadline` fires: the batch it was for
    /// (empty if the frame limit fired it early, or a later batch's).
    pub fn due(&mut self, deadline: Time) -> Vec<T> {
        if self.deadline == Some(deadline) {
            self.take()
        } else {
            Vec::new()
        }
    }

    /// The interrupt fires now: every waiting unit, in arrival order.
    pub fn take(&mut self) -> Vec<T> {
        self.deadline = None;
        self.packets = 0;
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_arrival_sets_the_interrupt_and_the_rest_join_it() {
        let mut c = Coalescer::new(Time::from_micros(50), None);
        assert_eq!(c.add(Time::from_micros(10), 1, 1), Batch::Opened(Time::from_micros(60)));
        assert_eq!(c.add(Time::from_micros(20), 2, 1), Batch::Joined);
        assert_eq!(c.due(Time::from_micros(60)), [1, 2]);
        // The next arrival opens a new batch.
        assert_eq!(c.add(Time::from_micros(70), 3, 1), Batch::Opened(Time::from_micros(120)));
    }

    #[test]
    fn the_frame_limit_fires_early_and_the_old_deadline_finds_nothing() {
        let mut c = Coalescer::new(Time::from_micros(50), Some(3));
        assert!(matches!(c.add(Time::ZERO, 1, 1), Batch::Opened(_)));
        assert_eq!(c.add(Time::from_micros(1), 2, 1), Batch::Joined);
        assert_eq!(c.add(Time::from_micros(2), 3, 1), Batch::Full);
        assert_eq!(c.take(), [1, 2, 3]);
        assert!(c.due(Time::from_micros(50)).is_empty());
    }
}
