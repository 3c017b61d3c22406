//! The engine's side of the end hosts (crate::host): a data unit reaching
//! a receiving host that has a processing delay or a CPU model, or an ACK
//! reaching such a sending host, is held and handed on by a
//! `TimerKind::Host` event at its done time. Streams of ideal hosts never
//! come here, and a released data unit goes back to the head of the
//! forward pipe, marked processed, so `Sim::on_data` stays TCP's only way
//! in: the event loop of the ideal host compiles as without the host model.
//!
//! A host with interrupt moderation (crate::host::coalesce) holds its
//! arrivals until its interrupt first. A host with a CPU model
//! (crate::host::cpu) queues each held unit, and
//! each sender timer that fires while the core is busy, on its stream's
//! core; the core serves one item at a time, and the sends TCP makes on
//! an item are booked before the next one starts.

use crate::event::{Event, HostStep, SenderTimer, TimerKind};
use crate::host::coalesce::Batch;
use crate::host::cpu::{CpuSeat, Work};
use crate::tcp::Ack;
use crate::units::Time;

use super::transmit::DataPkt;
use super::{Net, Sim};

/// The receiver's interrupt among `Event::Interrupt`'s hosts.
const RECEIVER_INTERRUPT: u32 = 0;

impl Net {
    /// Whether the receive ring of `seat`'s core takes `packets` more
    /// received packets; a full ring drops them (`host_drops`).
    fn ring_takes(&mut self, seat: &CpuSeat, packets: u32) -> bool {
        let room = self.machines.core(seat).ring_has_room(packets, seat.rx_ring_packets);
        if !room {
            self.host_drops += packets as u64;
        }
        room
    }
}

impl Sim {
    /// The forward pipe's head reaches a receiving host with a processing
    /// delay or a CPU model: its next unit (one segment of a burst, or a
    /// whole GRO unit) leaves the pipe and waits for the host, or is
    /// dropped if the host's receive ring is full.
    #[inline(never)]
    pub(super) fn hold_data(&mut self, now: Time) {
        let Some((at, head)) = self.net.fwd.front_mut() else { return };
        let unit = *head;
        let unit = if head.n > 1 && !head.gro {
            head.seq += 1;
            head.n -= 1;
            *at += unit.spacing;
            DataPkt { n: 1, spacing: Time::ZERO, ..unit }
        } else {
            self.net.fwd.pop_front();
            unit
        };
        if let Some(c) = self.net.rx_coalescer.as_mut() {
            match c.add(now, unit, unit.n) {
                Batch::Opened(at) => self.net.events.push(at, Event::Interrupt(RECEIVER_INTERRUPT)),
                Batch::Joined => {}
                Batch::Full => self.hand_over(RECEIVER_INTERRUPT, now, false),
            }
            return;
        }
        self.admit_data(unit, now);
    }

    /// A data unit reaches the receiving host's stack at `now` (on arrival,
    /// or at the interrupt that ends its moderation).
    fn admit_data(&mut self, unit: DataPkt, now: Time) {
        let i = unit.stream;
        let st = &mut self.streams[i as usize];
        let host = st.rx_host.as_mut().expect("held only for a host with a delay");
        match st.rx_cpu.as_deref() {
            None => {
                let done = host.admit(now, unit);
                self.net.events.push(done, Event::Timer(i, TimerKind::Host(HostStep::Data)));
            }
            Some(seat) => {
                if !self.net.ring_takes(seat, unit.n) {
                    return;
                }
                let ready = host.admit(now, unit);
                let cost = seat.costs.receive(unit.n, st.mss);
                self.net.machines.core(seat).enqueue(Work { stream: i, kind: HostStep::Data, ready, cost, ring_packets: unit.n });
                let seat = *seat;
                self.start_core(&seat, now);
            }
        }
    }

    /// An ACK of stream `i` reaches its sending host, which has a
    /// processing delay or a CPU model.
    #[inline(never)]
    pub(super) fn hold_ack(&mut self, i: u32, ack: Ack, now: Time) {
        if let Some(k) = self.streams[i as usize].ack_coalescer {
            match self.net.ack_coalescers[k as usize].add(now, (i, ack), 1) {
                Batch::Opened(at) => self.net.events.push(at, Event::Interrupt(k + 1)),
                Batch::Joined => {}
                Batch::Full => self.hand_over(k + 1, now, false),
            }
            return;
        }
        self.admit_ack(i, ack, now);
    }

    /// Host interrupt `h` (0: the receiver's; `k + 1`: sender host `k`'s)
    /// scheduled for `now` fires, unless the frame count fired it early.
    pub(super) fn interrupt(&mut self, h: u32, now: Time) {
        self.hand_over(h, now, true);
    }

    /// NAPI hands every packet waiting for host `h`'s interrupt to the
    /// stack, in arrival order (`scheduled`: the interrupt set by the
    /// batch's first packet, a no-op for a batch already handed over;
    /// otherwise the frame count fired it now).
    fn hand_over(&mut self, h: u32, now: Time, scheduled: bool) {
        if h == RECEIVER_INTERRUPT {
            let Some(c) = self.net.rx_coalescer.as_mut() else { return };
            let units = if scheduled { c.due(now) } else { c.take() };
            for unit in units {
                self.admit_data(unit, now);
            }
        } else {
            let c = &mut self.net.ack_coalescers[(h - 1) as usize];
            let acks = if scheduled { c.due(now) } else { c.take() };
            for (i, ack) in acks {
                self.admit_ack(i, ack, now);
            }
        }
    }

    /// An ACK reaches the sending host's stack at `now`.
    fn admit_ack(&mut self, i: u32, ack: Ack, now: Time) {
        let st = &mut self.streams[i as usize];
        let host = st.tx_host.as_mut().expect("held only for a host with a delay");
        let sack_blocks = ack.nsacks as usize;
        match st.tx_cpu.as_deref() {
            None => {
                let ready = host.admit(now, ack);
                self.net.events.push(ready, Event::Timer(i, TimerKind::Host(HostStep::Ack)));
            }
            Some(seat) => {
                // The ACK waits in the sender's receive ring like any
                // received packet.
                if !self.net.ring_takes(seat, 1) {
                    return;
                }
                let ready = host.admit(now, ack);
                let walked = if seat.costs.rtx_walk_ps > 0 { st.sender.list_walk_segments(&ack) } else { 0 };
                let cost = seat.costs.ack(sack_blocks, walked);
                self.net.machines.core(seat).enqueue(Work { stream: i, kind: HostStep::Ack, ready, cost, ring_packets: 1 });
                let seat = *seat;
                self.start_core(&seat, now);
            }
        }
    }

    /// A timer of stream `i` fires while its sender's core is busy: it
    /// waits its turn (`true`), to run when the core reaches it.
    pub(super) fn queue_timer(&mut self, i: u32, t: SenderTimer, now: Time) -> bool {
        let Some(seat) = self.streams[i as usize].tx_cpu.as_deref() else { return false };
        let core = self.net.machines.core(seat);
        if !core.is_busy() {
            return false;
        }
        let cost = Time::from_nanos(seat.costs.timer_ns);
        core.enqueue(Work { stream: i, kind: HostStep::Timer(t), ready: now, cost, ring_packets: 0 });
        true
    }

    /// The core of `seat` starts its next item if idle; the item's stream
    /// gets it when done.
    fn start_core(&mut self, seat: &CpuSeat, now: Time) {
        if let Some((w, done)) = self.net.machines.core(seat).start_next(now) {
            self.net.events.push(done, Event::Timer(w.stream, TimerKind::Host(w.kind)));
        }
    }

    /// Stream `i`'s host is done with its oldest held item of kind `step`:
    /// TCP gets it, the sends it makes are booked on the core, and the
    /// core moves on to its next item.
    #[inline(never)]
    pub(super) fn release<const ECN: bool, const FQ: bool>(&mut self, i: u32, step: HostStep, now: Time) {
        let st = &self.streams[i as usize];
        let seat = match step {
            HostStep::Data => st.rx_cpu.as_deref().copied(),
            HostStep::Ack | HostStep::Timer(_) => st.tx_cpu.as_deref().copied(),
        };
        if let Some(seat) = &seat {
            self.net.machines.core(seat).finish();
        }
        match step {
            HostStep::Data => self.release_data(i, now),
            HostStep::Ack => self.release_ack::<ECN, FQ>(i, now),
            HostStep::Timer(t) => self.run_sender_timer::<ECN, FQ>(i, t, now),
        }
        if let Some(seat) = &seat {
            if self.net.send_work > Time::ZERO {
                self.book_sends(now);
            }
            self.start_core(seat, now);
        }
    }

    /// Stream `i`'s receiving host is done with its oldest held unit: it
    /// goes back to the head of the forward pipe, due now, behind the
    /// units released before it at this instant (done times tie), and
    /// `Sim::on_data` hands it to TCP (a GRO unit that repeats received
    /// data segment by segment, decided against what TCP has by now).
    fn release_data(&mut self, i: u32, now: Time) {
        let Some(unit) = self.streams[i as usize].rx_host.as_mut().and_then(|h| h.release()) else { return };
        self.net.fwd.insert_behind(now, DataPkt { processed: true, ..unit }, |p| p.processed);
    }

    /// The sends of the event just handled (`Net::send_work`) keep their
    /// stream's core at its sender busy from `now` on.
    #[inline(never)]
    pub(super) fn book_sends(&mut self, now: Time) {
        let work = std::mem::replace(&mut self.net.send_work, Time::ZERO);
        if let Some(seat) = self.streams[self.net.send_work_stream as usize].tx_cpu.as_deref() {
            self.net.machines.core(seat).book(now, work);
        }
    }

    /// Stream `i`'s sending host hands its oldest held ACK to TCP.
    fn release_ack<const ECN: bool, const FQ: bool>(&mut self, i: u32, now: Time) {
        let st = &mut self.streams[i as usize];
        let Some(ack) = st.tx_host.as_mut().and_then(|h| h.release()) else { return };
        let mut tx = super::transmit::Tx::<ECN, FQ>::new(&mut self.net, i, &st.link);
        st.sender.on_ack(now, &ack, &mut tx);
        if FQ {
            self.check_triggers(i, now);
        }
    }
}
