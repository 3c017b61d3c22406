//! A sender environment driven by hand (no path): records transmissions and
//! timer requests, and fires timers on demand.
#![allow(dead_code)]

use fatpipe_sim::event::SenderTimer;
use fatpipe_sim::tcp::{SegEcn, Sender, SenderEnv};
use fatpipe_sim::units::Time;

#[derive(Default)]
pub struct Env {
    /// (time, segment, retransmission?) of every transmission.
    pub sent: Vec<(Time, u64, bool)>,
    /// Pending timer requests.
    pub timers: Vec<(Time, SenderTimer)>,
    /// The ECN field of every transmission, in the same order as `sent`.
    pub ecn: Vec<SegEcn>,
    /// (first segment, segments) of every TSO burst of new data handed
    /// over whole.
    pub bursts: Vec<(u64, u32)>,
}

impl SenderEnv for Env {
    fn transmit(&mut self, now: Time, seq: u64, retrans: bool, ecn: SegEcn) {
        self.sent.push((now, seq, retrans));
        self.ecn.push(ecn);
    }
    fn transmit_burst(&mut self, now: Time, first: u64, n: u32, retrans: bool, ecn: SegEcn) {
        if !retrans {
            self.bursts.push((first, n));
        }
        for seq in first..first + n as u64 {
            self.transmit(now, seq, retrans, ecn);
        }
    }
    fn schedule(&mut self, at: Time, kind: SenderTimer) {
        self.timers.push((at, kind));
    }
}

impl Env {
    /// Fires the earliest pending timer event if it is due by `until`;
    /// returns its time.
    pub fn fire_next(&mut self, s: &mut Sender, until: Time) -> Option<Time> {
        let i = (0..self.timers.len()).min_by_key(|&i| (self.timers[i].0, i))?;
        let (at, kind) = self.timers[i];
        if at > until {
            return None;
        }
        self.timers.remove(i);
        s.on_timer(kind, at, self);
        Some(at)
    }
}
