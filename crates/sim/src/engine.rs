//! The discrete-event loop: streams (sender + receiver), the shared path,
//! and periodic sampling. Built from a validated [`crate::scenario::Scenario`].

use crate::app::{App, RpcApp, RpcSpec};
use crate::app_rate::{AppSchedule, RateBulk};
use crate::cc::CongestionControl;
use crate::event::{AppTimer, Event, EventQueue, SenderTimer, TimerKind};
use crate::fq_codel::FqCodel;
use crate::host::coalesce::Coalescer;
use crate::host::cpu::{CpuSeat, Machines};
use crate::host_plan::Coalescing;
use crate::host::nic::{Nic, SmallQueue};
use crate::host::{jitter_stream, HostDelay};
use crate::path::dynamics::Dynamics;
use crate::path::{Aqm, Bottleneck, LossStage, Pipe};
use crate::rng::Rng;
use crate::tcp::{Ack, Codepoint, Receiver, RxAction, SegEcn, Sender, SenderConfig};
use crate::trace::{MachineCpu, PathFacts, Rpcs, RunResult, Stats};
use crate::transfer::{DataSet, Ledger, StreamTransfer, TransferApp};
use crate::capture::{Capture, CaptureSpec, Side, StreamMeta};
use crate::units::{Bytes, Rate, Time};
use crate::wire;

mod app_env;
mod hosts;
mod moving;
mod sample;
mod transmit;
use app_env::StreamApp;
use transmit::{DataPkt, Link, Tx};

/// One stream to simulate.
#[derive(Clone, Debug)]
pub struct StreamSpec {
    pub group: u32,
    pub index: u32,
    pub cc: String,
    pub mss: u32,
    pub start: Time,
    pub wmem_bytes: u64,
    pub rmem_bytes: u64,
    pub rate_cap: Option<Rate>,
    /// Extra round-trip delay of the sender's access link (added to the
    /// ACK path, which has no queue).
    pub extra_rtt: Time,
    /// RPC application, or `None` for a bulk transfer.
    pub rpc: Option<RpcSpec>,
    /// A bulk transfer's application-limited writer (app_rate.rs);
    /// `None`: it always has data.
    pub app: Option<AppSchedule>,
    /// The data set this stream carries part of (transfer.rs).
    pub transfer: Option<StreamTransfer>,
    /// ECN negotiated for this stream (tcp/ecn.rs `negotiate`).
    pub ecn: bool,
    /// Per-connection cwnd clamp in segments (tp->snd_cwnd_clamp as
    /// TCP_BPF_SNDCWND_CLAMP sets it), or `None` for Linux's default.
    pub cwnd_clamp: Option<u32>,
    /// The receiving host coalesces back-to-back segments with GRO and
    /// so ACKs once per super-packet (tcp/receiver/gro.rs).
    pub gro: bool,
    /// Mean processing delay the receiving host adds to each data segment
    /// or GRO unit, and the sending host to each ACK (host.rs); `None`:
    /// an ideal host.
    pub receiver_jitter: Option<Time>,
    pub sender_jitter: Option<Time>,
    /// Where the stream's work runs at its sender and at the receiver
    /// (host/cpu.rs); `None`: an infinitely fast host.
    pub sender_cpu: Option<CpuSeat>,
    pub receiver_cpu: Option<CpuSeat>,
    /// The sender host's NIC ceiling (index into `SimConfig::nics`).
    pub nic: Option<u32>,
    /// The sender host's interrupt moderation of ACKs (index into
    /// `SimConfig::sender_coalescing`).
    pub ack_coalescer: Option<u32>,
    /// The sender host's root qdisc paces every flow (fq).
    pub qdisc_paces: bool,
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    /// The BPF congestion controls the streams may name (`bpf:…`).
    pub bpf: crate::bpf::Catalog,
    pub duration: Time,
    pub sample_interval: Time,
    pub rate: Rate,
    pub rtt: Time,
    pub buffer: Bytes,
    /// The bottleneck's queue discipline.
    pub aqm: Aqm,
    /// Path MTU (bytes): sets the on-wire size of segments.
    pub mtu: u32,
    /// Per-packet loss probability of each flow group (loss + corruption).
    pub group_loss: Vec<f64>,
    pub streams: Vec<StreamSpec>,
    /// Cores of each machine the streams' seats name (host/cpu.rs), and
    /// each machine's label and hosts (for the result's `host_cpu`).
    pub machine_cores: Vec<u32>,
    pub machine_hosts: Vec<(String, Vec<String>)>,
    /// The warm-up: the hosts' CPU is reported over the rest of the run.
    pub warmup: Time,
    /// Rates of the sender hosts' NICs (host/nic.rs).
    pub nics: Vec<Rate>,
    /// Receive interrupt moderation (host/coalesce.rs) of the receiver, and
    /// of the sender hosts that have it.
    pub receiver_coalescing: Option<Coalescing>,
    pub sender_coalescing: Vec<Coalescing>,
    /// The data sets of transfer groups (transfer.rs), indexed by
    /// `StreamTransfer::id`.
    pub transfers: Vec<DataSet>,
    /// Packet captures to write, and how each stream's packets look.
    pub capture: Option<(CaptureSpec, Vec<StreamMeta>)>,
    /// A path that moves (path/dynamics.rs), its state at time zero;
    /// `None`: the static path.
    pub dynamics: Option<Box<Dynamics>>,
}

struct Stream {
    group: u32,
    index: u32,
    sender: Sender,
    receiver: Receiver,
    /// Index of the shared ACK pipe with this stream's return delay.
    ack_pipe: usize,
    ack_delay: Time,
    /// Its segments' way onto the path (transmit.rs).
    link: Link,
    start: Time,
    started: bool,
    app: App,
    /// The receiving host's processing of data (host.rs); `None`: TCP
    /// gets each unit at its arrival.
    rx_host: Option<Box<HostDelay<DataPkt>>>,
    /// The sending host's processing of ACKs.
    tx_host: Option<Box<HostDelay<Ack>>>,
    /// The core running this stream at its sender and at the receiver.
    tx_cpu: Option<Box<CpuSeat>>,
    rx_cpu: Option<Box<CpuSeat>>,
    mss: u32,
    ack_coalescer: Option<u32>,
}

impl Net {
    /// A data packet enters fq_codel (kept out of line so the drop-tail
    /// transmit path stays small enough to inline).
    #[cold]
    #[inline(never)]
    fn enqueue_fq(&mut self, now: Time, stream: u32, wire_bytes: u32, seq: u64, ecn: SegEcn, tsval: u32) {
        if let Some(fq) = self.fq.as_mut() {
            fq.enqueue(now, stream, wire::frame_bytes(wire_bytes), ecn.is_ect(), DataPkt::one(stream, seq, ecn, tsval));
            if !self.link_busy {
                self.serve_link(now);
            }
        }
    }

    /// Carries out what stream `i`'s receiver asked for at `now`: ACKs go
    /// onto the stream's ACK pipe, timer requests onto the event heap.
    #[inline(always)]
    fn rx_action<const FQ: bool>(&mut self, i: u32, ack_pipe: usize, ack_delay: Time, now: Time, act: RxAction) {
        match act {
            RxAction::AckNow(ack) => self.push_ack::<FQ>(ack_pipe, ack_delay, now, (i, ack)),
            RxAction::Schedule(at, t) => self.events.push(at, Event::Timer(i, TimerKind::Receiver(t))),
            RxAction::AckThenSchedule(ack, at, t) => {
                self.push_ack::<FQ>(ack_pipe, ack_delay, now, (i, ack));
                self.events.push(at, Event::Timer(i, TimerKind::Receiver(t)));
            }
            RxAction::None => {}
        }
    }

    /// The bottleneck's queue at `now` (packets, bytes): fq_codel's backlog
    /// (if any) plus the FIFO's packets not yet fully sent.
    fn queue_at(&self, now: Time) -> (u64, u64) {
        let (fifo_packets, fifo_bytes) = self.bottleneck.occupancy(now);
        let (fq_packets, fq_bytes) = self.fq.as_ref().map_or((0, 0), FqCodel::len);
        (fifo_packets as u64 + fq_packets as u64, fifo_bytes + fq_bytes)
    }

    /// The bottleneck's (drops, CE marks) so far, fq_codel's included.
    fn queue_counters(&self) -> (u64, u64) {
        let drops = self.bottleneck.drops + self.fq.as_ref().map_or(0, FqCodel::drops);
        let ce_marks = self.bottleneck.ce_marks + self.fq.as_ref().map_or(0, |q| q.ce_marks);
        (drops, ce_marks)
    }

    /// The link is free at `now`: fq_codel picks the next packet (CoDel
    /// decides on its sojourn time here), the bottleneck serializes it,
    /// and one LinkFree event is scheduled for its departure.
    fn serve_link(&mut self, now: Time) {
        let Some(fq) = self.fq.as_mut() else { return };
        match fq.dequeue(now) {
            Some(q) => {
                let mut pkt = q.item;
                if q.ce {
                    pkt.ecn.codepoint = Codepoint::Ce;
                }
                // The link is idle at `now`, so the FIFO accepts the packet.
                let dep = self.bottleneck.enqueue(now, q.bytes).expect("an idle link accepts a packet");
                match self.dynamics.as_deref_mut() {
                    // The delay in effect when it leaves fq_codel.
                    Some(d) => self.fwd.push_sorted(d.data_arrival(now, dep, q.bytes), pkt),
                    None => self.fwd.push(dep + self.prop, pkt),
                }
                self.events.push(dep, Event::LinkFree);
                self.link_busy = true;
            }
            None => self.link_busy = false,
        }
    }
}

struct Net {
    events: EventQueue,
    bottleneck: Bottleneck,
    /// A dequeue-driven discipline in front of the bottleneck (fq_codel):
    /// packets wait here and the bottleneck serializes one at a time, the
    /// next taken when the link frees (`Event::LinkFree`). `None` for the
    /// FIFO disciplines, which the bottleneck applies at enqueue.
    fq: Option<FqCodel<DataPkt>>,
    /// Whether a LinkFree event is pending (the link is serializing).
    link_busy: bool,
    /// Forward path after the bottleneck; polled by the event loop.
    fwd: Pipe<DataPkt>,
    /// Reverse (ACK) paths, one per distinct delay, shared by the streams
    /// with that delay (a constant-delay FIFO stays ordered); polled.
    acks: Vec<Pipe<(u32, Ack)>>,
    /// Deliveries from polled pipes (counted as events).
    pipe_events: u64,
    loss: Vec<LossStage>,
    /// One-way propagation delay (RTT/2) of the data path.
    prop: Time,
    packets: u64,
    random_drops: u64,
    /// The hosts' cores (host/cpu.rs).
    machines: Machines<crate::event::HostStep>,
    /// CPU time of the sends made during the current event, booked on the
    /// sending stream's core once the event is done (`Sim::book_sends`).
    send_work: Time,
    send_work_stream: u32,
    /// The sender hosts' NICs and each stream's bytes queued in them.
    nics: Vec<Nic>,
    small_queues: Vec<SmallQueue>,
    /// Receive interrupt moderation: the receiver's data, each sender
    /// host's ACKs (host/coalesce.rs).
    rx_coalescer: Option<Coalescer<DataPkt>>,
    ack_coalescers: Vec<Coalescer<(u32, Ack)>>,
    /// Units a receiving host's full ring dropped.
    host_drops: u64,
    /// A path that moves (engine/moving.rs); `None`: the static path.
    dynamics: Option<Box<Dynamics>>,
    /// Packet captures being written (capture.rs); `None`: none.
    capture: Option<Box<Capture>>,
}

#[derive(Clone, Copy)]
enum Src {
    Heap,
    Data,
    Ack(usize),
}

pub struct Sim {
    /// Some stream negotiated ECN: the run needs the ECN steps per packet.
    any_ecn: bool,
    /// Some host has a processing delay: the run needs the host step.
    any_host_delay: bool,
    now: Time,
    end: Time,
    sample_interval: Time,
    next_sample: u64,
    /// The hosts' machines, and their cores' CPU time at the end of the
    /// warm-up (once reached: taken at the first sample after it).
    machine_hosts: Vec<(String, Vec<String>)>,
    warmup: Time,
    cpu_at_warmup: Option<(Time, Vec<Vec<Time>>)>,
    streams: Vec<Stream>,
    net: Net,
    result: RunResult,
    /// The transfer groups' data sets (transfer.rs).
    ledger: Ledger,
}

/// A host's holding of one stream's units in one direction: when it has a
/// processing jitter, or (`holds`) a CPU model or interrupt moderation
/// (host/mod.rs); `None` for an ideal host.
fn host_delay<T>(jitter: Option<Time>, holds: bool, seed: u64, stream: u64) -> Option<Box<HostDelay<T>>> {
    (jitter.is_some() || holds).then(|| Box::new(HostDelay::new(jitter.unwrap_or(Time::ZERO), Rng::new(seed, stream))))
}

/// Builds an algorithm with its own seed; the scenario has already
/// validated the names.
fn build_cc(name: &str, seed: u64, bpf: &crate::bpf::Catalog) -> Box<dyn CongestionControl> {
    crate::cc::build_named(name, seed, bpf).unwrap_or_else(|| panic!("unknown congestion control {name:?}"))
}

impl Sim {
    pub fn new(cfg: &SimConfig) -> Sim {
        let loss = cfg
            .group_loss
            .iter()
            .enumerate()
            .map(|(g, &p)| LossStage::new(p, Rng::new(cfg.seed, crate::path::loss_stream(g as u64))))
            .collect();
        let mut net = Net {
            events: EventQueue::new(),
            // fq_codel holds the queue; the FIFO behind it only serializes.
            bottleneck: match cfg.aqm {
                Aqm::FqCodel(_) => Bottleneck::new(cfg.rate, cfg.buffer),
                aqm => Bottleneck::with_aqm(cfg.rate, cfg.buffer, aqm),
            },
            fq: match cfg.aqm {
                Aqm::FqCodel(p) => Some(FqCodel::new(&p)),
                _ => None,
            },
            link_busy: false,
            fwd: Pipe::default(),
            acks: Vec::new(),
            pipe_events: 0,
            loss,
            prop: cfg.rtt.div(2),
            packets: 0,
            random_drops: 0,
            machines: Machines::new(&cfg.machine_cores),
            send_work: Time::ZERO,
            send_work_stream: 0,
            nics: cfg.nics.iter().map(|&r| Nic::new(r)).collect(),
            small_queues: if cfg.nics.is_empty() { Vec::new() } else { vec![SmallQueue::default(); cfg.streams.len()] },
            host_drops: 0,
            rx_coalescer: cfg.receiver_coalescing.map(|c| Coalescer::new(c.usecs, c.frames)),
            ack_coalescers: cfg.sender_coalescing.iter().map(|c| Coalescer::new(c.usecs, c.frames)).collect(),
            dynamics: cfg.dynamics.clone(),
            capture: cfg.capture.clone().map(|(spec, metas)| Box::new(Capture::new(spec, metas))),
        };
        if let Some(p) = cfg.dynamics.as_ref().and_then(|d| d.rate_profile(cfg.rate)) {
            net.bottleneck.set_rate_profile(p);
        }
        if let Some(t) = cfg.dynamics.as_ref().and_then(|d| d.trace_service(wire::ETH_HEADER_BYTES)) {
            net.bottleneck.set_trace(t);
        }
        let back = cfg.rtt.saturating_sub(cfg.rtt.div(2));
        let mut streams = Vec::with_capacity(cfg.streams.len());
        let mut delays: Vec<Time> = Vec::new();
        for (i, s) in cfg.streams.iter().enumerate() {
            let ack_delay = back + s.extra_rtt;
            let ack_pipe = match delays.iter().position(|&d| d == ack_delay) {
                Some(k) => k,
                None => {
                    delays.push(ack_delay);
                    net.acks.push(Pipe::default());
                    if let Some(d) = net.dynamics.as_deref_mut() {
                        d.add_ack_path(delays.len() as u64 - 1, s.extra_rtt);
                    }
                    delays.len() - 1
                }
            };
            // The receiver's RTO from its handshake sample: srtt + 200 ms.
            let cc = build_cc(&s.cc, Rng::new(cfg.seed, 0xCC00_0000 + i as u64).next_u64(), &cfg.bpf);
            // The receiver runs the flow's algorithm for its half: DCTCP's
            // CE echo when it needs ECN (tcp_ca_needs_ecn).
            let receiver = Receiver::new(s.rmem_bytes, s.mss, cfg.rtt + s.extra_rtt + crate::tcp::rtt::RTO_MIN)
                .with_rtt(cfg.rtt + s.extra_rtt)
                .with_ecn(s.ecn, cc.needs_ecn());
            let scfg = SenderConfig {
                mss: s.mss,
                wmem_bytes: s.wmem_bytes,
                rate_cap: s.rate_cap,
                qdisc_paces: s.qdisc_paces,
                initial_rwnd: receiver.wnd,
                // The SYN/SYN-ACK exchange gives Linux its first RTT sample
                // (base RTT plus access delay).
                handshake_rtt: Some(cfg.rtt + s.extra_rtt),
                ecn: s.ecn,
            };
            let mut sender = Sender::new(&scfg, cc);
            if let Some(clamp) = s.cwnd_clamp {
                sender.tp.set_cwnd_clamp(clamp);
            }
            let app = match (s.rpc.clone(), s.app.clone(), s.transfer) {
                (Some(spec), _, _) => App::Rpc(RpcApp::new(spec, s.mss, Rng::new(cfg.seed, 0xA990_0000 + i as u64), cfg.duration)),
                (None, Some(sched), _) => App::RateBulk(RateBulk::new(sched, s.mss, s.start, cfg.duration)),
                (None, None, Some(t)) => App::Transfer(TransferApp::new(t, cfg.duration)),
                (None, None, None) => App::Bulk,
            };
            sender.write_seq = app.initial_write_seq();
            net.events.push(s.start, Event::Timer(i as u32, TimerKind::App(AppTimer::Start)));
            streams.push(Stream {
                group: s.group,
                index: s.index,
                sender,
                receiver,
                ack_pipe,
                ack_delay,
                link: Link::new(
                    wire::ip_packet_bytes(s.mss, cfg.mtu),
                    s.group as usize,
                    if s.gro { crate::tcp::gro_max_segs(s.mss, wire::ip_packet_bytes(s.mss, cfg.mtu)) } else { 0 },
                    wire::carries_timestamps(s.mss, cfg.mtu),
                    s.sender_cpu.map(|seat| (seat.costs, s.mss)),
                    s.nic,
                ),
                start: s.start,
                started: false,
                app,
                rx_host: host_delay(
                    s.receiver_jitter,
                    s.receiver_cpu.is_some() || cfg.receiver_coalescing.is_some(),
                    cfg.seed,
                    jitter_stream(i as u64, false),
                ),
                tx_host: host_delay(s.sender_jitter, s.sender_cpu.is_some() || s.ack_coalescer.is_some(), cfg.seed, jitter_stream(i as u64, true)),
                tx_cpu: s.sender_cpu.map(Box::new),
                rx_cpu: s.receiver_cpu.map(Box::new),
                mss: s.mss,
                ack_coalescer: s.ack_coalescer,
            });
        }
        if cfg.sample_interval > Time::ZERO && cfg.sample_interval <= cfg.duration {
            net.events.push(cfg.sample_interval, Event::Sample);
        }
        Sim {
            now: Time::ZERO,
            end: cfg.duration,
            sample_interval: cfg.sample_interval,
            next_sample: 1,
            cpu_at_warmup: (cfg.warmup == Time::ZERO).then(|| (Time::ZERO, net.machines.busy())),
            machine_hosts: cfg.machine_hosts.clone(),
            warmup: cfg.warmup,
            any_ecn: cfg.streams.iter().any(|s| s.ecn),
            any_host_delay: streams.iter().any(|s| s.rx_host.is_some() || s.tx_host.is_some()),
            streams,
            net,
            result: RunResult::default(),
            ledger: Ledger::new(cfg.transfers.clone()),
        }
    }

    /// Runs to the end and returns the tables.
    pub fn run(mut self) -> RunResult {
        self.run_until(self.end);
        self.finish()
    }

    /// The head of the forward pipe reaches its receiver; the application
    /// sees the data (RPC completions).
    fn on_data<const ECN: bool, const FQ: bool>(&mut self, now: Time) {
        let Some((at, head)) = self.net.fwd.front_mut() else { return };
        if let (true, Some(c), false) = (FQ, self.net.capture.as_deref_mut(), head.processed) {
            // At the receiver's interface: a GRO unit whole, else each segment.
            c.data(Side::Receiver, now, head.stream, (head.seq, if head.gro { head.n } else { 1 }), head.ecn, head.tsval);
        }
        if self.any_host_delay && !head.processed && self.streams[head.stream as usize].rx_host.is_some() {
            self.hold_data(now);
            return;
        }
        if head.gro && head.n > 1 && !self.streams[head.stream as usize].receiver.gro_takes_whole(head.seq, head.n) {
            // A super-packet repeating received data goes to TCP segment
            // by segment, all at its arrival (tcp/receiver/gro.rs).
            head.gro = false;
            head.spacing = Time::ZERO;
        }
        let pkt = *head;
        if pkt.n > 1 && !pkt.gro {
            // The next segment of a burst is the new head.
            head.seq += 1;
            head.n -= 1;
            *at += pkt.spacing;
        } else {
            self.net.fwd.pop_front();
        }
        let i = pkt.stream;
        let st = &mut self.streams[i as usize];
        let act = if pkt.gro && pkt.n > 1 {
            st.receiver.on_gro_segment(pkt.seq, pkt.n, now, pkt.tsval)
        } else {
            st.receiver.on_segment::<ECN>(pkt.seq, now, pkt.ecn, pkt.tsval)
        };
        if ECN {
            if let Some(lead) = st.receiver.take_lead_ack() {
                self.net.push_ack::<FQ>(st.ack_pipe, st.ack_delay, now, (i, lead));
            }
        }
        self.net.rx_action::<FQ>(i, st.ack_pipe, st.ack_delay, now, act);
        if st.app.reads_data() {
            let (app, mut env) = Self::app_env::<ECN, FQ>(st, &mut self.net, &mut self.result.rpcs, &mut self.ledger, i);
            app.on_data(now, &mut env);
            if self.net.send_work > Time::ZERO {
                self.book_sends(now);
            }
        }
    }

    /// Splits stream `i` into its application and the application's view
    /// of the rest.
    fn app_env<'a, const ECN: bool, const FQ: bool>(
        st: &'a mut Stream,
        net: &'a mut Net,
        rpcs: &'a mut Rpcs,
        ledger: &'a mut Ledger,
        i: u32,
    ) -> (&'a mut App, StreamApp<'a, ECN, FQ>) {
        let tx = Tx::new(net, i, &st.link);
        let env = StreamApp {
            tx,
            sender: &mut st.sender,
            receiver: &mut st.receiver,
            started: &mut st.started,
            ack_pipe: st.ack_pipe,
            ack_delay: st.ack_delay,
            group: st.group,
            index: st.index,
            rpcs,
            ledger,
        };
        (&mut st.app, env)
    }

    /// The head of ACK pipe `k` reaches its sender.
    fn on_ack<const ECN: bool, const FQ: bool>(&mut self, k: usize, now: Time) {
        let Some((i, ack)) = self.net.acks[k].pop_front() else { return };
        let st = &mut self.streams[i as usize];
        if self.any_host_delay && st.tx_host.is_some() {
            self.hold_ack(i, ack, now);
            return;
        }
        if let (true, Some(c)) = (FQ, self.net.capture.as_deref_mut()) {
            c.ack(Side::Sender, now, i, &ack);
        }
        let mut tx = Tx::<ECN, FQ>::new(&mut self.net, i, &st.link);
        st.sender.on_ack(now, &ack, &mut tx);
        if FQ {
            self.check_triggers(i, now);
        }
    }

    /// A timer of stream `i` fired: its owner handles it.
    fn on_timer<const ECN: bool, const FQ: bool>(&mut self, i: u32, kind: TimerKind, now: Time) {
        let st = &mut self.streams[i as usize];
        match kind {
            TimerKind::Sender(t) => {
                if self.any_host_delay && self.queue_timer(i, t, now) {
                    return;
                }
                self.run_sender_timer::<ECN, FQ>(i, t, now);
            }
            TimerKind::Receiver(t) => {
                let act = st.receiver.on_timer(t, now);
                self.net.rx_action::<FQ>(i, st.ack_pipe, st.ack_delay, now, act);
            }
            TimerKind::App(t) => {
                let (app, mut env) = Self::app_env::<ECN, FQ>(st, &mut self.net, &mut self.result.rpcs, &mut self.ledger, i);
                app.on_timer(t, now, &mut env);
            }
            TimerKind::Host(step) => self.release::<ECN, FQ>(i, step, now),
        }
        if self.net.send_work > Time::ZERO {
            // The sends this timer made keep their host's core busy.
            self.book_sends(now);
        }
    }

    /// Sender timer `t` of stream `i` fires at `now`; on a host with a CPU
    /// model its handler's time is charged with its sends.
    #[inline(always)]
    fn run_sender_timer<const ECN: bool, const FQ: bool>(&mut self, i: u32, t: SenderTimer, now: Time) {
        let st = &mut self.streams[i as usize];
        let mut tx = Tx::<ECN, FQ>::new(&mut self.net, i, &st.link);
        if st.sender.on_timer(t, now, &mut tx) {
            if let Some(seat) = st.tx_cpu.as_deref() {
                self.net.send_work += Time::from_nanos(seat.costs.timer_ns);
                self.net.send_work_stream = i;
            }
        }
    }

    fn finish(mut self) -> RunResult {
        self.net.advance_cross(self.end);
        let min_rtt = self
            .streams
            .iter()
            .map(|s| s.sender.rtt.min_rtt)
            .filter(|&t| t != Time::MAX)
            .min();
        let (queue_drops, ce_marks) = self.net.queue_counters();
        self.result.path = PathFacts {
            emulator: "sim",
            min_rtt_s: min_rtt.map(|t| t.as_secs_f64()),
            packets: self.net.packets,
            random_drops: self.net.random_drops,
            queue_drops,
            ce_marks,
            bottleneck_bps: self.net.bottleneck.mean_rate(self.end),
            late_p99_s: None,
            late_max_s: None,
            clock_uncertainty_s: None, // one clock: the simulator's
            host_drops: self.net.host_drops,
            policer_drops: self.net.dynamics.as_ref().map_or(0, |d| d.policer_drops()),
            reordered: self.net.dynamics.as_ref().map_or(0, |d| d.reordered()),
        };
        self.result.transfers = std::mem::take(&mut self.ledger.rows);
        if let Some(c) = self.net.capture.take() {
            self.result.captures = c.finish();
        }
        self.result.events = self.cc_events();
        self.result.host_cpu = self.host_cpu();
        self.result.stats = Stats {
            events: self.net.events.popped + self.net.pipe_events,
            packets_sent: self.streams.iter().map(|s| s.sender.stats.segs_out).sum(),
            max_pending_events: self.net.events.max_len as u64,
        };
        self.result
    }

    /// Each machine's cores' CPU time over the measured interval (from the
    /// end of the warm-up; the whole run if no sample came after it), as
    /// fractions of it. Work booked past the end counts up to the end.
    fn host_cpu(&self) -> Vec<MachineCpu> {
        let (from, before) = self.cpu_at_warmup.clone().unwrap_or((Time::ZERO, Vec::new()));
        let span = (self.end - from).as_secs_f64().max(1e-9);
        let now = self.net.machines.busy();
        self.machine_hosts
            .iter()
            .zip(now)
            .enumerate()
            .map(|(m, ((label, hosts), cores))| MachineCpu {
                label: label.clone(),
                hosts: hosts.clone(),
                busy_frac: cores
                    .iter()
                    .enumerate()
                    .map(|(c, busy)| {
                        let start = before.get(m).and_then(|b| b.get(c)).copied().unwrap_or(Time::ZERO);
                        ((*busy - start).as_secs_f64() / span).min(1.0)
                    })
                    .collect(),
            })
            .collect()
    }

    /// Read access for tests: the sender of stream `i`.
    pub fn sender(&self, i: usize) -> &Sender {
        &self.streams[i].sender
    }

    /// Read access for tests: the bottleneck (its counters, and its queue
    /// through `Bottleneck::occupancy`).
    pub fn bottleneck(&self) -> &Bottleneck {
        &self.net.bottleneck
    }

    /// Read access for tests: fq_codel's packets and bytes held and its
    /// (CoDel, overflow) drops, when the path runs fq_codel.
    pub fn fq_codel_stats(&self) -> Option<((u32, u64), u64, u64)> {
        self.net.fq.as_ref().map(|q| (q.len(), q.codel_drops, q.overlimit_drops))
    }

    /// The current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Runs until `t` (inclusive) without finishing; for tests that inspect
    /// state mid-run. The event loop is compiled per kind of run: without
    /// ECN and fq_codel (the common drop-tail case) the per-packet path
    /// carries no ECN step and no fq_codel branch; with ECN; segment by
    /// segment with fq_codel or a path that moves (`FQ`: the run checks
    /// for both where a packet enters the path).
    pub fn run_until(&mut self, t: Time) {
        // A capture takes the instance with every step (its hooks are
        // compiled out of the others: capture.rs).
        match (self.any_ecn, self.net.fq.is_some() || self.net.dynamics.is_some() || self.net.capture.is_some()) {
            (false, false) => self.run_loop::<false, false>(t),
            (true, false) => self.run_loop::<true, false>(t),
            (_, true) => self.run_loop::<true, true>(t),
        }
    }

    fn run_loop<const ECN: bool, const FQ: bool>(&mut self, t: Time) {
        let limit = t.min(self.end);
        loop {
            // The earliest of: the timer heap, the forward pipe's head, each
            // ACK pipe's head. Ties go to the heap, then data, then ACKs, a
            // fixed order that keeps runs deterministic.
            let mut best = self.net.events.peek_time().unwrap_or(Time::MAX);
            let mut src = Src::Heap;
            if let Some(at) = self.net.fwd.peek_time() {
                if at < best {
                    best = at;
                    src = Src::Data;
                }
            }
            for (k, p) in self.net.acks.iter().enumerate() {
                if let Some(at) = p.peek_time() {
                    if at < best {
                        best = at;
                        src = Src::Ack(k);
                    }
                }
            }
            if best > limit || best == Time::MAX {
                break;
            }
            self.now = best;
            match src {
                Src::Data => {
                    self.net.pipe_events += 1;
                    self.on_data::<ECN, FQ>(best);
                }
                Src::Ack(k) => {
                    self.net.pipe_events += 1;
                    self.on_ack::<ECN, FQ>(k, best);
                }
                Src::Heap => {
                    let (now, ev) = self.net.events.pop().expect("peeked");
                    match ev {
                        Event::Timer(i, kind) => self.on_timer::<ECN, FQ>(i, kind, now),
                        Event::Sample => self.on_sample(now),
                        Event::LinkFree => self.net.serve_link(now),
                        Event::Interrupt(h) => self.interrupt(h, now),
                    }
                }
            }
        }
    }

    /// Ends a run started with `run_until`.
    pub fn into_result(self) -> RunResult {
        self.finish()
    }

    /// Read access for tests: the receiver of stream `i`.
    pub fn receiver(&self, i: usize) -> &Receiver {
        &self.streams[i].receiver
    }

    /// Start time of stream `i`.
    pub fn stream_start(&self, i: usize) -> Time {
        self.streams[i].start
    }

    /// Largest receiver out-of-order range count over streams.
    pub fn max_receiver_ofo(&self) -> usize {
        self.streams.iter().map(|s| s.receiver.ofo_ranges()).max().unwrap_or(0)
    }
}
