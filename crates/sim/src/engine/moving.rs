//! The engine's side of a path that moves (path/dynamics.rs): a data
//! segment's way through the scheduled loss, the policer, the bottleneck
//! and the forward delay, and an ACK's way back; cross traffic offered to
//! the bottleneck before each of the flows' packets and each sample, and
//! its series rows; the state triggers read after each ACK. Runs with
//! such a path take the segment-by-segment
//! instance of the event loop (`FQ`), so the static path's per-packet code
//! is unchanged.

use crate::app::App;
use crate::app_rate::AppChange;
use crate::event::{AppTimer, Event, TimerKind};
use crate::path::dynamics::Triggered;
use crate::tcp::{Ack, Codepoint, SegEcn};
use crate::trace::Row;
use crate::units::Time;
use crate::wire;

use super::transmit::{DataPkt, Link};
use super::{Net, Sim};

/// An ACK's frame on the wire: TCP/IP headers with the timestamp option
/// and the Ethernet header (SACK blocks not counted), what an aggregating
/// ACK path's byte budget is charged.
const ACK_FRAME_BYTES: u32 = wire::ETH_HEADER_BYTES + wire::TCP_IP_TS_HEADER_BYTES;

impl Net {
    /// One segment of `stream` entering a moving path at `now`: its group's
    /// scheduled loss, the policer, then fq_codel or the bottleneck, and
    /// the forward delay in effect (with jitter and release slots).
    #[cold]
    #[inline(never)]
    pub(super) fn send_moving<const ECN: bool>(&mut self, now: Time, stream: u32, link: &Link, seq: u64, mut ecn: SegEcn, tsval: u32) {
        self.advance_cross(now);
        let d = self.dynamics.as_deref_mut().expect("a moving path");
        // Drops at chosen instants take their packets before the random
        // loss draws for them (linkem's data queue, the same order).
        if d.drops.drop(now, Some(link.group)) || d.loss[link.group].lose(now) {
            self.random_drops += 1;
            return;
        }
        let frame = wire::frame_bytes(link.wire);
        if let Some(p) = d.policer.as_mut() {
            if !p.admit(now, frame) {
                return;
            }
        }
        if self.fq.is_some() {
            self.enqueue_fq(now, stream, link.wire, seq, ecn, tsval);
            return;
        }
        let Some(a) = self.bottleneck.offer(now, frame, ECN && ecn.is_ect()) else { return };
        if a.ce {
            ecn.codepoint = Codepoint::Ce;
        }
        let d = self.dynamics.as_deref_mut().expect("a moving path");
        let at = d.data_arrival(now, a.departure, frame);
        self.fwd.push_sorted(at, DataPkt::one(stream, seq, ecn, tsval));
    }

    /// Offers the bottleneck the cross traffic due by `now` (the cross
    /// sources join at the bottleneck, behind any policer: it polices the
    /// flows' data only).
    pub(super) fn advance_cross(&mut self, now: Time) {
        if let Some(c) = self.dynamics.as_deref_mut().and_then(|d| d.cross.as_mut()) {
            c.advance(now, &mut self.bottleneck);
        }
    }

    /// An ACK (or an RPC's piggybacked one) onto ACK pipe `pipe` at `now`:
    /// after `delay` on the static path; on a moving path after the
    /// backward delay in effect plus the pipe's extra delay, jitter and
    /// release slots. `FQ` false compiles the moving path out.
    #[inline(always)]
    pub(super) fn push_ack<const FQ: bool>(&mut self, pipe: usize, delay: Time, now: Time, item: (u32, Ack)) {
        if let (true, Some(c)) = (FQ, self.capture.as_deref_mut()) {
            c.ack(crate::capture::Side::Receiver, now, item.0, &item.1);
        }
        if FQ {
            if let Some(d) = self.dynamics.as_deref_mut() {
                let at = d.ack_arrival(pipe, now, ACK_FRAME_BYTES);
                self.acks[pipe].push_sorted(at, item);
                return;
            }
        }
        self.acks[pipe].push(now + delay, item);
    }
}

impl Sim {
    /// After stream `i`'s sender handled an ACK at `now` (a moving path):
    /// when a trigger waits on its flow and `i` is the flow's first
    /// stream, the changes its log recorded since the last look fire what
    /// they trigger (path/trigger.rs), each from its instant on.
    #[inline]
    pub(super) fn check_triggers(&mut self, i: u32, now: Time) {
        let st = &self.streams[i as usize];
        let Some(d) = self.net.dynamics.as_deref_mut() else { return };
        let group = st.group as usize;
        if st.index != 0 || !d.triggers.watches(group) {
            return;
        }
        let fired = d.triggers.on_log(group, st.sender.cc_events(), now);
        for (at, what) in fired {
            if let Triggered::App { group, change } = what {
                self.app_change(group, at, change);
            } else if let Some(rate) = self
                .net
                .dynamics
                .as_deref_mut()
                .and_then(|d| d.apply(at, what))
            {
                self.net.bottleneck.step_rate(at, rate);
            }
        }
    }

    /// A triggered [[flows.app]] step reaches every stream of flow `group`
    /// from `at` on (app_rate::RateBulk::insert), booking a write timer
    /// where the stream has none pending that early.
    fn app_change(&mut self, group: usize, at: Time, change: AppChange) {
        for (i, st) in self.streams.iter_mut().enumerate() {
            if st.group as usize != group {
                continue;
            }
            if let App::RateBulk(w) = &mut st.app {
                if let Some(wake) = w.insert(at, change) {
                    self.net.events.push(
                        wake,
                        Event::Timer(i as u32, TimerKind::App(AppTimer::Write)),
                    );
                }
            }
        }
    }

    /// One series row per started cross-traffic source at `now` (after
    /// `advance_cross(now)`): the bytes of its IP packets that left the
    /// bottleneck; its TCP columns are zero (it has no TCP state).
    pub(super) fn cross_rows(&mut self, now: Time) {
        let Some(c) = self.net.dynamics.as_deref_mut().and_then(|d| d.cross.as_mut()) else { return };
        for (group, stream, bytes) in c.delivered(now) {
            self.result.series.push(Row {
                flow_group: group as i64,
                stream: stream as i64,
                t_s: now.as_secs_f64(),
                delivered_bytes: bytes as i64,
                ca_state: "",
                cc_mode: "",
                // No TCP: its TCP columns are zero, its CCA columns null.
                ..Row::default()
            });
        }
    }
}
