//! The engine's side of the end hosts' processing delay (crate::host): a
//! data unit reaching a receiving host that has one, or an ACK reaching
//! such a sending host, is held and handed on by a `TimerKind::Host` event
//! at its done time. Streams without a host delay never come here, and
//! a released data unit goes back to the head of the forward pipe, marked
//! processed, so `Sim::on_data` stays TCP's only way in: the event loop of
//! the ideal host compiles as without the host model.

use crate::event::{Event, HostStep, TimerKind};
use crate::units::Time;

use super::transmit::DataPkt;
use super::Sim;

impl Sim {
    /// The forward pipe's head reaches a receiving host with a processing
    /// delay: its next unit (one segment of a burst, or a whole GRO unit)
    /// leaves the pipe and waits for the host.
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
        let i = unit.stream;
        let host = self.streams[i as usize].rx_host.as_mut().expect("held only for a host with a delay");
        let done = host.admit(now, unit);
        self.net.events.push(done, Event::Timer(i, TimerKind::Host(HostStep::Data)));
    }

    /// Stream `i`'s receiving host is done with its oldest held unit: it
    /// goes back to the head of the forward pipe, due now, behind the
    /// units released before it at this instant (done times tie), and
    /// `Sim::on_data` hands it to TCP (a GRO unit that repeats received
    /// data segment by segment, decided against what TCP has by now).
    #[inline(never)]
    pub(super) fn release_data(&mut self, i: u32, now: Time) {
        let Some(unit) = self.streams[i as usize].rx_host.as_mut().and_then(|h| h.release()) else { return };
        self.net.fwd.insert_behind(now, DataPkt { processed: true, ..unit }, |p| p.processed);
    }

    /// Stream `i`'s sending host hands its oldest held ACK to TCP.
    #[inline(never)]
    pub(super) fn release_ack<const ECN: bool, const FQ: bool>(&mut self, i: u32, now: Time) {
        let st = &mut self.streams[i as usize];
        let Some(ack) = st.tx_host.as_mut().and_then(|h| h.release()) else { return };
        let mut tx = st.tx::<ECN, FQ>(&mut self.net, i);
        st.sender.on_ack(now, &ack, &mut tx);
    }
}
