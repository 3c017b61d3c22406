//! BBR v1 (Bottleneck Bandwidth and RTT) as Linux implements it in
//! net/ipv4/tcp_bbr.c (Cardwell et al., "BBR: Congestion-Based Congestion
//! Control", ACM Queue 14(5), 2016).
//!
//! > On each ACK, update our model of the network path:
//! >    bottleneck_bandwidth = windowed_max(delivered / elapsed, 10 round trips)
//! >    min_rtt = windowed_min(rtt, 10 seconds)
//! > pacing_rate = pacing_gain * bottleneck_bandwidth
//! > cwnd = max(cwnd_gain * bottleneck_bandwidth * min_rtt, 4)
//!
//! The code follows tcp_bbr.c function by function; every function names
//! the Linux function it implements. Units are Linux's: bandwidth in
//! packets per microsecond scaled by 2^24 (`BW_SCALE`), gains in 1/256
//! (`BBR_SCALE`), RTTs in microseconds, timers in jiffies at HZ = 1000, and
//! the pacing rate in bytes per second (converted to/from the simulator's
//! bits-per-second `Rate` at the `ConnState` boundary).
//!
//! Layout (split by concern):
//! * `mod.rs`        — state, constants, `bbr_main`/`bbr_update_model`, hooks
//! * `minmax.rs`     — Kathleen Nichols' windowed min/max (lib/win_minmax.c)
//! * `ack_aggregation.rs` — extra_acked estimator (shared with BBRv3)
//! * `startup_drain.rs` — full-pipe detection and DRAIN
//! * `probe_bw.rs`   — the eight-phase pacing-gain cycle
//! * `probe_rtt.rs`  — min_rtt filter and PROBE_RTT
//! * `lt_bw.rs`      — long-term bandwidth (token-bucket policer) detection
//! * `pacing.rs`     — pacing rate and TSO sizing
//! * `cwnd.rs`       — BDP, quantization budget, ACK aggregation, cwnd

pub(crate) mod ack_aggregation;
mod cwnd;
mod lt_bw;
mod minmax;
pub(crate) mod pacing;
mod probe_bw;
mod probe_rtt;
mod startup_drain;

#[cfg(test)]
pub(crate) mod harness;
#[cfg(test)]
mod tests;

pub use minmax::Minmax;

use super::jiffies::{USEC_PER_MSEC, USEC_PER_SEC};
use super::prandom::Prandom;
use super::vars::{bbr_bw_bps, bbr_gain, bbr_min_rtt_s, jiffies_s};
use super::{CaState, CcStateKey, CcVars, CongestionControl, ConnState, CwndEvent, RateSample, TCP_INFINITE_SSTHRESH, TCP_INIT_CWND};
use crate::units::{Rate, Time};
use ack_aggregation::AckAggregation;

/// `BW_SCALE`: "Scale factor for rate in pkt/uSec unit to avoid truncation
/// in bandwidth estimation."
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT` = 1 << BW_SCALE.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE`: "scaling factor for fractions in BBR (e.g. gains)".
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT` = 1 << BBR_SCALE = 256.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// `CYCLE_LEN`: "number of phases in a pacing gain cycle".
pub const CYCLE_LEN: u32 = 8;
/// `bbr_bw_rtts`: "Window length of bw filter (in rounds)" = CYCLE_LEN + 2.
pub const BBR_BW_RTTS: u32 = CYCLE_LEN + 2;
/// `bbr_min_rtt_win_sec`: "Window length of min_rtt filter (in sec)".
pub const BBR_MIN_RTT_WIN_SEC: u64 = 10;
/// `bbr_probe_rtt_mode_ms`: "Minimum time (in ms) spent at
/// bbr_cwnd_min_target in BBR_PROBE_RTT mode".
pub const BBR_PROBE_RTT_MODE_MS: u64 = 200;
/// `bbr_min_tso_rate`: "Skip TSO below the following bandwidth (bits/sec)".
pub const BBR_MIN_TSO_RATE: u64 = 1_200_000;
/// `bbr_pacing_margin_percent`: "Pace at ~1% below estimated bw, on
/// average, to reduce queue at bottleneck."
pub const BBR_PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_high_gain` = BBR_UNIT * 2885 / 1000 + 1 = 739: "a high_gain value
/// of 2/ln(2) because it's the smallest pacing gain that will allow a
/// smoothly increasing pacing rate that will double each RTT".
pub const BBR_HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain` = BBR_UNIT * 1000 / 2885 = 88: "calculated to typically
/// drain the queue created in BBR_STARTUP in a single round".
pub const BBR_DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain`: "The gain for deriving steady-state cwnd tolerates
/// delayed/stretched ACKs".
pub const BBR_CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_pacing_gain[]`: "The pacing_gain values for the PROBE_BW gain
/// cycle, to discover/share bw".
pub const BBR_PACING_GAIN: [u32; CYCLE_LEN as usize] = [
    BBR_UNIT * 5 / 4, // probe for more available bw
    BBR_UNIT * 3 / 4, // drain queue and/or yield bw to other flows
    BBR_UNIT,         // cruise at 1.0*bw to utilize pipe,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT, // without creating excess queue...
    BBR_UNIT,
    BBR_UNIT,
];
/// `bbr_cycle_rand`: "Randomize the starting gain cycling phase over N
/// phases".
pub const BBR_CYCLE_RAND: u32 = 7;
/// `bbr_cwnd_min_target`: "Try to keep at least this many packets in
/// flight, if things go smoothly."
pub const BBR_CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh`: "If bw has increased significantly (1.25x), there
/// may be more bw available".
pub const BBR_FULL_BW_THRESH: u64 = (BBR_UNIT * 5 / 4) as u64;
/// `bbr_full_bw_cnt`: "after 3 rounds w/o significant bw growth, estimate
/// pipe is full".
pub const BBR_FULL_BW_CNT: u32 = 3;
/// `bbr_lt_intvl_min_rtts`: "The minimum number of rounds in an LT bw
/// sampling interval".
pub const BBR_LT_INTVL_MIN_RTTS: u32 = 4;
/// `bbr_lt_loss_thresh` = 50/256 (~20%): "If lost/delivered ratio > 20%,
/// interval is \"lossy\" and we may be policed".
pub const BBR_LT_LOSS_THRESH: u64 = 50;
/// `bbr_lt_bw_ratio` = BBR_UNIT / 8: "If 2 intervals have a bw ratio <=
/// 1/8, their bw is \"consistent\"".
pub const BBR_LT_BW_RATIO: u64 = (BBR_UNIT / 8) as u64;
/// `bbr_lt_bw_diff` = 4000 / 8 bytes/s: "If 2 intervals have a bw diff <= 4
/// Kbit/sec their bw is \"consistent\"".
pub const BBR_LT_BW_DIFF: u64 = 4000 / 8;
/// `bbr_lt_bw_max_rtts`: "If we estimate we're policed, use lt_bw for this
/// many round trips".
pub const BBR_LT_BW_MAX_RTTS: u32 = 48;
/// `bbr_extra_acked_gain`: "Gain factor for adding extra_acked to target
/// cwnd".
pub const BBR_EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// `bbr_extra_acked_win_rtts`: "Window length of extra_acked window."
pub const BBR_EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_ack_epoch_acked_reset_thresh`: "Max allowed val for
/// ack_epoch_acked, after which sampling epoch is reset".
pub const BBR_ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// `bbr_extra_acked_max_us`: "Time period for clamping cwnd increment due
/// to ack aggregation".
pub const BBR_EXTRA_ACKED_MAX_US: u64 = 100 * 1000;

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// "ramp up sending rate rapidly to fill pipe"
    Startup,
    /// "drain any queue created during startup"
    Drain,
    /// "discover, share bw: pace around estimated bw"
    ProbeBw,
    /// "cut inflight to min to probe min_rtt"
    ProbeRtt,
}

/// The default seed `by_name("bbr")` uses. The engine should instead pass
/// a per-connection seed through [`Bbr::with_seed`] so that competing
/// flows start their gain cycles at different phases, as Linux's
/// prandom_u32_max() makes them.
pub const DEFAULT_SEED: u64 = 0x6262_725f_7631; // "bbr_v1"

/// `struct bbr`: the BBR congestion control block.
#[derive(Clone, Debug)]
pub struct Bbr {
    /// min RTT in min_rtt_win_sec window (u32::MAX: none yet).
    min_rtt_us: u32,
    /// timestamp of min_rtt_us, in jiffies.
    min_rtt_stamp: u64,
    /// end time for BBR_PROBE_RTT mode, in jiffies (0: not set).
    probe_rtt_done_stamp: u64,
    /// Max recent delivery rate in pkts/uS << 24.
    bw: Minmax,
    /// count of packet-timed rounds elapsed.
    rtt_cnt: u32,
    /// tp->delivered at end of round.
    next_rtt_delivered: u64,
    /// time of this cycle phase start.
    cycle_mstamp: Time,
    /// current bbr_mode in state machine.
    mode: Mode,
    /// CA state on previous ACK.
    prev_ca_state: CaState,
    /// use packet conservation?
    packet_conservation: bool,
    /// start of packet-timed tx->ack round?
    round_start: bool,
    /// restarting after idle?
    idle_restart: bool,
    /// a BBR_PROBE_RTT round at 4 pkts?
    probe_rtt_round_done: bool,
    /// taking long-term ("LT") samples now?
    lt_is_sampling: bool,
    /// round trips in long-term interval.
    lt_rtt_cnt: u32,
    /// use lt_bw as our bw estimate?
    lt_use_bw: bool,
    /// LT est delivery rate in pkts/uS << 24.
    lt_bw: u64,
    /// LT intvl start: tp->delivered.
    lt_last_delivered: u64,
    /// LT intvl start: tp->delivered_mstamp, in ms.
    lt_last_stamp: u64,
    /// LT intvl start: tp->lost.
    lt_last_lost: u64,
    /// current gain for setting pacing rate.
    pacing_gain: u32,
    /// current gain for setting cwnd.
    cwnd_gain: u32,
    /// reached full bw in Startup?
    full_bw_reached: bool,
    /// number of rounds without large bw gains.
    full_bw_cnt: u32,
    /// current index in pacing_gain cycle array.
    cycle_idx: u32,
    /// have we seen an RTT sample yet?
    has_seen_rtt: bool,
    /// prior cwnd upon entering loss recovery.
    prior_cwnd: u32,
    /// recent bw, to estimate if pipe is full.
    full_bw: u64,
    /// ACK-aggregation tracking (ack_epoch_mstamp, extra_acked[2],
    /// ack_epoch_acked, extra_acked_win_rtts, extra_acked_win_idx).
    aggr: AckAggregation,

    /// Seeded replacement for prandom_u32_max().
    rng: Prandom,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr::with_seed(DEFAULT_SEED)
    }
}

impl Bbr {
    /// A BBR instance whose random start phase of the PROBE_BW gain cycle
    /// (bbr_reset_probe_bw_mode's prandom_u32_max) is drawn from `seed`.
    pub fn with_seed(seed: u64) -> Bbr {
        Bbr {
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: Minmax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Time::ZERO,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: BBR_HIGH_GAIN,
            cwnd_gain: BBR_HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            aggr: AckAggregation::default(),
            rng: Prandom::new(seed),
        }
    }

    /// Current mode of the state machine.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Current pacing gain in 1/256 (bbr->pacing_gain).
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }
    /// Current cwnd gain in 1/256 (bbr->cwnd_gain).
    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }
    /// Index in the PROBE_BW gain cycle (bbr->cycle_idx).
    pub fn cycle_idx(&self) -> u32 {
        self.cycle_idx
    }
    /// Windowed min RTT in microseconds; u32::MAX before any sample.
    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt_us
    }
    /// STARTUP has filled the pipe (bbr_full_bw_reached).
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// The long-term (policed) rate is in use (bbr->lt_use_bw).
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }
    /// Packet-timed round trips counted so far (bbr->rtt_cnt).
    pub fn rtt_cnt(&self) -> u32 {
        self.rtt_cnt
    }
    /// bbr_bw() converted to bits per second for traces.
    pub fn bw_rate(&self, mss_bytes: u32) -> Rate {
        let bps = ((self.bw() as u128) * (mss_bytes as u128) * 8 * (USEC_PER_SEC as u128))
            >> BW_SCALE;
        Rate(bps.min(u64::MAX as u128) as u64)
    }

    /// bbr_max_bw(): "the windowed max recent bandwidth sample, in
    /// pkts/uS << BW_SCALE".
    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// bbr_bw(): "the estimated bandwidth of the path": lt_bw while
    /// policed, else the max filter.
    fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// tcp_jiffies32 (cc::jiffies): min_rtt_stamp and probe_rtt_done_stamp
    /// are kept in jiffies.
    fn jiffies(tp: &ConnState) -> u64 {
        super::jiffies::jiffies(tp.now)
    }

    /// bbr_save_cwnd(): 'Save "last known good" cwnd so we can restore it
    /// after losses or PROBE_RTT'.
    fn save_cwnd(&mut self, tp: &ConnState) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            // this cwnd is good enough
            self.prior_cwnd = tp.snd_cwnd;
        } else {
            // loss recovery or BBR_PROBE_RTT have temporarily cut cwnd
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// bbr_update_bw(): "Estimate the bandwidth based on how fast packets
    /// are delivered", counting packet-timed rounds on the way.
    fn update_bw(&mut self, tp: &ConnState, rs: &RateSample) {
        self.round_start = false;
        let interval_us = rs.interval.as_micros();
        if rs.delivered < 0 || interval_us == 0 {
            return; // Not a valid observation
        }

        // "See if we've reached the next RTT": !before(rs->prior_delivered,
        // bbr->next_rtt_delivered). Counted here from the rate sample, not
        // from ConnState::round_count.
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tp.delivered;
            self.rtt_cnt = self.rtt_cnt.saturating_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }

        self.lt_bw_sampling(tp, rs);

        // "Divide delivered by the interval to find a (lower bound)
        // bottleneck bandwidth sample."
        let bw = (rs.delivered as u64).saturating_mul(BW_UNIT) / interval_us;

        // "we filter out app-limited samples unless they describe the path
        // bw at least as well as our bw model."
        if !rs.is_app_limited || bw >= self.max_bw() {
            // "Incorporate new sample into our max bw filter."
            self.bw.running_max(BBR_BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// bbr_update_gains(): pacing and cwnd gains of the current mode.
    fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (BBR_HIGH_GAIN, BBR_HIGH_GAIN),
            // slow, to drain; keep cwnd
            Mode::Drain => (BBR_DRAIN_GAIN, BBR_HIGH_GAIN),
            Mode::ProbeBw => (
                if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    BBR_PACING_GAIN[self.cycle_idx as usize]
                },
                BBR_CWND_GAIN,
            ),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// bbr_update_model().
    fn update_model(&mut self, tp: &mut ConnState, rs: &RateSample) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        self.update_cycle_phase(tp, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(tp);
        self.update_min_rtt(tp, rs);
        self.update_gains();
    }

    /// bbr_main(): the `cong_control` hook.
    fn main(&mut self, tp: &mut ConnState, rs: &RateSample) {
        self.update_model(tp, rs);
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// bbr_sndbuf_expand(): "Provision 3 * cwnd since BBR may slow-start
    /// even during recovery."
    fn sndbuf_expand(&self) -> u32 {
        3
    }

    /// bbr_init().
    fn init(&mut self, tp: &mut ConnState) {
        self.prior_cwnd = 0;
        tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = 0;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;

        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        // bbr->min_rtt_us = tcp_min_rtt(tp);
        self.min_rtt_us = if tp.min_rtt == Time::MAX {
            u32::MAX
        } else {
            tp.min_rtt.as_micros().min(u32::MAX as u64) as u32
        };
        self.min_rtt_stamp = Self::jiffies(tp);

        // "init max bw to 0"
        self.bw.reset(self.rtt_cnt, 0);

        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);

        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = Time::ZERO;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tp);
        self.reset_startup_mode();

        self.aggr.reset(tp.now);

        // cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
        tp.pacing_enabled = true;
    }

    /// bbr_ssthresh(): "Entering loss recovery, so save cwnd for when we
    /// exit or undo recovery." BBR leaves ssthresh as it is.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        self.save_cwnd(tp);
        tp.snd_ssthresh
    }

    fn owns_cwnd_and_pacing(&self) -> bool {
        true
    }

    fn cong_control(&mut self, tp: &mut ConnState, rs: &RateSample) {
        self.main(tp, rs);
    }

    /// bbr_min_tso_segs(), registered as `.min_tso_segs`.
    fn min_tso_segs(&self, tp: &ConnState) -> u32 {
        Self::min_tso_segs(tp)
    }

    /// bbr_set_state().
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        if new_state == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..RateSample::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true; // "treat RTO like end of a round"
            self.lt_bw_sampling(tp, &rs);
        }
    }

    /// bbr_cwnd_event().
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        if ev != CwndEvent::TxStart {
            return;
        }
        if tp.app_limited != 0 {
            self.idle_restart = true;
            self.aggr.restart_epoch(tp.now);
            // "Avoid pointless buffer overflows: pace at est. bw if we don't
            // need more speed (we're restarting from idle and app-limited)."
            if self.mode == Mode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            } else if self.mode == Mode::ProbeRtt {
                self.check_probe_rtt_done(tp);
            }
        }
    }

    /// bbr_undo_cwnd(): "spurious slow-down; reset full pipe detection".
    fn undo_cwnd(&mut self, tp: &mut ConnState) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tp);
        tp.snd_cwnd
    }

    /// The recorder's snapshot, read from `struct bbr` as it is: v1 has no
    /// bw_hi/bw_lo or inflight bounds.
    fn vars(&self, tp: &ConnState) -> Option<CcVars> {
        Some(CcVars {
            round: Some(self.rtt_cnt as i64),
            max_bw_bps: Some(bbr_bw_bps(tp, self.max_bw())),
            min_rtt_s: bbr_min_rtt_s(self.min_rtt_us),
            pacing_gain: Some(bbr_gain(self.pacing_gain)),
            cwnd_gain: Some(bbr_gain(self.cwnd_gain)),
            full_bw_bps: Some(bbr_bw_bps(tp, self.full_bw)),
            full_bw_count: Some(self.full_bw_cnt as i64),
            extra_acked_segments: Some(self.aggr.extra_acked_max() as i64),
            bdp_segments: Some(self.inflight(tp, self.max_bw(), BBR_UNIT) as i64),
            lt_bw_bps: Some(bbr_bw_bps(tp, self.lt_bw)),
            lt_use_bw: Some(self.lt_use_bw),
            probe_rtt_min_stamp_s: Some(jiffies_s(self.min_rtt_stamp)),
            idle_restart: Some(self.idle_restart),
            ..CcVars::with_key(self.state_key(tp)?)
        })
    }

    fn state_key(&self, tp: &ConnState) -> Option<CcStateKey> {
        Some(CcStateKey {
            state: self.state_label(tp),
            cycle_index: Some(self.cycle_idx as i64),
            full_bw_reached: Some(self.full_bw_reached),
        })
    }

    fn state_labels(&self) -> &'static [&'static str] {
        &["startup", "drain", "probe_bw", "probe_rtt"]
    }

    fn state_label(&self, _tp: &ConnState) -> &'static str {
        match self.mode {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}
