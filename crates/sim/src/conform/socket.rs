//! The scripted socket: system calls, the handshake on either side, the
//! peer's ACKs turned into the sender's segment-numbered `Ack`s, and the
//! sender's transmissions turned back into byte-numbered packets.

use crate::cc as registry;
use crate::event::{Event, EventQueue, SenderTimer, TimerKind};
use crate::tcp::receiver::{Ack, MAX_SACKS};
use crate::tcp::{timestamps, Codepoint, SegEcn, Sender, SenderConfig, SenderEnv};
use crate::units::{Rate, Time};

use super::handshake::{self, Negotiated};
use super::packet::{data_options, syn_options, Packet, ACK, CWR, ECE, FIN, SYN};
use super::sysctls::Sysctls;

/// A socket option a script sets (setsockopt()).
#[derive(Clone, Debug, PartialEq)]
pub enum SockOpt {
    /// TCP_CONGESTION.
    Congestion(String),
    /// SO_SNDBUF (the value passed; Linux doubles it).
    SndBuf(u64),
    /// SO_RCVBUF (the value passed; Linux doubles it).
    RcvBuf(u64),
    /// TCP_MAXSEG.
    MaxSeg(u32),
    /// SO_MAX_PACING_RATE, bytes per second.
    MaxPacingRate(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
}

/// What the sender handed to the wire, kept in segment numbers until the
/// socket turns it into packets.
/// Its timers wait in the simulator's own event queue (one stream, 0).
#[derive(Default)]
struct Wire {
    sent: Vec<(Time, u64, u32, SegEcn)>,
    timers: EventQueue,
}

impl SenderEnv for Wire {
    fn transmit(&mut self, now: Time, seq: u64, _retrans: bool, ecn: SegEcn) {
        self.sent.push((now, seq, 1, ecn));
    }

    fn transmit_burst(&mut self, now: Time, first: u64, n: u32, _retrans: bool, ecn: SegEcn) {
        self.sent.push((now, first, n, ecn));
    }

    fn schedule(&mut self, at: Time, timer: SenderTimer) {
        self.timers.push(at, Event::Timer(0, TimerKind::Sender(timer)));
    }
}

/// A `tcp_info` field as getsockopt(TCP_INFO) reports it (Linux's name
/// and unit).
pub type TcpInfoField = (&'static str, u64);

/// One socket under a script.
pub struct ScriptedSocket {
    pub sys: Sysctls,
    state: State,
    cc: Option<String>,
    sndbuf: Option<u64>,
    rcvbuf: Option<u64>,
    user_mss: Option<u32>,
    max_pacing_rate: Option<u64>,
    neg: Option<Negotiated>,
    sender: Option<Sender>,
    wire: Wire,
    out: Vec<Packet>,
    /// When our SYN or SYN-ACK left (the handshake's RTT starts there).
    syn_time: Time,
    asked_ecn: bool,
    /// ts_recent: the peer's last timestamp value, echoed in ours.
    ts_recent: u32,
    /// Next byte expected from the peer (relative; 1 after its SYN).
    rcv_nxt: u32,
    /// Our FIN's sequence number once sent.
    fin_seq: Option<u32>,
    fin_acked: bool,
    rcv_wnd: u32,
    /// connect() opened the connection (our SYN took a sequence number).
    active_open: bool,
}

impl ScriptedSocket {
    pub fn new(sys: Sysctls) -> ScriptedSocket {
        ScriptedSocket {
            sys,
            state: State::Closed,
            cc: None,
            sndbuf: None,
            rcvbuf: None,
            user_mss: None,
            max_pacing_rate: None,
            neg: None,
            sender: None,
            wire: Wire::default(),
            out: Vec::new(),
            syn_time: Time::ZERO,
            asked_ecn: false,
            ts_recent: 0,
            rcv_nxt: 0,
            fin_seq: None,
            fin_acked: false,
            rcv_wnd: 0,
            active_open: false,
        }
    }

    /// setsockopt(): before the connection exists an option shapes the
    /// handshake; TCP_CONGESTION and SO_MAX_PACING_RATE also apply later.
    pub fn setsockopt(&mut self, opt: SockOpt) -> Result<(), String> {
        match opt {
            SockOpt::Congestion(name) => {
                if registry::lookup(&name).is_none() {
                    return Err(format!("TCP_CONGESTION {name:?}: the simulator has no such algorithm"));
                }
                if self.sender.is_some() {
                    return Err("TCP_CONGESTION on an established connection: not modelled".into());
                }
                self.cc = Some(name);
            }
            // sock_setsockopt(): the kernel stores twice the value asked
            // (room for struct sk_buff overhead), at least SOCK_MIN_SNDBUF.
            SockOpt::SndBuf(v) => self.sndbuf = Some((2 * v).max(4608)),
            SockOpt::RcvBuf(v) => self.rcvbuf = Some((2 * v).max(2304)),
            SockOpt::MaxSeg(m) => {
                if self.state != State::Closed && self.state != State::Listen {
                    return Err("TCP_MAXSEG after the handshake: not modelled".into());
                }
                self.user_mss = Some(m);
            }
            SockOpt::MaxPacingRate(r) => {
                if self.sender.is_some() {
                    return Err("SO_MAX_PACING_RATE on an established connection: not modelled".into());
                }
                self.max_pacing_rate = Some(r);
            }
        }
        Ok(())
    }

    /// getsockopt(TCP_MAXSEG): the MSS in use (mss_cache) once connected,
    /// else the user's clamp or the default 536.
    pub fn maxseg(&self) -> u32 {
        match self.neg {
            Some(n) => n.mss,
            None => self.user_mss.unwrap_or(handshake::TCP_MSS_DEFAULT),
        }
    }

    pub fn listen(&mut self) {
        self.state = State::Listen;
    }

    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    fn tsval(now: Time) -> u32 {
        timestamps::tsval(now)
    }

    fn our_ts(&self, now: Time) -> Option<(u32, u32)> {
        self.neg.filter(|n| n.timestamps).map(|_| (Self::tsval(now), self.ts_recent))
    }

    /// connect(): sends the SYN (tcp_connect()).
    pub fn connect(&mut self, now: Time) -> Result<(), String> {
        if self.state != State::Closed {
            return Err("connect() on a socket that is not closed".into());
        }
        self.asked_ecn = self.sys.tcp_ecn == 1 || self.cc_needs_ecn();
        let ts = self.sys.tcp_timestamps.then(|| (Self::tsval(now), 0));
        let ws = self.sys.tcp_window_scaling.then(|| handshake::rcv_wscale(&self.sys, self.rcvbuf));
        let mss = handshake::advmss(self.user_mss);
        self.rcv_wnd = handshake::initial_rcv_wnd(&self.sys, self.rcvbuf, mss);
        let flags = if self.asked_ecn { SYN | ECE | CWR } else { SYN };
        self.out.push(Packet {
            time: now,
            flags,
            seq: 0,
            len: 0,
            ack: 0,
            win: self.rcv_wnd.min(65535),
            options: syn_options(mss, self.sys.tcp_sack, ts, ws),
            codepoint: Codepoint::NotEct,
        });
        self.syn_time = now;
        self.active_open = true;
        self.state = State::SynSent;
        Ok(())
    }

    fn cc_name(&self) -> String {
        self.cc.clone().unwrap_or_else(|| self.sys.tcp_congestion_control.clone())
    }

    fn cc_needs_ecn(&self) -> bool {
        registry::by_name(&self.cc_name()).is_some_and(|c| c.needs_ecn())
    }

    /// A packet from the peer at `now`.
    pub fn inbound(&mut self, now: Time, p: &Packet) -> Result<(), String> {
        match self.state {
            State::Listen if p.has(SYN) && !p.has(ACK) => self.on_syn(now, p),
            State::SynSent if p.has(SYN) && p.has(ACK) => self.on_synack(now, p),
            // tcp_rcv_state_process(): the ACK completing the handshake is
            // processed (tcp_ack()) before tcp_init_transfer() initialises
            // the congestion control, so the CCA never sees it as an ACK.
            State::SynReceived if p.has(ACK) && !p.has(SYN) => {
                if let Some((val, _)) = p.timestamp() {
                    self.ts_recent = val;
                }
                self.establish(now, p)
            }
            State::Established if !p.has(SYN) => self.on_segment(now, p),
            s => Err(format!("a {} packet in state {s:?}: not modelled", p.flag_string())),
        }
    }

    /// tcp_conn_request() → tcp_make_synack(): the SYN-ACK goes out at once.
    fn on_syn(&mut self, now: Time, syn: &Packet) -> Result<(), String> {
        let mut neg = handshake::settle(&self.sys, self.user_mss, self.rcvbuf, syn, false);
        neg.ecn = neg.ecn || (syn.has(ECE) && syn.has(CWR) && self.cc_needs_ecn());
        self.neg = Some(neg);
        self.rcv_nxt = syn.seq.wrapping_add(1);
        if let Some((val, _)) = syn.timestamp() {
            self.ts_recent = val;
        }
        let mss = handshake::advmss(self.user_mss);
        self.rcv_wnd = handshake::initial_rcv_wnd(&self.sys, self.rcvbuf, mss);
        let ws = syn.wscale().filter(|_| self.sys.tcp_window_scaling).map(|_| neg.rcv_wscale);
        let flags = if neg.ecn { SYN | ACK | ECE } else { SYN | ACK };
        self.out.push(Packet {
            time: now,
            flags,
            seq: 0,
            len: 0,
            ack: self.rcv_nxt,
            win: self.rcv_wnd.min(65535),
            options: syn_options(mss, neg.sack, self.our_ts(now), ws),
            codepoint: Codepoint::NotEct,
        });
        self.syn_time = now;
        self.state = State::SynReceived;
        Ok(())
    }

    /// tcp_rcv_synsent_state_process(): settle, ACK the SYN-ACK, establish.
    fn on_synack(&mut self, now: Time, synack: &Packet) -> Result<(), String> {
        if synack.ack != 1 {
            return Err(format!("SYN-ACK acks {} where our SYN ends at 1", synack.ack));
        }
        self.neg = Some(handshake::settle(&self.sys, self.user_mss, self.rcvbuf, synack, self.asked_ecn));
        self.rcv_nxt = synack.seq.wrapping_add(1);
        if let Some((val, _)) = synack.timestamp() {
            self.ts_recent = val;
        }
        self.establish(now, synack)?;
        self.send_ack(now);
        Ok(())
    }

    fn mss(&self) -> u32 {
        self.neg.map_or(handshake::TCP_MSS_DEFAULT, |n| n.mss)
    }

    /// tcp_init_transfer(): the sender starts with the handshake's RTT
    /// sample and the peer's first window.
    fn establish(&mut self, now: Time, p: &Packet) -> Result<(), String> {
        let neg = self.neg.expect("settled");
        if !neg.sack {
            return Err("a peer without SACK: the simulator models SACK connections only".into());
        }
        let mss = neg.mss;
        // The window of a SYN-ACK is never scaled (RFC 7323 §2.2).
        let shift = if p.has(SYN) { 0 } else { neg.snd_wscale };
        let wnd_bytes = (p.win as u64) << shift;
        let cc = registry::by_name(&self.cc_name()).ok_or_else(|| format!("no algorithm {:?}", self.cc_name()))?;
        // An unlocked send buffer grows to tcp_wmem[2] (tcp_sndbuf_expand()).
        let wmem = self.sndbuf.unwrap_or(self.sys.tcp_wmem[2]);
        let cfg = SenderConfig {
            mss,
            wmem_bytes: wmem,
            rate_cap: self.max_pacing_rate.map(|b| Rate::from_bps(b.saturating_mul(8))),
            qdisc_paces: self.sys.root_qdisc_paces,
            initial_rwnd: (wnd_bytes / mss as u64) as u32,
            handshake_rtt: Some(now.saturating_sub(self.syn_time)),
            ecn: neg.ecn,
        };
        let mut s = Sender::new(&cfg, cc);
        // sk_sndbuf starts at tcp_wmem[1] (tcp_init_sock()) or the value
        // SO_SNDBUF locked; expansion raises it from there.
        s.start_sndbuf_at(self.sndbuf.unwrap_or(self.sys.tcp_wmem[1]));
        s.write_seq = 0;
        // The handshake delivered one packet: tcp_rcv_synsent_state_process()
        // and tcp_rcv_state_process() count the SYN or SYN-ACK in
        // tp->delivered ("SYN-ACK delivery isn't tracked in tcp_ack").
        s.tp.delivered = 1;
        s.slow_start_after_idle = self.sys.tcp_slow_start_after_idle;
        s.tp.min_tso_segs = self.sys.tcp_min_tso_segs;
        s.start(now, &mut self.wire);
        self.sender = Some(s);
        self.state = State::Established;
        self.collect();
        Ok(())
    }

    fn seg_of(&self, byte: u32, what: &str) -> Result<u64, String> {
        let mss = self.mss();
        let off = byte.wrapping_sub(1);
        if !off.is_multiple_of(mss) {
            return Err(format!("{what} {byte} is not on a segment boundary (MSS {mss}): the simulator's sender counts whole segments"));
        }
        Ok((off / mss) as u64)
    }

    /// An ACK (with SACK blocks, window, ECE, timestamps) or a FIN from the
    /// peer, once established.
    fn on_segment(&mut self, now: Time, p: &Packet) -> Result<(), String> {
        if p.len > 0 {
            return Err(format!("{} bytes of data from the peer: the simulated socket only sends", p.len));
        }
        if let Some((val, _)) = p.timestamp() {
            if timestamps::not_older(val, self.ts_recent) {
                self.ts_recent = val;
            }
        }
        if p.has(FIN) {
            self.rcv_nxt = self.rcv_nxt.wrapping_add(1);
        }
        if p.has(ACK) && self.sender.is_some() {
            let ack = self.sender_ack(p)?;
            if let Some(ack) = ack {
                let s = self.sender.as_mut().unwrap();
                s.on_ack(now, &ack, &mut self.wire);
            }
            self.collect();
        }
        if p.has(FIN) {
            // tcp_fin(): the peer's FIN is acknowledged at once.
            self.send_ack(now);
        }
        Ok(())
    }

    /// The peer's ACK in the sender's terms, or None for one the sender
    /// ignores (it acks nothing new and nothing sent: the FIN's own ACK).
    fn sender_ack(&mut self, p: &Packet) -> Result<Option<Ack>, String> {
        let neg = self.neg.unwrap();
        let s = self.sender.as_ref().unwrap();
        let data_end = 1 + s.sb.snd_nxt as u32 * neg.mss;
        let mut ack_byte = p.ack;
        if let Some(f) = self.fin_seq {
            if p.ack == f.wrapping_add(1) {
                self.fin_acked = true;
                ack_byte = f;
            }
        }
        if (ack_byte.wrapping_sub(data_end) as i32) > 0 {
            return Err(format!("ack {} beyond what was sent ({data_end})", p.ack));
        }
        if p.win == 0 {
            return Err("a zero window: the persist timer's window probes (tcp_probe_timer()) are not modelled".into());
        }
        let ack_seg = self.seg_of(ack_byte, "ack")?;
        let mut blocks: Vec<(u64, u64)> = Vec::new();
        for &(l, r) in p.sack_blocks() {
            blocks.push((self.seg_of(l, "SACK left edge")?, self.seg_of(r, "SACK right edge")?));
        }
        // tcp_check_dsack(): a first block below the cumulative ACK, or
        // inside the second block, reports a duplicate (RFC 2883 §4).
        let mut dsack = None;
        if let Some(&(l, r)) = blocks.first() {
            let below = r <= ack_seg;
            let inside = blocks.get(1).is_some_and(|&(l2, r2)| l >= l2 && r <= r2);
            if below || inside {
                dsack = Some(l);
                blocks.remove(0);
            }
        }
        let mut ack = Ack {
            ack: ack_seg,
            dsack,
            wnd: (((p.win as u64) << neg.snd_wscale) / neg.mss as u64).min(u32::MAX as u64) as u32,
            ece: p.has(ECE),
            tsecr: p.timestamp().map_or(0, |(_, ecr)| ecr),
            ..Ack::default()
        };
        for (i, b) in blocks.iter().take(MAX_SACKS).enumerate() {
            ack.sacks[i] = *b;
            ack.nsacks = i as u8 + 1;
        }
        Ok(Some(ack))
    }

    /// write(): `bytes` more for the sender; they must fill whole segments
    /// and fit the send buffer (a blocking write is not modelled).
    pub fn write(&mut self, now: Time, bytes: u64) -> Result<u64, String> {
        if self.state != State::Established {
            return Err("write() before the connection is established".into());
        }
        if self.fin_seq.is_some() {
            return Err("write() after close()/shutdown()".into());
        }
        let mss = self.mss() as u64;
        if !bytes.is_multiple_of(mss) {
            return Err(format!(
                "write of {bytes} bytes is not a whole number of segments (MSS {mss}): the simulator's sender counts whole segments"
            ));
        }
        let s = self.sender.as_mut().unwrap();
        let segs = bytes / mss;
        if segs > s.send_buffer_room() {
            return Err(format!(
                "write of {bytes} bytes would block: the send buffer has room for {} (blocking writes are not modelled)",
                s.send_buffer_room() * mss
            ));
        }
        s.app_write(now, segs, &mut self.wire);
        self.collect();
        Ok(bytes)
    }

    /// close() or shutdown(SHUT_WR): tcp_send_fin() once all data is out.
    pub fn close(&mut self, now: Time) -> Result<(), String> {
        let Some(s) = self.sender.as_ref() else {
            self.state = State::Closed;
            return Ok(());
        };
        if s.sb.snd_nxt < s.write_seq {
            return Err("close() with unsent data: a FIN riding on queued data is not modelled".into());
        }
        if self.fin_seq.is_none() {
            let seq = 1 + s.sb.snd_nxt as u32 * self.mss();
            self.fin_seq = Some(seq);
            self.push_control(now, FIN | ACK, seq);
        }
        Ok(())
    }

    fn send_ack(&mut self, now: Time) {
        let seq = match (self.fin_seq, &self.sender) {
            (Some(f), _) => f.wrapping_add(1),
            (None, Some(s)) => 1 + s.sb.snd_nxt as u32 * self.mss(),
            (None, None) => 1,
        };
        self.push_control(now, ACK, seq);
    }

    fn push_control(&mut self, now: Time, flags: u8, seq: u32) {
        let win = self.window_field();
        self.out.push(Packet {
            time: now,
            flags,
            seq,
            len: 0,
            ack: self.rcv_nxt,
            win,
            options: data_options(self.our_ts(now)),
            codepoint: Codepoint::NotEct,
        });
    }

    /// The window field of an established segment: the receive window
    /// shifted by our scale (tcp_select_window()), 16 bits.
    fn window_field(&self) -> u32 {
        let shift = self.neg.map_or(0, |n| n.rcv_wscale);
        (self.rcv_wnd >> shift).min(65535)
    }

    /// Turns what the sender transmitted into packets.
    fn collect(&mut self) {
        if self.wire.sent.is_empty() {
            return;
        }
        let mss = self.mss();
        let win = self.window_field();
        for (t, first, n, ecn) in std::mem::take(&mut self.wire.sent) {
            let mut flags = ACK;
            if ecn.cwr {
                flags |= CWR;
            }
            self.out.push(Packet {
                time: t,
                flags,
                seq: 1 + first as u32 * mss,
                len: n * mss,
                ack: self.rcv_nxt,
                win,
                options: data_options(self.our_ts(t)),
                codepoint: ecn.codepoint,
            });
        }
    }

    /// When the sender's next timer is due, if one is armed.
    pub fn next_timer(&self) -> Option<Time> {
        self.wire.timers.peek_time()
    }

    /// Runs the sender's timers due by `until` in time order, stopping
    /// after the first one that sends a packet; returns the time reached
    /// (`until` if nothing was sent).
    pub fn advance(&mut self, until: Time) -> Time {
        while let Some(at) = self.next_timer() {
            if at > until {
                break;
            }
            let (at, ev) = self.wire.timers.pop().expect("a timer is due");
            if let (Some(s), Event::Timer(_, TimerKind::Sender(kind))) = (self.sender.as_mut(), ev) {
                s.on_timer(kind, at, &mut self.wire);
            }
            self.collect();
            if !self.out.is_empty() {
                return at;
            }
        }
        until
    }

    /// Packets sent since the last call, in order.
    pub fn take_output(&mut self) -> Vec<Packet> {
        std::mem::take(&mut self.out)
    }

    /// getsockopt(TCP_INFO) at `now` (tcp_get_info(), include/uapi/linux/tcp.h
    /// units: times in µs unless named _ms-like in Linux, rates in bytes/s).
    pub fn tcp_info(&mut self, now: Time) -> Vec<TcpInfoField> {
        let neg = self.neg;
        let mut f: Vec<TcpInfoField> = Vec::new();
        // TCP_ESTABLISHED = 1, TCP_SYN_SENT = 2, TCP_SYN_RECV = 3,
        // TCP_FIN_WAIT1 = 4, TCP_CLOSE = 7, TCP_LISTEN = 10.
        let state = match self.state {
            State::Established if self.fin_seq.is_some() => 4,
            State::Established => 1,
            State::SynSent => 2,
            State::SynReceived => 3,
            State::Closed => 7,
            State::Listen => 10,
        };
        f.push(("tcpi_state", state));
        if let Some(n) = neg {
            // TCPI_OPT_TIMESTAMPS 1, TCPI_OPT_SACK 2, TCPI_OPT_WSCALE 4,
            // TCPI_OPT_ECN 8.
            let ws = n.snd_wscale > 0 || n.rcv_wscale > 0;
            let opts = n.timestamps as u64 | (n.sack as u64) << 1 | (ws as u64) << 2 | (n.ecn as u64) << 3;
            f.extend([
                ("tcpi_options", opts),
                ("tcpi_snd_wscale", n.snd_wscale as u64),
                ("tcpi_rcv_wscale", n.rcv_wscale as u64),
                ("tcpi_snd_mss", n.mss as u64),
            ]);
        }
        let Some(s) = self.sender.as_mut() else {
            return f;
        };
        let info = s.tcp_info(now);
        let (reordering, reord_seen) = s.reordering();
        let mss = s.tp.mss_bytes as u64;
        let us = |t: Time| t.as_micros();
        let rate_bytes = |r: Rate| if r.bps() == u64::MAX { u64::MAX } else { r.bps() / 8 };
        f.extend([
            ("tcpi_ca_state", info.ca_state as u64),
            ("tcpi_retransmits", s.rto_retransmits() as u64),
            ("tcpi_backoff", s.backoff as u64),
            ("tcpi_rto", us(s.current_rto())),
            ("tcpi_unacked", info.unacked as u64),
            ("tcpi_sacked", info.sacked as u64),
            ("tcpi_lost", info.lost as u64),
            ("tcpi_retrans", info.retrans as u64),
            ("tcpi_last_data_sent", now.saturating_sub(s.tp.lsndtime).as_micros() / 1000),
            ("tcpi_rtt", us(info.rtt)),
            ("tcpi_rttvar", us(s.rtt.mdev())),
            ("tcpi_snd_ssthresh", s.tp.snd_ssthresh as u64),
            ("tcpi_snd_cwnd", info.snd_cwnd as u64),
            ("tcpi_total_retrans", info.total_retrans),
            ("tcpi_pacing_rate", rate_bytes(info.pacing_rate)),
            ("tcpi_max_pacing_rate", rate_bytes(s.tp.max_pacing_rate)),
            // The active side's SYN was acked through tcp_ack()
            // (tcp_snd_una_update() counts its sequence number).
            ("tcpi_bytes_acked", info.bytes_acked.0 + self.active_open as u64),
            ("tcpi_bytes_sent", info.data_segs_out * mss),
            ("tcpi_bytes_retrans", info.total_retrans * mss),
            ("tcpi_data_segs_out", info.data_segs_out),
            ("tcpi_notsent_bytes", s.write_seq.saturating_sub(s.sb.snd_nxt) * mss),
            ("tcpi_min_rtt", info.min_rtt.map_or(u32::MAX as u64, us)),
            ("tcpi_delivery_rate_app_limited", s.rate.rate_app_limited as u64),
            ("tcpi_delivery_rate", (info.delivery_rate_bps / 8.0) as u64),
            ("tcpi_delivered", s.tp.delivered),
            ("tcpi_delivered_ce", s.tp.delivered_ce),
            ("tcpi_busy_time", us(info.busy_time)),
            ("tcpi_rwnd_limited", us(info.rwnd_limited)),
            ("tcpi_sndbuf_limited", us(info.sndbuf_limited)),
            ("tcpi_snd_wnd", s.snd_wnd_end().saturating_sub(s.sb.snd_una) * mss),
            ("tcpi_reordering", reordering as u64),
            ("tcpi_reord_seen", reord_seen as u64),
        ]);
        f
    }
}
