//! Time accounting of why a sender is not sending (Linux tcp_chrono_*:
//! TCP_CHRONO_BUSY, _RWND_LIMITED, _SNDBUF_LIMITED; tcpi_busy_time counts
//! all three).

use crate::units::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChronoKind {
    None,
    Busy,
    RwndLimited,
    SndbufLimited,
}

#[derive(Clone, Debug)]
pub struct Chrono {
    kind: ChronoKind,
    since: Time,
    /// Accumulated time per kind (index = ChronoKind as usize).
    acc: [Time; 4],
}

impl Default for Chrono {
    fn default() -> Self {
        Chrono { kind: ChronoKind::None, since: Time::ZERO, acc: [Time::ZERO; 4] }
    }
}

impl Chrono {
    /// Switches to `kind` at `now`, accounting the time spent in the old one.
    #[inline]
    pub fn set(&mut self, now: Time, kind: ChronoKind) {
        if kind != self.kind {
            self.acc[self.kind as usize] += now.saturating_sub(self.since);
            self.kind = kind;
            self.since = now;
        }
    }

    /// Accumulated time in `kind` up to `now`.
    pub fn total(&self, kind: ChronoKind, now: Time) -> Time {
        let mut t = self.acc[kind as usize];
        if self.kind == kind {
            t += now.saturating_sub(self.since);
        }
        t
    }

    /// tcpi_busy_time: busy + rwnd-limited + sndbuf-limited.
    pub fn busy(&self, now: Time) -> Time {
        self.total(ChronoKind::Busy, now)
            + self.total(ChronoKind::RwndLimited, now)
            + self.total(ChronoKind::SndbufLimited, now)
    }
}
