//! Transfers of a given size (base.py TransferPlan, docs/transfers.md): a
//! data set of `size_bytes` moves over its own streams, and completes when
//! the receiver has every segment of it in order.
//!
//! How the application spreads the bytes over its streams, as the tools of
//! the field do:
//! * `equal`: each stream writes its share (size / streams, the first
//!   size % streams streams a byte more: transferspec.stream_shares) in one
//!   write at its start;
//! * `chunks` (work stealing): a stream takes the next `chunk_bytes` of the
//!   data set when its write of the last one has returned, i.e. when the
//!   whole chunk is in the send buffer (a blocking write() returns then:
//!   tcp_sendmsg_locked() → sk_stream_wait_memory()). The application
//!   queues what fits and looks again at each tick (app_rate.rs's rule for
//!   a blocked write).
//!
//! The simulator counts segments: a piece of `b` bytes is ⌈b / mss⌉
//! segments (at most one partly filled segment per piece more on the wire
//! than Linux sends).
//!
//! The data sets' shared state (what is left to hand out, what has
//! arrived) is the engine's [`Ledger`]; each stream's [`TransferApp`]
//! reaches it through [`AppEnv`].

use crate::app::AppEnv;
use crate::event::AppTimer;
use crate::plan;
use crate::scenario::{err, positive, ConfigError};
use crate::trace::Transfers;
use crate::units::Time;

/// How a data set is spread over its streams.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Split {
    Equal,
    Chunks { chunk_bytes: u64 },
}

/// A transfer group's data sets, checked (from the plan's TransferPlan).
#[derive(Clone, Debug, PartialEq)]
pub struct TransferSpec {
    pub size_bytes: u64,
    pub split: Split,
    /// The application's tick (a blocked chunk write looks again).
    pub tick: Time,
    /// Each data set's start, from the run's start, in order.
    pub starts: Vec<Time>,
}

impl TransferSpec {
    /// The plan's `transfer` of flow `at("")`; errors name the field.
    pub fn from_plan(p: Option<&plan::TransferPlan>, at: &dyn Fn(&str) -> String) -> Result<TransferSpec, ConfigError> {
        let Some(p) = p else {
            return err(at("transfer"), "a flow of kind transfer needs its transfer table (size_bytes, split, starts_s)");
        };
        let size_bytes = p.size_bytes.map(|w| w.0).unwrap_or(0);
        if size_bytes == 0 {
            return err(at("transfer.size_bytes"), "must be >= 1 byte");
        }
        let split = match (p.split.as_deref(), p.chunk_bytes.map(|w| w.0)) {
            (Some("equal"), None) => Split::Equal,
            (Some("chunks"), Some(c)) if c > 0 => Split::Chunks { chunk_bytes: c },
            (Some("chunks"), _) => return err(at("transfer.chunk_bytes"), "split chunks needs chunk_bytes >= 1"),
            (Some("equal"), Some(_)) => return err(at("transfer.chunk_bytes"), "only split chunks takes chunk_bytes"),
            (s, _) => return err(at("transfer.split"), format!("expected equal or chunks, got {s:?}")),
        };
        let tick = Time::from_secs_f64(positive(p.tick_s, &at("transfer.tick_s"))?);
        if tick == Time::ZERO {
            return err(at("transfer.tick_s"), "below the simulator's 1 ns clock");
        }
        let starts_s = p.starts_s.as_deref().unwrap_or_default();
        if starts_s.is_empty() {
            return err(at("transfer.starts_s"), "at least one data set's start is needed");
        }
        let mut starts = Vec::with_capacity(starts_s.len());
        for (k, &s) in starts_s.iter().enumerate() {
            if !(s.is_finite() && s >= 0.0) || starts_s[..k].last().is_some_and(|&prev| s < prev) {
                return err(at(&format!("transfer.starts_s[{k}]")), format!("starts are >= 0 s and in time order, got {s}"));
            }
            starts.push(Time::from_secs_f64(s));
        }
        Ok(TransferSpec { size_bytes, split, tick, starts })
    }

    /// Each stream's bytes under `equal` (transferspec.stream_shares).
    pub fn shares(&self, streams: u64) -> Vec<u64> {
        let (base, extra) = (self.size_bytes / streams, self.size_bytes % streams);
        (0..streams).map(|i| base + u64::from(i < extra)).collect()
    }
}

/// Segments of a piece of `bytes` on streams of `mss`-byte segments.
fn segments(bytes: u64, mss: u32) -> u64 {
    bytes.div_ceil(u64::from(mss.max(1)))
}

/// What a data set has left to hand out.
#[derive(Clone, Debug)]
enum Pieces {
    /// Each stream's share, taken once, at its start.
    Shares { bytes: Vec<u64>, taken: usize },
    Chunks { chunk_bytes: u64, left_bytes: u64 },
}

/// One data set as the ledger follows it.
#[derive(Clone, Debug)]
pub struct DataSet {
    group: u32,
    index: u32,
    start: Time,
    size_bytes: u64,
    mss: u32,
    pieces: Pieces,
    taken_segs: u64,
    delivered_segs: u64,
    done: bool,
}

impl DataSet {
    /// Data set `index` of flow group `group` (streams of `mss`-byte
    /// segments), starting at `start`.
    pub fn new(spec: &TransferSpec, group: u32, index: u32, streams: u64, mss: u32, start: Time) -> DataSet {
        let pieces = match spec.split {
            Split::Equal => Pieces::Shares { bytes: spec.shares(streams), taken: 0 },
            Split::Chunks { chunk_bytes } => Pieces::Chunks { chunk_bytes, left_bytes: spec.size_bytes },
        };
        DataSet { group, index, start, size_bytes: spec.size_bytes, mss, pieces, taken_segs: 0, delivered_segs: 0, done: false }
    }

    fn all_taken(&self) -> bool {
        match &self.pieces {
            Pieces::Shares { bytes, taken } => *taken == bytes.len(),
            Pieces::Chunks { left_bytes, .. } => *left_bytes == 0,
        }
    }
}

/// The data sets of a run and the completed ones' rows.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    sets: Vec<DataSet>,
    pub rows: Transfers,
}

impl Ledger {
    pub fn new(sets: Vec<DataSet>) -> Ledger {
        Ledger { sets, rows: Transfers::default() }
    }

    /// Stream `slot` of data set `id` takes its next piece: its share
    /// (equal), or the next chunk; segments, 0 when nothing is left.
    pub fn take(&mut self, id: u32, slot: u32) -> u64 {
        let set = &mut self.sets[id as usize];
        let bytes = match &mut set.pieces {
            Pieces::Shares { bytes, taken } => {
                *taken += 1;
                bytes[slot as usize]
            }
            Pieces::Chunks { chunk_bytes, left_bytes } => {
                let b = (*chunk_bytes).min(*left_bytes);
                *left_bytes -= b;
                b
            }
        };
        let segs = segments(bytes, set.mss);
        set.taken_segs += segs;
        segs
    }

    /// `segs` more segments of data set `id` arrived in order at `now`:
    /// the set completes when every piece is handed out and has arrived.
    pub fn delivered(&mut self, id: u32, segs: u64, now: Time) {
        let set = &mut self.sets[id as usize];
        set.delivered_segs += segs;
        if set.done || !set.all_taken() || set.delivered_segs < set.taken_segs {
            return;
        }
        set.done = true;
        let rows = &mut self.rows;
        rows.flow_group.push(i64::from(set.group));
        rows.transfer.push(i64::from(set.index));
        rows.start_s.push(set.start.as_secs_f64());
        rows.duration_s.push((now - set.start).as_secs_f64());
        rows.size_bytes.push(set.size_bytes as i64);
    }
}

/// Which data set a stream belongs to, and how it writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamTransfer {
    /// The data set's index in the run's ledger.
    pub id: u32,
    /// The stream's place among the data set's streams.
    pub slot: u32,
    pub chunks: bool,
    pub tick: Time,
}

impl StreamTransfer {
    pub fn new(id: u32, slot: u32, spec: &TransferSpec) -> StreamTransfer {
        StreamTransfer { id, slot, chunks: matches!(spec.split, Split::Chunks { .. }), tick: spec.tick }
    }
}

/// One stream's application in a data set.
#[derive(Debug)]
pub struct TransferApp {
    id: u32,
    slot: u32,
    chunks: bool,
    tick: Time,
    /// End of the run: no tick after it.
    end: Time,
    /// Segments of the current write not yet in the send buffer.
    pending: u64,
    /// rcv_nxt when the receiver last reported.
    seen: u64,
}

impl TransferApp {
    /// The application of a stream of a data set, in a run that ends at `end`.
    pub fn new(t: StreamTransfer, end: Time) -> TransferApp {
        TransferApp { id: t.id, slot: t.slot, chunks: t.chunks, tick: t.tick, end, pending: 0, seen: 0 }
    }

    /// The stream starts: an equal share is written at once (the sender
    /// sends it as the send buffer allows); chunks are queued as they fit.
    pub fn on_start<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        let segs = env.take_piece(self.id, self.slot);
        if !self.chunks {
            if segs > 0 {
                env.write(now, segs);
            }
            return;
        }
        self.pending = segs;
        self.fill(now, env);
    }

    /// A tick of a blocked chunk write.
    pub fn on_tick<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        self.fill(now, env);
    }

    /// Queue what fits of the current chunk; once all of it is queued the
    /// write returns and the next chunk is taken; still blocked, look again
    /// at the next tick.
    fn fill<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        loop {
            let fits = self.pending.min(env.send_buffer_room());
            if fits > 0 {
                self.pending -= fits;
                env.write(now, fits);
            }
            if self.pending > 0 {
                if now + self.tick <= self.end {
                    env.schedule(now + self.tick, AppTimer::Write);
                }
                return;
            }
            self.pending = env.take_piece(self.id, self.slot);
            if self.pending == 0 {
                return;
            }
        }
    }

    /// Data arrived at the receiver: report what is new in order.
    pub fn on_data<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        let rcv = env.rcv_nxt();
        if rcv > self.seen {
            env.transfer_delivered(self.id, rcv - self.seen, now);
            self.seen = rcv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(split: Split, size_bytes: u64) -> TransferSpec {
        TransferSpec { size_bytes, split, tick: Time::from_millis(1), starts: vec![Time::ZERO] }
    }

    #[test]
    fn equal_shares_give_the_first_streams_the_remainder() {
        assert_eq!(spec(Split::Equal, 10).shares(4), vec![3, 3, 2, 2]);
        assert_eq!(spec(Split::Equal, 8).shares(4), vec![2, 2, 2, 2]);
    }

    #[test]
    fn a_data_set_completes_when_every_piece_is_taken_and_has_arrived() {
        let s = spec(Split::Chunks { chunk_bytes: 3000 }, 7000);
        let mut ledger = Ledger::new(vec![DataSet::new(&s, 2, 5, 2, 1000, Time::from_millis(100))]);
        assert_eq!((ledger.take(0, 0), ledger.take(0, 1)), (3, 3));
        ledger.delivered(0, 6, Time::from_millis(200));
        assert!(ledger.rows.flow_group.is_empty(), "a chunk is still to hand out");
        assert_eq!(ledger.take(0, 0), 1);
        assert_eq!(ledger.take(0, 1), 0, "nothing left");
        ledger.delivered(0, 1, Time::from_millis(300));
        assert_eq!((ledger.rows.flow_group[0], ledger.rows.transfer[0], ledger.rows.size_bytes[0]), (2, 5, 7000));
        assert!((ledger.rows.duration_s[0] - 0.2).abs() < 1e-12);
        ledger.delivered(0, 1, Time::from_millis(400));
        assert_eq!(ledger.rows.flow_group.len(), 1, "one row per data set");
    }

    #[test]
    fn pieces_round_up_to_whole_segments() {
        let s = spec(Split::Equal, 2500);
        let mut ledger = Ledger::new(vec![DataSet::new(&s, 0, 0, 2, 1000, Time::ZERO)]);
        assert_eq!((ledger.take(0, 0), ledger.take(0, 1)), (2, 2));
    }
}
