//! A congestion control algorithm's internal variables, as a recorder sees
//! them: one CCA-neutral snapshot ([`CcVars`]) that an algorithm fills from
//! its own state in [`super::CongestionControl::vars`]. Linux has no such
//! hook; its nearest is `get_info` (TCP_CC_INFO), which carries a few of
//! these for BBR. The series' `cc_*` columns and the events table
//! (crate::trace) are these fields, named there once.
//!
//! Every field is `None` where the algorithm has no such variable. Units
//! are in the names; bandwidths are delivery rates of payload, converted
//! from Linux's packets per µs << BW_SCALE with the algorithm's own
//! conversion (bbr_bw_bytes_per_sec()).

use super::bbr::{pacing::rate_bytes_per_sec, BBR_UNIT};
use super::{ConnState, RateSample};

/// The part of [`CcVars`] whose changes the state-change log records
/// (tcp/cc_log.rs): cheap to read and compare on every ACK.
#[derive(Clone, Copy, Debug, Default, Eq)]
pub struct CcStateKey {
    /// [`CcVars::state`].
    pub state: &'static str,
    /// [`CcVars::cycle_index`].
    pub cycle_index: Option<i64>,
    /// [`CcVars::full_bw_reached`].
    pub full_bw_reached: Option<bool>,
}

/// One snapshot of an algorithm's internal variables.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CcVars {
    /// The state machine's state, as [`super::CongestionControl::state_label`]
    /// names it (BBR: `startup`, `drain`, `probe_bw` (v1) or
    /// `probe_bw_up/down/cruise/refill` (v3), `probe_rtt`).
    pub state: &'static str,
    /// PROBE_BW's cycle index (bbr->cycle_idx): v1's phase 0–7 of
    /// bbr_pacing_gain[], v3's enum bbr_pacing_gain_phase (UP 0, DOWN 1,
    /// CRUISE 2, REFILL 3).
    pub cycle_index: Option<i64>,
    /// Packet-timed round trips counted so far (v1's bbr->rtt_cnt; v3 keeps
    /// no count, so its round starts are counted).
    pub round: Option<i64>,
    /// bbr_max_bw(): the windowed max delivery rate, bit/s of payload.
    pub max_bw_bps: Option<f64>,
    /// The algorithm's windowed min RTT (bbr->min_rtt_us), seconds.
    pub min_rtt_s: Option<f64>,
    /// Current pacing gain (bbr->pacing_gain / BBR_UNIT).
    pub pacing_gain: Option<f64>,
    /// Current cwnd gain (bbr->cwnd_gain / BBR_UNIT).
    pub cwnd_gain: Option<f64>,
    /// The bandwidth the full-pipe check compares with (bbr->full_bw),
    /// bit/s of payload.
    pub full_bw_bps: Option<f64>,
    /// Rounds without 25 % growth (bbr->full_bw_cnt).
    pub full_bw_count: Option<i64>,
    /// STARTUP has filled the pipe (bbr->full_bw_reached).
    pub full_bw_reached: Option<bool>,
    /// v3's long-term inflight bound (inflight_hi, the draft's
    /// inflight_longterm), segments; `None` also while unset (~0U).
    pub inflight_hi_segments: Option<i64>,
    /// v3's short-term inflight bound (inflight_lo, inflight_shortterm),
    /// segments; `None` also while unset.
    pub inflight_lo_segments: Option<i64>,
    /// v3's long-term bandwidth of the current cycle (bw_hi[1]), bit/s.
    pub bw_hi_bps: Option<f64>,
    /// v3's short-term bandwidth bound (bw_lo, bw_shortterm), bit/s;
    /// `None` also while unset (~0UL).
    pub bw_lo_bps: Option<f64>,
    /// bbr_extra_acked(): the ACK-aggregation estimate, segments.
    pub extra_acked_segments: Option<i64>,
    /// bbr_inflight(max_bw, 1.0): the BDP at max_bw and min_rtt plus the
    /// quantization budget (the draft's BBRInflight(1.0)), what DRAIN's
    /// exit compares the flight with, segments.
    pub bdp_segments: Option<i64>,
    /// v3's full_bw_now: the plateau rule fired in this STARTUP or probe.
    pub full_bw_now: Option<bool>,
    /// v3's bw_probe_up_rounds: PROBE_UP's growth of inflight_hi is
    /// 1 << this many segments per round (capped at 30).
    pub bw_probe_up_rounds: Option<i64>,
    /// v3's prev_probe_too_high: the last probe ended on loss or ECN.
    pub prev_probe_too_high: Option<bool>,
    /// v3's undo_bw_lo, saved on entering recovery (bw_lo's value; 0 before
    /// any), bit/s; `None` also while it holds no bound (~0UL).
    pub undo_bw_lo_bps: Option<f64>,
    /// v3's undo_inflight_lo (0 before any recovery), segments; `None`
    /// also while it holds no bound (~0U).
    pub undo_inflight_lo_segments: Option<i64>,
    /// v3's undo_inflight_hi, as undo_inflight_lo.
    pub undo_inflight_hi_segments: Option<i64>,
    /// v1's lt_bw: the long-term (policed) rate, bit/s (0 before one was
    /// measured).
    pub lt_bw_bps: Option<f64>,
    /// v1's lt_use_bw: the flow paces at lt_bw (bbr_bw() is lt_bw).
    pub lt_use_bw: Option<bool>,
    /// v3's loss_events_in_round: ACKs with new losses in this loss round
    /// (capped at 15), what bbr_check_loss_too_high_in_startup() compares
    /// with bbr_full_loss_cnt (6).
    pub loss_events_in_round: Option<i64>,
    /// When the PROBE_RTT timer last restarted, seconds of run time: v3's
    /// probe_rtt_min_stamp (expires after 5 s, bbr_probe_rtt_win_ms), v1's
    /// min_rtt_stamp (expires after 10 s, bbr_min_rtt_win_sec); jiffies.
    pub probe_rtt_min_stamp_s: Option<f64>,
    /// bbr->idle_restart: set when transmission restarts after the flow
    /// was app-limited with nothing in flight (CA_EVENT_TX_START), cleared
    /// by the next ACK's model update; PROBE_RTT is not entered meanwhile.
    pub idle_restart: Option<bool>,
    /// The rate sample the CCA's last cong_control() read (struct
    /// rate_sample, tcp_rate_gen()): its delivery rate, delivered ×
    /// MSS / interval, bit/s of payload (`None` while the sample is
    /// invalid). Filled by the sender (tcp/cc_log.rs), not by the CCA.
    pub rs_delivery_rate_bps: Option<f64>,
    /// rs->is_app_limited of that sample.
    pub rs_is_app_limited: Option<bool>,
    /// rs->tx_in_flight: packets in flight when the sampled packet was
    /// sent, segments.
    pub rs_tx_in_flight_segments: Option<i64>,
    /// rs->lost: segments marked lost since the sampled packet was sent
    /// (bbr_is_inflight_too_high() compares lost / tx_in_flight with 2 %).
    pub rs_lost_segments: Option<i64>,
}

impl PartialEq for CcStateKey {
    /// Field by field; the state's text is compared only when it is not the
    /// same static string (the usual case on an ACK that changes nothing).
    #[inline]
    fn eq(&self, o: &CcStateKey) -> bool {
        self.cycle_index == o.cycle_index
            && self.full_bw_reached == o.full_bw_reached
            && (std::ptr::eq(self.state, o.state) || self.state == o.state)
    }
}

impl CcVars {
    /// A snapshot whose state fields are `key`'s, the rest `None`.
    pub fn with_key(key: CcStateKey) -> CcVars {
        CcVars {
            state: key.state,
            cycle_index: key.cycle_index,
            full_bw_reached: key.full_bw_reached,
            ..CcVars::default()
        }
    }

    /// This snapshot with the `rs_*` fields of rate sample `rs`; the
    /// delivery rate as tcp_get_info()'s tcpi_delivery_rate computes it
    /// (delivered × mss_cache / interval), unset while the sample is
    /// invalid (tcp_rate_gen(): delivered −1 or a zero interval).
    pub fn with_rate_sample(self, rs: &RateSample, mss_bytes: u32) -> CcVars {
        let interval_s = rs.interval.as_secs_f64();
        let valid = rs.delivered >= 0 && interval_s > 0.0;
        CcVars {
            rs_delivery_rate_bps: valid.then(|| rs.delivered as f64 * mss_bytes as f64 * 8.0 / interval_s),
            rs_is_app_limited: Some(rs.is_app_limited),
            rs_tx_in_flight_segments: Some(rs.tx_in_flight as i64),
            rs_lost_segments: Some(rs.lost as i64),
            ..self
        }
    }

    /// The fields the state-change log compares.
    pub fn key(&self) -> CcStateKey {
        CcStateKey { state: self.state, cycle_index: self.cycle_index, full_bw_reached: self.full_bw_reached }
    }
}

/// A BBR bandwidth (packets per µs << BW_SCALE) in bit/s of payload, as
/// bbr_bw_bytes_per_sec() converts it (no gain, no margin).
pub(crate) fn bbr_bw_bps(tp: &ConnState, bw: u64) -> f64 {
    rate_bytes_per_sec(tp, bw, BBR_UNIT, 0) as f64 * 8.0
}

/// A BBR gain in 1/BBR_UNIT as a factor.
pub(crate) fn bbr_gain(gain: u32) -> f64 {
    gain as f64 / BBR_UNIT as f64
}

/// A jiffies stamp (cc::jiffies) in seconds of run time.
pub(crate) fn jiffies_s(stamp: u64) -> f64 {
    stamp as f64 / super::jiffies::HZ as f64
}

/// A BBR min_rtt_us (u32::MAX before a sample) in seconds.
pub(crate) fn bbr_min_rtt_s(min_rtt_us: u32) -> Option<f64> {
    (min_rtt_us != u32::MAX).then_some(min_rtt_us as f64 * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::CcStateKey;

    #[test]
    fn state_keys_compare_the_state_by_text_wherever_it_is_stored() {
        let key = |state: &'static str| CcStateKey { state, cycle_index: Some(2), full_bw_reached: Some(true) };
        let elsewhere: &'static str = String::from("probe_bw").leak();
        assert_eq!(key("probe_bw"), key(elsewhere));
        assert_ne!(key("probe_bw"), key("probe_rtt"));
        assert_ne!(key("probe_bw"), CcStateKey { cycle_index: Some(3), ..key("probe_bw") });
        assert_ne!(key("probe_bw"), CcStateKey { full_bw_reached: Some(false), ..key("probe_bw") });
    }
}
