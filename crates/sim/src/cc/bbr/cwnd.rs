//! Congestion window (tcp_bbr.c: bbr_bdp, bbr_quantization_budget,
//! bbr_inflight, bbr_packets_in_net_at_edt, bbr_update_ack_aggregation,
//! bbr_ack_aggregation_cwnd, bbr_set_cwnd_to_recover_or_restore,
//! bbr_set_cwnd).

use super::{
    Bbr, Mode, BBR_ACK_EPOCH_ACKED_RESET_THRESH, BBR_CWND_MIN_TARGET, BBR_EXTRA_ACKED_GAIN,
    BBR_EXTRA_ACKED_MAX_US, BBR_EXTRA_ACKED_WIN_RTTS, BBR_SCALE, BBR_UNIT, BW_UNIT,
    TCP_INIT_CWND,
};
use crate::cc::{CaState, ConnState, RateSample};

impl Bbr {
    /// bbr_bdp(): "Calculate bdp based on min RTT and the estimated
    /// bottleneck bandwidth: bdp = ceil(bw * min_rtt * gain)".
    pub(super) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        // "If we've never had a valid RTT sample, cap cwnd at the initial
        // default."
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND; // be safe: cap at default initial cwnd
        }
        let w = (bw as u128) * (self.min_rtt_us as u128);
        // "Apply a gain to the given value, remove the BW_SCALE shift, and
        // round the value up to avoid a negative feedback loop."
        let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128);
        bdp.min(u32::MAX as u128) as u32
    }

    /// bbr_quantization_budget(): "we budget enough cwnd to fit full-sized
    /// skbs in-flight on both end hosts to fully utilize the path: one skb
    /// in sending host Qdisc, one skb in sending host TSO/GSO engine, one
    /// skb being received by receiver host LRO/GRO/delayed-ACK engine".
    pub(super) fn quantization_budget(&self, tp: &ConnState, cwnd: u32) -> u32 {
        // "Allow enough full-sized skbs in flight to utilize end systems."
        let mut cwnd = cwnd.saturating_add(3u32.saturating_mul(Self::tso_segs_goal(tp)));
        // "Reduce delayed ACKs by rounding up cwnd to the next even number."
        cwnd = cwnd.saturating_add(1) & !1u32;
        // "Ensure gain cycling gets inflight above BDP even for small BDPs."
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// bbr_inflight(): "Find inflight based on min RTT and the estimated
    /// bottleneck bandwidth."
    pub(super) fn inflight(&self, tp: &ConnState, bw: u64, gain: u32) -> u32 {
        let inflight = self.bdp(bw, gain);
        self.quantization_budget(tp, inflight)
    }

    /// bbr_packets_in_net_at_edt(): "a rough estimate of the number of our
    /// packets that might be in the network at the earliest departure time
    /// for the next skb scheduled: in_network_at_edt = inflight_at_edt -
    /// (EDT - now) * bw".
    ///
    /// Deviation: EDT is taken as `now`, so interval_delivered is 0 and only
    /// the "include EDT skb" term for gains above 1 remains. ConnState now
    /// carries tcp_wstamp (tcp_wstamp_ns); reading it here changes BBR's
    /// golden runs, so it waits for a deliberate snapshot update.
    pub(super) fn packets_in_net_at_edt(&self, tp: &ConnState, inflight_now: u32) -> u32 {
        let interval_us: u64 = 0; // (max(tcp_wstamp_ns, now) - now) / 1000
        let interval_delivered = (self.bw() as u128 * interval_us as u128) >> super::BW_SCALE;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            // increasing inflight: include EDT skb
            inflight_at_edt = inflight_at_edt.saturating_add(Self::tso_segs_goal(tp));
        }
        if interval_delivered >= inflight_at_edt as u128 {
            return 0;
        }
        inflight_at_edt - interval_delivered as u32
    }

    /// bbr_ack_aggregation_cwnd(): "Find the cwnd increment based on
    /// estimate of ack aggregation", only once the pipe is full, clamped to
    /// bw * 100 ms.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        let mut aggr_cwnd = 0;
        if BBR_EXTRA_ACKED_GAIN != 0 && self.full_bw_reached {
            let max_aggr_cwnd = (self.bw() as u128 * BBR_EXTRA_ACKED_MAX_US as u128
                / BW_UNIT as u128)
                .min(u32::MAX as u128) as u32;
            aggr_cwnd = ((BBR_EXTRA_ACKED_GAIN as u64 * self.extra_acked_max() as u64)
                >> BBR_SCALE) as u32;
            aggr_cwnd = aggr_cwnd.min(max_aggr_cwnd);
        }
        aggr_cwnd
    }

    /// bbr_update_ack_aggregation(): "Estimates the windowed max degree of
    /// ack aggregation ... estimated as extra data acked beyond expected.
    /// max_extra_acked = maximum recent excess data ACKed beyond max_bw *
    /// interval". The max filter is "an approximate sliding window of 5-10
    /// (packet timed) round trips".
    pub(super) fn update_ack_aggregation(&mut self, tp: &ConnState, rs: &RateSample) {
        if BBR_EXTRA_ACKED_GAIN == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval.as_micros() == 0
        {
            return;
        }

        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx = if self.extra_acked_win_idx != 0 { 0 } else { 1 };
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }

        // "Compute how many packets we expected to be delivered over epoch."
        let epoch_us = tp
            .delivered_mstamp
            .as_micros()
            .saturating_sub(self.ack_epoch_mstamp.as_micros());
        let mut expected_acked =
            (self.bw() as u128 * epoch_us as u128 / BW_UNIT as u128).min(u32::MAX as u128) as u32;

        // "Reset the aggregation epoch if ACK rate is below expected rate or
        // significantly large no. of ack received since epoch (potentially
        // quite old epoch)."
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked.saturating_add(rs.acked_sacked)
                >= BBR_ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.delivered_mstamp;
            expected_acked = 0;
        }

        // "Compute excess data delivered, beyond what was expected."
        self.ack_epoch_acked = self.ack_epoch_acked.saturating_add(rs.acked_sacked).min(0xFFFFF);
        let mut extra_acked = self.ack_epoch_acked.saturating_sub(expected_acked);
        extra_acked = extra_acked.min(tp.snd_cwnd);
        if extra_acked > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra_acked;
        }
    }

    /// bbr_set_cwnd_to_recover_or_restore(): "On the first round of
    /// recovery, we follow the packet conservation principle: send P
    /// packets per P packets acked. After that, we slow-start and send at
    /// most 2*P packets per P packets acked. After recovery finishes, or
    /// upon undo, we restore the cwnd we had when recovery started (capped
    /// by the target cwnd based on estimated BDP)." Returns the new cwnd
    /// when packet conservation applies.
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        tp: &ConnState,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut cwnd = tp.snd_cwnd;

        // "An ACK for P pkts should release at most 2*P packets. We do this
        // in two steps. First, here we deduct the number of lost packets.
        // Then, in bbr_set_cwnd() we slow start up toward the target cwnd."
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }

        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // "Starting 1st round of Recovery, so do packet conservation."
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered; // start round now
            // "Cut unused cwnd from app behavior, TSQ, or TSO deferral:"
            cwnd = tp.in_flight().saturating_add(acked);
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // "Exiting loss recovery; restore cwnd saved before recovery."
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;

        if self.packet_conservation {
            // yes, using packet conservation
            return (cwnd.max(tp.in_flight().saturating_add(acked)), true);
        }
        (cwnd, false)
    }

    /// bbr_set_cwnd(): "Slow-start up toward target cwnd (if bw estimate is
    /// growing, or packet loss has drawn us down below target), or snap
    /// down to target if we're above it."
    pub(super) fn set_cwnd(
        &mut self,
        tp: &mut ConnState,
        rs: &RateSample,
        acked: u32,
        bw: u64,
        gain: u32,
    ) {
        let mut cwnd = tp.snd_cwnd;

        // "no packet fully ACKed; just apply caps"
        if acked != 0 {
            let (recover_cwnd, conserving) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = recover_cwnd;
            if !conserving {
                let mut target_cwnd = self.bdp(bw, gain);
                // "Increment the cwnd to account for excess ACKed data that
                // seems due to aggregation (of data and/or ACKs) visible in
                // the ACK stream."
                target_cwnd = target_cwnd.saturating_add(self.ack_aggregation_cwnd());
                target_cwnd = self.quantization_budget(tp, target_cwnd);

                // "If we're below target cwnd, slow start cwnd toward target
                // cwnd."
                if self.full_bw_reached {
                    // only cut cwnd if we filled the pipe
                    cwnd = cwnd.saturating_add(acked).min(target_cwnd);
                } else if cwnd < target_cwnd || tp.delivered < TCP_INIT_CWND as u64 {
                    cwnd = cwnd.saturating_add(acked);
                }
                cwnd = cwnd.max(BBR_CWND_MIN_TARGET);
            }
        }

        // done:
        tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp); // apply global cap
        if self.mode == Mode::ProbeRtt {
            // drain queue, refresh min_rtt
            tp.snd_cwnd = tp.snd_cwnd.min(BBR_CWND_MIN_TARGET);
        }
    }
}
