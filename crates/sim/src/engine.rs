//! The discrete-event loop: streams (sender + receiver), the shared path,
//! and periodic sampling. Built from a validated [`crate::scenario::Scenario`].

use crate::app::{RpcApp, RpcMode, RpcSpec};
use crate::cc::CongestionControl;
use crate::event::{Event, EventQueue, Timer, TimerKind};
use crate::path::{Bottleneck, LossStage, Pipe};
use crate::rng::Rng;
use crate::tcp::{Ack, Receiver, RxAction, Sender, SenderConfig, SenderEnv};
use crate::trace::{PathFacts, Row, RunResult, Stats};
use crate::units::{Bytes, Rate, Time};
use crate::wire;

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
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    pub duration: Time,
    pub sample_interval: Time,
    pub rate: Rate,
    pub rtt: Time,
    pub buffer: Bytes,
    /// Path MTU (bytes): sets the on-wire size of segments.
    pub mtu: u32,
    /// Per-packet loss probability of each flow group (loss + corruption).
    pub group_loss: Vec<f64>,
    pub streams: Vec<StreamSpec>,
}

struct Stream {
    group: u32,
    index: u32,
    sender: Sender,
    receiver: Receiver,
    /// Index of the shared ACK pipe with this stream's return delay.
    ack_pipe: usize,
    ack_delay: Time,
    wire: u32,
    start: Time,
    started: bool,
    delack: Timer,
    sack_compress: Timer,
    rpc: Option<RpcApp>,
}

impl Stream {
    /// The receiver sends `ack` at `now`: tcp_event_ack_sent() clears the
    /// delayed-ACK and SACK-compression timers.
    fn send_ack(&mut self, net: &mut Net, i: u32, now: Time, ack: Ack) {
        self.delack.disarm();
        self.sack_compress.disarm();
        net.acks[self.ack_pipe].push(now + self.ack_delay, (i, ack));
    }

    /// Arms the receiver's SACK-compression timer for `at`.
    fn arm_sack_compress(&mut self, net: &mut Net, i: u32, at: Time) {
        if let Some(at) = self.sack_compress.arm(at) {
            net.events.push(at, Event::Timer(i, TimerKind::SackCompress));
        }
    }
}

/// Data packet in flight on the forward path.
#[derive(Clone, Copy, Debug)]
struct DataPkt {
    stream: u32,
    seq: u64,
}

struct Net {
    events: EventQueue,
    bottleneck: Bottleneck,
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
}

/// The sender's view of the world for one stream.
struct Tx<'a> {
    net: &'a mut Net,
    stream: u32,
    wire: u32,
    group: usize,
}

impl SenderEnv for Tx<'_> {
    #[inline]
    fn transmit(&mut self, now: Time, seq: u64, _retrans: bool) {
        let net = &mut *self.net;
        net.packets += 1;
        if net.loss[self.group].lose() {
            net.random_drops += 1;
            return;
        }
        let Some(dep) = net.bottleneck.enqueue(now, wire::frame_bytes(self.wire)) else { return };
        net.fwd.push(dep + net.prop, DataPkt { stream: self.stream, seq });
    }

    #[inline]
    fn schedule(&mut self, at: Time, kind: TimerKind) {
        self.net.events.push(at, Event::Timer(self.stream, kind));
    }
}

#[derive(Clone, Copy)]
enum Src {
    Heap,
    Data,
    Ack(usize),
}

pub struct Sim {
    now: Time,
    end: Time,
    sample_interval: Time,
    next_sample: u64,
    streams: Vec<Stream>,
    net: Net,
    result: RunResult,
}

/// Builds an algorithm with its own seed; the scenario has already
/// validated the names.
fn build_cc(name: &str, seed: u64) -> Box<dyn CongestionControl> {
    crate::cc::by_name_seeded(name, seed).unwrap_or_else(|| panic!("unknown congestion control {name:?}"))
}

impl Sim {
    pub fn new(cfg: &SimConfig) -> Sim {
        let loss = cfg
            .group_loss
            .iter()
            .enumerate()
            .map(|(g, &p)| LossStage::new(p, Rng::new(cfg.seed, 0x105_5000 + g as u64)))
            .collect();
        let mut net = Net {
            events: EventQueue::new(),
            bottleneck: Bottleneck::new(cfg.rate, cfg.buffer),
            fwd: Pipe::default(),
            acks: Vec::new(),
            pipe_events: 0,
            loss,
            prop: cfg.rtt.div(2),
            packets: 0,
            random_drops: 0,
        };
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
                    delays.len() - 1
                }
            };
            // The receiver's RTO from its handshake sample: srtt + 200 ms.
            let receiver = Receiver::new(s.rmem_bytes, s.mss, cfg.rtt + s.extra_rtt + crate::tcp::rtt::RTO_MIN)
                .with_rtt(cfg.rtt + s.extra_rtt);
            let scfg = SenderConfig {
                mss: s.mss,
                wmem_bytes: s.wmem_bytes,
                rate_cap: s.rate_cap,
                initial_rwnd: receiver.wnd,
                // The SYN/SYN-ACK exchange gives Linux its first RTT sample
                // (base RTT plus access delay).
                handshake_rtt: Some(cfg.rtt + s.extra_rtt),
            };
            let cc_seed = Rng::new(cfg.seed, 0xCC00_0000 + i as u64).next_u64();
            let mut sender = Sender::new(&scfg, build_cc(&s.cc, cc_seed));
            let rpc = s.rpc.clone().map(|spec| {
                sender.write_seq = 0; // the server writes only on requests
                RpcApp::new(spec, s.mss, Rng::new(cfg.seed, 0xA990_0000 + i as u64))
            });
            net.events.push(s.start, Event::Timer(i as u32, TimerKind::App));
            streams.push(Stream {
                group: s.group,
                index: s.index,
                sender,
                receiver,
                ack_pipe,
                ack_delay,
                wire: wire::ip_packet_bytes(s.mss, cfg.mtu),
                start: s.start,
                started: false,
                delack: Timer::default(),
                sack_compress: Timer::default(),
                rpc,
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
            streams,
            net,
            result: RunResult::default(),
        }
    }

    /// Runs to the end and returns the tables.
    pub fn run(mut self) -> RunResult {
        self.run_until(self.end);
        self.finish()
    }

    /// The head of the forward pipe reaches its receiver.
    fn on_data(&mut self, now: Time) {
        let Some(pkt) = self.net.fwd.pop_front() else { return };
        let st = &mut self.streams[pkt.stream as usize];
        match st.receiver.on_data(pkt.seq, now) {
            RxAction::AckNow(ack) => st.send_ack(&mut self.net, pkt.stream, now, ack),
            RxAction::Delay(at) => {
                if let Some(at) = st.delack.arm(at) {
                    self.net.events.push(at, Event::Timer(pkt.stream, TimerKind::DelAck));
                }
            }
            RxAction::Compress(at) => st.arm_sack_compress(&mut self.net, pkt.stream, at),
            RxAction::AckThenCompress(ack, at) => {
                st.send_ack(&mut self.net, pkt.stream, now, ack);
                st.arm_sack_compress(&mut self.net, pkt.stream, at);
            }
            RxAction::None => {}
        }
        if st.rpc.is_some() {
            self.rpc_completions(pkt.stream as usize, now);
        }
    }

    /// Records RPCs whose responses are complete; a closed loop issues the
    /// next request at once.
    fn rpc_completions(&mut self, i: usize, now: Time) {
        let st = &mut self.streams[i];
        loop {
            let rcv_nxt = st.receiver.rcv_nxt;
            let Some(app) = st.rpc.as_mut() else { return };
            let Some(t0) = app.pop_completed(rcv_nxt) else { return };
            let closed = matches!(app.spec.mode, RpcMode::Closed { .. });
            let rpcs = &mut self.result.rpcs;
            rpcs.flow_group.push(st.group as i64);
            rpcs.stream.push(st.index as i64);
            rpcs.start_s.push(t0.as_secs_f64());
            rpcs.duration_s.push((now - t0).as_secs_f64());
            rpcs.response_bytes.push(app.spec.response_bytes as i64);
            if closed {
                Self::rpc_issue(st, &mut self.net, i as u32, now);
            }
        }
    }

    /// The client of stream `st` issues one request at `now`.
    fn rpc_issue(st: &mut Stream, net: &mut Net, i: u32, now: Time) {
        let Some(app) = st.rpc.as_mut() else { return };
        let at = app.issue(now, st.ack_delay);
        net.events.push(at, Event::Timer(i, TimerKind::RpcRequest));
        // A pending delayed ACK rides on the request.
        if let Some(ack) = st.receiver.piggyback_ack() {
            st.send_ack(net, i, now, ack);
        }
    }

    /// The head of ACK pipe `k` reaches its sender.
    fn on_ack(&mut self, k: usize, now: Time) {
        let Some((i, ack)) = self.net.acks[k].pop_front() else { return };
        let st = &mut self.streams[i as usize];
        let mut tx = Tx { net: &mut self.net, stream: i, wire: st.wire, group: st.group as usize };
        st.sender.on_ack(now, &ack, &mut tx);
    }

    fn on_timer(&mut self, i: usize, kind: TimerKind, now: Time) {
        let st = &mut self.streams[i];
        let mut tx = Tx { net: &mut self.net, stream: i as u32, wire: st.wire, group: st.group as usize };
        match kind {
            TimerKind::DelAck | TimerKind::SackCompress => {
                let delack = kind == TimerKind::DelAck;
                let timer = if delack { &mut st.delack } else { &mut st.sack_compress };
                let (fire, again) = timer.on_event(now);
                if let Some(at) = again {
                    tx.net.events.push(at, Event::Timer(i as u32, kind));
                }
                if fire {
                    let ack = if delack {
                        st.receiver.on_delack_timer()
                    } else {
                        st.receiver.on_sack_compress_timer()
                    };
                    if let Some(ack) = ack {
                        st.send_ack(tx.net, i as u32, now, ack);
                    }
                }
            }
            TimerKind::App if !st.started => {
                st.started = true;
                st.sender.start(now, &mut tx);
                let mode = st.rpc.as_ref().map(|a| a.spec.mode.clone());
                match mode {
                    Some(RpcMode::Closed { concurrency }) => {
                        for _ in 0..concurrency {
                            Self::rpc_issue(st, tx.net, i as u32, now);
                        }
                    }
                    Some(RpcMode::Open { .. }) => {
                        if let Some(gap) = st.rpc.as_mut().and_then(|a| a.next_gap()) {
                            tx.net.events.push(now + gap, Event::Timer(i as u32, TimerKind::RpcIssue));
                        }
                    }
                    None => {}
                }
            }
            TimerKind::RpcIssue => {
                Self::rpc_issue(st, tx.net, i as u32, now);
                if let Some(gap) = st.rpc.as_mut().and_then(|a| a.next_gap()) {
                    if now + gap <= self.end {
                        tx.net.events.push(now + gap, Event::Timer(i as u32, TimerKind::RpcIssue));
                    }
                }
            }
            TimerKind::RpcRequest => {
                if let Some(app) = st.rpc.as_mut() {
                    let segs = app.on_request();
                    st.sender.app_write(now, segs, &mut tx);
                }
            }
            _ => st.sender.on_timer(kind, now, &mut tx),
        }
    }

    /// Records one row per started stream from its sender's tcp_info, as
    /// the kernel backend samples TCP_INFO.
    fn on_sample(&mut self, now: Time) {
        let t_s = now.as_secs_f64();
        for st in &mut self.streams {
            if !st.started {
                continue;
            }
            let info = st.sender.tcp_info(now);
            self.result.series.push(Row {
                flow_group: st.group as i64,
                stream: st.index as i64,
                t_s,
                delivered_bytes: info.bytes_acked.get() as i64,
                cwnd_segments: info.snd_cwnd as i64,
                srtt_s: info.rtt.as_secs_f64(),
                min_rtt_s: info.min_rtt.map_or(0.0, Time::as_secs_f64),
                retrans_segments: info.total_retrans as i64,
                segs_out: info.data_segs_out as i64,
                pacing_rate_bps: info.pacing_rate.bps() as f64,
                delivery_rate_bps: info.delivery_rate_bps,
                inflight_segments: info.packets_in_flight() as i64,
                ca_state: info.ca_state_name(),
                cc_mode: info.cc_mode,
                rwnd_limited_s: info.rwnd_limited.as_secs_f64(),
                sndbuf_limited_s: info.sndbuf_limited.as_secs_f64(),
                busy_s: info.busy_time.as_secs_f64(),
            });
        }
        self.next_sample += 1;
        let next = self.sample_interval.mul(self.next_sample);
        if next <= self.end {
            self.net.events.push(next, Event::Sample);
        }
    }

    fn finish(mut self) -> RunResult {
        let min_rtt = self
            .streams
            .iter()
            .map(|s| s.sender.rtt.min_rtt)
            .filter(|&t| t != Time::MAX)
            .min();
        self.result.path = PathFacts {
            emulator: "sim",
            min_rtt_s: min_rtt.map(|t| t.as_secs_f64()),
            packets: self.net.packets,
            random_drops: self.net.random_drops,
            queue_drops: self.net.bottleneck.drops,
            bottleneck_bps: self.net.bottleneck.mean_rate(self.end),
            late_p99_s: None,
            late_max_s: None,
        };
        self.result.stats = Stats {
            events: self.net.events.popped + self.net.pipe_events,
            packets_sent: self.streams.iter().map(|s| s.sender.stats.segs_out).sum(),
            max_pending_events: self.net.events.max_len as u64,
        };
        self.result
    }

    /// Read access for tests: the sender of stream `i`.
    pub fn sender(&self, i: usize) -> &Sender {
        &self.streams[i].sender
    }

    /// Runs until `t` (inclusive) without finishing; for tests that inspect
    /// state mid-run.
    pub fn run_until(&mut self, t: Time) {
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
                    self.on_data(best);
                }
                Src::Ack(k) => {
                    self.net.pipe_events += 1;
                    self.on_ack(k, best);
                }
                Src::Heap => {
                    let (now, ev) = self.net.events.pop().expect("peeked");
                    match ev {
                        Event::Timer(i, kind) => self.on_timer(i as usize, kind, now),
                        Event::Sample => self.on_sample(now),
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
