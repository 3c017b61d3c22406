//! TCP Vegas (Brakmo and Peterson, "TCP Vegas: End to End Congestion
//! Avoidance on a Global Internet", IEEE JSAC 13(8), 1995) as Linux
//! implements it in net/ipv4/tcp_vegas.c: once per RTT it compares the
//! window with the one the minimum RTT of that round allows at the
//! propagation delay (baseRTT) and keeps `diff`, the segments it has
//! queued at the bottleneck, between `alpha` and `beta`; it leaves slow
//! start once `diff` exceeds `gamma`. Losses are handled as Reno
//! (tcp_reno_ssthresh, tcp_reno_undo_cwnd). The module parameters are
//! [`VegasParams`], with Linux's defaults.
//!
//! The RTT bookkeeping ([`VegasState`], Linux's `struct vegas` with
//! tcp_vegas_init/pkts_acked/state/cwnd_event) is shared with YeAH, which
//! embeds it as Linux's tcp_yeah.c does. Units as Linux: RTTs in µs.

use super::reno::Reno;
use super::{AckSample, CaState, CcInfo, ConnState, CongestionControl, CwndEvent};

/// tcp_vegas.c's module parameters, with Linux's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VegasParams {
    /// `alpha`: lower bound of packets in the network (queued), segments.
    pub alpha: u32,
    /// `beta`: upper bound of packets in the network (queued), segments.
    pub beta: u32,
    /// `gamma`: leave slow start once more than this many are queued.
    pub gamma: u32,
}

impl Default for VegasParams {
    fn default() -> VegasParams {
        VegasParams { alpha: 2, beta: 4, gamma: 1 }
    }
}

/// "No sample yet" for baseRTT and minRTT (0x7fffffff in Linux).
pub const VEGAS_RTT_NONE: u32 = 0x7fff_ffff;

/// `struct vegas` (net/ipv4/tcp_vegas.h): the per-RTT RTT bookkeeping
/// Vegas and YeAH share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VegasState {
    /// Right edge of the current round: the decision runs once snd_una
    /// passes it (beg_snd_nxt, in segments).
    pub beg_snd_nxt: u64,
    /// Left edge of the current round (beg_snd_una; YeAH keeps it).
    pub beg_snd_una: u64,
    /// cwnd at the start of the round (beg_snd_cwnd; YeAH keeps it).
    pub beg_snd_cwnd: u32,
    /// The per-RTT decision runs (doing_vegas_now); off outside Open.
    pub doing_vegas_now: bool,
    /// RTT samples in the current round (cntRTT).
    pub cnt_rtt: u16,
    /// Minimum RTT of the current round, µs + 1 (minRTT).
    pub min_rtt: u32,
    /// Minimum RTT ever seen, µs + 1: the propagation delay (baseRTT).
    pub base_rtt: u32,
}

impl Default for VegasState {
    fn default() -> VegasState {
        VegasState {
            beg_snd_nxt: 0,
            beg_snd_una: 0,
            beg_snd_cwnd: 0,
            doing_vegas_now: true,
            cnt_rtt: 0,
            min_rtt: VEGAS_RTT_NONE,
            base_rtt: VEGAS_RTT_NONE,
        }
    }
}

impl VegasState {
    /// vegas_enable(): take samples from the next send on; the round
    /// starts at snd_nxt with no samples.
    pub fn enable(&mut self, tp: &ConnState) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = tp.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = VEGAS_RTT_NONE;
    }

    /// vegas_disable().
    pub fn disable(&mut self) {
        self.doing_vegas_now = false;
    }

    /// tcp_vegas_init(): forget baseRTT and enable.
    pub fn init(&mut self, tp: &ConnState) {
        self.base_rtt = VEGAS_RTT_NONE;
        self.enable(tp);
    }

    /// tcp_vegas_pkts_acked(): vrtt = rtt_us + 1 (never zero); baseRTT is
    /// the minimum over the connection, minRTT the minimum of the round.
    pub fn pkts_acked(&mut self, sample: &AckSample) {
        let Some(rtt) = sample.rtt else { return };
        let vrtt = rtt.as_micros().saturating_add(1).min(u32::MAX as u64) as u32;
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
    }

    /// tcp_vegas_state(): enabled in Open, disabled in any other state.
    pub fn set_state(&mut self, tp: &ConnState, new_state: CaState) {
        if new_state == CaState::Open {
            self.enable(tp);
        } else {
            self.disable();
        }
    }

    /// tcp_vegas_cwnd_event(): restart from idle re-inits (fresh samples).
    pub fn cwnd_event(&mut self, tp: &ConnState, ev: CwndEvent) {
        if matches!(ev, CwndEvent::CwndRestart | CwndEvent::TxStart) {
            self.init(tp);
        }
    }

    /// after(ack, beg_snd_nxt): this ACK (snd_una) ends the round.
    pub fn round_ended(&self, tp: &ConnState) -> bool {
        tp.snd_una > self.beg_snd_nxt
    }

    /// The end of a round: wipe the slate clean for the next one.
    pub fn clear_round(&mut self) {
        self.cnt_rtt = 0;
        self.min_rtt = VEGAS_RTT_NONE;
    }

    /// tcp_vegas_get_info().
    pub fn info(&self) -> CcInfo {
        CcInfo::Vegas {
            enabled: self.doing_vegas_now,
            rttcnt: self.cnt_rtt as u32,
            rtt_us: self.base_rtt,
            minrtt_us: self.min_rtt,
        }
    }
}


/// TCP Vegas.
#[derive(Debug, Clone, Default)]
pub struct Vegas {
    params: VegasParams,
    v: VegasState,
    /// The rule Vegas's congestion avoidance applies after its last
    /// decision (the `cc_mode` column outside slow start): `reno` (Vegas
    /// off or too few RTT samples), `increase`, `decrease`, `hold` or
    /// `exit_slow_start`. A slow-start round leaves it holding: between
    /// decisions Vegas changes cwnd only in slow start.
    mode: &'static str,
}

impl Vegas {
    pub fn new() -> Vegas {
        Vegas::default()
    }

    /// Vegas with the given module parameters.
    pub fn with_params(params: VegasParams) -> Vegas {
        Vegas { params, ..Vegas::default() }
    }

    /// The shared RTT bookkeeping (tests and traces).
    pub fn state(&self) -> &VegasState {
        &self.v
    }

    /// The once-per-RTT adjustment of tcp_vegas_cong_avoid(), with at least
    /// three RTT samples in the round: rtt = minRTT of the round,
    /// target = cwnd · baseRTT / rtt, diff = cwnd · (rtt − baseRTT) /
    /// baseRTT (segments queued).
    fn decide(&mut self, tp: &mut ConnState, acked: u32) {
        let p = self.params;
        let rtt = self.v.min_rtt as u64;
        let base = self.v.base_rtt as u64;
        let cwnd = tp.snd_cwnd as u64;
        let target_cwnd = cwnd * base / rtt.max(1);
        let diff = (cwnd * rtt.saturating_sub(base) / base.max(1)).min(u32::MAX as u64) as u32;
        if diff > p.gamma && tp.in_slow_start() {
            // Going too fast: cwnd to the actual rate times baseRTT (+1 for
            // the truncation), ssthresh to it (tcp_vegas_ssthresh).
            tp.snd_cwnd = tp.snd_cwnd.min((target_cwnd as u32).saturating_add(1));
            tp.snd_ssthresh = tp.snd_ssthresh.min(tp.snd_cwnd);
            self.mode = "exit_slow_start";
        } else if tp.in_slow_start() {
            tp.slow_start(acked);
            self.mode = "hold";
        } else if diff > p.beta {
            // Too many queued: slow down (tcp_vegas_ssthresh).
            tp.snd_cwnd = tp.snd_cwnd.saturating_sub(1);
            tp.snd_ssthresh = tp.snd_ssthresh.min(tp.snd_cwnd);
            self.mode = "decrease";
        } else if diff < p.alpha {
            // Not enough queued: speed up.
            tp.snd_cwnd = tp.snd_cwnd.saturating_add(1);
            self.mode = "increase";
        } else {
            self.mode = "hold";
        }
        tp.snd_cwnd = tp.snd_cwnd.clamp(2, tp.snd_cwnd_clamp.max(2));
        tp.snd_ssthresh = tp.current_ssthresh();
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    /// tcp_vegas_init().
    fn init(&mut self, tp: &mut ConnState) {
        self.v.init(tp);
        self.mode = "hold";
    }

    /// tcp_reno_ssthresh.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        Reno.ssthresh(tp)
    }

    /// tcp_vegas_cong_avoid(): Reno while disabled; at the end of each
    /// round the Vegas decision if the round had more than two RTT samples
    /// (fewer are likely all delayed ACKs: Reno then), and slow start
    /// within a round.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !self.v.doing_vegas_now {
            Reno.cong_avoid(tp, acked);
            self.mode = "reno";
            return;
        }
        if self.v.round_ended(tp) {
            self.v.beg_snd_nxt = tp.snd_nxt;
            if self.v.cnt_rtt <= 2 {
                Reno.cong_avoid(tp, acked);
                self.mode = "reno";
            } else {
                self.decide(tp, acked);
            }
            self.v.clear_round();
        } else if tp.in_slow_start() {
            tp.slow_start(acked);
        }
    }

    /// tcp_vegas_pkts_acked().
    fn pkts_acked(&mut self, _tp: &mut ConnState, sample: &AckSample) {
        self.v.pkts_acked(sample);
    }

    /// tcp_vegas_state().
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        self.v.set_state(tp, new_state);
    }

    /// tcp_vegas_cwnd_event().
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        self.v.cwnd_event(tp, ev);
    }

    /// tcp_vegas_get_info().
    fn get_info(&self) -> Option<CcInfo> {
        Some(self.v.info())
    }

    fn state_label(&self, tp: &ConnState) -> &'static str {
        tp.window_label(self.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::TCP_INFINITE_SSTHRESH;
    use crate::units::Time;

    fn started(cwnd: u32, ssthresh: u32) -> (Vegas, ConnState) {
        let mut tp = ConnState::new(1448);
        let mut v = Vegas::new();
        v.init(&mut tp);
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        (v, tp)
    }

    fn sample(v: &mut Vegas, tp: &mut ConnState, us: u64) {
        v.pkts_acked(tp, &AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(us)), in_flight: 1 });
    }

    /// One round with three samples at `us`, ended by an ACK past beg_snd_nxt.
    fn round(v: &mut Vegas, tp: &mut ConnState, us: u64) {
        for _ in 0..3 {
            sample(v, tp, us);
        }
        tp.snd_una = v.v.beg_snd_nxt + 1;
        tp.snd_nxt = tp.snd_una + tp.snd_cwnd as u64;
        v.cong_avoid(tp, 1);
    }

    #[test]
    fn vegas_params_default_to_linux_alpha_2_beta_4_gamma_1() {
        assert_eq!(VegasParams::default(), VegasParams { alpha: 2, beta: 4, gamma: 1 });
    }

    #[test]
    fn tcp_vegas_pkts_acked_keeps_base_and_round_min_of_rtt_plus_one() {
        let (mut v, mut tp) = started(10, TCP_INFINITE_SSTHRESH);
        sample(&mut v, &mut tp, 40_000);
        sample(&mut v, &mut tp, 30_000);
        sample(&mut v, &mut tp, 35_000);
        v.pkts_acked(&mut tp, &AckSample { pkts_acked: 1, rtt: None, in_flight: 1 });
        assert_eq!((v.v.base_rtt, v.v.min_rtt, v.v.cnt_rtt), (30_001, 30_001, 3));
        v.v.clear_round();
        sample(&mut v, &mut tp, 0);
        assert_eq!((v.v.base_rtt, v.v.min_rtt), (1, 1), "never zero");
    }

    #[test]
    fn tcp_vegas_cong_avoid_adds_one_per_rtt_below_alpha() {
        let (mut v, mut tp) = started(100, 50);
        round(&mut v, &mut tp, 10_000);
        // diff = 100 · 0 / base = 0 < alpha.
        assert_eq!(tp.snd_cwnd, 101);
        // diff = 101 · 200 / 10001 = 2: hold.
        round(&mut v, &mut tp, 10_200);
        assert_eq!(tp.snd_cwnd, 101);
        assert_eq!(v.state_label(&tp), "hold");
    }

    #[test]
    fn tcp_vegas_cong_avoid_removes_one_per_rtt_above_beta_and_lowers_ssthresh() {
        let (mut v, mut tp) = started(100, 50);
        round(&mut v, &mut tp, 10_000);
        // diff = 101 · 1000 / 10001 = 10 > beta.
        round(&mut v, &mut tp, 11_000);
        assert_eq!(tp.snd_cwnd, 100);
        // ssthresh = min(ssthresh, cwnd), then tcp_current_ssthresh: 3/4 cwnd.
        assert_eq!(tp.snd_ssthresh, 75);
    }

    #[test]
    fn tcp_vegas_cong_avoid_changes_cwnd_only_once_per_round() {
        let (mut v, mut tp) = started(100, 50);
        round(&mut v, &mut tp, 10_000);
        for _ in 0..50 {
            sample(&mut v, &mut tp, 10_000);
            v.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 101, "snd_una has not passed beg_snd_nxt");
    }

    #[test]
    fn tcp_vegas_cong_avoid_leaves_slow_start_at_the_actual_rate_when_diff_exceeds_gamma() {
        let (mut v, mut tp) = started(100, TCP_INFINITE_SSTHRESH);
        round(&mut v, &mut tp, 10_000);
        assert_eq!(tp.snd_cwnd, 101, "diff 0: slow start");
        // rtt 12501: diff = 101 · 2500 / 10001 = 25 > gamma; target =
        // 101 · 10001 / 12501 = 80, cwnd 81 = ssthresh.
        round(&mut v, &mut tp, 12_500);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (81, 81));
        assert_eq!(v.state_label(&tp), "exit_slow_start");
    }

    #[test]
    fn tcp_vegas_cong_avoid_behaves_like_reno_with_two_samples_or_fewer() {
        let (mut v, mut tp) = started(100, 50);
        sample(&mut v, &mut tp, 10_000);
        sample(&mut v, &mut tp, 50_000);
        tp.snd_una = 1;
        tp.snd_cwnd_cnt = 99;
        v.cong_avoid(&mut tp, 1);
        assert_eq!(tp.snd_cwnd, 101, "tcp_reno_cong_avoid's +1 per cwnd acked");
        assert_eq!((v.v.cnt_rtt, v.v.min_rtt), (0, VEGAS_RTT_NONE), "the round is wiped");
        assert_eq!(v.state_label(&tp), "reno");
    }

    #[test]
    fn tcp_vegas_state_disables_outside_open_and_reenables_at_snd_nxt() {
        let (mut v, mut tp) = started(100, 50);
        v.set_state(&mut tp, CaState::Recovery);
        assert!(!v.v.doing_vegas_now);
        tp.snd_cwnd_cnt = 99;
        v.cong_avoid(&mut tp, 1);
        assert_eq!(tp.snd_cwnd, 101, "Reno while disabled");
        tp.snd_nxt = 500;
        sample(&mut v, &mut tp, 10_000);
        v.set_state(&mut tp, CaState::Open);
        assert!(v.v.doing_vegas_now);
        assert_eq!((v.v.beg_snd_nxt, v.v.cnt_rtt), (500, 0));
        assert_eq!(v.v.base_rtt, 10_001, "baseRTT survives");
    }

    #[test]
    fn tcp_vegas_cwnd_event_restart_forgets_base_rtt() {
        let (mut v, mut tp) = started(100, 50);
        sample(&mut v, &mut tp, 10_000);
        v.cwnd_event(&mut tp, CwndEvent::Loss);
        assert_eq!(v.v.base_rtt, 10_001);
        v.cwnd_event(&mut tp, CwndEvent::TxStart);
        assert_eq!((v.v.base_rtt, v.v.cnt_rtt), (VEGAS_RTT_NONE, 0));
    }

    #[test]
    fn tcp_vegas_cong_avoid_keeps_cwnd_at_least_two() {
        let (mut v, mut tp) = started(2, 1);
        round(&mut v, &mut tp, 10_000);
        round(&mut v, &mut tp, 100_000);
        assert_eq!(tp.snd_cwnd, 2);
        round(&mut v, &mut tp, 100_000);
        assert_eq!(tp.snd_cwnd, 2, "2 - 1 is raised back to 2");
    }

    #[test]
    fn vegas_loss_response_is_reno() {
        let (mut v, tp) = started(100, 50);
        assert_eq!(v.ssthresh(&tp), 50);
    }
}
