//! Delivery-rate sampling (Linux net/ipv4/tcp_rate.c,
//! draft-cheng-iccrg-delivery-rate-estimation).

use crate::cc::{ConnState, RateSample, TxSnapshot};
use crate::units::Time;

use super::scoreboard::{widen, Seg, FLAG_APP_LIMITED, FLAG_RETRANS, FLAG_SACKED};

/// Connection-wide state of the estimator (fields of struct tcp_sock;
/// tp->delivered_mstamp lives in `ConnState`, where CCAs read it).
#[derive(Clone, Debug, Default)]
pub struct RateState {
    /// tp->first_tx_mstamp: send time of the packet starting the window.
    pub first_tx_mstamp: Time,
    /// Last valid sample kept for tcpi_delivery_rate (tp->rate_delivered,
    /// tp->rate_interval_us, tp->rate_app_limited).
    pub rate_delivered: u64,
    pub rate_interval: Time,
    pub rate_app_limited: bool,
    /// Per-ACK accumulation (the `struct rate_sample` being built).
    pub rs: RateSample,
    /// This ACK delivered a packet with a snapshot (rs.prior_delivered is set).
    pub rs_has_prior: bool,
    /// rs->last_end_seq (segment number) of the packet the sample uses.
    last_seq: u64,
    /// tx.delivered_ce and tx.lost of that packet (rs->prior_delivered_ce,
    /// rs->prior_lost), still in their 32-bit snapshot form.
    prior_delivered_ce: u32,
    prior_lost: u32,
    /// Send-side interval of the sample (rs->interval_us before tcp_rate_gen).
    snd_interval: Time,
}

impl RateState {
    /// tcp_rate_skb_sent() with BBRv3's tcp_set_tx_in_flight(): snapshot
    /// the connection's delivery state into the packet being (re)sent.
    /// `tp` is as before this send (packets_out not yet counting it).
    #[inline]
    pub fn on_sent(&mut self, seg: &mut Seg, tp: &mut ConnState) {
        let now = tp.now;
        if tp.packets_out == 0 {
            // First packet after idle: start a fresh sampling window.
            self.first_tx_mstamp = now;
            tp.delivered_mstamp = now;
        }
        seg.first_tx = self.first_tx_mstamp;
        seg.delivered_mstamp = tp.delivered_mstamp;
        seg.delivered = tp.delivered as u32;
        seg.lost = tp.lost as u32;
        seg.delivered_ce = tp.delivered_ce as u32;
        // "Packets in flight including this skb" (tcp_set_tx_in_flight).
        seg.in_flight = tp.in_flight().saturating_add(1);
        if tp.app_limited != 0 {
            seg.flags |= FLAG_APP_LIMITED;
        } else {
            seg.flags &= !FLAG_APP_LIMITED;
        }
    }

    /// The send-time snapshot of `seg` with its counters widened against
    /// the connection's current ones (what skb_marked_lost receives).
    #[inline]
    pub fn tx_snapshot(seg: &Seg, tp: &ConnState) -> TxSnapshot {
        TxSnapshot {
            delivered: widen(tp.delivered, seg.delivered),
            delivered_ce: widen(tp.delivered_ce, seg.delivered_ce),
            in_flight: seg.in_flight,
            lost: widen(tp.lost, seg.lost),
            is_app_limited: seg.flags & FLAG_APP_LIMITED != 0,
        }
    }

    /// Starts a new ACK's sample.
    pub fn begin_ack(&mut self, prior_in_flight: u32) {
        self.rs = RateSample { prior_in_flight, delivered: -1, ..RateSample::default() };
        self.rs_has_prior = false;
        self.snd_interval = Time::ZERO;
    }

    /// tcp_rate_skb_delivered(): a packet was cumulatively acked or SACKed.
    /// Prefers the most recently sent packet (tcp_skb_sent_after).
    /// `delivered` is tp->delivered, to widen the packet's snapshot.
    pub fn on_delivered(&mut self, seg: &mut Seg, seq: u64, delivered: u64) {
        if seg.delivered_mstamp == Time::ZERO {
            return; // already sampled when it was SACKed
        }
        let newer = !self.rs_has_prior
            || seg.xmit > self.first_tx_mstamp
            || (seg.xmit == self.first_tx_mstamp && seq > self.last_seq);
        if newer {
            self.rs_has_prior = true;
            self.rs.prior_delivered = widen(delivered, seg.delivered);
            self.rs.prior_mstamp = seg.delivered_mstamp;
            self.rs.tx_in_flight = seg.in_flight;
            self.prior_delivered_ce = seg.delivered_ce;
            self.prior_lost = seg.lost;
            self.rs.is_app_limited = seg.flags & FLAG_APP_LIMITED != 0;
            self.rs.is_retrans = seg.flags & FLAG_RETRANS != 0;
            self.last_seq = seq;
            // Record the send time of the newest delivered packet as the start
            // of the next sampling window.
            self.first_tx_mstamp = seg.xmit;
            self.snd_interval = seg.xmit.saturating_sub(seg.first_tx);
        }
        // Mark off a SACKed packet so a later cumulative ACK does not reuse it.
        if seg.flags & FLAG_SACKED != 0 {
            seg.delivered_mstamp = Time::ZERO;
        }
    }

    /// tcp_rate_gen(): finish the sample after the ACK was processed.
    /// tp->app_limited is cleared here once passed; tp->delivered_mstamp is
    /// stamped when this ACK delivered data.
    pub fn gen(&mut self, tp: &mut ConnState, newly: u32, lost: u32, min_rtt: Time) {
        let (now, delivered_now) = (tp.now, tp.delivered);
        if tp.app_limited != 0 && delivered_now > tp.app_limited {
            tp.app_limited = 0; // the app-limited period is over
        }
        if newly > 0 {
            tp.delivered_mstamp = now;
        }
        self.rs.acked_sacked = newly;
        self.rs.losses = lost;
        if !self.rs_has_prior || self.rs.prior_mstamp == Time::ZERO {
            self.rs.delivered = -1;
            self.rs.interval = Time::ZERO;
            return;
        }
        self.rs.delivered = delivered_now.saturating_sub(self.rs.prior_delivered) as i64;
        // rs->delivered_ce (masked to the snapshot's width in Linux) and
        // BBRv3's rs->lost = tp->lost - rs->prior_lost.
        self.rs.delivered_ce = (tp.delivered_ce as u32).wrapping_sub(self.prior_delivered_ce);
        self.rs.lost = (tp.lost as u32).wrapping_sub(self.prior_lost);
        // Use the longer of the send and ACK phases so that ACK compression
        // cannot inflate the rate (tcp_rate_gen).
        let ack_interval = now.saturating_sub(self.rs.prior_mstamp);
        let interval = self.snd_interval.max(ack_interval);
        if interval < min_rtt {
            // Too short to be meaningful (e.g. spurious retransmit).
            self.rs.interval = Time::ZERO;
            return;
        }
        self.rs.interval = interval;
        // Keep the highest non-app-limited sample for tcpi_delivery_rate.
        let d = self.rs.delivered as u128;
        if !self.rs.is_app_limited
            || d * (self.rate_interval.0 as u128) >= (self.rate_delivered as u128) * (interval.0 as u128)
        {
            self.rate_delivered = self.rs.delivered as u64;
            self.rate_interval = interval;
            self.rate_app_limited = self.rs.is_app_limited;
        }
    }
}
