//! min_rtt filter and PROBE_RTT (tcp_bbr.c: bbr_update_min_rtt,
//! bbr_check_probe_rtt_done).
//!
//! > The min_rtt filter window is 10 seconds. When the min_rtt estimate
//! > expires, we enter PROBE_RTT mode and cap the cwnd at
//! > bbr_cwnd_min_target=4 packets. After at least bbr_probe_rtt_mode_ms=200ms
//! > and at least one packet-timed round trip elapsed with that flight size
//! > <= 4, we leave PROBE_RTT mode and re-enter the previous mode.

use super::{
    Bbr, Mode, BBR_CWND_MIN_TARGET, BBR_MIN_RTT_WIN_SEC, BBR_PROBE_RTT_MODE_MS,
};
use crate::cc::jiffies::{msecs_to_jiffies, HZ};
use crate::cc::{ConnState, RateSample};

impl Bbr {
    /// bbr_check_probe_rtt_done(): leave PROBE_RTT once
    /// probe_rtt_done_stamp has passed, restoring the saved cwnd.
    pub(super) fn check_probe_rtt_done(&mut self, tp: &mut ConnState) {
        let now = Self::jiffies(tp);
        // !(bbr->probe_rtt_done_stamp && after(tcp_jiffies32,
        //   bbr->probe_rtt_done_stamp))
        if !(self.probe_rtt_done_stamp != 0 && now > self.probe_rtt_done_stamp) {
            return;
        }

        self.min_rtt_stamp = now; // wait a while until PROBE_RTT
        tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        self.reset_mode(tp);
    }

    /// bbr_update_min_rtt(): "Track min RTT seen in the min_rtt_win_sec
    /// filter window", and run PROBE_RTT when it expires.
    pub(super) fn update_min_rtt(&mut self, tp: &mut ConnState, rs: &RateSample) {
        let now = Self::jiffies(tp);

        // after(tcp_jiffies32, bbr->min_rtt_stamp + bbr_min_rtt_win_sec * HZ)
        let filter_expired =
            now > self.min_rtt_stamp.saturating_add(BBR_MIN_RTT_WIN_SEC.saturating_mul(HZ));
        // rs->is_ack_delayed is not part of RateSample: treated as false.
        let is_ack_delayed = false;
        if let Some(rtt) = rs.rtt {
            let rtt_us = rtt.as_micros().min(u64::from(u32::MAX)) as u32;
            if rtt_us <= self.min_rtt_us || (filter_expired && !is_ack_delayed) {
                self.min_rtt_us = rtt_us;
                self.min_rtt_stamp = now;
            }
        }

        if BBR_PROBE_RTT_MODE_MS > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt; // dip, drain queue
            self.save_cwnd(tp); // note cwnd so we can restore it
            self.probe_rtt_done_stamp = 0;
        }

        if self.mode == Mode::ProbeRtt {
            // "Ignore low rate samples during this mode."
            let app_limited = tp.delivered.saturating_add(u64::from(tp.in_flight()));
            tp.app_limited = if app_limited != 0 { app_limited } else { 1 };
            // "Maintain min packets in flight for max(200 ms, 1 round)."
            if self.probe_rtt_done_stamp == 0 && tp.in_flight() <= BBR_CWND_MIN_TARGET {
                self.probe_rtt_done_stamp =
                    now.saturating_add(msecs_to_jiffies(BBR_PROBE_RTT_MODE_MS));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tp.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tp);
                }
            }
        }
        // "Restart after idle ends only once we process a new S/ACK for data"
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }
}
