//! Reno (RFC 5681) as Linux implements it in net/ipv4/tcp_cong.c
//! (tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd).

use super::{ConnState, CongestionControl};

#[derive(Debug, Default)]
pub struct Reno;

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    /// tcp_reno_ssthresh(): max(cwnd / 2, 2) (RFC 5681 §3.1 eq. 4, in segments).
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        (tp.snd_cwnd >> 1).max(2)
    }

    /// tcp_reno_cong_avoid(): only grow when cwnd-limited; slow start below
    /// ssthresh, then +1 segment per cwnd of acked segments.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        // In "safe" area, increase (tcp_cong_avoid_ai with w = cwnd).
        let w = tp.snd_cwnd;
        tp.cong_avoid_ai(w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cc::test_support::cwnd_limited as limited;

    #[test]
    fn rfc5681_ssthresh_is_half_cwnd_but_at_least_two() {
        assert_eq!(Reno.ssthresh(&limited(100, 1000)), 50);
        assert_eq!(Reno.ssthresh(&limited(3, 1000)), 2);
    }

    #[test]
    fn slow_start_grows_one_segment_per_acked_segment_up_to_ssthresh() {
        let mut tp = limited(10, 15);
        Reno.cong_avoid(&mut tp, 4);
        assert_eq!(tp.snd_cwnd, 14);
        Reno.cong_avoid(&mut tp, 4); // 1 to reach ssthresh, 3 left for AI
        assert_eq!(tp.snd_cwnd, 15);
        assert_eq!(tp.snd_cwnd_cnt, 3);
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window_acked() {
        let mut tp = limited(20, 10);
        for _ in 0..20 {
            Reno.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 21);
    }

    /// tcp_slow_start(): `tcp_snd_cwnd_set(tp, min(cwnd, tp->snd_cwnd_clamp))`.
    #[test]
    fn slow_start_stops_at_cwnd_clamp() {
        let mut tp = limited(10, 1000);
        tp.snd_cwnd_clamp = 16;
        let left = tp.slow_start(20);
        assert_eq!(tp.snd_cwnd, 16);
        assert_eq!(left, 0, "the acks used up to ssthresh are consumed, the clamp does not return them");
    }

    /// tcp_cong_avoid_ai(): `tcp_snd_cwnd_set(tp, min(tcp_snd_cwnd(tp), tp->snd_cwnd_clamp))`.
    #[test]
    fn cong_avoid_ai_stops_at_cwnd_clamp() {
        let mut tp = limited(20, 10);
        tp.snd_cwnd_clamp = 21;
        for _ in 0..200 {
            Reno.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 21);
    }

    /// TCP_BPF_SNDCWND_CLAMP (`snd_cwnd_clamp = val; snd_ssthresh = val`)
    /// and tcp_init_cwnd()'s min with the clamp: a flow clamped at 6
    /// starts at 6 segments in congestion avoidance.
    #[test]
    fn cwnd_clamp_sets_ssthresh_and_caps_the_initial_window() {
        let mut tp = crate::cc::ConnState::new(1448);
        tp.set_cwnd_clamp(6);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh, tp.snd_cwnd_clamp), (6, 6, 6));
        assert!(!tp.in_slow_start());
        let mut tp = crate::cc::ConnState::new(1448);
        tp.set_cwnd_clamp(500);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (10, 500), "IW 10 below the clamp stays");
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut tp = limited(20, 10);
        tp.is_cwnd_limited = false;
        Reno.cong_avoid(&mut tp, 20);
        assert_eq!(tp.snd_cwnd, 20);
    }
}
