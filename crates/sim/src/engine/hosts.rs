//! The engine's side of the end hosts' processing delay (crate::host): a
//! data unit reaching a receiving host that has one, or an ACK reaching
//! such a sending host, is held and handed to TCP by a
//! `TimerKind::Host` event at its done time. Streams without a host delay
//! never come here.

use crate::event::{Event, HostStep, TimerKind};
use crate::units::Time;

use super::transmit::{DataPkt, Tx};
use super::Sim;

impl Sim {
    /// The forward pipe's head reaches a receiving host with a processing
    /// delay: its next unit (one segment of a burst, or a whole GRO unit)
    /// leaves the pipe and waits for the host.
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

    /// Stream `i`'s receiving host hands its oldest held unit to TCP. A
    /// GRO unit repeating received data goes segment by segment, as it
    /// would have at its arrival (tcp/receiver/gro.rs); whether it does is
    /// decided now, against what TCP has received by now.
    pub(super) fn release_data<const ECN: bool, const FQ: bool>(&mut self, i: u32, now: Time) {
        let st = &mut self.streams[i as usize];
        let Some(unit) = st.rx_host.as_mut().and_then(|h| h.release()) else { return };
        if unit.gro && unit.n > 1 && !st.receiver.gro_takes_whole(unit.seq, unit.n) {
            for seq in unit.seq..unit.seq + unit.n as u64 {
                let one = DataPkt { seq, n: 1, gro: false, spacing: Time::ZERO, ..unit };
                self.deliver::<ECN, FQ>(one, now);
            }
        } else {
            self.deliver::<ECN, FQ>(unit, now);
        }
    }

    /// Stream `i`'s sending host hands its oldest held ACK to TCP.
    pub(super) fn release_ack<const ECN: bool, const FQ: bool>(&mut self, i: u32, now: Time) {
        let st = &mut self.streams[i as usize];
        let Some(ack) = st.tx_host.as_mut().and_then(|h| h.release()) else { return };
        let mut tx = Tx::<ECN, FQ> {
            net: &mut self.net,
            stream: i,
            wire: st.wire,
            group: st.group as usize,
            gro_segs: st.gro_segs,
            timestamps: st.timestamps,
        };
        st.sender.on_ack(now, &ack, &mut tx);
    }
}
