//! The sending TCP: transmission path (tcp_write_xmit,
//! tcp_xmit_retransmit_queue), pacing, timers (RTO, TLP, RACK reordering
//! timer) and the CA-state helpers shared with ACK processing (ack.rs).
//!
//! Sequence numbers count segments. The application is a "write_seq" source:
//! a bulk sender has `write_seq = u64::MAX` (always data); another source
//! (RPC) can raise `write_seq` as its application writes.

use crate::cc::{CongestionControl, ConnState, CwndEvent};
use crate::event::{SenderTimer, Timer};
use crate::units::{Bytes, Rate, Time};

use super::chrono::{Chrono, ChronoKind};
use super::ecn::{Codepoint, SegEcn};
use super::gso::Gso;
use super::prr::Prr;
use super::rack::Rack;
use super::rate::RateState;
use super::rtt::{RttEstimator, RTO_MAX, TIMEOUT_INIT};
use super::sndbuf::SendBuffer;
use super::scoreboard::{Scoreboard, Seg, FLAG_EVER_RETRANS, FLAG_RETRANS};

/// What a sender needs from the world: put a segment on the wire (with its
/// ECN codepoint and CWR flag), and ask for one of its timers to be called
/// back (through `Sender::on_timer`).
pub trait SenderEnv {
    /// Whether a connection on this path may have negotiated ECN. An
    /// environment where none did says `false`, and the sender's ECN steps
    /// (ECT and CWR on data, ECE on ACKs) compile away: with no ECN
    /// connection they would do nothing (tp.ecn_ok is false everywhere).
    const ECN: bool = true;
    fn transmit(&mut self, now: Time, seq: u64, retrans: bool, ecn: SegEcn);
    /// Puts `n` segments `first..first + n` on the wire at `now` as one
    /// TSO/GSO packet: new data (one skb of tcp_write_xmit, ≤
    /// tcp_tso_autosize segments) or, with `retrans`, lost segments
    /// retransmitted together (tcp_retransmit_skb). The same as `n` calls
    /// of `transmit` in order; an environment may carry the burst as one
    /// unit where nothing happens to a segment of it on its own.
    #[inline]
    fn transmit_burst(&mut self, now: Time, first: u64, n: u32, retrans: bool, ecn: SegEcn) {
        for seq in first..first + n as u64 {
            self.transmit(now, seq, retrans, ecn);
        }
    }
    fn schedule(&mut self, at: Time, timer: SenderTimer);
    /// tcp_small_queue_check(): how much more the socket may hand down now
    /// in packets of `tso` segments (crate::host::nic). An environment
    /// with nothing queued below TCP never stops it.
    #[inline]
    fn small_queue_room(&mut self, _now: Time, _sk_pacing_rate: Rate, _paced: bool, _tso: u32) -> SmallQueueRoom {
        SmallQueueRoom::Unlimited
    }
}

/// What TCP Small Queues lets a socket hand down (tcp_small_queue_check()).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallQueueRoom {
    /// Nothing below TCP holds the socket back.
    Unlimited,
    /// At most this many segments (whole packets: the check runs before
    /// each skb, so the last may overshoot the limit).
    Segments(u32),
    /// Over the limit: throttled until this instant, when the NIC sends
    /// one of the socket's packets (the TSQ handler).
    Wait(Time),
}

#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Payload bytes per segment.
    pub mss: u32,
    /// Send buffer (`tcp_wmem[2]`, sk_sndbuf): unacked + unsent bytes.
    pub wmem_bytes: u64,
    /// Per-stream cap on the sending rate (sk_max_pacing_rate).
    pub rate_cap: Option<Rate>,
    /// The host's root qdisc paces every flow at its sk_pacing_rate (fq:
    /// SK_PACING_FQ), whether or not the CCA asks for pacing.
    pub qdisc_paces: bool,
    /// The peer's advertised window in segments before the first ACK.
    pub initial_rwnd: u32,
    /// RTT measured by the three-way handshake, if modelled.
    pub handshake_rtt: Option<Time>,
    /// ECN was negotiated by the handshake (tcp/ecn.rs `negotiate`).
    pub ecn: bool,
}

/// Counters reported in traces (tcp_info).
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments sent including retransmissions (tcpi_data_segs_out,
    /// tp->data_segs_out; tcpi_segs_out would count pure ACKs too).
    pub segs_out: u64,
    /// Retransmitted segments (tcpi_total_retrans).
    pub retrans: u64,
    pub tlp_probes: u64,
    pub rto_fired: u64,
    pub recoveries: u64,
    /// Reductions undone after D-SACK showed them spurious.
    pub undos: u64,
    /// cwnd reductions started by ECN-Echo (tcp_enter_cwr from Open or
    /// Disorder).
    pub ecn_reductions: u64,
}

pub struct Sender {
    pub tp: ConnState,
    pub(super) cc: Box<dyn CongestionControl>,
    pub(super) owns: bool,
    pub sb: Scoreboard,
    pub rtt: RttEstimator,
    pub rack: Rack,
    pub rate: RateState,
    pub prr: Prr,
    pub chrono: Chrono,
    pub stats: SenderStats,
    /// snd_nxt when the current recovery/loss episode began (tp->high_seq).
    pub(super) high_seq: u64,
    /// snd_nxt when the current round trip began: the round ends once
    /// snd_una passes it (ConnState.round_count's rounds).
    pub(super) round_end_seq: u64,
    pub(super) undo_marker: bool,
    /// snd_una when the episode began (tp->undo_marker's value).
    pub(super) undo_seq: u64,
    /// Retransmissions not yet shown spurious by D-SACK (tp->undo_retrans).
    pub(super) undo_retrans: i64,
    pub(super) prior_ssthresh: u32,
    /// snd_nxt after the outstanding tail loss probe (tp->tlp_high_seq).
    pub(super) tlp_high_seq: Option<u64>,
    pub(super) tlp_retrans: bool,
    pub(super) rto_timer: Timer,
    pub(super) rto_is_tlp: bool,
    pub(super) reo_timer: Timer,
    pub(super) pace_timer: Timer,
    /// icsk_backoff.
    pub backoff: u32,
    /// icsk_rto with backoff applied.
    pub(super) rto_cache: Time,
    /// icsk_retransmits: RTOs since the last forward progress.
    pub(super) rto_retransmits: u32,
    pub(super) wmem_segs: u64,
    /// sk_sndbuf, which an application's blocking write waits on (sndbuf.rs).
    pub(super) sndbuf: SendBuffer,
    /// snd_una + advertised window (tcp_wnd_end), in segments.
    pub(super) snd_wnd_end: u64,
    /// Segments the application has written so far.
    pub write_seq: u64,
    pub(super) rate_cap: Option<Rate>,
    pub(super) cwnd_usage_seq: u64,
    pub(super) lost_scratch: Vec<(u64, u64)>,
    pub(super) range_scratch: Vec<(u64, u64)>,
    /// SACK blocks of the previous ACK (tp->recv_sack_cache).
    pub(super) sack_cache: [(u64, u64); super::receiver::MAX_SACKS],
    pub(super) handshake_rtt: Option<Time>,
    /// TCP_ECN_QUEUE_CWR: the next new data segment carries CWR.
    pub(super) queue_cwr: bool,
    /// The algorithm needs ECN (tcp_ca_needs_ecn): retransmissions are ECT too.
    pub(super) cc_needs_ecn: bool,
    /// The algorithm has an skb_marked_lost hook (called per segment).
    pub(super) cc_marks_lost: bool,
    /// The log of the CCA's state changes (tcp/cc_log.rs); `None` when
    /// the CCA exposes no variables.
    pub(super) cc_log: Option<Box<super::cc_log::CcLog>>,
    /// net.ipv4.tcp_slow_start_after_idle (Linux's default 1): whether
    /// cwnd restarts after an idle period (tcp_cwnd_restart()).
    pub slow_start_after_idle: bool,
    /// F-RTO is running for the current Loss episode (tp->frto).
    pub(super) frto: bool,
    /// F-RTO step 2.b: this ACK's transmission sends new data only
    /// (tcp_xmit_recovery()'s REXMIT_NEW).
    pub(super) frto_new_data: bool,
    /// Segments the peer reported as duplicates (tp->dsack_dups).
    pub(super) dsack_dups: u64,
    /// tp->reordering: the reordering degree seen, in segments.
    pub(super) reordering: u32,
    /// tp->reord_seen: reordering events.
    pub(super) reord_events: u32,
}

impl Sender {
    /// A sender whose application writes `write_seq` segments in total
    /// (`u64::MAX`: a bulk sender that always has data).
    pub fn new(cfg: &SenderConfig, cc: Box<dyn CongestionControl>) -> Sender {
        let mut tp = ConnState::new(cfg.mss);
        if let Some(cap) = cfg.rate_cap {
            tp.max_pacing_rate = cap;
        }
        tp.ecn_ok = cfg.ecn;
        tp.qdisc_paces = cfg.qdisc_paces;
        let owns = cc.owns_cwnd_and_pacing();
        let cc_needs_ecn = cc.needs_ecn();
        let sndbuf_expand = cc.sndbuf_expand();
        let cc_marks_lost = cc.wants_skb_marked_lost();
        let mut s = Sender {
            tp,
            cc,
            owns,
            sb: Scoreboard::default(),
            rtt: RttEstimator::default(),
            rack: Rack::default(),
            rate: RateState::default(),
            prr: Prr::default(),
            chrono: Chrono::default(),
            stats: SenderStats::default(),
            high_seq: 0,
            round_end_seq: 0,
            undo_marker: false,
            undo_seq: 0,
            undo_retrans: -1,
            prior_ssthresh: 0,
            tlp_high_seq: None,
            tlp_retrans: false,
            rto_timer: Timer::default(),
            rto_is_tlp: false,
            reo_timer: Timer::default(),
            pace_timer: Timer::default(),
            backoff: 0,
            rto_cache: TIMEOUT_INIT,
            rto_retransmits: 0,
            wmem_segs: (cfg.wmem_bytes / cfg.mss.max(1) as u64).max(1),
            // fatpipe gives every socket TCP_MAXSEG = payload + the
            // timestamp option (python/fatpipe/wire.py tcp_maxseg).
            sndbuf: SendBuffer::new(
                u64::from(cfg.mss) + u64::from(crate::wire::TIMESTAMP_OPTION_BYTES),
                u64::from(cfg.mss),
                sndbuf_expand,
                cfg.wmem_bytes,
                u64::from(cfg.initial_rwnd) * u64::from(cfg.mss),
            ),
            snd_wnd_end: cfg.initial_rwnd as u64,
            write_seq: u64::MAX,
            rate_cap: cfg.rate_cap,
            cwnd_usage_seq: 0,
            lost_scratch: Vec::new(),
            range_scratch: Vec::new(),
            sack_cache: [(0, 0); super::receiver::MAX_SACKS],
            handshake_rtt: None,
            queue_cwr: false,
            cc_needs_ecn,
            cc_marks_lost,
            cc_log: None,
            slow_start_after_idle: true,
            frto: false,
            frto_new_data: false,
            dsack_dups: 0,
            reordering: super::rack::REORDERING,
            reord_events: 0,
        };
        s.handshake_rtt = cfg.handshake_rtt;
        s
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// The algorithm's TCP_CC_INFO, if it has one.
    pub fn cc_info(&self) -> Option<crate::cc::CcInfo> {
        self.cc.get_info()
    }

    /// Current RTO including exponential backoff (inet_csk_rto_backoff).
    #[inline]
    pub fn current_rto(&self) -> Time {
        self.rto_cache
    }

    /// Recomputes the cached RTO after an RTT sample or a backoff change
    /// (tcp_set_rto).
    pub(super) fn refresh_rto(&mut self) {
        let base = self.rtt.rto();
        let shifted = if self.backoff >= 32 { RTO_MAX } else { base.mul(1u64 << self.backoff) };
        self.rto_cache = shifted.min(RTO_MAX);
    }

    /// Whether the pacing rate applies: the CCA asked for pacing
    /// (SK_PACING_NEEDED), the host's fq paces every flow at
    /// sk_pacing_rate (fq_dequeue() holds each packet to its flow's rate;
    /// tcp_update_pacing_rate() keeps the rate current), or a per-stream
    /// cap exists.
    fn pacing_rate(&self) -> Option<Rate> {
        let r = if self.tp.pacing_enabled || self.tp.qdisc_paces {
            self.tp.pacing_rate.min(self.tp.max_pacing_rate)
        } else if self.rate_cap.is_some() {
            self.tp.max_pacing_rate
        } else {
            return None;
        };
        if r.bps() == 0 || r.bps() == u64::MAX {
            None
        } else {
            Some(r)
        }
    }

    /// Whether the stack paces this connection (the CCA asked for it or a
    /// per-stream cap applies); otherwise the pacing rate is only reported.
    #[inline]
    pub(super) fn pacing_used(&self) -> bool {
        self.tp.pacing_enabled || self.tp.qdisc_paces || self.rate_cap.is_some()
    }

    /// sk_pacing_rate as tcp_info reports it.
    pub fn reported_pacing_rate(&mut self) -> Rate {
        if !self.owns {
            self.update_pacing_rate();
        }
        self.tp.pacing_rate.min(self.tp.max_pacing_rate)
    }

    /// tcp_update_pacing_rate(): 200 % of cwnd/srtt in slow start, 120 %
    /// otherwise, capped by sk_max_pacing_rate.
    pub(super) fn update_pacing_rate(&mut self) {
        self.tp.pacing_rate = self.linux_pacing_rate();
    }

    /// The rate tcp_update_pacing_rate() sets from cwnd and srtt now.
    fn linux_pacing_rate(&self) -> Rate {
        let tp = &self.tp;
        let ratio: u64 = if tp.snd_cwnd < tp.snd_ssthresh / 2 { 200 } else { 120 };
        let segs = tp.snd_cwnd.max(tp.packets_out) as u64;
        let bits = (tp.mss_bytes as u128) * 8 * segs as u128 * ratio as u128 / 100;
        let rate = if tp.srtt.0 == 0 {
            u64::MAX
        } else {
            (bits * 1_000_000_000 / tp.srtt.0 as u128).min(u64::MAX as u128) as u64
        };
        Rate(rate).min(tp.max_pacing_rate)
    }

    /// Records the RTT measured by the three-way handshake
    /// (tcp_synack_rtt_meas / tcp_ack_update_rtt on the SYN-ACK), which
    /// seeds srtt, min_rtt and the RTO before any data is sent.
    pub fn seed_handshake_rtt(&mut self, rtt: Time) {
        self.rtt.update_min(rtt);
        self.rtt.sample(rtt, 0, 0);
        self.tp.srtt = self.rtt.srtt;
        self.tp.min_rtt = self.rtt.min_rtt;
        self.refresh_rto();
    }

    /// The application writes `segs` more segments (tcp_sendmsg), after
    /// Linux's slow-start-after-idle check, and the stack tries to send.
    pub fn app_write<E: SenderEnv>(&mut self, now: Time, segs: u64, env: &mut E) {
        self.slow_start_after_idle_check(now);
        self.write_seq = self.write_seq.saturating_add(segs);
        self.push(now, env);
    }

    /// Segments the application can write before a blocking write waits
    /// (tcp_sendmsg_locked() → sk_stream_wait_memory()): the send buffer's
    /// segments (sk_sndbuf as it has grown so far: sndbuf.rs) less those
    /// written and not yet acknowledged (sk_wmem_queued); none while it
    /// always has data.
    pub fn send_buffer_room(&self) -> u64 {
        if self.write_seq == u64::MAX {
            return 0;
        }
        let queued = self.write_seq.saturating_sub(self.sb.snd_una);
        self.sndbuf.room_segs(queued, u64::from(self.tp.mss_bytes), self.wmem_segs)
    }

    /// The send buffer starts at `bytes` (tcp_wmem[1] or SO_SNDBUF) where
    /// that is above what establishment gave it (sndbuf.rs).
    pub fn start_sndbuf_at(&mut self, bytes: u64) {
        self.sndbuf.start_at(bytes);
    }

    /// An application that always had data stops writing: it had filled
    /// the send buffer, so what it wrote ends where the buffer does (or at
    /// what is already sent).
    pub fn stop_writing(&mut self) {
        let full = (self.sb.snd_una + self.wmem_segs).max(self.sb.snd_nxt);
        self.write_seq = self.write_seq.min(full);
    }

    /// tcp_slow_start_after_idle_check() + tcp_cwnd_restart()
    /// (net.ipv4.tcp_slow_start_after_idle = 1): after an idle period longer
    /// than the RTO, cwnd halves per RTO idle, down to min(IW, cwnd).
    fn slow_start_after_idle_check(&mut self, now: Time) {
        if !self.slow_start_after_idle || self.tp.packets_out > 0 || self.owns || self.stats.segs_out == 0 {
            return;
        }
        let rto = self.current_rto();
        let idle = now.saturating_sub(self.tp.lsndtime);
        if idle <= rto {
            return;
        }
        self.cc.cwnd_event(&mut self.tp, CwndEvent::CwndRestart);
        self.tp.snd_ssthresh = self.current_ssthresh();
        let restart = 10u32.min(self.tp.snd_cwnd);
        let mut cwnd = self.tp.snd_cwnd;
        let mut delta = idle.saturating_sub(rto);
        while delta > Time::ZERO && cwnd > restart {
            cwnd >>= 1;
            delta = delta.saturating_sub(rto);
        }
        self.tp.snd_cwnd = cwnd.max(restart);
    }

    /// Starts the connection at `now`: the handshake is complete (its RTT
    /// sample is recorded), the CCA is initialised as in tcp_init_transfer(),
    /// and data flows at once.
    pub fn start<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        self.tp.now = now;
        // tcp_finish_connect() stamps lsndtime; the handshake's ACK stamped
        // delivered_mstamp (tcp_rate_gen).
        self.tp.lsndtime = now;
        self.tp.delivered_mstamp = now;
        if let Some(rtt) = self.handshake_rtt.take() {
            self.seed_handshake_rtt(rtt);
        }
        self.cc.init(&mut self.tp);
        self.cc_log = self.cc.state_key(&self.tp).map(|k| Box::new(super::cc_log::CcLog::new(k)));
        assert!(self.cc_log.is_none() || self.owns, "{}: vars() without cong_control", self.cc.name());
        // dctcp_init() may have fallen back to Reno (no TCP_CONG_NEEDS_ECN).
        self.cc_needs_ecn = self.cc.needs_ecn();
        if !self.owns {
            self.update_pacing_rate();
        }
        self.push(now, env);
    }

    // ---------------------------------------------------------------- send

    /// tcp_write_xmit() preceded by tcp_xmit_retransmit_queue(): send lost
    /// segments first, then new data, within cwnd, the peer's window, the
    /// send buffer and the pacing rate.
    pub fn push<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        self.tp.now = now;
        let prior_packets = self.tp.packets_out;
        let mut sent_new = false;
        let mut sent = 0u32;
        let mut cwnd_limited = false;
        let mut rwnd_limited = false;
        let mut sndbuf_limited = false;
        let mut app_limited = false;
        let pacing = self.pacing_rate();
        // Segments of one TSO/GSO packet at most (tcp_tso_segs(): sized
        // from sk_pacing_rate, which Linux keeps current on every ACK
        // whether or not it paces); new data goes out in such bursts.
        let sk_pacing_rate = match pacing {
            Some(r) => r,
            None if self.owns => self.tp.pacing_rate,
            None => self.linux_pacing_rate(),
        };
        // tcp_cwnd_test(): one skb takes at most half of cwnd ("ensure we
        // have at least 2 GSO packets in flight"), whatever the TSO goal.
        let half_cwnd = (self.tp.snd_cwnd >> 1).max(1);
        let tso = self.cc.tso_segs(&self.tp, sk_pacing_rate).max(1).min(half_cwnd);
        let mut gso = Gso::default();
        loop {
            if pacing.is_some() && self.tp.tcp_wstamp > now {
                // tcp_pacing_check(): wait for the pacing timer.
                self.arm(SenderTimer::Pace, self.tp.tcp_wstamp, env);
                break;
            }
            let in_flight = self.tp.in_flight();
            if in_flight >= self.tp.snd_cwnd {
                cwnd_limited = true;
                break;
            }
            // tcp_small_queue_check(), after tcp_cwnd_test() as in
            // tcp_write_xmit(): throttled until the NIC sends one
            // of the socket's packets (the TSQ handler).
            let tsq_room = match env.small_queue_room(now, sk_pacing_rate, pacing.is_some(), tso) {
                SmallQueueRoom::Unlimited => u32::MAX,
                SmallQueueRoom::Segments(k) => k,
                SmallQueueRoom::Wait(at) => {
                    self.arm(SenderTimer::Pace, at, env);
                    break;
                }
            };
            let quota = self.tp.snd_cwnd - in_flight;
            let burst = match pacing {
                // tcp_tso_segs(): the algorithm's TSO goal.
                Some(r) => self.cc.tso_segs(&self.tp, r).min(quota).min(half_cwnd),
                None => quota,
            }
            .min(tsq_room);
            let mut n = 0u32;
            while n < burst {
                if let Some(seq) = if self.frto_new_data { None } else { self.sb.next_lost() } {
                    gso.flush(now, env);
                    // tcp_xmit_retransmit_queue() retransmits a lost skb
                    // whole (tcp_retransmit_skb(), up to the cwnd quota):
                    // the lost segments queued next inside seq's run share
                    // its state, so each would be next_lost() in turn.
                    let k = self.sb.pop_lost_run(seq, burst - n);
                    self.retransmit_range(seq, k, now, env);
                    n += k;
                    continue;
                }
                if self.sb.snd_nxt >= self.write_seq {
                    app_limited = true;
                    break;
                }
                if self.sb.snd_nxt >= self.snd_wnd_end {
                    rwnd_limited = true; // tcp_snd_wnd_test() failed
                    break;
                }
                let queued = self.sb.snd_nxt - self.sb.snd_una;
                if queued >= self.wmem_segs {
                    sndbuf_limited = true;
                    break;
                }
                // All new segments the checks above allow go at once
                // (tcp_write_xmit() sends an skb of min(cwnd quota,
                // tcp_tso_segs()) segments as one unit; `Gso` cuts the
                // range into packets of tcp_tso_autosize() segments).
                // Exact: nothing becomes lost inside push() (loss marking
                // runs only on ACKs and timers, so lost_q does not grow
                // here), hence `next_lost()` stays None and the checks
                // would pass segment by segment up to the first limit.
                let room = ((burst - n) as u64)
                    .min(self.write_seq - self.sb.snd_nxt)
                    .min(self.snd_wnd_end - self.sb.snd_nxt)
                    .min(self.wmem_segs - queued) as u32;
                let (first, ecn) = self.queue_new(now, room, E::ECN);
                if ecn.cwr {
                    // tcp_ecn_send(): only the first takes the queued CWR.
                    gso.add_range(now, first, 1, ecn, tso, env);
                    let rest = SegEcn { cwr: false, ..ecn };
                    gso.add_range(now, first + 1, room - 1, rest, tso, env);
                } else {
                    gso.add_range(now, first, room, ecn, tso, env);
                }
                sent_new = true;
                n += room;
            }
            // One paced burst is one TSO packet.
            gso.flush(now, env);
            sent += n;
            if let Some(r) = pacing {
                if n > 0 {
                    self.advance_departure(now, r, n);
                }
            }
            if n < burst || n == 0 {
                break;
            }
        }
        if app_limited || sndbuf_limited {
            self.check_app_limited();
        }
        // tcp_cwnd_validate().
        if sent > 0 || cwnd_limited {
            let is_cwnd_limited = cwnd_limited || self.tp.in_flight() >= self.tp.snd_cwnd;
            if self.sb.snd_una >= self.cwnd_usage_seq
                || is_cwnd_limited
                || (!self.tp.cwnd_limited_flag && self.tp.packets_out > self.tp.max_packets_out)
            {
                self.tp.cwnd_limited_flag = is_cwnd_limited;
                self.tp.max_packets_out = self.tp.packets_out;
                self.cwnd_usage_seq = self.sb.snd_nxt;
            }
        }
        self.tp.is_cwnd_limited = self.is_cwnd_limited();
        let kind = if sndbuf_limited {
            ChronoKind::SndbufLimited
        } else if rwnd_limited {
            ChronoKind::RwndLimited
        } else if self.tp.packets_out > 0 {
            ChronoKind::Busy
        } else {
            ChronoKind::None
        };
        self.chrono.set(now, kind);
        if sent_new {
            // tcp_event_new_data_sent() then tcp_schedule_loss_probe().
            if prior_packets == 0 || self.rto_is_tlp {
                self.rearm_rto(now, env);
            }
            self.schedule_loss_probe(now, false, env);
        }
    }

    /// __tcp_transmit_skb() then tcp_update_skb_after_send() for a burst
    /// of `n` segments paced at `rate`: the departure clock catches up
    /// with now, then moves one burst's serialization time later, less
    /// up to half of it as credit for the time the clock lagged ("take
    /// into account OS jitter"); not before the connection has sent 10
    /// segments ("Original sch_fq does not pace first 10 MSS").
    fn advance_departure(&mut self, now: Time, rate: Rate, n: u32) {
        let prior = self.tp.tcp_wstamp;
        let start = prior.max(now);
        self.tp.tcp_wstamp = start;
        if self.stats.segs_out >= 10 {
            let len = rate.transmit_time(Bytes(n as u64 * self.tp.mss_bytes as u64));
            let credit = start - prior;
            self.tp.tcp_wstamp = start + (len - Time(len.0 / 2).min(credit));
        }
    }

    /// tcp_is_cwnd_limited().
    pub(super) fn is_cwnd_limited(&self) -> bool {
        if self.tp.cwnd_limited_flag {
            return true;
        }
        if self.tp.in_slow_start() {
            return self.tp.snd_cwnd < 2 * self.tp.max_packets_out;
        }
        false
    }

    /// tcp_rate_check_app_limited().
    fn check_app_limited(&mut self) {
        let in_flight = self.tp.in_flight();
        if in_flight < self.tp.snd_cwnd && self.tp.lost_out <= self.tp.retrans_out {
            self.tp.app_limited = (self.tp.delivered + in_flight as u64).max(1);
        }
    }

    /// Sends one new segment on its own (a tail loss probe's new data).
    pub(super) fn send_new<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        let (seq, ecn) = self.queue_new(now, 1, E::ECN);
        env.transmit(now, seq, false, ecn);
    }

    /// Puts the next `n` (≥ 1) new segments into the retransmit queue as
    /// sent together at `now` and returns the first with its ECN field
    /// (the others' lack only a CWR flag); the caller hands them to the
    /// network. Exactly `n` segments queued one by one: tcp_write_xmit()
    /// sends a TSO skb of several segments as one unit, and per segment
    /// only these facts step —
    /// * CA_EVENT_TX_START (tcp_transmit_skb → tcp_event_data_sent) only
    ///   when nothing was in flight before the first;
    /// * tcp_rate_skb_sent(): a fresh sampling window only before the
    ///   first (packets_out == 0); the delivered/lost/CE snapshots and the
    ///   app-limited mark are the connection's, which sending does not
    ///   change, so one snapshot serves the range;
    /// * tcp_set_tx_in_flight(): "packets in flight including this one"
    ///   counts up by one per segment (packets_out grows by one per
    ///   segment, tcp_event_new_data_sent); runs store the first and step
    ///   it (scoreboard.rs);
    /// * tcp_event_new_data_sent(): packets_out and snd_nxt add n
    ///   (tcp_skb_pcount), as do segs_out and, in a cwnd reduction,
    ///   tcp_write_xmit()'s `tp->prr_out += sent_pkts`.
    #[inline]
    fn queue_new(&mut self, now: Time, n: u32, env_ecn: bool) -> (u64, SegEcn) {
        if self.tp.in_flight() == 0 {
            self.cc.cwnd_event(&mut self.tp, CwndEvent::TxStart);
            self.note_cc_vars(now);
            if self.cc_log.is_some() && self.tp.app_limited != 0
                && self.cc.vars(&self.tp).and_then(|v| v.idle_restart) == Some(true)
            {
                self.mark_cc_event(now, super::cc_log::RESTART_FROM_IDLE);
            }
        }
        let mut seg = Seg { xmit: now, tx_id: 1, ..Seg::default() };
        self.rate.on_sent(&mut seg, &mut self.tp);
        let seq = self.sb.push_new_range(seg, n);
        self.tp.packets_out = self.sb.packets_out();
        self.tp.snd_nxt = self.sb.snd_nxt;
        self.tp.lsndtime = now; // tcp_event_data_sent()
        self.stats.segs_out += n as u64;
        if self.in_cwnd_reduction() {
            self.prr.on_sent(n);
        }
        // tcp_ecn_send(): a new data segment is ECT and takes a queued CWR.
        let ecn = if env_ecn && self.tp.ecn_ok {
            let cwr = std::mem::take(&mut self.queue_cwr);
            SegEcn { codepoint: Codepoint::Ect0, cwr }
        } else {
            SegEcn::NOT_ECT
        };
        (seq, ecn)
    }

    /// __tcp_retransmit_skb() of one segment (tail loss probe, RTO).
    pub(super) fn retransmit<E: SenderEnv>(&mut self, seq: u64, now: Time, env: &mut E) {
        self.retransmit_range(seq, 1, now, env);
    }

    /// __tcp_retransmit_skb() of segments `seq..seq + n` (n ≥ 1) sharing
    /// one state (one run; for n > 1 none is in flight as a
    /// retransmission yet): exactly `n` retransmissions in order. Per
    /// segment only tcp_set_tx_in_flight() steps (retrans_out grows by one
    /// each), which the run's stepping `in_flight` holds.
    pub(super) fn retransmit_range<E: SenderEnv>(&mut self, seq: u64, n: u32, now: Time, env: &mut E) {
        self.resend::<true, E>(seq, n, now, env);
    }

    /// A tail loss probe's retransmission of `seq` (tcp_send_loss_probe()
    /// calls __tcp_retransmit_skb(), not tcp_retransmit_skb()): sent and
    /// counted in total_retrans, marked TCPCB_EVER_RETRANS, but neither
    /// TCPCB_SACKED_RETRANS nor counted in retrans_out, so it does not
    /// add to the packets in flight.
    pub(super) fn retransmit_probe<E: SenderEnv>(&mut self, seq: u64, now: Time, env: &mut E) {
        self.resend::<false, E>(seq, 1, now, env);
    }

    /// __tcp_retransmit_skb(), and with `IN_FLIGHT` tcp_retransmit_skb()'s
    /// TCPCB_SACKED_RETRANS mark and retrans_out count.
    #[inline(always)]
    fn resend<const IN_FLIGHT: bool, E: SenderEnv>(&mut self, seq: u64, n: u32, now: Time, env: &mut E) {
        if self.tp.in_flight() == 0 {
            self.cc.cwnd_event(&mut self.tp, CwndEvent::TxStart);
            self.note_cc_vars(now);
        }
        // The segments become a run of their own (tcp_fragment() of a TSO
        // skb in __tcp_retransmit_skb()); note_retransmit() merges it with
        // an equal neighbour (tcp_collapse_retrans()).
        let end = seq + n as u64;
        self.sb.isolate(seq, end);
        let id = self.sb.id_at(seq);
        let seg = &mut self.sb.run_mut(id).seg;
        seg.xmit = now;
        seg.tx_id = seg.tx_id.wrapping_add(1);
        let was_retrans = seg.has(FLAG_RETRANS);
        debug_assert!(n == 1 || !was_retrans);
        seg.flags |= if IN_FLIGHT { FLAG_RETRANS | FLAG_EVER_RETRANS } else { FLAG_EVER_RETRANS };
        self.rate.on_sent(seg, &mut self.tp);
        if IN_FLIGHT && !was_retrans {
            self.tp.retrans_out += n;
        }
        self.sb.note_retransmit(seq, end);
        self.undo_count_retransmit(n);
        self.tp.lsndtime = now; // tcp_event_data_sent()
        self.stats.segs_out += n as u64;
        self.stats.retrans += n as u64;
        if self.in_cwnd_reduction() {
            self.prr.on_sent(n);
        }
        // tcp_ecn_send(): a retransmission is not ECT unless the algorithm
        // needs ECN (INET_ECN_dontxmit), and never carries CWR.
        let ecn = if E::ECN && self.tp.ecn_ok && self.cc_needs_ecn {
            SegEcn { codepoint: Codepoint::Ect0, cwr: false }
        } else {
            SegEcn::NOT_ECT
        };
        // One TSO packet of the lost segments (tcp_retransmit_skb() sends
        // the skb whole, up to the cwnd): the same as segment by segment,
        // but a GRO receiver merges it (tcp/receiver/gro.rs).
        env.transmit_burst(now, seq, n, true, ecn);
    }

    /// icsk_retransmits: RTOs since the last forward progress (tcpi_retransmits).
    pub fn rto_retransmits(&self) -> u32 {
        self.rto_retransmits
    }

    /// tp->reordering and tp->reord_seen (tcpi_reordering, tcpi_reord_seen).
    pub fn reordering(&self) -> (u32, u32) {
        (self.reordering, self.reord_events)
    }

    /// snd_una + the peer's window (tcp_wnd_end()), in segments.
    pub fn snd_wnd_end(&self) -> u64 {
        self.snd_wnd_end
    }

    /// Scoreboard entries held (memory-bound checks).
    pub fn footprint(&self) -> usize {
        self.sb.footprint()
    }
}
