//! Rounds, bandwidth samples, the two-cycle bw_hi max filter and the
//! loss / ECN congestion signals (tcp_bbr.c v3: bbr_update_round_start,
//! bbr_calculate_bw_sample, bbr_take_max_bw_sample,
//! bbr_advance_max_bw_filter, bbr_update_latest_delivery_signals,
//! bbr_advance_latest_delivery_signals, bbr_update_congestion_signals,
//! bbr_update_ecn_alpha, bbr_note_loss, bbr_skb_marked_lost).

use super::{Bbr3, Ctx, BBR_SCALE, BBR_UNIT, BW_UNIT, ECN_ALPHA_GAIN, ECN_FACTOR, ECN_MAX_RTT_US};
use crate::cc::{ConnState, RateSample, TxSnapshot};

impl Bbr3 {
    /// bbr_update_round_start(): "See if we have reached next round trip."
    pub(super) fn update_round_start(&mut self, tp: &ConnState, rs: &RateSample) {
        self.round_start = false;
        // rs->interval_us > 0 && !before(rs->prior_delivered, next_rtt_delivered)
        if rs.interval.as_micros() > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tp.delivered;
            self.round_start = true;
            self.round_count += 1;
        }
    }

    /// bbr_calculate_bw_sample(): "Divide delivered by the interval to find
    /// a (lower bound) bottleneck bandwidth sample ... Round up to allow
    /// growth at low rates, even with integer division."
    pub(super) fn calculate_bw_sample(&self, rs: &RateSample, ctx: &mut Ctx) {
        let interval_us = rs.interval.as_micros();
        if interval_us > 0 {
            if rs.delivered < 0 {
                return;
            }
            ctx.sample_bw = (rs.delivered as u64).saturating_mul(BW_UNIT).div_ceil(interval_us);
        }
    }

    /// bbr_take_max_bw_sample(): "Incorporate a new bw sample into the
    /// current window of our max filter."
    pub(super) fn take_max_bw_sample(&mut self, bw: u64) {
        self.bw_hi[1] = self.bw_hi[1].max(bw);
    }

    /// bbr_advance_max_bw_filter(): "Keep max of last 1-2 cycles. Each
    /// PROBE_BW cycle, flip filter window."
    pub(super) fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return; // no samples in this window; remember old window
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// bbr_update_latest_delivery_signals(): "Update rate and volume of
    /// delivered data from latest round trip."
    pub(super) fn update_latest_delivery_signals(&mut self, tp: &ConnState, rs: &RateSample, ctx: &Ctx) {
        self.loss_round_start = false;
        if rs.interval.as_micros() == 0 || rs.acked_sacked == 0 {
            return; // Not a valid observation
        }
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        let delivered = rs.delivered.clamp(0, i64::from(u32::MAX)) as u32;
        self.inflight_latest = self.inflight_latest.max(delivered);

        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true; // mark start of new round trip
        }
    }

    /// bbr_advance_latest_delivery_signals(): "Once per round, reset filter
    /// for latest rate and volume of delivered data." (The TLP-retransmit
    /// exception cannot arise: no rs->is_acking_tlp_retrans_seq here.)
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.loss_round_start {
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.clamp(0, i64::from(u32::MAX)) as u32;
        }
    }

    /// bbr_update_congestion_signals(): "track the recent rate and volume
    /// of delivered data, presence of loss, and EWMA degree of ECN
    /// marking", adapting the lower bounds once per loss round.
    pub(super) fn update_congestion_signals(&mut self, tp: &ConnState, rs: &RateSample, ctx: &Ctx) {
        if rs.interval.as_micros() == 0 || rs.acked_sacked == 0 {
            return; // Not a valid observation
        }
        let bw = ctx.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.take_max_bw_sample(bw);
        }

        self.loss_in_round |= rs.losses > 0;

        if !self.loss_round_start {
            return; // skip the per-round-trip updates
        }
        // "Now do per-round-trip updates."
        self.adapt_lower_bounds(tp);

        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// bbr_update_ecn_alpha(): "Updates ecn_alpha and returns ce_ratio. -1
    /// if not available." Called at each round start.
    pub(super) fn update_ecn_alpha(&mut self, tp: &ConnState) -> Option<u32> {
        // "See if we should use ECN sender logic for this connection."
        if !self.ecn_eligible
            && Self::can_use_ecn(tp)
            && ECN_FACTOR != 0
            && (self.min_rtt_us <= ECN_MAX_RTT_US || ECN_MAX_RTT_US == 0)
        {
            self.ecn_eligible = true;
        }
        // "Skip updating alpha only if not ECN-eligible and PLB is
        // disabled." (PLB is off.)
        if !self.ecn_eligible {
            return None;
        }

        let delivered = tp.delivered.saturating_sub(self.alpha_last_delivered);
        let delivered_ce = tp.delivered_ce.saturating_sub(self.alpha_last_delivered_ce);
        if delivered == 0 {
            return None; // avoid divide by zero
        }

        let ce_ratio = ((delivered_ce << BBR_SCALE) / delivered).min(u64::from(u32::MAX)) as u32;
        let gain = ECN_ALPHA_GAIN;
        let mut alpha = ((BBR_UNIT - gain) * self.ecn_alpha) >> BBR_SCALE;
        alpha += ((u64::from(gain) * u64::from(ce_ratio)) >> BBR_SCALE) as u32;
        self.ecn_alpha = alpha.min(BBR_UNIT);

        self.alpha_last_delivered = tp.delivered;
        self.alpha_last_delivered_ce = tp.delivered_ce;

        self.check_ecn_too_high_in_startup(tp, ce_ratio);
        Some(ce_ratio)
    }

    /// bbr_ecn_cut(): "How should we multiplicatively cut bw or inflight
    /// limits based on ECN?" 1 - ecn_alpha * ecn_factor, in BBR_UNIT.
    pub(super) fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * ECN_FACTOR) >> BBR_SCALE)
    }

    /// bbr_note_loss(): "BBR marks the current round trip as a loss round."
    pub(super) fn note_loss(&mut self, tp: &ConnState) {
        // "Capture "current" data over the full round trip of loss, to have
        // a better chance of observing the full capacity of the path."
        if !self.loss_in_round {
            // first loss in this round trip?
            self.loss_round_delivered = tp.delivered; // set round trip
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// bbr_skb_marked_lost(): "Core TCP stack informs us that the given
    /// skb was just marked lost." While probing, build a rate sample for
    /// the flight up to this segment and cut inflight_hi at the packet
    /// where the loss rate crossed bbr_loss_thresh.
    pub(super) fn on_skb_marked_lost(&mut self, tp: &ConnState, tx: &TxSnapshot) {
        self.note_loss(tp);

        if !self.bw_probe_samples {
            return; // not an skb sent while probing for bandwidth
        }
        // (!scb->tx.delivered_mstamp: the stack never reports a SACKed
        // segment as lost.)
        let mut rs = RateSample {
            tx_in_flight: tx.in_flight,
            lost: tp.lost.saturating_sub(tx.lost).min(u64::from(u32::MAX)) as u32,
            is_app_limited: tx.is_app_limited,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            rs.tx_in_flight = Self::inflight_hi_from_lost_skb(&rs, 1);
            self.handle_inflight_too_high(tp, &rs);
        }
    }
}
