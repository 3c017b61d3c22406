//! ACK-aggregation estimator shared by BBR v1 and BBRv3 (tcp_bbr.c:
//! bbr_update_ack_aggregation, bbr_ack_aggregation_cwnd, bbr_extra_acked):
//! the same arithmetic in both versions; they differ only in the window
//! length they pass (v3 uses 1 round before STARTUP fills the pipe) and in
//! when v1 adds the result to its cwnd.
//!
//! > Degree of ack aggregation is estimated as extra data acked beyond
//! > expected.
//! > max_extra_acked = "maximum recent excess data ACKed beyond max_bw * interval"
//! > cwnd += max_extra_acked

use super::{
    BBR_ACK_EPOCH_ACKED_RESET_THRESH, BBR_EXTRA_ACKED_GAIN, BBR_EXTRA_ACKED_MAX_US, BBR_SCALE,
    BW_UNIT,
};
use crate::cc::{ConnState, RateSample};
use crate::units::Time;

/// The ACK-aggregation fields of `struct bbr`.
#[derive(Clone, Debug, Default)]
pub struct AckAggregation {
    /// start of ACK sampling epoch (ack_epoch_mstamp).
    pub(crate) epoch_mstamp: Time,
    /// max excess data ACKed in epoch (u16 in Linux; kept wide here so a
    /// cwnd above 65535 packets cannot wrap it).
    extra_acked: [u32; 2],
    /// packets (S)ACKed in sampling epoch (ack_epoch_acked).
    pub(crate) epoch_acked: u32,
    /// age of extra_acked, in round trips (extra_acked_win_rtts).
    win_rtts: u32,
    /// current index in extra_acked array (extra_acked_win_idx).
    win_idx: usize,
}

impl AckAggregation {
    /// bbr_init()'s reset of the aggregation state, epoch starting `now`.
    pub(crate) fn reset(&mut self, now: Time) {
        *self = AckAggregation { epoch_mstamp: now, ..AckAggregation::default() };
    }

    /// bbr_cwnd_event(CA_EVENT_TX_START): restart the sampling epoch.
    pub(crate) fn restart_epoch(&mut self, now: Time) {
        self.epoch_mstamp = now;
        self.epoch_acked = 0;
    }

    /// bbr_extra_acked(): "maximum extra acked in past k-2k round trips".
    pub(crate) fn extra_acked_max(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// bbr_ack_aggregation_cwnd(): "Find the cwnd increment based on
    /// estimate of ack aggregation", clamped to bw * bbr_extra_acked_max_us
    /// (100 ms). v1 calls it only once the pipe is full.
    pub(crate) fn cwnd(&self, bw: u64) -> u32 {
        let mut aggr_cwnd = 0;
        if BBR_EXTRA_ACKED_GAIN != 0 {
            let max_aggr_cwnd = (bw as u128 * BBR_EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128)
                .min(u32::MAX as u128) as u32;
            aggr_cwnd = ((BBR_EXTRA_ACKED_GAIN as u64 * self.extra_acked_max() as u64)
                >> BBR_SCALE) as u32;
            aggr_cwnd = aggr_cwnd.min(max_aggr_cwnd);
        }
        aggr_cwnd
    }

    /// bbr_update_ack_aggregation(): "Estimates the windowed max degree of
    /// ack aggregation". `bw` is bbr_bw(); the max filter advances every
    /// `win_rtts_thresh` packet-timed rounds ("an approximate sliding
    /// window of 5-10 (packet timed) round trips").
    pub(crate) fn update(
        &mut self,
        tp: &ConnState,
        rs: &RateSample,
        bw: u64,
        round_start: bool,
        win_rtts_thresh: u32,
    ) {
        if BBR_EXTRA_ACKED_GAIN == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval.as_micros() == 0
        {
            return;
        }

        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1F);
            if self.win_rtts >= win_rtts_thresh {
                self.win_rtts = 0;
                self.win_idx = if self.win_idx != 0 { 0 } else { 1 };
                self.extra_acked[self.win_idx] = 0;
            }
        }

        // "Compute how many packets we expected to be delivered over epoch."
        let epoch_us = tp
            .delivered_mstamp
            .as_micros()
            .saturating_sub(self.epoch_mstamp.as_micros());
        let mut expected_acked =
            (bw as u128 * epoch_us as u128 / BW_UNIT as u128).min(u32::MAX as u128) as u32;

        // "Reset the aggregation epoch if ACK rate is below expected rate or
        // significantly large no. of ack received since epoch (potentially
        // quite old epoch)."
        if self.epoch_acked <= expected_acked
            || self.epoch_acked.saturating_add(rs.acked_sacked) >= BBR_ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.epoch_acked = 0;
            self.epoch_mstamp = tp.delivered_mstamp;
            expected_acked = 0;
        }

        // "Compute excess data delivered, beyond what was expected."
        self.epoch_acked = self.epoch_acked.saturating_add(rs.acked_sacked).min(0xFFFFF);
        let mut extra_acked = self.epoch_acked.saturating_sub(expected_acked);
        extra_acked = extra_acked.min(tp.snd_cwnd);
        if extra_acked > self.extra_acked[self.win_idx] {
            self.extra_acked[self.win_idx] = extra_acked;
        }
    }
}
