//! The receiving TCP: cumulative ACK, SACK blocks (RFC 2018), D-SACK
//! (RFC 2883) and Linux's ACK rules (__tcp_ack_snd_check): delayed ACKs,
//! quick-ACK mode, and SACK compression while out-of-order data is queued.
//!
//! Receive window: Linux with tcp_adv_win_scale = 1 advertises about half
//! of the receive buffer; we advertise a constant rmem_max / 2, rounded
//! down to whole segments (no receive-buffer autotuning ramp: the buffer is
//! assumed to have grown to rmem_max already).

use crate::event::{ReceiverTimer, Timer};
use crate::units::Time;

use super::ecn::{RxEcn, SegEcn};
use super::timestamps;

mod gro;
mod sacks;
pub use gro::gro_max_segs;
use sacks::SackList;

use super::segbits::SegBits;

/// Delayed-ACK timeout (TCP_DELACK_MIN, 40 ms).
pub const DELACK: Time = Time::from_millis(40);
/// SACK blocks per ACK (3 fit next to the timestamp option).
pub const MAX_SACKS: usize = 3;
/// TCP_NUM_SACKS: blocks the receiver remembers (tp->selective_acks).
const NUM_SACKS: usize = 4;
/// TCP_SACK_BLOCKS_EXPECTED: blocks an ACK is counted on to carry ("The max
/// is 4, but this becomes 3 if TCP timestamps are there. Given that SACK
/// packets might be lost, be conservative and use 2.")
const SACK_BLOCKS_EXPECTED: usize = 2;
/// TCP_MAX_QUICKACKS.
pub const MAX_QUICKACKS: u32 = 16;
/// net.ipv4.tcp_comp_sack_nr default: at most this many ACKs are folded into
/// one while out-of-order data is queued.
pub const COMP_SACK_NR: u32 = 44;
/// net.ipv4.tcp_comp_sack_delay_ns default (1 ms): the longest a compressed
/// SACK waits (also at most 5 % of the RTT).
pub const COMP_SACK_DELAY: Time = Time::from_millis(1);
/// TCP_FASTRETRANS_THRESH: duplicate ACKs sent at once for each new rcv_nxt
/// before compression starts, so the sender's fast retransmit is not delayed.
const FASTRETRANS_THRESH: u32 = 3;

/// An ACK as the sender sees it. Sequence numbers count segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// Next expected segment (cumulative ACK).
    pub ack: u64,
    /// SACK blocks [start, end); the first holds the most recent arrival.
    pub sacks: [(u64, u64); MAX_SACKS],
    pub nsacks: u8,
    /// D-SACK: the ACK reports a duplicate arrival of this segment.
    pub dsack: Option<u64>,
    /// Advertised window in segments, relative to `ack`.
    pub wnd: u32,
    /// ECN-Echo (tcp_ecn_send(): TCP_ECN_DEMAND_CWR on an ECN connection).
    pub ece: bool,
    /// TSecr: the receiver's ts_recent (tcp/timestamps.rs); 0 = no echo.
    pub tsecr: u32,
}

impl Ack {
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sacks[..self.nsacks as usize]
    }
}

/// What the receiver asks of the engine after a segment arrived or one of
/// its timers fired. The receiver owns its timers; `Schedule` asks for a
/// timer event (handed back through `Receiver::on_timer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxAction {
    /// Send this ACK now.
    AckNow(Ack),
    /// Push an event for this timer at this time.
    Schedule(Time, ReceiverTimer),
    /// Send this ACK now, then push a timer event: the SACK list
    /// overflowed while ACKs were withheld and compression goes on.
    AckThenSchedule(Ack, Time, ReceiverTimer),
    /// Nothing to do (the timer that will act is already scheduled).
    None,
}

#[derive(Clone, Debug)]
pub struct Receiver {
    /// Next expected segment.
    pub rcv_nxt: u64,
    /// Out-of-order segments held above rcv_nxt (tp->out_of_order_queue).
    ofo: SegBits,
    /// SACK blocks to report, most recently changed first, at most
    /// NUM_SACKS (tp->selective_acks, kept by tcp_sack_new_ofo_skb()).
    /// Ranges of `ofo` that fell off this list are not reported again.
    sacks: SackList,
    /// rcv_nxt when the last ACK was sent (tp->rcv_wup); data above it is
    /// not yet acknowledged.
    rcv_wup: u64,
    /// The TSval the next ACK echoes (tp->rx_opt.ts_recent).
    ts_recent: u32,
    /// ACKs withheld by SACK compression since the last ACK (tp->compressed_ack).
    compressed_ack: u32,
    /// rcv_nxt the duplicate-ACK counter refers to (compressed_ack_rcv_nxt).
    compressed_ack_rcv_nxt: u64,
    /// Immediate duplicate ACKs sent for that rcv_nxt (tp->dup_ack_counter).
    dup_ack_counter: u32,
    /// SACK-compression timer (tp->compressed_ack_timer).
    comp_timer: Timer,
    /// SACK-compression delay: min(tcp_comp_sack_delay_ns, 5 % of the RTT).
    comp_delay: Time,
    /// Delayed-ACK timer (ICSK_TIME_DACK).
    delack_timer: Timer,
    /// Advertised window in segments.
    pub wnd: u32,
    /// ACKs sent (statistics).
    pub acks_sent: u64,
    /// Quick-ACK budget (icsk_ack.quick): ACK every segment while > 0.
    quick: u32,
    /// Time of the last data arrival (icsk_ack.lrcvtime).
    last_rcv: Option<Time>,
    /// Idle gap after which quick-ACK mode restarts (the receiver's RTO).
    idle_gap: Time,
    /// ECN state (tcp/ecn.rs).
    pub ecn: RxEcn,
    /// An ACK to send before whatever `on_data` returns (DCTCP's ACK of
    /// the prior CE state); the engine takes it with `take_lead_ack`.
    lead_ack: Option<Ack>,
}

impl Receiver {
    /// `idle_gap`: the receiver's RTO (from its handshake RTT sample);
    /// data after a longer silence re-enters quick-ACK mode. SACK
    /// compression uses the default delay (`with_rtt` sets it from the RTT).
    pub fn new(rmem_bytes: u64, mss: u32, idle_gap: Time) -> Receiver {
        let wnd = ((rmem_bytes / 2) / mss.max(1) as u64).clamp(1, u32::MAX as u64) as u32;
        Receiver {
            rcv_nxt: 0,
            ofo: SegBits::default(),
            sacks: SackList::default(),
            rcv_wup: 0,
            ts_recent: 0,
            compressed_ack: 0,
            compressed_ack_rcv_nxt: 0,
            dup_ack_counter: 0,
            comp_timer: Timer::default(),
            comp_delay: COMP_SACK_DELAY,
            delack_timer: Timer::default(),
            wnd,
            acks_sent: 0,
            quick: 0,
            last_rcv: None,
            idle_gap,
            ecn: RxEcn::default(),
            lead_ack: None,
        }
    }

    /// The connection's negotiated ECN (`ok`), and whether its algorithm
    /// needs DCTCP's accurate echo (tcp_ca_needs_ecn).
    pub fn with_ecn(mut self, ok: bool, accurate: bool) -> Receiver {
        self.ecn = RxEcn::new(ok, accurate);
        self
    }

    /// DCTCP's ACK of the prior CE state, if the last segment produced one;
    /// it goes out before the ACK `on_data` returned.
    #[inline]
    pub fn take_lead_ack(&mut self) -> Option<Ack> {
        self.lead_ack.take()
    }

    /// tcp_enter_quickack_mode() → tcp_incr_quickack(sk, max): ACK the next
    /// rcv_wnd / (2·MSS) segments at once (2 if that is 0), at most `max`.
    fn enter_quickack_mode(&mut self, max: u32) {
        let mut q = self.wnd / 2;
        if q == 0 {
            q = 2;
        }
        self.quick = self.quick.max(q.min(max));
    }

    /// tcp_ecn_check_ce() for segment `ecn` with rcv_nxt as it now is;
    /// returns ICSK_ACK_NOW.
    fn ecn_check_ce(&mut self, ecn: SegEcn) -> bool {
        let fx = self.ecn.check_ce(ecn, self.rcv_nxt, self.delack_timer.is_armed());
        if fx.quickack {
            self.enter_quickack_mode(2);
        }
        if let Some((ack, ece)) = fx.lead_ack {
            // __tcp_send_ack(sk, prior_rcv_nxt): a special ACK that leaves
            // the delayed-ACK state alone (tcp_event_ack_sent()).
            self.acks_sent += 1;
            let mut a = Ack { ack, wnd: self.wnd, ece, tsecr: self.ts_recent, ..Ack::default() };
            let n = self.sacks.len().min(MAX_SACKS);
            for (slot, r) in a.sacks.iter_mut().zip(self.sacks.iter()) {
                *slot = *r;
            }
            a.nsacks = n as u8;
            self.lead_ack = Some(a);
        }
        fx.ack_now
    }

    /// The receiver's RTT (its handshake sample, about the path's base
    /// RTT): __tcp_ack_snd_check() holds a compressed SACK for at most
    /// min(tcp_comp_sack_delay_ns, rtt / 20).
    pub fn with_rtt(mut self, rtt: Time) -> Receiver {
        self.comp_delay = COMP_SACK_DELAY.min(Time(rtt.0 / 20));
        self
    }

    /// tcp_event_data_recv(): the first data, or data after an idle gap
    /// longer than the RTO, starts quick-ACK mode (tcp_incr_quickack:
    /// rcv_wnd / (2·MSS) ACKs, at least 2, at most 16).
    fn note_arrival(&mut self, now: Time) {
        let restart = match self.last_rcv {
            None => true,
            Some(t) => now.saturating_sub(t) > self.idle_gap,
        };
        if restart {
            let q = (self.wnd / 2).clamp(2, MAX_QUICKACKS);
            self.quick = self.quick.max(q);
        }
        self.last_rcv = Some(now);
    }

    /// Segment `seq` arrived at `now` carrying `ecn` and no timestamp.
    pub fn on_data(&mut self, seq: u64, now: Time, ecn: SegEcn) -> RxAction {
        self.on_segment::<true>(seq, now, ecn, 0)
    }

    /// tcp_replace_ts_recent(): a segment from `seq` at or below rcv_wup
    /// whose `tsval` passes PAWS is the one the next ACK echoes.
    #[inline]
    pub(crate) fn replace_ts_recent(&mut self, seq: u64, tsval: u32) {
        if seq <= self.rcv_wup && timestamps::not_older(tsval, self.ts_recent) {
            self.ts_recent = tsval;
        }
    }

    /// `on_data` with its ECN steps compiled in only when `ECN`: the engine
    /// passes `false` when no connection of the run negotiated ECN (every
    /// segment is then Not-ECT and `self.ecn.ok` false, so the steps would
    /// do nothing).
    #[inline]
    pub(crate) fn on_segment<const ECN: bool>(&mut self, seq: u64, now: Time, ecn: SegEcn, tsval: u32) -> RxAction {
        self.note_arrival(now);
        // tcp_ack() (FLAG_UPDATE_TS_RECENT) runs before tcp_data_queue().
        self.replace_ts_recent(seq, tsval);
        // tcp_data_queue(): tcp_ecn_accept_cwr() first.
        let mut ack_now = ECN && self.ecn.accept_cwr(ecn);
        if seq < self.rcv_nxt || self.ofo.contains(seq) {
            // Duplicate: immediate ACK with D-SACK (tcp_send_dupack).
            return RxAction::AckNow(self.make_ack(Some(seq)));
        }
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            if !self.ofo.is_empty() {
                // tcp_ofo_queue(): the run rcv_nxt reaches joins it.
                self.rcv_nxt = self.ofo.take_front(self.rcv_nxt);
                // tcp_data_queue(): "RFC5681. 4.2. SHOULD send immediate
                // ACK, when gap in queue is filled" (ICSK_ACK_NOW).
                ack_now |= self.ofo.is_empty();
            }
            if ECN && self.ecn.ok {
                ack_now |= self.ecn_check_ce(ecn); // tcp_event_data_recv()
            }
        } else {
            // Out of order: tcp_data_queue_ofo() checks CE, then queues it.
            if ECN && self.ecn.ok {
                ack_now |= self.ecn_check_ce(ecn);
            }
            self.ofo.insert(self.rcv_nxt, seq, seq + 1);
            if let Some(flushed) = self.sack_new_ofo(seq, seq + 1) {
                return self.ack_snd_check_after_flush(now, ack_now, flushed);
            }
        }
        self.sack_remove();
        self.ack_snd_check(now, ack_now)
    }

    /// tcp_sack_new_ofo_skb() sent the compressed ACK it was holding
    /// (`flushed`) before this segment's own __tcp_ack_snd_check().
    fn ack_snd_check_after_flush(&mut self, now: Time, ack_now: bool, flushed: Ack) -> RxAction {
        match self.ack_snd_check(now, ack_now) {
            RxAction::Schedule(at, t) => RxAction::AckThenSchedule(flushed, at, t),
            // Not expected (ACKs were being withheld, so no quick-ACK
            // mode); the later ACK carries everything the flushed one did.
            later @ (RxAction::AckNow(_) | RxAction::AckThenSchedule(..)) => later,
            RxAction::None => RxAction::AckNow(flushed),
        }
    }

    /// __tcp_ack_snd_check(): ACK now, delay the ACK, or compress it.
    fn ack_snd_check(&mut self, now: Time, ack_now: bool) -> RxAction {
        // "More than one full frame received" since the last ACK (rcv_nxt -
        // rcv_wup > rcv_mss), quick-ACK mode, or ICSK_ACK_NOW: send now.
        if self.rcv_nxt - self.rcv_wup >= 2 || self.quick > 0 || ack_now {
            return RxAction::AckNow(self.make_ack(None));
        }
        if self.ofo.is_empty() {
            // tcp_send_delayed_ack().
            if self.delack_timer.is_armed() {
                return RxAction::None;
            }
            return Self::arm(&mut self.delack_timer, now + DELACK, ReceiverTimer::DelAck);
        }
        // Out-of-order data queued: SACK compression.
        if self.compressed_ack >= COMP_SACK_NR {
            return RxAction::AckNow(self.make_ack(None));
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            return RxAction::AckNow(self.make_ack(None));
        }
        self.compressed_ack += 1;
        if self.comp_timer.is_armed() {
            return RxAction::None;
        }
        let at = now + self.comp_delay;
        Self::arm(&mut self.comp_timer, at, ReceiverTimer::SackCompress)
    }

    /// Sets `timer`'s deadline; asks for an event only when none is pending
    /// early enough (`Timer::arm`).
    fn arm(timer: &mut Timer, at: Time, kind: ReceiverTimer) -> RxAction {
        match timer.arm(at) {
            Some(at) => RxAction::Schedule(at, kind),
            None => RxAction::None,
        }
    }

    /// An event of timer `kind` popped at `now`: the timer expires (and
    /// acts) if its deadline has come, else its event is pushed again.
    pub fn on_timer(&mut self, kind: ReceiverTimer, now: Time) -> RxAction {
        let timer = match kind {
            ReceiverTimer::DelAck => &mut self.delack_timer,
            ReceiverTimer::SackCompress => &mut self.comp_timer,
        };
        let (fire, again) = timer.on_event(now);
        if let Some(at) = again {
            return RxAction::Schedule(at, kind);
        }
        if !fire {
            return RxAction::None;
        }
        let ack = match kind {
            ReceiverTimer::DelAck => self.on_delack_timer(),
            ReceiverTimer::SackCompress => self.on_sack_compress_timer(),
        };
        ack.map_or(RxAction::None, RxAction::AckNow)
    }

    /// The delayed-ACK timer expired (tcp_delack_timer_handler: ACK if one
    /// is scheduled).
    fn on_delack_timer(&mut self) -> Option<Ack> {
        if self.rcv_nxt == self.rcv_wup && self.compressed_ack == 0 {
            return None;
        }
        Some(self.make_ack(None))
    }

    /// The SACK-compression timer expired (tcp_compressed_ack_kick).
    fn on_sack_compress_timer(&mut self) -> Option<Ack> {
        if self.compressed_ack == 0 {
            return None;
        }
        Some(self.make_ack(None))
    }

    /// Whether the delayed-ACK timer is armed.
    pub fn delack_armed(&self) -> bool {
        self.delack_timer.is_armed()
    }

    /// The client sends a request on this connection: a pending delayed ACK
    /// rides on it (piggybacking).
    pub fn piggyback_ack(&mut self) -> Option<Ack> {
        if self.rcv_nxt == self.rcv_wup {
            return None;
        }
        Some(self.make_ack(None))
    }

    /// Builds an ACK with the first MAX_SACKS remembered blocks, most
    /// recently changed first (RFC 2018 §4, tcp_options_write).
    fn make_ack(&mut self, dsack: Option<u64>) -> Ack {
        // tcp_event_ack_sent(): sending an ACK clears the delayed-ACK and
        // SACK-compression timers; tcp_select_window() sets rcv_wup.
        self.rcv_wup = self.rcv_nxt;
        self.compressed_ack = 0;
        self.comp_timer.disarm();
        self.delack_timer.disarm();
        self.quick = self.quick.saturating_sub(1); // tcp_dec_quickack_mode()
        self.acks_sent += 1;
        let mut ack = Ack {
            ack: self.rcv_nxt,
            dsack,
            wnd: self.wnd,
            ece: self.ecn.demand_cwr,
            tsecr: self.ts_recent,
            ..Ack::default()
        };
        let n = self.sacks.len().min(MAX_SACKS);
        for (slot, r) in ack.sacks.iter_mut().zip(self.sacks.iter()) {
            *slot = *r;
        }
        ack.nsacks = n as u8;
        ack
    }

    /// tcp_sack_new_ofo_skb() (Linux 5.8+): segments `s..e` arrived out of
    /// order. A block it touches grows and moves to the front (merging with
    /// blocks it now overlaps, tcp_sack_maybe_coalesce); otherwise a new
    /// block goes in front and, past NUM_SACKS blocks, the oldest is
    /// forgotten. Before a block at index TCP_SACK_BLOCKS_EXPECTED (2) or
    /// deeper grows, or a new block pushes the list down past it, withheld
    /// ACKs are sent at once (tcp_sack_compress_send_ack), so every block
    /// reaches the sender in some ACK before it can fall off the list; that
    /// ACK is returned.
    fn sack_new_ofo(&mut self, s: u64, e: u64) -> Option<Ack> {
        // Fast path (in-order arrivals above a hole): the segment extends the
        // front block and touches no other, so the list keeps its order.
        if let Some(front) = self.sacks.front() {
            if front.1 == s && self.sacks.iter().skip(1).all(|&(bs, be)| bs > e || be < s) {
                self.sacks[0].1 = e;
                return None;
            }
        }
        // tcp_sack_extend(): adjacent or overlapping.
        if let Some(i) = self.sacks.iter().position(|&(bs, be)| s <= be && bs <= e) {
            // The block grows in place; a deep one is flushed with it.
            self.sacks[i] = (self.sacks[i].0.min(s), self.sacks[i].1.max(e));
            let flushed = if i >= SACK_BLOCKS_EXPECTED { self.sack_compress_send_ack() } else { None };
            let mut b = self.sacks.remove(i);
            // tcp_sack_maybe_coalesce(): fold blocks the grown one overlaps.
            self.sacks.retain(|&(os, oe)| {
                let overlaps = os <= b.1 && b.0 <= oe;
                if overlaps {
                    b = (b.0.min(os), b.1.max(oe));
                }
                !overlaps
            });
            self.sacks.push_front(b);
            return flushed;
        }
        let flushed = if self.sacks.len() >= SACK_BLOCKS_EXPECTED { self.sack_compress_send_ack() } else { None };
        self.sacks.push_front((s, e));
        self.sacks.truncate(NUM_SACKS);
        flushed
    }

    /// tcp_sack_compress_send_ack(): if ACKs are withheld, send one now.
    fn sack_compress_send_ack(&mut self) -> Option<Ack> {
        (self.compressed_ack > 0).then(|| self.make_ack(None))
    }

    /// tcp_sack_remove(): blocks that rcv_nxt now covers are gone.
    fn sack_remove(&mut self) {
        if self.ofo.is_empty() {
            self.sacks.clear();
            return;
        }
        let rcv_nxt = self.rcv_nxt;
        self.sacks.retain(|&(bs, _)| bs > rcv_nxt);
    }

    /// Out-of-order ranges held (for memory-bound checks).
    pub fn ofo_ranges(&self) -> usize {
        self.ofo.ranges()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ReceiverTimer::{DelAck, SackCompress};

    #[test]
    fn quick_acks_at_start_then_delayed_ack_every_second_full_segment() {
        let mut r = Receiver::new(1 << 20, 1448, Time::from_millis(200));
        let t = Time::from_millis(1);
        for seq in 0..MAX_QUICKACKS as u64 {
            assert!(matches!(r.on_data(seq, t, SegEcn::NOT_ECT), RxAction::AckNow(_)), "quick ACK {seq}");
        }
        let q = MAX_QUICKACKS as u64;
        let t = t + Time::from_millis(1);
        assert_eq!(r.on_data(q, t, SegEcn::NOT_ECT), RxAction::Schedule(t + DELACK, DelAck));
        match r.on_data(q + 1, t, SegEcn::NOT_ECT) {
            RxAction::AckNow(a) => assert_eq!(a.ack, q + 2),
            x => panic!("expected an ACK, got {x:?}"),
        }
        // The ACK cleared the timer: the next lone segment arms it afresh.
        // The event still pending at t + 40 ms serves (Timer::arm) and,
        // popping early, is pushed again for the new deadline.
        let t2 = t + Time::from_millis(5);
        assert_eq!(r.on_data(q + 2, t2, SegEcn::NOT_ECT), RxAction::None);
        assert!(r.delack_armed());
        assert_eq!(r.on_timer(DelAck, t + DELACK), RxAction::Schedule(t2 + DELACK, DelAck));
        assert!(matches!(r.on_data(q + 4, t2, SegEcn::NOT_ECT), RxAction::AckNow(_))); // out of order
        assert_eq!(r.on_delack_timer(), None);
    }

    /// A receiver past quick-ACK mode that lost segment 0 of a new flight.
    fn receiver_after_a_hole(rtt: Time) -> Receiver {
        let mut r = Receiver::new(1 << 20, 1448, Time::from_millis(200)).with_rtt(rtt);
        r.quick = 0;
        r.last_rcv = Some(Time::ZERO);
        r
    }

    #[test]
    fn sack_compression_sends_three_dupacks_then_folds_up_to_comp_sack_nr() {
        // __tcp_ack_snd_check(): TCP_FASTRETRANS_THRESH immediate ACKs per
        // rcv_nxt, then tcp_comp_sack_nr (44) arrivals folded into one ACK.
        let mut r = receiver_after_a_hole(Time::from_millis(20));
        let t = Time::from_millis(1);
        for seq in 1..=3 {
            assert!(matches!(r.on_data(seq, t, SegEcn::NOT_ECT), RxAction::AckNow(_)), "dupack {seq}");
        }
        assert_eq!(r.on_data(4, t, SegEcn::NOT_ECT), RxAction::Schedule(t + COMP_SACK_DELAY, SackCompress));
        for seq in 5..=(3 + COMP_SACK_NR as u64) {
            assert_eq!(r.on_data(seq, t, SegEcn::NOT_ECT), RxAction::None, "compressed {seq}");
        }
        match r.on_data(4 + COMP_SACK_NR as u64, t, SegEcn::NOT_ECT) {
            RxAction::AckNow(a) => {
                assert_eq!(a.ack, 0);
                assert_eq!(a.sack_blocks()[0], (1, 5 + COMP_SACK_NR as u64));
            }
            x => panic!("expected the folded ACK, got {x:?}"),
        }
        // Same rcv_nxt: the next arrival is compressed at once (the event
        // pending for the same instant serves).
        assert_eq!(r.on_data(5 + COMP_SACK_NR as u64, t, SegEcn::NOT_ECT), RxAction::None);
        assert_eq!(r.compressed_ack, 1);
        assert!(r.comp_timer.is_armed());
    }

    #[test]
    fn sack_compression_timer_sends_the_latest_blocks_and_waits_5_percent_of_the_rtt() {
        let mut r = receiver_after_a_hole(Time::from_millis(2));
        let t = Time::from_millis(1);
        for seq in 1..=3 {
            let _ = r.on_data(seq, t, SegEcn::NOT_ECT);
        }
        // min(tcp_comp_sack_delay_ns = 1 ms, RTT / 20 = 100 µs).
        assert_eq!(r.on_data(4, t, SegEcn::NOT_ECT), RxAction::Schedule(t + Time::from_micros(100), SackCompress));
        assert_eq!(r.on_data(5, t, SegEcn::NOT_ECT), RxAction::None);
        let at = t + Time::from_micros(100);
        let RxAction::AckNow(a) = r.on_timer(SackCompress, at) else { panic!("withheld ACKs are sent") };
        assert_eq!((a.ack, a.sack_blocks()[0]), (0, (1, 6)));
        assert_eq!(r.on_sack_compress_timer(), None); // nothing withheld any more
    }

    /// The ACK a flush returned: alone, or before a new timer event.
    fn flushed(x: RxAction) -> Ack {
        match x {
            RxAction::AckNow(a) | RxAction::AckThenSchedule(a, ..) => a,
            x => panic!("expected a flushed ACK, got {x:?}"),
        }
    }

    #[test]
    fn withheld_acks_are_sent_before_a_new_block_pushes_the_list_down() {
        // tcp_sack_new_ofo_skb(): with TCP_SACK_BLOCKS_EXPECTED (2) blocks
        // or more, a new block first sends the withheld ACKs
        // (tcp_sack_compress_send_ack), so no block is forgotten unreported.
        let mut r = receiver_after_a_hole(Time::from_millis(20));
        let t = Time::from_millis(1);
        for seq in [1, 3, 5] {
            assert!(matches!(r.on_data(seq, t, SegEcn::NOT_ECT), RxAction::AckNow(_)), "dupack {seq}");
        }
        // Nothing withheld yet: no flush; this block's own ACK is withheld.
        assert_eq!(r.on_data(7, t, SegEcn::NOT_ECT), RxAction::Schedule(t + COMP_SACK_DELAY, SackCompress));
        assert_eq!(r.on_data(8, t, SegEcn::NOT_ECT), RxAction::None); // extends the front block
        assert_eq!(r.compressed_ack, 2);
        let a = flushed(r.on_data(10, t, SegEcn::NOT_ECT));
        assert_eq!(a.sack_blocks(), &[(7, 9), (5, 6), (3, 4)]);
        // Compression goes on for the new block's own ACK.
        assert_eq!(r.compressed_ack, 1);
        assert!(r.comp_timer.is_armed());
        assert_eq!(r.sacks, [(10, 11), (7, 9), (5, 6), (3, 4)]);
        // The next new block forgets (3, 4): reported by the last ACK.
        let a = flushed(r.on_data(12, t, SegEcn::NOT_ECT));
        assert_eq!(a.sack_blocks(), &[(10, 11), (7, 9), (5, 6)]);
        assert_eq!(r.sacks, [(12, 13), (10, 11), (7, 9), (5, 6)]);
    }

    #[test]
    fn a_deep_block_that_grows_flushes_withheld_acks_first() {
        // tcp_sack_new_ofo_skb(): tcp_sack_extend() on a block at index
        // TCP_SACK_BLOCKS_EXPECTED or deeper sends the withheld ACKs (with
        // the block grown in place), then rotates it to the front.
        let mut r = receiver_after_a_hole(Time::from_millis(20));
        let t = Time::from_millis(1);
        for seq in [1, 4, 7, 10] {
            let _ = r.on_data(seq, t, SegEcn::NOT_ECT);
        }
        assert_eq!(r.compressed_ack, 1);
        // (4, 5) at index 2 grows to (4, 6): flushed as it is, then moved
        // to the front.
        let a = flushed(r.on_data(5, t, SegEcn::NOT_ECT));
        assert_eq!(a.sack_blocks(), &[(10, 11), (7, 8), (4, 6)]);
        assert_eq!(r.sacks, [(4, 6), (10, 11), (7, 8), (1, 2)]);
        // A block at index 1 grows without a flush.
        assert_eq!(r.on_data(11, t, SegEcn::NOT_ECT), RxAction::None);
        assert_eq!(r.sacks, [(10, 12), (4, 6), (7, 8), (1, 2)]);
    }

    #[test]
    fn a_partly_filled_hole_is_acked_at_once_and_a_filled_one_too() {
        let mut r = receiver_after_a_hole(Time::from_millis(20));
        let t = Time::from_millis(1);
        for seq in [1, 2, 3, 5, 6, 7, 8] {
            let _ = r.on_data(seq, t, SegEcn::NOT_ECT);
        }
        // rcv_nxt moves (0 arrives, 1..3 join it): a new duplicate-ACK count.
        assert!(matches!(r.on_data(0, t, SegEcn::NOT_ECT), RxAction::AckNow(a) if a.ack == 4));
        // The last hole fills: "SHOULD send immediate ACK" (RFC 5681 §4.2).
        assert!(matches!(r.on_data(4, t, SegEcn::NOT_ECT), RxAction::AckNow(a) if a.ack == 9 && a.nsacks == 0));
    }

    #[test]
    fn out_of_order_data_is_acked_at_once_with_the_newest_block_first() {
        let mut r = Receiver::new(1 << 20, 1448, Time::from_millis(200));
        let t = Time::ZERO;
        let _ = r.on_data(0, t, SegEcn::NOT_ECT);
        let _ = r.on_data(2, t, SegEcn::NOT_ECT);
        let a = match r.on_data(5, t, SegEcn::NOT_ECT) {
            RxAction::AckNow(a) => a,
            x => panic!("{x:?}"),
        };
        assert_eq!(a.ack, 1);
        assert_eq!(a.sack_blocks(), &[(5, 6), (2, 3)]);
        let a = match r.on_data(1, t, SegEcn::NOT_ECT) {
            RxAction::AckNow(a) => a,
            x => panic!("{x:?}"),
        };
        assert_eq!(a.ack, 3);
        let a = match r.on_data(1, t, SegEcn::NOT_ECT) {
            RxAction::AckNow(a) => a,
            x => panic!("{x:?}"),
        };
        assert_eq!(a.dsack, Some(1));
    }

    #[test]
    fn advertised_window_is_half_of_rmem() {
        let r = Receiver::new(6_000_000, 1448, Time::from_millis(200));
        assert_eq!(r.wnd, 3_000_000 / 1448);
    }
}

#[cfg(test)]
mod quickack_tests {
    use super::*;

    #[test]
    fn data_after_an_idle_gap_longer_than_the_rto_is_acked_at_once() {
        let mut r = Receiver::new(1 << 20, 1448, Time::from_millis(200));
        for seq in 0..40 {
            let _ = r.on_data(seq, Time::from_millis(1), SegEcn::NOT_ECT);
        }
        assert!(!matches!(r.on_data(40, Time::from_millis(2), SegEcn::NOT_ECT), RxAction::AckNow(_)), "delayed");
        assert!(r.delack_armed());
        assert!(matches!(r.on_data(41, Time::from_millis(500), SegEcn::NOT_ECT), RxAction::AckNow(_)));
    }
}
