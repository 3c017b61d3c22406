//! Congestion window (tcp_bbr.c: bbr_bdp, bbr_quantization_budget,
//! bbr_inflight, bbr_packets_in_net_at_edt, the ACK-aggregation
//! calls (ack_aggregation.rs), bbr_set_cwnd_to_recover_or_restore,
//! bbr_set_cwnd).

use super::{
    Bbr, Mode, BBR_CWND_MIN_TARGET, BBR_EXTRA_ACKED_WIN_RTTS, BBR_SCALE, BBR_UNIT, BW_UNIT,
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

    /// bbr_ack_aggregation_cwnd(), only once the pipe is full (v1).
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.full_bw_reached {
            self.aggr.cwnd(self.bw())
        } else {
            0
        }
    }

    /// bbr_update_ack_aggregation() with v1's fixed 5-round window.
    pub(super) fn update_ack_aggregation(&mut self, tp: &ConnState, rs: &RateSample) {
        let bw = self.bw();
        self.aggr.update(tp, rs, bw, self.round_start, BBR_EXTRA_ACKED_WIN_RTTS);
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
