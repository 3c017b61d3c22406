//! cwnd, pacing rate and TSO sizing (tcp_bbr.c v3: bbr_bdp,
//! bbr_quantization_budget, bbr_inflight, bbr_packets_in_net_at_edt,
//! bbr_set_cwnd, bbr_init_pacing_rate_from_rtt, bbr_set_pacing_rate,
//! bbr_tso_segs_generic, bbr_tso_segs_goal). The pacing arithmetic
//! (bbr_rate_bytes_per_sec) and the ACK-aggregation estimator are v1's,
//! shared through `cc::bbr`.

use super::{
    Bbr3, Mode, Phase, BBR_SCALE, BW_SCALE, BW_UNIT, CWND_MIN_TARGET, PACING_MARGIN_PERCENT,
    STARTUP_PACING_GAIN, TSO_RTT_SHIFT,
};
use crate::cc::bbr::pacing::{max_pacing_bytes, pacing_bytes, rate_bytes_per_sec, set_pacing_bytes, MAX_TCP_HEADER};
use crate::cc::jiffies::USEC_PER_MSEC;
use crate::cc::{ConnState, GSO_MAX_SIZE, TCP_MIN_TSO_SEGS};
use crate::units::{Rate, Time};


impl Bbr3 {
    /// bbr_bdp(): "bdp = ceil(bw * min_rtt * gain)"; before any RTT sample
    /// "be safe: cap at initial cwnd".
    pub(crate) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return self.init_cwnd; // no valid RTT samples yet
        }
        let w = u128::from(bw) * u128::from(self.min_rtt_us);
        // "Apply a gain to the given value, remove the BW_SCALE shift, and
        // round the value up to avoid a negative feedback loop."
        let bdp = ((w * u128::from(gain)) >> BBR_SCALE).div_ceil(u128::from(BW_UNIT));
        bdp.min(u128::from(u32::MAX)) as u32
    }

    /// bbr_quantization_budget(): at least three TSO bursts and
    /// bbr_cwnd_min_target, plus 2 in PROBE_UP ("Ensure gain cycling gets
    /// inflight above BDP even for small BDPs"). Unlike v1 it takes the
    /// max with the bursts rather than adding them, and does not round up
    /// to an even number.
    pub(crate) fn quantization_budget(&self, tp: &ConnState, cwnd: u32) -> u32 {
        let tso_segs_goal = 3u32.saturating_mul(self.tso_segs_goal(tp));
        // "Allow enough full-sized skbs in flight to utilize end systems."
        let mut cwnd = cwnd.max(tso_segs_goal).max(CWND_MIN_TARGET);
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// bbr_inflight(): "Find inflight based on min RTT and the estimated
    /// bottleneck bandwidth."
    pub(crate) fn inflight(&self, tp: &ConnState, bw: u64, gain: u32) -> u32 {
        let inflight = self.bdp(bw, gain);
        self.quantization_budget(tp, inflight)
    }

    /// bbr_packets_in_net_at_edt(): "in_network_at_edt = inflight_at_edt -
    /// (EDT - now) * bw", EDT being tp->tcp_wstamp_ns.
    pub(crate) fn packets_in_net_at_edt(&self, tp: &ConnState, inflight_now: u32) -> u32 {
        let edt = tp.tcp_wstamp.max(tp.now);
        let interval_us = edt.saturating_sub(tp.now).as_micros();
        let interval_delivered = (u128::from(self.bw()) * u128::from(interval_us)) >> BW_SCALE;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > super::BBR_UNIT {
            // increasing inflight: include EDT skb
            inflight_at_edt = inflight_at_edt.saturating_add(self.tso_segs_goal(tp));
        }
        if interval_delivered >= u128::from(inflight_at_edt) {
            return 0;
        }
        inflight_at_edt - interval_delivered as u32
    }

    /// bbr_set_cwnd(): "Slow-start up toward target cwnd (if bw estimate is
    /// growing, or packet loss has drawn us down below target), or snap
    /// down to target if we're above it." No packet conservation in
    /// recovery (v3 dropped bbr_set_cwnd_to_recover_or_restore).
    pub(crate) fn set_cwnd(&mut self, tp: &mut ConnState, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = tp.snd_cwnd;
        if acked != 0 {
            let mut target_cwnd = self.bdp(bw, gain);
            // "Increment the cwnd to account for excess ACKed data that
            // seems due to aggregation (of data and/or ACKs) visible in the
            // ACK stream."
            target_cwnd = target_cwnd.saturating_add(self.aggr.cwnd(self.bw()));
            target_cwnd = self.quantization_budget(tp, target_cwnd);

            // "Update cwnd and enable fast path if cwnd reaches target_cwnd."
            self.try_fast_path = false;
            if self.full_bw_reached {
                // only cut cwnd if we filled the pipe
                cwnd = cwnd.saturating_add(acked);
                if cwnd >= target_cwnd {
                    cwnd = target_cwnd;
                    self.try_fast_path = true;
                }
            } else if cwnd < target_cwnd || cwnd < 2 * self.init_cwnd {
                cwnd = cwnd.saturating_add(acked);
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        // done:
        tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp); // global cap
        if self.mode == Mode::ProbeRtt {
            // drain queue, refresh min_rtt
            tp.snd_cwnd = tp.snd_cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// bbr_bw_to_pacing_rate(): bytes/s with the 1 % margin, capped by
    /// sk_max_pacing_rate.
    fn bw_to_pacing_rate(tp: &ConnState, bw: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(tp, bw, gain, PACING_MARGIN_PERCENT).max(1).min(max_pacing_bytes(tp))
    }

    /// bbr_init_pacing_rate_from_rtt(): "Initialize pacing rate to:
    /// startup_pacing_gain * init_cwnd / RTT."
    pub(crate) fn init_pacing_rate_from_rtt(&mut self, tp: &mut ConnState) {
        let rtt_us = if tp.srtt != Time::ZERO {
            self.has_seen_rtt = true;
            tp.srtt.as_micros().max(1)
        } else {
            USEC_PER_MSEC // use nominal default RTT
        };
        let bw = u64::from(tp.snd_cwnd).saturating_mul(BW_UNIT) / rtt_us;
        let rate = Self::bw_to_pacing_rate(tp, bw, STARTUP_PACING_GAIN);
        set_pacing_bytes(tp, rate);
    }

    /// bbr_set_pacing_rate(): "Pace using current bw estimate and a gain
    /// factor"; before the pipe is full the rate only goes up.
    pub(crate) fn set_pacing_rate(&mut self, tp: &mut ConnState, bw: u64, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt != Time::ZERO {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > pacing_bytes(tp) {
            set_pacing_bytes(tp, rate);
        }
    }

    /// bbr_tso_segs_generic(): a burst of ~1 ms at the pacing rate plus a
    /// min_rtt-based allowance of 64 KB / 2^(min_rtt / 512 us), at most
    /// gso_max_size - 1 - MAX_TCP_HEADER bytes, at least
    /// sysctl_tcp_min_tso_segs segments.
    pub(crate) fn tso_segs_generic(&self, _tp: &ConnState, pacing_rate: Rate, mss: u32, gso_max_size: u64) -> u32 {
        // "Budget a TSO/GSO burst size allowance based on bw (pacing_rate)."
        let mut bytes = (pacing_rate.bps() / 8) >> crate::cc::SK_PACING_SHIFT;
        // "Budget a TSO/GSO burst size allowance based on min_rtt."
        let r = self.min_rtt_us >> TSO_RTT_SHIFT;
        if r < 32 {
            bytes = bytes.saturating_add(GSO_MAX_SIZE >> r);
        }
        bytes = bytes.min(gso_max_size - 1 - MAX_TCP_HEADER).min(u64::from(u32::MAX));
        ((bytes / u64::from(mss.max(1))) as u32).max(TCP_MIN_TSO_SEGS)
    }

    /// bbr_tso_segs_goal(): "Like bbr_tso_segs(), using mss_cache, ignoring
    /// driver's sk_gso_max_size."
    pub(crate) fn tso_segs_goal(&self, tp: &ConnState) -> u32 {
        self.tso_segs_generic(tp, tp.pacing_rate, tp.mss_bytes, GSO_MAX_SIZE)
    }
}
