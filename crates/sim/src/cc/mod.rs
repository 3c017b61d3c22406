//! Congestion control algorithms behind one trait.
//!
//! The trait mirrors Linux's `struct tcp_congestion_ops`
//! (include/net/tcp.h) so that each algorithm can follow its Linux source
//! rule by rule, and the TCP engine calls the hooks at the points where
//! Linux's tcp_input.c / tcp_output.c call them:
//!
//! * `pkts_acked`  — tcp_clean_rtx_queue(), once per ACK that acks data,
//!   with the ACK's RTT sample (`icsk_ca_ops->pkts_acked`).
//! * `cong_control` — tcp_cong_control(): algorithms that own cwnd and
//!   pacing entirely (BBR) return `true` from `owns_cwnd_and_pacing()` and
//!   get every ACK with its rate sample.
//! * otherwise the engine does what tcp_cong_control() does: PRR while in
//!   CWR/Recovery (`tcp_cwnd_reduction`), else `cong_avoid` when
//!   `tcp_may_raise_cwnd()`.
//! * `ssthresh` — on entering Recovery/CWR/Loss (tcp_init_cwnd_reduction,
//!   tcp_enter_loss).
//! * `set_state` — tcp_set_ca_state().
//! * `cwnd_event` — tcp_ca_event(): TX start after idle, RTO loss, …
//! * `undo_cwnd` — on a spurious-loss undo.
//! * `in_ack_event` — tcp_in_ack_event(), once per ACK from tcp_ack(),
//!   with the `CA_ACK_*` flags.
//! * `skb_marked_lost` — tcp_mark_skb_lost(), once per segment newly
//!   marked lost (RACK, RTO), with the segment's send-time snapshot.
//! * `min_tso_segs` / `tso_segs` — tcp_tso_segs(): the burst size the
//!   sender builds while pacing.
//!
//! Each algorithm lives in its own file; every rule carries a comment citing
//! the Linux function or RFC section it implements.

pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod cubic;
pub mod dctcp;
pub mod highspeed;
pub mod htcp;
pub mod illinois;
pub mod jiffies;
pub mod nv;
pub mod prandom;
mod registry;
pub mod reno;
pub mod scalable;
pub mod vars;
pub mod vegas;
pub mod westwood;
pub mod yeah;

use crate::units::{Rate, Time};

pub use registry::{build_named, by_name, by_name_seeded, lookup, Cca, CcaTraits, AVAILABLE, REGISTRY};
pub use vars::{CcStateKey, CcVars};

/// `enum tcp_ca_state` (include/uapi/linux/tcp.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CaState {
    Open = 0,
    Disorder = 1,
    Cwr = 2,
    Recovery = 3,
    Loss = 4,
}

/// `enum tcp_ca_event` (include/net/tcp.h), the subset the engine raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndEvent {
    /// First transmit when no packets are in flight (CA_EVENT_TX_START).
    TxStart,
    /// Congestion window restart after idle (CA_EVENT_CWND_RESTART).
    CwndRestart,
    /// End of CWR/Recovery (CA_EVENT_COMPLETE_CWR).
    CompleteCwr,
    /// RTO fired: loss state entered (CA_EVENT_LOSS).
    Loss,
}

/// `CA_ACK_SLOWPATH` (include/net/tcp.h): the ACK was not processed on
/// the header-prediction fast path (tcp_ack()'s FLAG_SLOWPATH). The
/// simulator has no fast path, so every ACK carries it, as Linux's do
/// whenever the ACK carries SACK blocks or updates the window.
pub const CA_ACK_SLOWPATH: u32 = 1 << 0;
/// `CA_ACK_WIN_UPDATE`: the ACK updated the send window (FLAG_WIN_UPDATE).
pub const CA_ACK_WIN_UPDATE: u32 = 1 << 1;
/// `CA_ACK_ECE`: the ACK carried ECN-Echo on an ECN connection (FLAG_ECE,
/// tcp_ecn_rcv_ecn_echo()).
pub const CA_ACK_ECE: u32 = 1 << 2;

/// A segment's send-time snapshot (TCP_SKB_CB(skb)->tx with BBRv3's
/// tx.in_flight and tx.lost), as `skb_marked_lost` receives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxSnapshot {
    /// tp->delivered when the segment was (re)sent (tx.delivered).
    pub delivered: u64,
    /// tp->delivered_ce when it was sent (tx.delivered_ce).
    pub delivered_ce: u64,
    /// Packets in flight including this one when it was sent
    /// (tx.in_flight, tcp_set_tx_in_flight()).
    pub in_flight: u32,
    /// tp->lost when it was sent (tx.lost).
    pub lost: u64,
    /// The sender was application-limited when it was sent
    /// (tx.is_app_limited).
    pub is_app_limited: bool,
}

/// `struct rate_sample` (include/net/tcp.h), produced per ACK by the
/// delivery-rate estimator (tcp_rate.c,
/// draft-cheng-iccrg-delivery-rate-estimation).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// Delivered count (segments) when the acked packet was sent.
    pub prior_delivered: u64,
    /// Send time of the most recently delivered packet's "first_tx" snapshot.
    pub prior_mstamp: Time,
    /// Segments delivered over `interval`; negative (-1) when invalid.
    pub delivered: i64,
    /// Of those, segments delivered with CE marks (rs->delivered_ce,
    /// tp->delivered_ce - tx.delivered_ce); 0 when the sample is invalid.
    pub delivered_ce: u32,
    /// Packets in flight when the sampled packet was sent, including it
    /// (rs->tx_in_flight, from tx.in_flight).
    pub tx_in_flight: u32,
    /// Segments marked lost since the sampled packet was sent
    /// (rs->lost = tp->lost - tx.lost); 0 when the sample is invalid.
    pub lost: u32,
    /// Sampling interval (max of send and ack intervals); zero when invalid.
    pub interval: Time,
    /// RTT of the most recently sent packet newly acked by this ACK, if any.
    pub rtt: Option<Time>,
    /// Segments marked lost by this ACK.
    pub losses: u32,
    /// Segments newly cumulatively acked or SACKed by this ACK.
    pub acked_sacked: u32,
    /// Packets in flight before this ACK was processed.
    pub prior_in_flight: u32,
    /// The sample was taken while the sender was application-limited.
    pub is_app_limited: bool,
    /// The packet the sample is based on was a retransmission.
    pub is_retrans: bool,
}

impl RateSample {
    /// Delivery rate of this sample, if it is valid.
    pub fn delivery_rate(&self, mss_bytes: u32) -> Option<Rate> {
        if self.delivered <= 0 || self.interval == Time::ZERO {
            return None;
        }
        let bytes = (self.delivered as u64).saturating_mul(mss_bytes as u64);
        Some(Rate::from_bytes_per(crate::units::Bytes(bytes), self.interval))
    }
}

/// `struct ack_sample` (include/net/tcp.h): what `pkts_acked` receives.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    /// Segments newly acked (cumulatively or by SACK) by this ACK.
    pub pkts_acked: u32,
    /// RTT sample of this ACK (from a never-retransmitted segment), if any.
    pub rtt: Option<Time>,
    /// Bytes delivered between the send of the most recently sent packet
    /// this ACK delivers and now: mss_cache · (tp->delivered −
    /// rs->prior_delivered), as tcp_clean_rtx_queue() fills it (NV's
    /// rate sample).
    pub in_flight: u32,
}

/// The subset of Linux's `struct tcp_sock` that congestion control reads and
/// writes. The TCP engine owns it and keeps the counters up to date; the
/// algorithm writes `snd_cwnd`, `snd_ssthresh`, `snd_cwnd_cnt` and (if it
/// paces) `pacing_rate`.
#[derive(Clone, Debug)]
pub struct ConnState {
    /// Current simulated time (tcp_mstamp / tcp_jiffies32).
    pub now: Time,
    /// Congestion window in segments (tp->snd_cwnd).
    pub snd_cwnd: u32,
    /// Slow-start threshold in segments (tp->snd_ssthresh).
    pub snd_ssthresh: u32,
    /// Linear-increase counter (tp->snd_cwnd_cnt).
    pub snd_cwnd_cnt: u32,
    /// Upper bound on snd_cwnd (tp->snd_cwnd_clamp).
    pub snd_cwnd_clamp: u32,
    /// Sender MSS in bytes, payload only (tp->mss_cache).
    pub mss_bytes: u32,
    /// Smoothed RTT (tp->srtt_us >> 3); zero before the first sample.
    pub srtt: Time,
    /// Windowed minimum RTT (tcp_min_rtt(), 5-minute window in Linux).
    pub min_rtt: Time,
    /// Segments sent and not yet cumulatively acked (tp->packets_out).
    pub packets_out: u32,
    /// Segments SACKed (tp->sacked_out).
    pub sacked_out: u32,
    /// Segments marked lost (tp->lost_out).
    pub lost_out: u32,
    /// Retransmitted segments in flight (tp->retrans_out).
    pub retrans_out: u32,
    /// Total segments delivered (tp->delivered).
    pub delivered: u64,
    /// Total segments marked lost over the connection (tp->lost).
    pub lost: u64,
    /// Non-zero while the flow is application-limited: the `delivered`
    /// value at which the app-limited period ends (tp->app_limited).
    pub app_limited: u64,
    /// Congestion-avoidance state (icsk_ca_state).
    pub ca_state: CaState,
    /// Whether the last transmit was limited by cwnd (tcp_is_cwnd_limited()'s
    /// answer, which the sender refreshes after each transmit and ACK).
    pub is_cwnd_limited: bool,
    /// tp->is_cwnd_limited, the flag tcp_cwnd_validate() keeps (what
    /// tcp_is_cwnd_limited() reads first).
    pub cwnd_limited_flag: bool,
    /// tp->max_packets_out: packets_out at the last tcp_cwnd_validate()
    /// update (tcp_is_cwnd_limited()'s slow-start rule reads it).
    pub max_packets_out: u32,
    /// Pacing rate (sk->sk_pacing_rate). Only honoured when
    /// `pacing_enabled` (SK_PACING_NEEDED, set by BBR at init).
    pub pacing_rate: Rate,
    /// The algorithm asks the stack to pace (sk_pacing_status).
    pub pacing_enabled: bool,
    /// The host's root qdisc paces the socket (fq marks it SK_PACING_FQ in
    /// fq_enqueue()), whether or not the algorithm asks.
    pub qdisc_paces: bool,
    /// Upper bound on the pacing rate (sk->sk_max_pacing_rate), e.g. a
    /// per-stream host cap; `Rate(u64::MAX)` when unbounded.
    pub max_pacing_rate: Rate,
    /// cwnd before the last reduction (tp->prior_cwnd), for undo.
    pub prior_cwnd: u32,
    /// Round-trip counter maintained by the engine: incremented when an ACK
    /// acknowledges a packet sent after the previous round started.
    pub round_count: u64,
    /// First unacknowledged segment (tp->snd_una, in segments).
    pub snd_una: u64,
    /// Next new segment to send (tp->snd_nxt, in segments).
    pub snd_nxt: u64,
    /// Time of the last data transmission (tp->lsndtime), set after the
    /// TX-start event (tcp_event_data_sent()).
    pub lsndtime: Time,
    /// Time the `delivered` count was last raised, or the delivery clock
    /// restarted by a send with nothing outstanding (tp->delivered_mstamp;
    /// tcp_rate_gen(), tcp_rate_skb_sent()).
    pub delivered_mstamp: Time,
    /// Segments delivered by ACKs carrying ECE (tp->delivered_ce,
    /// tcp_count_delivered()); the rate sampler snapshots it.
    pub delivered_ce: u64,
    /// ECN was negotiated for this connection (tp->ecn_flags & TCP_ECN_OK).
    pub ecn_ok: bool,
    /// Earliest departure time of the next paced burst (tp->tcp_wstamp_ns,
    /// advanced by tcp_update_skb_after_send()); what BBR's
    /// bbr_packets_in_net_at_edt() reads as the EDT.
    pub tcp_wstamp: Time,
    /// net.ipv4.tcp_min_tso_segs: the floor of tcp_tso_autosize() for
    /// algorithms without their own `min_tso_segs`.
    pub min_tso_segs: u32,
}

impl ConnState {
    /// A fresh connection with Linux's defaults: IW 10 (RFC 6928,
    /// TCP_INIT_CWND), ssthresh "infinite" (TCP_INFINITE_SSTHRESH).
    pub fn new(mss_bytes: u32) -> ConnState {
        ConnState {
            now: Time::ZERO,
            snd_cwnd: TCP_INIT_CWND,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX / 2,
            mss_bytes,
            srtt: Time::ZERO,
            min_rtt: Time::MAX,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered: 0,
            lost: 0,
            app_limited: 0,
            ca_state: CaState::Open,
            is_cwnd_limited: false,
            cwnd_limited_flag: false,
            max_packets_out: 0,
            pacing_rate: Rate::ZERO,
            pacing_enabled: false,
            qdisc_paces: false,
            max_pacing_rate: Rate(u64::MAX),
            prior_cwnd: 0,
            round_count: 0,
            snd_una: 0,
            snd_nxt: 0,
            lsndtime: Time::ZERO,
            delivered_mstamp: Time::ZERO,
            delivered_ce: 0,
            ecn_ok: false,
            tcp_wstamp: Time::ZERO,
            min_tso_segs: TCP_MIN_TSO_SEGS,
        }
    }

    /// A per-connection cwnd clamp of `clamp` segments, set before the
    /// algorithm's init as both ways Linux offers do it:
    /// bpf_sol_tcp_setsockopt(TCP_BPF_SNDCWND_CLAMP) (net/core/filter.c:
    /// `tp->snd_cwnd_clamp = val; tp->snd_ssthresh = val;`), and a route
    /// with `cwnd lock N ssthresh lock N` read by tcp_init_metrics()
    /// (snd_cwnd_clamp from the locked cwnd metric, snd_ssthresh at most
    /// the clamp), after which tcp_init_cwnd() caps the initial window at
    /// the clamp. Every later rule that raises cwnd takes the min with
    /// `snd_cwnd_clamp` (tcp_slow_start, tcp_cong_avoid_ai, bbr_set_cwnd …).
    pub fn set_cwnd_clamp(&mut self, clamp: u32) {
        let clamp = clamp.max(1);
        self.snd_cwnd_clamp = clamp;
        self.snd_ssthresh = clamp;
        self.snd_cwnd = self.snd_cwnd.min(clamp);
    }

    /// tcp_packets_in_flight(): packets_out - left_out + retrans_out.
    pub fn in_flight(&self) -> u32 {
        self.packets_out
            .saturating_sub(self.sacked_out.saturating_add(self.lost_out))
            .saturating_add(self.retrans_out)
    }

    /// tcp_in_slow_start(): snd_cwnd < snd_ssthresh.
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// Whether the next ACK grows cwnd by tcp_slow_start(): tcp_in_slow_start()
    /// while tcp_cong_control() calls the algorithm's cong_avoid at all, that
    /// is outside a cwnd reduction (CWR, Recovery: tcp_in_cwnd_reduction(),
    /// where PRR sets cwnd and may hold it below ssthresh). In Loss (after an
    /// RTO) cong_avoid runs and slow-starts from cwnd 1.
    pub fn grows_by_slow_start(&self) -> bool {
        self.in_slow_start() && !matches!(self.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// The `cc_mode` label of an algorithm that leaves cwnd to
    /// tcp_cong_control() (the convention of
    /// [`CongestionControl::state_label`]): `slow_start` while the next ACK
    /// grows cwnd by tcp_slow_start(), else `ca_mode`, the rule its
    /// congestion avoidance applies.
    pub fn window_label(&self, ca_mode: &'static str) -> &'static str {
        if self.grows_by_slow_start() {
            "slow_start"
        } else {
            ca_mode
        }
    }

    /// tcp_slow_start(): grow cwnd by the acked count up to ssthresh and
    /// return the acked segments left over (Linux, RFC 5681 §3.1 with ABC).
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self
            .snd_cwnd
            .saturating_add(acked)
            .min(self.snd_ssthresh);
        let used = cwnd.saturating_sub(self.snd_cwnd);
        self.snd_cwnd = cwnd.min(self.snd_cwnd_clamp);
        acked.saturating_sub(used)
    }

    /// tcp_current_ssthresh(): in CWR/Recovery the ssthresh being reduced
    /// to, else at least 3/4 of cwnd (the window the flow could fall back
    /// to without a loss).
    pub fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.snd_ssthresh
        } else {
            self.snd_ssthresh.max((self.snd_cwnd >> 1) + (self.snd_cwnd >> 2))
        }
    }

    /// tcp_cong_avoid_ai(): increase cwnd by 1 after `w` segments acked,
    /// accumulating in snd_cwnd_cnt (Linux's appropriate byte counting).
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        // If credits accumulated at a higher w, apply them gently now.
        if self.snd_cwnd_cnt >= w {
            self.snd_cwnd_cnt = 0;
            self.snd_cwnd = self.snd_cwnd.saturating_add(1);
        }
        self.snd_cwnd_cnt = self.snd_cwnd_cnt.saturating_add(acked);
        if self.snd_cwnd_cnt >= w {
            let delta = self.snd_cwnd_cnt / w;
            self.snd_cwnd_cnt -= delta * w;
            self.snd_cwnd = self.snd_cwnd.saturating_add(delta);
        }
        self.snd_cwnd = self.snd_cwnd.min(self.snd_cwnd_clamp);
    }
}

/// TCP_INIT_CWND (include/net/tcp.h): the initial window, 10 segments
/// (RFC 6928).
pub const TCP_INIT_CWND: u32 = 10;
/// TCP_INFINITE_SSTHRESH (include/net/tcp.h).
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// net.ipv4.tcp_min_tso_segs default: the smallest burst tcp_tso_segs()
/// builds when the algorithm has no `min_tso_segs` of its own.
pub const TCP_MIN_TSO_SEGS: u32 = 2;
/// sk->sk_gso_max_size default (GSO_LEGACY_MAX_SIZE): 64 KB per burst.
pub const GSO_MAX_SIZE: u64 = 65_536;
/// sk->sk_pacing_shift default (sock_init_data): pacing_rate >> 10 is
/// about 1 ms of data.
pub const SK_PACING_SHIFT: u32 = 10;

/// net.ipv4.tcp_tso_rtt_log default: the min RTT (µs) is shifted right by
/// this to size tcp_tso_autosize()'s bonus for short paths (Linux 5.18+).
pub const TCP_TSO_RTT_LOG: u32 = 9;

/// tcp_tso_autosize(): segments per burst, ~1 ms of data at `pacing_rate`
/// (sk_pacing_rate >> sk_pacing_shift) plus GSO_MAX_SIZE >> (min_rtt_us >>
/// tcp_tso_rtt_log) (a full 64 KB below 512 µs of min RTT, halving every
/// 512 µs more, nothing from 16 ms up or before an RTT sample), at most a
/// GSO_MAX_SIZE packet and at least `min_tso_segs`.
#[inline]
pub fn tso_autosize(mss_bytes: u32, pacing_rate: Rate, min_rtt: Time, min_tso_segs: u32) -> u32 {
    let mss = mss_bytes.max(1) as u64;
    let mut bytes = (pacing_rate.bps() / 8) >> SK_PACING_SHIFT;
    // r = min_rtt_us >> 9 < 32 only below 16.384 ms (and never before a
    // sample, min_rtt = Time::MAX): test that first, as most paths are longer.
    if min_rtt.0 < (32u64 << TCP_TSO_RTT_LOG) * 1000 {
        bytes += GSO_MAX_SIZE >> (min_rtt.as_micros() >> TCP_TSO_RTT_LOG);
    }
    ((bytes.min(GSO_MAX_SIZE) / mss) as u32).max(min_tso_segs)
}

/// One congestion control algorithm. Default hooks do nothing, like the
/// optional members of `tcp_congestion_ops`.
pub trait CongestionControl: Send {
    /// Name as Linux spells it (`reno`, `cubic`, `htcp`, `bbr`).
    fn name(&self) -> &'static str;

    /// `init`: called once when the connection starts.
    fn init(&mut self, _tp: &mut ConnState) {}

    /// `ssthresh`: the slow-start threshold to set when a loss or CWR
    /// episode starts. Required.
    fn ssthresh(&mut self, tp: &ConnState) -> u32;

    /// `cong_avoid`: grow cwnd on an ACK in Open/Disorder state when
    /// tcp_may_raise_cwnd() (not called for `owns_cwnd_and_pacing`).
    fn cong_avoid(&mut self, _tp: &mut ConnState, _acked: u32) {}

    /// True for algorithms implementing `cong_control` (BBR): the engine
    /// then skips PRR/cong_avoid and calls `cong_control` on every ACK.
    fn owns_cwnd_and_pacing(&self) -> bool {
        false
    }

    /// `cong_control`: full control of cwnd and pacing rate per ACK.
    fn cong_control(&mut self, _tp: &mut ConnState, _rs: &RateSample) {}

    /// `set_state`: the CA state is about to change to `new_state`.
    fn set_state(&mut self, _tp: &mut ConnState, _new_state: CaState) {}

    /// `cwnd_event`: an event such as TX start or RTO loss.
    fn cwnd_event(&mut self, _tp: &mut ConnState, _ev: CwndEvent) {}

    /// `pkts_acked`: per-ACK RTT and acked count (hystart, htcp use it).
    fn pkts_acked(&mut self, _tp: &mut ConnState, _sample: &AckSample) {}

    /// `in_ack_event`: called once per ACK from tcp_ack() through
    /// tcp_in_ack_event(), with `CA_ACK_*` flags. As in Linux since the
    /// Accurate-ECN rework (6.14) it runs after tcp_clean_rtx_queue(), so
    /// `delivered` and `delivered_ce` already count this ACK, and before
    /// loss detection (tcp_fastretrans_alert).
    fn in_ack_event(&mut self, _tp: &mut ConnState, _flags: u32) {}

    /// `skb_marked_lost` (BBRv3's bbr_skb_marked_lost): segment `seq` was
    /// just marked lost (tcp_mark_skb_lost(), by RACK or an RTO); `tx` is
    /// its send-time snapshot. `tp.lost` already counts it.
    fn skb_marked_lost(&mut self, _tp: &mut ConnState, _seq: u64, _tx: &TxSnapshot) {}

    /// Whether [`CongestionControl::skb_marked_lost`] does anything (Linux
    /// calls the hook only when `ca_ops->skb_marked_lost` is set). When it
    /// does not, the sender marks a run of lost segments in one step
    /// instead of one call per segment: an algorithm that implements the
    /// hook says so here too.
    fn wants_skb_marked_lost(&self) -> bool {
        false
    }

    /// `sndbuf_expand`: the send buffer in flights of segments that
    /// tcp_sndbuf_expand() gives the socket (2 unless the CCA says).
    fn sndbuf_expand(&self) -> u32 {
        2
    }

    /// `min_tso_segs`: the smallest burst tcp_tso_segs() may build
    /// (Linux's default is sysctl_tcp_min_tso_segs).
    fn min_tso_segs(&self, tp: &ConnState) -> u32 {
        tp.min_tso_segs
    }

    /// `tso_segs` (BBRv3's hook): segments per burst while the stack
    /// paces at `pacing_rate`. The default is tcp_tso_segs():
    /// tcp_tso_autosize() with this algorithm's `min_tso_segs`.
    fn tso_segs(&self, tp: &ConnState, pacing_rate: Rate) -> u32 {
        tso_autosize(tp.mss_bytes, pacing_rate, tp.min_rtt, self.min_tso_segs(tp))
    }

    /// `undo_cwnd`: cwnd to restore after a spurious reduction. Linux's
    /// default (tcp_reno_undo_cwnd) is max(cwnd, prior_cwnd).
    fn undo_cwnd(&mut self, tp: &mut ConnState) -> u32 {
        tp.snd_cwnd.max(tp.prior_cwnd)
    }

    /// TCP_CONG_NEEDS_ECN (tcp_ca_needs_ecn()): the algorithm asks for ECN
    /// whatever net.ipv4.tcp_ecn says, sends every data segment ECT
    /// (retransmissions too, tcp_ecn_send()) and wants the receiver's
    /// accurate CE echo (dctcp_ece_ack_update()).
    fn needs_ecn(&self) -> bool {
        false
    }

    /// `get_info` (TCP_CC_INFO): the algorithm's own diagnostics, if any.
    fn get_info(&self) -> Option<CcInfo> {
        None
    }

    /// The algorithm's internal variables now (cc::vars), for the series'
    /// `cc_*` columns and the events table; `None` (the default) for an
    /// algorithm that exposes none, and then nothing is recorded for it.
    /// Answers the same kind (`Some` or `None`) for the whole connection.
    /// Only an algorithm that owns cwnd and pacing (`owns_cwnd_and_pacing`)
    /// may answer `Some`: the sender logs its state changes after each
    /// `cong_control` (tcp/cc_log.rs), so that no other algorithm's ACK
    /// pays for the log.
    fn vars(&self, _tp: &ConnState) -> Option<CcVars> {
        None
    }

    /// The fields of [`CongestionControl::vars`] the state-change log
    /// compares after every ACK (state, cycle index, full_bw_reached); an
    /// algorithm whose `vars` costs more than these overrides it with a
    /// cheap read of the same fields (and builds `vars` on it).
    fn state_key(&self, tp: &ConnState) -> Option<CcStateKey> {
        self.vars(tp).map(|v| v.key())
    }

    /// The `cc_mode` column: a short label of what the algorithm is doing
    /// given the connection state `tp`. One convention for every algorithm:
    ///
    /// * an algorithm that owns cwnd and pacing (`owns_cwnd_and_pacing`:
    ///   BBR, BBRv3) names its state machine's mode as Linux names it
    ///   (`enum bbr_mode` lower-case; BBRv3's PROBE_BW with its phase as
    ///   bbr_get_phase() names it), whatever the CA state;
    /// * every other algorithm reports `slow_start` while the next ACK grows
    ///   cwnd by tcp_slow_start() ([`ConnState::grows_by_slow_start`]:
    ///   cwnd < ssthresh outside CWR/Recovery), else the rule its congestion
    ///   avoidance applies: `cong_avoid` for an algorithm with one rule,
    ///   `reno` while it falls back to Reno's, else its own rule's name
    ///   (BIC's `binary_search`/`max_probing`, Vegas's
    ///   `increase`/`hold`/`decrease`/`exit_slow_start`, YeAH's `fast`,
    ///   Illinois's `delay_adaptive`/`alpha_max`, NV's `grow`). An algorithm
    ///   whose cong_avoid holds cwnd before slow start is reached names the
    ///   hold (NV's `no_growth`). The label is derived from `tp`, never from
    ///   a shadow copy of it. The CA state itself is the `ca_state` column.
    ///
    /// The default is [`ConnState::window_label`] with `cong_avoid`.
    fn state_label(&self, tp: &ConnState) -> &'static str {
        tp.window_label("cong_avoid")
    }

    /// Every state [`CongestionControl::state_key`] may name, for a plan
    /// item that waits for one (path/trigger.rs); empty (the default)
    /// for an algorithm that exposes none.
    fn state_labels(&self) -> &'static [&'static str] {
        &[]
    }
}

/// `union tcp_cc_info` (include/uapi/linux/inet_diag.h), the members the
/// simulator's algorithms fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcInfo {
    /// `struct tcp_dctcp_info` (dctcp_get_info()), the fields a sender has.
    Dctcp {
        /// dctcp_enabled: DCTCP runs (ECN negotiated), not its Reno fallback.
        enabled: bool,
        /// dctcp_alpha: ca->dctcp_alpha, in 1/1024 (DCTCP_MAX_ALPHA).
        alpha: u32,
    },
    /// `struct tcp_bbr_info` (bbr_get_info()), the fields BBRv3 fills
    /// beyond v1's bandwidth.
    Bbr {
        /// bbr_version: BBR_VERSION of the algorithm.
        version: u8,
        /// bbr_min_rtt: bbr->min_rtt_us (u32::MAX before a sample).
        min_rtt_us: u32,
        /// bbr_pacing_gain, in 1/256.
        pacing_gain: u32,
        /// bbr_cwnd_gain, in 1/256.
        cwnd_gain: u32,
        /// bbr_inflight_lo in packets (u32::MAX: no bound).
        inflight_lo: u32,
        /// bbr_inflight_hi in packets (u32::MAX: no bound).
        inflight_hi: u32,
    },
    /// `struct tcpvegas_info` (tcp_vegas_get_info(), tcp_illinois_info()).
    Vegas {
        /// tcpv_enabled: Vegas's per-RTT decision runs (doing_vegas_now).
        enabled: bool,
        /// tcpv_rttcnt: RTT samples in the current round (cntRTT).
        rttcnt: u32,
        /// tcpv_rtt: Vegas's baseRTT, Illinois's average RTT (µs).
        rtt_us: u32,
        /// tcpv_minrtt: Vegas's minRTT of the round, Illinois's base RTT (µs).
        minrtt_us: u32,
    },
}

/// Shared by the algorithms' unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::ConnState;

    /// A connection whose last transmit was cwnd-limited, with the given
    /// cwnd and ssthresh (segments): what cong_avoid needs to act at all
    /// (tcp_is_cwnd_limited).
    pub(crate) fn cwnd_limited(cwnd: u32, ssthresh: u32) -> ConnState {
        let mut tp = ConnState::new(1448);
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        tp
    }
}

#[cfg(test)]
mod tso_tests {
    use super::*;

    #[test]
    fn tcp_tso_autosize_adds_gso_max_size_shifted_by_min_rtt_over_512_us() {
        let rate = Rate::from_mbps(16); // 2 MB/s >> 10 = 1953 bytes: 1 segment of 1448
        assert_eq!(tso_autosize(1448, rate, Time::MAX, 2), 2); // no sample: no bonus
        assert_eq!(tso_autosize(1448, rate, Time::from_millis(20), 2), 2); // 20000 >> 9 = 39: none
        // 2.2 ms: 2200 >> 9 = 4, 65536 >> 4 = 4096 more bytes: (1953 + 4096) / 1448 = 4.
        assert_eq!(tso_autosize(1448, rate, Time::from_micros(2200), 2), 4);
        // Under 512 us the bonus is a whole GSO packet, capped at 64 KB: 45 segments.
        assert_eq!(tso_autosize(1448, rate, Time::from_micros(300), 2), 45);
        // 16.383 ms is the last min RTT with a bonus (65536 >> 31 = 0 bytes).
        assert_eq!(tso_autosize(1448, rate, Time::from_micros(16_383), 2), 2);
    }
}
