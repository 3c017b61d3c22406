//! BBRv3 as Google's Linux tree implements it: net/ipv4/tcp_bbr.c of
//! github.com/google/bbr, branch v3 (BBR_VERSION 3), described by
//! draft-ietf-ccwg-bbr. Where the code and the draft differ, this module
//! follows the code.
//!
//! > The model has both higher and lower bounds for the operating range:
//! >   lo: bw_lo, inflight_lo: conservative short-term lower bound
//! >   hi: bw_hi, inflight_hi: robust long-term upper bound
//! > The bandwidth-probing time scale is (a) extended dynamically based on
//! > estimated BDP to improve coexistence with Reno/CUBIC; (b) bounded by
//! > an interactive wall-clock time-scale to be more scalable and responsive
//! > than Reno and CUBIC.
//!
//! Units are Linux's, as in the v1 module (`cc::bbr`), whose pieces are
//! shared: the constants `BW_SCALE`/`BBR_SCALE`, the pacing-rate
//! arithmetic (`bbr::pacing`), the ACK-aggregation estimator
//! (`bbr::ack_aggregation`). The seeded stand-in for the kernel's RNG is
//! `cc::prandom`; time in jiffies comes from `cc::jiffies`.
//!
//! Layout (split by concern):
//! * `mod.rs`      — state, constants, `bbr_main`/`bbr_update_model`
//! * `hooks.rs`    — the `tcp_congestion_ops` hooks (bbr_init, bbr_set_state, …)
//! * `signals.rs`  — rounds, bw samples, bw_hi filter, loss/ECN signals, ecn_alpha
//! * `bounds.rs`   — inflight_hi/bw_hi (upper) and inflight_lo/bw_lo (lower) bounds
//! * `probe_bw.rs` — PROBE_BW's DOWN / CRUISE / REFILL / UP state machine
//! * `startup.rs`  — full-bw, loss and ECN exits from STARTUP; DRAIN
//! * `probe_rtt.rs`— min_rtt filters and PROBE_RTT at half the BDP
//! * `cwnd.rs`     — BDP, quantization budget, EDT in-flight, cwnd, pacing, TSO
//!
//! Differences from the google/bbr v3 code, all where the simulator lacks
//! the stack feature the code reads:
//! * ECN: `bbr_can_use_ecn()` needs TCP_ECN_OK and the per-route
//!   TCP_ECN_LOW ("shallow-threshold ECN"); the simulator has no route
//!   flags, so `ConnState::ecn_ok` stands for both. The ECN logic still
//!   only engages at min_rtt ≤ `bbr_ecn_max_rtt_us` (5 ms). The receiver
//!   echoes ECE as RFC 3168 (until CWR), not with the precise per-segment
//!   echo BBR's `dctcp_ece_ack_update()` gives (TCP_CONG_WANTS_CE_EVENTS).
//! * No TLP-recovery event (CA_EVENT_TLP_RECOVERY, bbr_run_loss_probe_recovery)
//!   and no `rs->is_acking_tlp_retrans_seq` / `rs->is_ack_delayed`: treated
//!   as absent / false.
//! * PLB (tcp_plb, off by default: net.ipv4.tcp_plb_enabled = 0) and
//!   `fast_ack_mode` (a receiver-side quick-ACK tweak) are not modelled.
//! * `tcp_skb_pcount()` is 1: the scoreboard marks single segments lost.
//!
//! Where the draft (draft-ietf-ccwg-bbr-02…06) differs from this code:
//! DRAIN's pacing gain (code 1/2.885 = 0.35; draft 0.5), PROBE_DOWN's gain
//! (code 0.91; draft 0.9), the ECN response (code: ecn_alpha EWMA with
//! gain 1/16 cutting inflight_lo by alpha/3, STARTUP exit after 2 rounds
//! above 50 % CE; the draft leaves ECN out), and STARTUP's loss exit (code:
//! ≥ 6 loss events in a Recovery round and loss > 2 %).

mod bounds;
mod cwnd;
mod hooks;
mod probe_bw;
mod probe_rtt;
mod signals;
mod startup;

#[cfg(test)]
mod tests;

use super::bbr::ack_aggregation::AckAggregation;
use super::bbr::pacing::rate_bytes_per_sec;
use super::prandom::Prandom;
pub use super::bbr::{BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};
use super::bbr::{BBR_EXTRA_ACKED_WIN_RTTS, BBR_FULL_BW_CNT, BBR_FULL_BW_THRESH, BBR_PACING_MARGIN_PERCENT};
use super::{CaState, ConnState, RateSample};
use crate::units::{Rate, Time};

/// BBR_VERSION of the followed code.
pub const BBR_VERSION: u8 = 3;
/// `bbr_min_rtt_win_sec`: "Window length of min_rtt filter (in sec)".
pub const MIN_RTT_WIN_SEC: u64 = 10;
/// `bbr_probe_rtt_mode_ms`: "Minimum time (in ms) spent at
/// bbr_cwnd_min_target in BBR_PROBE_RTT mode".
pub const PROBE_RTT_MODE_MS: u64 = 200;
/// `bbr_probe_rtt_win_ms`: "Window length of probe_rtt_min_us filter (in
/// ms), and consequently the typical interval between PROBE_RTT mode
/// entries."
pub const PROBE_RTT_WIN_MS: u64 = 5000;
/// `bbr_probe_rtt_cwnd_gain`: "Proportion of cwnd to estimated BDP in
/// PROBE_RTT" = 0.5.
pub const PROBE_RTT_CWND_GAIN: u32 = BBR_UNIT / 2;
/// `bbr_tso_rtt_shift`: "We cut the RTT-based allowance in half for every
/// 2^9 usec (aka 512 us) of RTT".
pub const TSO_RTT_SHIFT: u32 = 9;
/// `bbr_startup_pacing_gain` = 4 ln 2 ≈ 2.77: "the smallest value that
/// will allow a smoothly increasing pacing rate that will double each RTT
/// and send the same number of packets per RTT that an un-paced,
/// slow-starting Reno or CUBIC flow would".
pub const STARTUP_PACING_GAIN: u32 = BBR_UNIT * 277 / 100 + 1;
/// `bbr_startup_cwnd_gain`.
pub const STARTUP_CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_drain_gain` = 1/2.885: "calculated to typically drain the queue
/// created in BBR_STARTUP in a single round".
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain`: "The gain for deriving steady-state cwnd tolerates
/// delayed/stretched ACKs".
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_pacing_gain[]`, indexed by [`Phase`]: UP 1.25, DOWN 0.91, CRUISE
/// 1.0, REFILL 1.0.
pub const PACING_GAIN: [u32; 4] = [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT];
/// `bbr_cwnd_min_target`.
pub const CWND_MIN_TARGET: u32 = 4;
/// `bbr_ecn_max_rtt_us`: "Max RTT (in usec) at which to use sender-side
/// ECN logic."
pub const ECN_MAX_RTT_US: u32 = 5000;
/// `bbr_beta`: "On losses, scale down inflight and pacing rate by beta"
/// = 0.3, i.e. keep 0.7.
pub const BETA: u32 = BBR_UNIT * 30 / 100;
/// `bbr_ecn_alpha_gain` = 1/16: "Gain factor for ECN mark ratio samples".
pub const ECN_ALPHA_GAIN: u32 = BBR_UNIT / 16;
/// `bbr_ecn_alpha_init` = 1.0: "allows a flow to respond quickly to
/// congestion if the bottleneck is congested when the flow starts up".
pub const ECN_ALPHA_INIT: u32 = BBR_UNIT;
/// `bbr_ecn_factor` = 1/3: "On ECN, cut inflight_lo to (1 - ecn_factor *
/// ecn_alpha)".
pub const ECN_FACTOR: u32 = BBR_UNIT / 3;
/// `bbr_ecn_thresh` = 1/2: "Estimate bw probing has gone too far if CE
/// ratio exceeds this threshold."
pub const ECN_THRESH: u32 = BBR_UNIT / 2;
/// `bbr_ecn_reprobe_gain` = 1/2.
pub const ECN_REPROBE_GAIN: u32 = BBR_UNIT / 2;
/// `bbr_loss_thresh` = 2 %: "Estimate bw probing has gone too far if loss
/// rate exceeds this level."
pub const LOSS_THRESH: u32 = BBR_UNIT * 2 / 100;
/// `bbr_full_loss_cnt`: "Exit STARTUP if number of loss marking events in
/// a Recovery round is >= N, and loss rate is higher than bbr_loss_thresh."
pub const FULL_LOSS_CNT: u32 = 6;
/// `bbr_full_ecn_cnt`: "Exit STARTUP if number of round trips with ECN
/// mark rate above ecn_thresh meets this count."
pub const FULL_ECN_CNT: u32 = 2;
/// `bbr_inflight_headroom` = 15 %: "Fraction of unutilized headroom to try
/// to leave in path upon high loss."
pub const INFLIGHT_HEADROOM: u32 = BBR_UNIT * 15 / 100;
/// `bbr_bw_probe_cwnd_gain`: cwnd_gain increment in PROBE_UP, in BBR_UNIT/4.
pub const BW_PROBE_CWND_GAIN: u32 = 1;
/// `bbr_bw_probe_max_rounds`: "Max number of packet-timed rounds to wait
/// before probing for bandwidth."
pub const BW_PROBE_MAX_ROUNDS: u32 = 63;
/// `bbr_bw_probe_rand_rounds`: "Max amount of randomness to inject in
/// round counting for Reno-coexistence."
pub const BW_PROBE_RAND_ROUNDS: u32 = 2;
/// `bbr_bw_probe_base_us` = 2 s: "Use BBR-native probe time scale starting
/// at this many usec."
pub const BW_PROBE_BASE_US: u32 = 2_000_000;
/// `bbr_bw_probe_rand_us` = 1 s: "Use BBR-native probes spread over this
/// many usec".
pub const BW_PROBE_RAND_US: u32 = 1_000_000;
/// `bbr_fast_path`: "Use fast path if app-limited, no loss/ECN, and target
/// cwnd was reached?"
pub const FAST_PATH: bool = true;

/// "no bound": Linux's ~0U for inflight_lo / inflight_hi.
pub const NO_INFLIGHT_BOUND: u32 = u32::MAX;
/// "no bound" for bw_lo (Linux's ~0U; bandwidths are u64 here).
pub const NO_BW_BOUND: u64 = u64::MAX;

/// The default seed `by_name("bbr3")` uses; the engine passes a
/// per-connection seed through [`Bbr3::with_seed`].
pub const DEFAULT_SEED: u64 = 0x6262_725f_7633; // "bbr_v3"

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

/// `enum bbr_pacing_gain_phase`: PROBE_BW's cycle_idx.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// "push up inflight to probe for bw/vol"
    Up = 0,
    /// "drain excess inflight from the queue"
    Down = 1,
    /// "use pipe, w/ headroom in queue/pipe"
    Cruise = 2,
    /// "try to refill the pipe again to 100%"
    Refill = 3,
}

/// `enum bbr_ack_phase`: "How does the incoming ACK stream relate to our
/// bandwidth probing?"
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckPhase {
    /// "not probing; not getting probe feedback"
    Init,
    /// "sending at est. bw to fill pipe"
    Refilling,
    /// "inflight rising to probe bw"
    ProbeStarting,
    /// "getting feedback from bw probing"
    ProbeFeedback,
    /// "stopped probing; still getting feedback"
    ProbeStopping,
}

/// `struct bbr_context`: per-ACK scratch.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ctx {
    /// sample_bw: this ACK's delivery rate, pkts/uS << BW_SCALE.
    pub sample_bw: u64,
}

/// `struct bbr` (v3): the BBRv3 congestion control block.
#[derive(Clone, Debug)]
pub struct Bbr3 {
    /// min RTT in min_rtt_win_sec window (u32::MAX: none yet).
    pub(crate) min_rtt_us: u32,
    /// timestamp of min_rtt_us, in jiffies.
    pub(crate) min_rtt_stamp: u64,
    /// end time for BBR_PROBE_RTT mode, in jiffies (0: not set).
    pub(crate) probe_rtt_done_stamp: u64,
    /// min RTT in probe_rtt_win_ms window.
    pub(crate) probe_rtt_min_us: u32,
    /// timestamp of probe_rtt_min_us, in jiffies.
    pub(crate) probe_rtt_min_stamp: u64,
    /// tp->delivered at end of round.
    pub(crate) next_rtt_delivered: u64,
    /// time of this cycle phase start (tcp_mstamp).
    pub(crate) cycle_mstamp: Time,
    /// current bbr_mode in state machine.
    pub(crate) mode: Mode,
    /// CA state on previous ACK.
    pub(crate) prev_ca_state: CaState,
    /// start of packet-timed tx->ack round?
    pub(crate) round_start: bool,
    /// Round starts counted so far: not in Linux's v3 `struct bbr` (v1's
    /// rtt_cnt), kept for the recorder (cc::vars) and read by no rule.
    pub(crate) round_count: u64,
    /// cwnd-limited rounds in PROBE_UP.
    pub(crate) bw_probe_up_rounds: u32,
    /// can we take fast path?
    pub(crate) try_fast_path: bool,
    /// restarting after idle?
    pub(crate) idle_restart: bool,
    /// a BBR_PROBE_RTT round at the PROBE_RTT cwnd?
    pub(crate) probe_rtt_round_done: bool,
    /// initial cwnd.
    pub(crate) init_cwnd: u32,
    /// current gain for setting pacing rate.
    pub(crate) pacing_gain: u32,
    /// current gain for setting cwnd.
    pub(crate) cwnd_gain: u32,
    /// reached full bw in Startup?
    pub(crate) full_bw_reached: bool,
    /// number of rounds without large bw gains.
    pub(crate) full_bw_cnt: u32,
    /// current index in pacing_gain cycle array.
    pub(crate) cycle_idx: Phase,
    /// have we seen an RTT sample yet?
    pub(crate) has_seen_rtt: bool,
    /// prior cwnd upon entering loss recovery.
    pub(crate) prior_cwnd: u32,
    /// recent bw, to estimate if pipe is full.
    pub(crate) full_bw: u64,
    /// ACK aggregation (shared with v1).
    pub(crate) aggr: AckAggregation,
    /// recently reached full bw plateau?
    pub(crate) full_bw_now: bool,
    /// consecutive hi ECN STARTUP rounds.
    pub(crate) startup_ecn_rounds: u32,
    /// packet loss in this cycle?
    pub(crate) loss_in_cycle: bool,
    /// ECN in this cycle?
    pub(crate) ecn_in_cycle: bool,
    /// tp->delivered ending loss round.
    pub(crate) loss_round_delivered: u64,
    /// bw_lo before latest losses.
    pub(crate) undo_bw_lo: u64,
    /// inflight_lo before latest losses.
    pub(crate) undo_inflight_lo: u32,
    /// inflight_hi before latest losses.
    pub(crate) undo_inflight_hi: u32,
    /// max delivered bw in last round trip.
    pub(crate) bw_latest: u64,
    /// lower bound on sending bandwidth.
    pub(crate) bw_lo: u64,
    /// max recent measured bw sample, two PROBE_BW cycles.
    pub(crate) bw_hi: [u64; 2],
    /// max delivered data in last round trip.
    pub(crate) inflight_latest: u32,
    /// lower bound of inflight data range.
    pub(crate) inflight_lo: u32,
    /// upper bound of inflight data range.
    pub(crate) inflight_hi: u32,
    /// packets delivered per inflight_hi incr.
    pub(crate) bw_probe_up_cnt: u32,
    /// packets (S)ACKed since inflight_hi incr.
    pub(crate) bw_probe_up_acks: u32,
    /// PROBE_DOWN until next clock-driven probe.
    pub(crate) probe_wait_us: u32,
    /// sender can use ECN (RTT, handshake)?
    pub(crate) ecn_eligible: bool,
    /// EWMA delivered_ce/delivered; 0..256.
    pub(crate) ecn_alpha: u32,
    /// rate samples reflect bw probing?
    pub(crate) bw_probe_samples: bool,
    /// did last PROBE_UP go too high?
    pub(crate) prev_probe_too_high: bool,
    /// last PROBE_UP stopped due to risk?
    pub(crate) stopped_risky_probe: bool,
    /// packet-timed rounds since probed bw.
    pub(crate) rounds_since_probe: u32,
    /// loss_round_delivered round trip?
    pub(crate) loss_round_start: bool,
    /// loss marked in this round trip?
    pub(crate) loss_in_round: bool,
    /// ECN marked in this round trip?
    pub(crate) ecn_in_round: bool,
    /// bbr_ack_phase: meaning of ACKs.
    pub(crate) ack_phase: AckPhase,
    /// losses in STARTUP round.
    pub(crate) loss_events_in_round: u32,
    /// has bbr_init() been called?
    pub(crate) initialized: bool,
    /// tp->delivered at alpha update.
    pub(crate) alpha_last_delivered: u64,
    /// tp->delivered_ce at alpha update.
    pub(crate) alpha_last_delivered_ce: u64,

    /// rs->is_ece of the ACK being processed: latched by `in_ack_event`
    /// (CA_ACK_ECE), which runs before `cong_control` on the same ACK.
    pub(crate) ack_is_ece: bool,
    /// Seeded replacement for get_random_u32_below().
    pub(crate) rng: Prandom,
}

impl Default for Bbr3 {
    fn default() -> Self {
        Bbr3::with_seed(DEFAULT_SEED)
    }
}

impl Bbr3 {
    /// A BBRv3 instance whose random probe waits (bbr_pick_probe_wait) are
    /// drawn from `seed`. `init` sets the rest as bbr_init() does.
    pub fn with_seed(seed: u64) -> Bbr3 {
        Bbr3 {
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_min_us: u32::MAX,
            probe_rtt_min_stamp: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Time::ZERO,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            round_start: false,
            round_count: 0,
            bw_probe_up_rounds: 0,
            try_fast_path: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            init_cwnd: 10,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: Phase::Up,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            aggr: AckAggregation::default(),
            full_bw_now: false,
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: NO_BW_BOUND,
            bw_hi: [0; 2],
            inflight_latest: 0,
            inflight_lo: NO_INFLIGHT_BOUND,
            inflight_hi: NO_INFLIGHT_BOUND,
            bw_probe_up_cnt: u32::MAX,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            ecn_eligible: false,
            ecn_alpha: ECN_ALPHA_INIT,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            initialized: false,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            ack_is_ece: false,
            rng: Prandom::new(seed),
        }
    }

    /// Current mode of the state machine.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// PROBE_BW phase (bbr->cycle_idx).
    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }
    /// Current pacing gain in 1/256.
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }
    /// Current cwnd gain in 1/256.
    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }
    /// inflight_hi in packets (u32::MAX: unset).
    pub fn inflight_hi(&self) -> u32 {
        self.inflight_hi
    }
    /// inflight_lo in packets (u32::MAX: unset).
    pub fn inflight_lo(&self) -> u32 {
        self.inflight_lo
    }
    /// STARTUP has filled the pipe.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// ecn_alpha in 1/256.
    pub fn ecn_alpha(&self) -> u32 {
        self.ecn_alpha
    }

    /// bbr_can_use_ecn(): TCP_ECN_OK (and TCP_ECN_LOW, which the simulator
    /// has no route flag for: see the module docs).
    pub(crate) fn can_use_ecn(tp: &ConnState) -> bool {
        tp.ecn_ok
    }

    /// bbr_max_bw(): "the windowed max recent bandwidth sample": the max
    /// of the last two PROBE_BW cycles' bw_hi.
    pub(crate) fn max_bw(&self) -> u64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// bbr_bw(): "the estimated bandwidth of the path": min(max_bw, bw_lo).
    pub(crate) fn bw(&self) -> u64 {
        self.max_bw().min(self.bw_lo)
    }

    /// bbr_bw_bytes_per_sec() (bytes/s, no margin) as a `Rate`.
    pub fn bw_rate(&self, tp: &ConnState) -> Rate {
        Rate(rate_bytes_per_sec(tp, self.bw(), BBR_UNIT, 0).saturating_mul(8))
    }

    /// tcp_jiffies32.
    pub(crate) fn jiffies(tp: &ConnState) -> u64 {
        super::jiffies::jiffies(tp.now)
    }

    /// bbr_save_cwnd(): 'Save "last known good" cwnd so we can restore it
    /// after losses or PROBE_RTT'.
    pub(crate) fn save_cwnd(&mut self, tp: &ConnState) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd; // this cwnd is good enough
        } else {
            // loss recovery or BBR_PROBE_RTT have temporarily cut cwnd
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// bbr_update_gains().
    pub(crate) fn update_gains(&mut self) {
        let (pacing, mut cwnd) = match self.mode {
            Mode::Startup => (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            // slow, to drain; keep cwnd
            Mode::Drain => (DRAIN_GAIN, STARTUP_CWND_GAIN),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx as usize], CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        if self.mode == Mode::ProbeBw && BW_PROBE_CWND_GAIN != 0 && self.cycle_idx == Phase::Up {
            cwnd += BBR_UNIT * BW_PROBE_CWND_GAIN / 4;
        }
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// bbr_update_model().
    fn update_model(&mut self, tp: &mut ConnState, rs: &RateSample, ctx: &Ctx) {
        self.update_congestion_signals(tp, rs, ctx);
        let thresh = if self.full_bw_reached { BBR_EXTRA_ACKED_WIN_RTTS } else { 1 };
        let bw = self.bw();
        self.aggr.update(tp, rs, bw, self.round_start, thresh);
        self.check_loss_too_high_in_startup(tp, rs);
        self.check_full_bw_reached(rs, ctx);
        self.check_drain(tp);
        self.update_cycle_phase(tp, rs, ctx);
        self.update_min_rtt(tp, rs);
    }

    /// bbr_run_fast_path(): "if app-limited, no loss/ECN, and target cwnd
    /// was reached", skip the model update (and, when nothing changed,
    /// the control update). Returns (done, update_model).
    fn run_fast_path(&mut self, tp: &mut ConnState, rs: &RateSample, ctx: &Ctx) -> (bool, bool) {
        if FAST_PATH
            && self.try_fast_path
            && rs.is_app_limited
            && ctx.sample_bw < self.max_bw()
            && !self.loss_in_round
            && !self.ecn_in_round
        {
            let prev_mode = self.mode;
            let prev_min_rtt_us = self.min_rtt_us;
            self.check_drain(tp);
            self.update_cycle_phase(tp, rs, ctx);
            self.update_min_rtt(tp, rs);
            if self.mode == prev_mode && self.min_rtt_us == prev_min_rtt_us && self.try_fast_path {
                return (true, false);
            }
            // "Skip model update, but control still needs to be updated"
            return (false, false);
        }
        (false, true)
    }

    /// bbr_main(): the `cong_control` hook.
    fn main(&mut self, tp: &mut ConnState, rs: &RateSample) {
        let mut ctx = Ctx::default();
        self.update_round_start(tp, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.update_ecn_alpha(tp);
        }
        // bbr_plb(): PLB is off by default and not modelled.

        self.ecn_in_round |= self.ecn_eligible && self.ack_is_ece;
        self.calculate_bw_sample(rs, &mut ctx);
        self.update_latest_delivery_signals(tp, rs, &ctx);

        let (done, update_model) = self.run_fast_path(tp, rs, &ctx);
        if !done {
            if update_model {
                self.update_model(tp, rs, &ctx);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(tp, bw, self.pacing_gain);
            self.set_cwnd(tp, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(tp);
        }

        // out:
        self.advance_latest_delivery_signals(rs, &ctx);
        self.prev_ca_state = tp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
        self.ack_is_ece = false;
    }
}

/// bbr_full_bw_thresh and bbr_full_bw_cnt are v1's, re-exported for the
/// startup rules.
pub(crate) const FULL_BW_THRESH: u64 = BBR_FULL_BW_THRESH;
pub(crate) const FULL_BW_CNT: u32 = BBR_FULL_BW_CNT;
/// bbr_pacing_margin_percent (1 %).
pub(crate) const PACING_MARGIN_PERCENT: u64 = BBR_PACING_MARGIN_PERCENT;
