//! The sender's way onto the path: a segment or a TSO burst crosses the
//! loss stage, the bottleneck (or fq_codel) and the forward pipe
//! (`Tx`, the engine's `SenderEnv`), and what the forward pipe carries
//! (`DataPkt`).

use crate::event::{Event, SenderTimer, TimerKind};
use crate::host::cpu::CpuCosts;
use crate::tcp::{timestamps, Codepoint, SegEcn, SenderEnv, SmallQueueRoom};
use crate::units::{Rate, Time};
use crate::wire;

use super::Net;

/// Data in flight on the forward path: `n` back-to-back segments
/// `seq..seq + n` of one stream (a burst the bottleneck admitted whole;
/// one segment on the per-packet paths), with the ECN field as the
/// bottleneck left it. The pipe's head time is the arrival of the next
/// segment, the next one `spacing` later; a GRO unit (`gro`) instead
/// arrives whole at its last segment's arrival (tcp/receiver/gro.rs).
#[derive(Clone, Copy, Debug)]
pub(super) struct DataPkt {
    pub(super) stream: u32,
    pub(super) n: u32,
    pub(super) seq: u64,
    pub(super) spacing: Time,
    pub(super) ecn: SegEcn,
    pub(super) gro: bool,
    /// The TSval every segment of it carries (tcp/timestamps.rs; 0: none).
    pub(super) tsval: u32,
    /// The receiving host has processed it (engine/hosts.rs): back at the
    /// pipe's head, it goes to TCP now.
    pub(super) processed: bool,
}

impl DataPkt {
    pub(super) fn one(stream: u32, seq: u64, ecn: SegEcn, tsval: u32) -> DataPkt {
        DataPkt { stream, n: 1, seq, spacing: Time::ZERO, ecn, gro: false, tsval, processed: false }
    }
}

/// What one stream's segments need on their way onto the path, fixed for
/// the run: their size on the wire, their flow group (its loss stage), the
/// receiver's GRO, the timestamp option, and the sending host's CPU costs
/// and NIC when it has them.
#[derive(Clone, Debug)]
pub(super) struct Link {
    pub(super) wire: u32,
    pub(super) group: usize,
    /// Segments the receiver's GRO merges at most (0: no GRO).
    pub(super) gro_segs: u32,
    /// The connection carries the timestamp option (wire.rs).
    pub(super) timestamps: bool,
    /// The sending host's CPU costs and the stream's MSS, if the host has
    /// a CPU model (host/cpu.rs): each packet handed down is charged.
    pub(super) send_cost: Option<(CpuCosts, u32)>,
    /// The sending host's NIC, if it has a ceiling (host/nic.rs).
    pub(super) nic: Option<u32>,
    /// `send_cost` or `nic` is set: the host's path (`Tx::transmit_hosted`)
    /// carries the stream's packets. One flag, so an ideal host's
    /// transmit path tests one thing.
    pub(super) hosted: bool,
}

impl Link {
    /// A stream's link; `hosted` follows from the CPU costs and the NIC.
    pub(super) fn new(wire: u32, group: usize, gro_segs: u32, timestamps: bool, send_cost: Option<(CpuCosts, u32)>,
                      nic: Option<u32>) -> Link {
        Link { wire, group, gro_segs, timestamps, send_cost, nic, hosted: send_cost.is_some() || nic.is_some() }
    }
}

/// The sender's view of the world for one stream. `ECN` and `FQ` say
/// whether the run may carry ECN (some stream negotiated it) and may have
/// fq_codel at the bottleneck; `false` compiles that work out of the
/// per-packet path (`Sim::run_until` picks the instance once per call).
pub(super) struct Tx<'a, const ECN: bool, const FQ: bool> {
    pub(super) net: &'a mut Net,
    pub(super) stream: u32,
    pub(super) link: &'a Link,
}

impl<'a, const ECN: bool, const FQ: bool> Tx<'a, ECN, FQ> {
    /// Stream `stream`'s way onto the path.
    #[inline]
    pub(super) fn new(net: &'a mut Net, stream: u32, link: &'a Link) -> Tx<'a, ECN, FQ> {
        Tx { net, stream, link }
    }

    /// TSval of a segment sent at `now` (0 without the option).
    #[inline]
    fn tsval(&self, now: Time) -> u32 {
        if self.link.timestamps {
            timestamps::tsval(now)
        } else {
            0
        }
    }

    /// A packet of `n` segments from `first`, handed down at `now` on a
    /// host with a CPU model or a NIC ceiling: its CPU time is booked on
    /// the stream's core after the event (host/cpu.rs), each segment
    /// enters the path when the NIC has sent it, and TSQ counts them
    /// below TCP until then (host/nic.rs).
    #[inline(never)]
    fn transmit_hosted(&mut self, now: Time, first: u64, n: u32, ecn: SegEcn) {
        if let Some((costs, mss)) = self.link.send_cost {
            self.net.send_work += costs.send(n, mss);
            self.net.send_work_stream = self.stream;
        }
        let frame = wire::frame_bytes(self.link.wire);
        for seq in first..first + n as u64 {
            let at = match self.link.nic {
                Some(h) => self.net.nics[h as usize].send(now, frame),
                None => now,
            };
            self.send_one(now, at, seq, ecn);
        }
        if let Some(h) = self.link.nic {
            let last = self.net.nics[h as usize].free_at();
            self.net.small_queues[self.stream as usize].push(last, n * frame);
        }
    }

    /// A transmission as the sender's capture sees it: one packet of `n`
    /// segments (a TSO skb before segmentation).
    #[inline(never)]
    fn capture(&mut self, now: Time, first: u64, n: u32, ecn: SegEcn) {
        let tsval = self.tsval(now);
        if let Some(c) = self.net.capture.as_deref_mut() {
            c.data(crate::capture::Side::Sender, now, self.stream, (first, n), ecn, tsval);
        }
    }

    /// One segment sent by TCP at `sent` (its TSval) onto the path at
    /// `now`.
    #[inline]
    fn send_one(&mut self, sent: Time, now: Time, seq: u64, mut ecn: SegEcn) {
        let tsval = self.tsval(sent);
        let net = &mut *self.net;
        net.packets += 1;
        if FQ && net.dynamics.is_some() {
            net.send_moving::<ECN>(now, self.stream, self.link, seq, ecn, tsval);
            return;
        }
        if net.loss[self.link.group].lose() {
            net.random_drops += 1;
            return;
        }
        if FQ && net.fq.is_some() {
            net.enqueue_fq(now, self.stream, self.link.wire, seq, ecn, tsval);
            return;
        }
        let Some(a) = net.bottleneck.offer(now, wire::frame_bytes(self.link.wire), ECN && ecn.is_ect()) else { return };
        if a.ce {
            ecn.codepoint = Codepoint::Ce;
        }
        net.fwd.push(a.departure + net.prop, DataPkt::one(self.stream, seq, ecn, tsval));
    }
}

impl<const ECN: bool, const FQ: bool> SenderEnv for Tx<'_, ECN, FQ> {
    const ECN: bool = ECN;

    #[inline]
    fn transmit(&mut self, now: Time, seq: u64, _retrans: bool, ecn: SegEcn) {
        if FQ && self.net.capture.is_some() {
            self.capture(now, seq, 1, ecn);
        }
        if self.link.hosted {
            self.transmit_hosted(now, seq, 1, ecn);
        } else {
            self.send_one(now, now, seq, ecn);
        }
    }

    /// A TSO burst: split only where a segment of it is lost at random or
    /// tail-dropped, every other stretch carried through the bottleneck
    /// and the forward pipe as one unit (the same arrivals, drops and
    /// random draws as segment by segment). Runs that may mark CE or
    /// queue in fq_codel go segment by segment.
    #[inline]
    fn transmit_burst(&mut self, now: Time, first: u64, n: u32, _retrans: bool, ecn: SegEcn) {
        if FQ && self.net.capture.is_some() {
            self.capture(now, first, n, ecn);
        }
        if self.link.hosted {
            self.transmit_hosted(now, first, n, ecn);
            return;
        }
        if ECN || FQ {
            for seq in first..first + n as u64 {
                self.send_one(now, now, seq, ecn);
            }
            return;
        }
        let tsval = self.tsval(now);
        let net = &mut *self.net;
        net.packets += n as u64;
        let frame = wire::frame_bytes(self.link.wire);
        let (mut seq, mut left) = (first, n as u64);
        while left > 0 {
            let k = net.loss[self.link.group].pass(left);
            if k > 0 {
                net.admit_burst(now, self.stream, seq, k as u32, frame, self.link.gro_segs, tsval);
            }
            seq += k;
            left -= k;
            if left > 0 {
                let lost = net.loss[self.link.group].lose();
                debug_assert!(lost, "LossStage::pass stopped before a loss");
                net.random_drops += 1;
                seq += 1;
                left -= 1;
            }
        }
    }

    #[inline]
    fn schedule(&mut self, at: Time, timer: SenderTimer) {
        self.net.events.push(at, Event::Timer(self.stream, TimerKind::Sender(timer)));
    }

    #[inline]
    fn small_queue_room(&mut self, now: Time, pacing_rate: Rate, paced: bool, tso: u32) -> SmallQueueRoom {
        if self.link.nic.is_none() {
            return SmallQueueRoom::Unlimited;
        }
        self.net.small_queues[self.stream as usize].room(now, pacing_rate, paced, tso, wire::frame_bytes(self.link.wire))
    }
}

impl Net {
    /// `n` segments of `stream` from `seq` (`frame` bytes each, none lost)
    /// reach the bottleneck together at `now`: the admitted prefix goes
    /// into the forward pipe as one item, or, for a GRO receiver, as GRO
    /// units of at most `gro_segs`, each arriving with its last segment.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn admit_burst(&mut self, now: Time, stream: u32, seq: u64, n: u32, frame: u32, gro_segs: u32, tsval: u32) {
        let a = self.bottleneck.offer_burst(now, frame, n);
        if a.packets == 0 {
            return;
        }
        let first = a.first_departure + self.prop;
        if gro_segs == 0 {
            let pkt = DataPkt { stream, n: a.packets, seq, spacing: a.spacing, ecn: SegEcn::NOT_ECT, gro: false, tsval, processed: false };
            self.fwd.push(first, pkt);
            return;
        }
        let mut j = 0u32;
        while j < a.packets {
            let m = gro_segs.min(a.packets - j);
            let last = first + a.spacing.mul((j + m - 1) as u64);
            let pkt = DataPkt { stream, n: m, seq: seq + j as u64, spacing: a.spacing, ecn: SegEcn::NOT_ECT, gro: true, tsval, processed: false };
            self.fwd.push(last, pkt);
            j += m;
        }
    }
}
