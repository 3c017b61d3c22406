//! Proportional Rate Reduction (RFC 6937) as Linux's tcp_cwnd_reduction().

#[derive(Clone, Debug, Default)]
pub struct Prr {
    /// Segments delivered since recovery began (tp->prr_delivered).
    pub delivered: u32,
    /// Segments sent since recovery began (tp->prr_out).
    pub out: u32,
}

impl Prr {
    /// tcp_init_cwnd_reduction(): reset at the start of a reduction.
    pub fn reset(&mut self) {
        *self = Prr::default();
    }

    /// tcp_cwnd_reduction(): the new cwnd after an ACK that delivered
    /// `newly_acked_sacked` segments. `una_advanced` is FLAG_SND_UNA_ADVANCED,
    /// `newly_lost` whether this ACK marked segments lost.
    /// Returns `None` when the ACK delivered nothing (cwnd unchanged).
    pub fn cwnd(
        &mut self,
        ssthresh: u32,
        prior_cwnd: u32,
        in_flight: u32,
        newly_acked_sacked: u32,
        una_advanced: bool,
        newly_lost: bool,
    ) -> Option<u32> {
        if newly_acked_sacked == 0 || prior_cwnd == 0 {
            return None;
        }
        self.delivered = self.delivered.saturating_add(newly_acked_sacked);
        let delta = ssthresh as i64 - in_flight as i64;
        let mut sndcnt: i64 = if delta < 0 {
            // RFC 6937 §3 "proportional" part: sndcnt = CEIL(prr_delivered *
            // ssthresh / RecoverFS) - prr_out, RecoverFS = prior_cwnd.
            let dividend = ssthresh as u64 * self.delivered as u64 + prior_cwnd as u64 - 1;
            (dividend / prior_cwnd as u64) as i64 - self.out as i64
        } else {
            // PRR-SSRB: slow-start-like growth back to ssthresh, at most one
            // extra segment per ACK that advanced snd_una without new losses.
            let mut s = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            if una_advanced && !newly_lost {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.out == 0 { 1 } else { 0 });
        Some((in_flight as i64 + sndcnt).max(0) as u32)
    }

    /// Counts a segment sent during the reduction.
    pub fn on_sent(&mut self, n: u32) {
        self.out = self.out.saturating_add(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6937 Appendix-style example: cwnd 20, ssthresh 10, one loss. While
    /// in_flight > ssthresh, PRR sends ~ssthresh/prior_cwnd = 1 segment per 2
    /// delivered.
    #[test]
    fn prr_sends_half_a_segment_per_delivered_segment_when_ssthresh_is_half() {
        let mut prr = Prr::default();
        let (ssthresh, prior) = (10, 20);
        let mut in_flight = 19; // one lost segment is out of the pipe
        let mut sent_total = 0;
        for _ in 0..8 {
            // One segment delivered (SACKed) per ACK.
            in_flight -= 1;
            let cwnd = prr.cwnd(ssthresh, prior, in_flight, 1, false, false).unwrap();
            let can_send = cwnd.saturating_sub(in_flight);
            prr.on_sent(can_send);
            in_flight += can_send;
            sent_total += can_send;
        }
        // 8 delivered -> ceil(8*10/20) = 4 sent.
        assert_eq!(sent_total, 4);
    }

    #[test]
    fn prr_forces_one_fast_retransmit_on_entering_recovery() {
        let mut prr = Prr::default();
        let cwnd = prr.cwnd(10, 20, 18, 1, false, true).unwrap();
        assert_eq!(cwnd, 19);
    }

    #[test]
    fn prr_ssrb_grows_back_to_ssthresh_when_pipe_is_below_it() {
        let mut prr = Prr::default();
        prr.on_sent(1);
        // in_flight 4, ssthresh 10: sends delivered - out or newly, +1 if una advanced.
        let cwnd = prr.cwnd(10, 20, 4, 2, true, false).unwrap();
        assert_eq!(cwnd, 4 + 3);
    }
}
