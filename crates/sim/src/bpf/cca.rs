//! A BPF congestion control as one of the simulator's algorithms: each
//! `tcp_congestion_ops` hook the engine calls (cc/mod.rs) writes the
//! connection into the socket image, runs the program's function for that
//! hook with Linux's arguments (BPF_PROG's u64 array: the socket, then the
//! hook's own), and reads back what the program may write. The private
//! area (icsk_ca_priv) and the object's global data live in the
//! connection's memory for its whole life.
//!
//! A program fault (a bad address, a runaway loop) stops the run with a
//! panic naming the algorithm, the hook, the function and the instruction:
//! the simulator's binding turns it into that run's error.

use super::helpers::HookCalls;
use super::memory::Memory;
use super::object::{Hook, Program, ACK_SAMPLE_BASE, CTX_BASE, RATE_SAMPLE_BASE, SOCK_BASE, STACK_BASE};
use super::sock_image;
use super::sock_layout::{ACK_IN_FLIGHT, ACK_PKTS_ACKED, ACK_RTT_US};
use super::vm;
use crate::cc::prandom::Prandom;
use crate::cc::{AckSample, CaState, ConnState, CongestionControl, CwndEvent, RateSample};
use std::sync::Arc;

/// TCP_CONG_NEEDS_ECN (include/net/tcp.h).
const TCP_CONG_NEEDS_ECN: u32 = 0x2;

/// enum tcp_ca_event (include/net/tcp.h): the events the engine raises
/// with their numbers (CA_EVENT_ECN_NO_CE 4 and CA_EVENT_ECN_IS_CE 5 are
/// the receiver's, which the simulator's receiver handles itself).
const CA_EVENTS: [(CwndEvent, u64); 4] =
    [(CwndEvent::TxStart, 0), (CwndEvent::CwndRestart, 1), (CwndEvent::CompleteCwr, 2), (CwndEvent::Loss, 3)];

fn event_number(ev: CwndEvent) -> u64 {
    CA_EVENTS.iter().find(|(e, _)| *e == ev).map_or(0, |(_, n)| *n)
}

/// The event numbered `n`, if the engine raises it.
pub fn event_of(n: u64) -> Option<CwndEvent> {
    CA_EVENTS.iter().find(|(_, k)| *k == n).map(|(e, _)| *e)
}

/// enum tcp_ca_state by number.
pub fn state_of(n: u64) -> Option<CaState> {
    [CaState::Open, CaState::Disorder, CaState::Cwr, CaState::Recovery, CaState::Loss].into_iter().find(|s| *s as u64 == n)
}

/// One connection's instance of a loaded program.
pub struct BpfCca {
    program: Arc<Program>,
    name: &'static str,
    memory: Memory,
    rng: Prandom,
    initialized: bool,
    /// The algorithm a bpf_setsockopt(TCP_CONGESTION) switched to: it
    /// takes every later hook, as tcp_set_congestion_control() replaces
    /// icsk_ca_ops.
    switched: Option<Box<dyn CongestionControl>>,
    /// The kernel algorithm whose exported functions the program calls as
    /// kfuncs (cubictcp_*, dctcp_*, bbr_*), run natively on the connection.
    kernel_cca: Option<Box<dyn CongestionControl>>,
    seed: u64,
    /// The rate sample of the cong_control call under way.
    rate_sample: Option<RateSample>,
}

impl BpfCca {
    /// An instance of `program` with its per-connection random seed.
    pub fn new(program: Arc<Program>, name: &'static str, seed: u64) -> BpfCca {
        let memory = program.memory.clone();
        BpfCca {
            program,
            name,
            memory,
            rng: Prandom::new(seed),
            initialized: false,
            switched: None,
            kernel_cca: None,
            seed,
            rate_sample: None,
        }
    }

    /// Runs `hook` with arguments `args` after the socket; `None` when
    /// the program does not implement it.
    fn call(&mut self, hook: Hook, tp: &mut ConnState, args: &[u64]) -> Option<u64> {
        let entry = self.program.entry(hook)?;
        sock_image::write(&mut self.memory, tp, self.initialized);
        let ctx = self.memory.region_bytes_mut(CTX_BASE);
        ctx[..8].copy_from_slice(&SOCK_BASE.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            ctx[8 * (i + 1)..8 * (i + 2)].copy_from_slice(&a.to_le_bytes());
        }
        let mut switch_to = None;
        let mut calls = HookCalls {
            tp: &mut *tp,
            rng: &mut self.rng,
            switch_to: &mut switch_to,
            kernel_cca: &mut self.kernel_cca,
            seed: self.seed,
            rate_sample: self.rate_sample.as_ref(),
        };
        let result = vm::run(&self.program.code, entry, CTX_BASE, STACK_BASE, &mut self.memory, &mut calls);
        let r0 = match result {
            Ok(r0) => r0,
            Err(e) => {
                let poisoned = self.program.poisoned.iter().find(|(pc, _)| *pc == e.pc).map(|(_, why)| format!(" ({why})"));
                panic!(
                    "BPF congestion control {}: hook {}, function {}, instruction {}: {}{}",
                    self.name,
                    hook.name(),
                    self.program.function_at(e.pc),
                    e.pc,
                    e.what,
                    poisoned.unwrap_or_default()
                )
            }
        };
        sock_image::read(&self.memory, tp);
        if let Some(name) = switch_to {
            let mut next = crate::cc::by_name(&name).expect("bpf_setsockopt checked the name");
            next.init(tp);
            self.switched = Some(next);
        }
        Some(r0)
    }
}

impl CongestionControl for BpfCca {
    fn name(&self) -> &'static str {
        self.switched.as_ref().map_or(self.name, |c| c.name())
    }

    fn init(&mut self, tp: &mut ConnState) {
        // tcp_init_congestion_control(): icsk_ca_priv is zeroed, then
        // ca_ops->init(); tcp_init_transfer() stamped snd_cwnd_stamp.
        sock_image::set_cwnd_stamp(&mut self.memory, sock_image::kernel_jiffies(tp.now) as u32);
        self.call(Hook::Init, tp, &[]);
        self.initialized = true;
    }

    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        if let Some(c) = self.switched.as_mut() {
            return c.ssthresh(tp);
        }
        // The hook sees the socket; the engine applies only its answer.
        let mut view = tp.clone();
        self.call(Hook::Ssthresh, &mut view, &[]).unwrap_or(tp.snd_ssthresh as u64) as u32
    }

    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if let Some(c) = self.switched.as_mut() {
            return c.cong_avoid(tp, acked);
        }
        // cong_avoid(sk, ack, acked): ack is the ACK's sequence, snd_una after it.
        let ack = sock_image::seq_of(tp.snd_una, tp.mss_bytes) as u64;
        self.call(Hook::CongAvoid, tp, &[ack, acked as u64]);
    }

    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        if let Some(c) = self.switched.as_mut() {
            return c.set_state(tp, new_state);
        }
        self.call(Hook::SetState, tp, &[new_state as u64]);
    }

    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        if let Some(c) = self.switched.as_mut() {
            return c.cwnd_event(tp, ev);
        }
        self.call(Hook::CwndEvent, tp, &[event_number(ev)]);
    }

    fn pkts_acked(&mut self, tp: &mut ConnState, sample: &AckSample) {
        if let Some(c) = self.switched.as_mut() {
            return c.pkts_acked(tp, sample);
        }
        if self.program.entry(Hook::PktsAcked).is_none() {
            return;
        }
        // struct ack_sample: rtt_us is -1 without an RTT sample.
        let rtt_us = sample.rtt.map_or(-1i32, |t| (t.as_nanos() / 1000) as i32);
        let a = self.memory.region_bytes_mut(ACK_SAMPLE_BASE);
        a[ACK_PKTS_ACKED as usize..][..4].copy_from_slice(&sample.pkts_acked.to_le_bytes());
        a[ACK_RTT_US as usize..][..4].copy_from_slice(&rtt_us.to_le_bytes());
        a[ACK_IN_FLIGHT as usize..][..4].copy_from_slice(&sample.in_flight.to_le_bytes());
        self.call(Hook::PktsAcked, tp, &[ACK_SAMPLE_BASE]);
    }

    fn in_ack_event(&mut self, tp: &mut ConnState, flags: u32) {
        if let Some(c) = self.switched.as_mut() {
            return c.in_ack_event(tp, flags);
        }
        self.call(Hook::InAckEvent, tp, &[flags as u64]);
    }

    fn undo_cwnd(&mut self, tp: &mut ConnState) -> u32 {
        if let Some(c) = self.switched.as_mut() {
            return c.undo_cwnd(tp);
        }
        self.call(Hook::UndoCwnd, tp, &[]).map_or(tp.snd_cwnd.max(tp.prior_cwnd), |v| v as u32)
    }

    fn needs_ecn(&self) -> bool {
        self.program.flags & TCP_CONG_NEEDS_ECN != 0
    }

    fn owns_cwnd_and_pacing(&self) -> bool {
        match self.switched.as_ref() {
            Some(c) => c.owns_cwnd_and_pacing(),
            None => self.program.entry(Hook::CongControl).is_some(),
        }
    }

    fn cong_control(&mut self, tp: &mut ConnState, rs: &RateSample) {
        if let Some(c) = self.switched.as_mut() {
            return c.cong_control(tp, rs);
        }
        sock_image::write_rate_sample(&mut self.memory, rs);
        // cong_control(sk, ack, flag, rs): the engine keeps no FLAG_* bits
        // for the algorithm, so flag is 0 (docs/bpf-ccas.md).
        let ack = sock_image::seq_of(tp.snd_una, tp.mss_bytes) as u64;
        self.rate_sample = Some(*rs);
        self.call(Hook::CongControl, tp, &[ack, 0, RATE_SAMPLE_BASE]);
        self.rate_sample = None;
    }
}
