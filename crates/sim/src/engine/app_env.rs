//! The application's side of a stream (crate::app): what an application
//! reaches through [`AppEnv`], with the engine's tables it writes.

use crate::app::AppEnv;
use crate::event::{AppTimer, Event, TimerKind};
use crate::tcp::{Receiver, RxAction, Sender};
use crate::trace::Rpcs;
use crate::transfer::Ledger;
use crate::units::Time;

use super::transmit::Tx;

/// The application's view of one stream (app.rs): its sender, receiver,
/// the engine's queues, the RPC table and the data sets' ledger.
pub(super) struct StreamApp<'a, const ECN: bool, const FQ: bool> {
    pub(super) tx: Tx<'a, ECN, FQ>,
    pub(super) sender: &'a mut Sender,
    pub(super) receiver: &'a mut Receiver,
    pub(super) started: &'a mut bool,
    pub(super) ack_pipe: usize,
    pub(super) ack_delay: Time,
    pub(super) group: u32,
    pub(super) index: u32,
    pub(super) rpcs: &'a mut Rpcs,
    pub(super) ledger: &'a mut Ledger,
}

impl<const ECN: bool, const FQ: bool> AppEnv for StreamApp<'_, ECN, FQ> {
    fn schedule(&mut self, at: Time, timer: AppTimer) {
        self.tx.net.events.push(at, Event::Timer(self.tx.stream, TimerKind::App(timer)));
    }

    fn start(&mut self, now: Time) {
        *self.started = true;
        if let (true, Some(c)) = (FQ, self.tx.net.capture.as_deref_mut()) {
            c.handshake(now, self.tx.stream);
        }
        self.sender.start(now, &mut self.tx);
    }

    fn write(&mut self, now: Time, segs: u64) {
        self.sender.app_write(now, segs, &mut self.tx);
    }

    fn send_buffer_room(&self) -> u64 {
        self.sender.send_buffer_room()
    }

    fn stop_writing(&mut self) {
        self.sender.stop_writing();
    }

    fn send_request_delay(&self) -> Time {
        self.ack_delay
    }

    fn piggyback(&mut self, now: Time) {
        if let Some(ack) = self.receiver.piggyback_ack() {
            let act = RxAction::AckNow(ack);
            self.tx.net.rx_action::<FQ>(self.tx.stream, self.ack_pipe, self.ack_delay, now, act);
        }
    }

    #[inline]
    fn rcv_nxt(&self) -> u64 {
        self.receiver.rcv_nxt
    }

    fn rpc_done(&mut self, start: Time, now: Time, response_bytes: u64) {
        let rpcs = &mut *self.rpcs;
        rpcs.flow_group.push(self.group as i64);
        rpcs.stream.push(self.index as i64);
        rpcs.start_s.push(start.as_secs_f64());
        rpcs.duration_s.push((now - start).as_secs_f64());
        rpcs.response_bytes.push(response_bytes as i64);
    }

    fn take_piece(&mut self, id: u32, slot: u32) -> u64 {
        self.ledger.take(id, slot)
    }

    fn transfer_delivered(&mut self, id: u32, segs: u64, now: Time) {
        self.ledger.delivered(id, segs, now);
    }
}
