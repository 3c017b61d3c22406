//! min_rtt filters and PROBE_RTT (tcp_bbr.c v3: bbr_update_min_rtt,
//! bbr_check_probe_rtt_done, bbr_exit_probe_rtt, bbr_probe_rtt_cwnd).
//!
//! > The PROBE_RTT window is 5 seconds. When this interval has elapsed
//! > without measuring a lower RTT sample, we enter PROBE_RTT mode and
//! > reduce cwnd using the bbr_probe_rtt_cwnd_gain factor of 0.5x, i.e.
//! > cwnd ~= 0.5 * est_BDP. After at least bbr_probe_rtt_mode_ms=200ms and
//! > at least one packet-timed round trip elapsed with the lower flight
//! > size, we leave PROBE_RTT mode and re-enter the previous mode.

use super::{
    AckPhase, Bbr3, Mode, CWND_MIN_TARGET, MIN_RTT_WIN_SEC, PROBE_RTT_CWND_GAIN, PROBE_RTT_MODE_MS,
    PROBE_RTT_WIN_MS,
};
use crate::cc::jiffies::{msecs_to_jiffies, HZ};
use crate::cc::{ConnState, RateSample};

impl Bbr3 {
    /// bbr_probe_rtt_cwnd(): "Returns the cwnd for PROBE_RTT mode":
    /// max(bbr_cwnd_min_target, BDP * bbr_probe_rtt_cwnd_gain).
    pub(crate) fn probe_rtt_cwnd(&self) -> u32 {
        CWND_MIN_TARGET.max(self.bdp(self.bw(), PROBE_RTT_CWND_GAIN))
    }

    /// bbr_exit_probe_rtt(): "Exiting PROBE_RTT, so return to bandwidth
    /// probing in STARTUP or PROBE_BW."
    fn exit_probe_rtt(&mut self, tp: &ConnState) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            // "Raising inflight after PROBE_RTT may cause loss, so reset the
            // PROBE_BW clock and schedule the next bandwidth probe for a
            // friendly and randomized future point in time."
            self.start_bw_probe_down(tp);
            // "Since we are exiting PROBE_RTT, we know inflight is below our
            // estimated BDP, so it is reasonable to cruise."
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// bbr_check_probe_rtt_done(): leave PROBE_RTT once
    /// probe_rtt_done_stamp has passed, restoring the saved cwnd.
    pub(crate) fn check_probe_rtt_done(&mut self, tp: &mut ConnState) {
        let now = Self::jiffies(tp);
        if !(self.probe_rtt_done_stamp != 0 && now > self.probe_rtt_done_stamp) {
            return;
        }
        self.probe_rtt_min_stamp = now; // schedule next PROBE_RTT
        tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(tp);
    }

    /// bbr_update_min_rtt(): track the min RTT of the last
    /// bbr_probe_rtt_win_ms (5 s) to time PROBE_RTT, and of the last
    /// bbr_min_rtt_win_sec (10 s) for the model.
    pub(crate) fn update_min_rtt(&mut self, tp: &mut ConnState, rs: &RateSample) {
        let now = Self::jiffies(tp);

        // "Track min RTT in probe_rtt_win_ms to time next PROBE_RTT state."
        let expire = self.probe_rtt_min_stamp.saturating_add(msecs_to_jiffies(PROBE_RTT_WIN_MS));
        let probe_rtt_expired = now > expire;
        // rs->is_ack_delayed is not part of RateSample: treated as false.
        let is_ack_delayed = false;
        if let Some(rtt) = rs.rtt {
            let rtt_us = rtt.as_micros().min(u64::from(u32::MAX)) as u32;
            if rtt_us < self.probe_rtt_min_us || (probe_rtt_expired && !is_ack_delayed) {
                self.probe_rtt_min_us = rtt_us;
                self.probe_rtt_min_stamp = now;
            }
        }
        // "Track min RTT seen in the min_rtt_win_sec filter window:"
        let expire = self.min_rtt_stamp.saturating_add(MIN_RTT_WIN_SEC * HZ);
        let min_rtt_expired = now > expire;
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }

        if PROBE_RTT_MODE_MS > 0 && probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt; // dip, drain queue
            self.save_cwnd(tp); // note cwnd so we can restore it
            self.probe_rtt_done_stamp = 0;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = tp.delivered;
        }

        if self.mode == Mode::ProbeRtt {
            // "Ignore low rate samples during this mode."
            let app_limited = tp.delivered.saturating_add(u64::from(tp.in_flight()));
            tp.app_limited = if app_limited != 0 { app_limited } else { 1 };
            // "Maintain min packets in flight for max(200 ms, 1 round)."
            if self.probe_rtt_done_stamp == 0 && tp.in_flight() <= self.probe_rtt_cwnd() {
                self.probe_rtt_done_stamp = now.saturating_add(msecs_to_jiffies(PROBE_RTT_MODE_MS));
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
