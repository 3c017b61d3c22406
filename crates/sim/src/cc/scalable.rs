//! Scalable TCP (Tom Kelly, "Scalable TCP: Improving Performance in
//! Highspeed Wide Area Networks", CCR 2003) as Linux implements it in
//! net/ipv4/tcp_scalable.c: in congestion avoidance cwnd grows by 0.01 per
//! acked segment (1 per 100, once cwnd >= 100) and a loss cuts it by 1/8.
//! Linux has no module parameters for it; undo is tcp_reno_undo_cwnd (the
//! trait's default).

use super::{ConnState, CongestionControl};

/// TCP_SCALABLE_AI_CNT: one segment per this many acked, a = 0.01.
pub const TCP_SCALABLE_AI_CNT: u32 = 100;
/// TCP_SCALABLE_MD_SCALE: the decrease is cwnd >> 3, b = 1/8.
pub const TCP_SCALABLE_MD_SCALE: u32 = 3;

#[derive(Debug, Default, Clone, Copy)]
pub struct Scalable;

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    /// tcp_scalable_ssthresh(): max(cwnd - cwnd >> TCP_SCALABLE_MD_SCALE, 2).
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        tp.snd_cwnd.saturating_sub(tp.snd_cwnd >> TCP_SCALABLE_MD_SCALE).max(2)
    }

    /// tcp_scalable_cong_avoid(): only when cwnd-limited; slow start below
    /// ssthresh, the leftover goes to tcp_cong_avoid_ai() with
    /// w = min(cwnd, TCP_SCALABLE_AI_CNT).
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
        let w = tp.snd_cwnd.min(TCP_SCALABLE_AI_CNT);
        tp.cong_avoid_ai(w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cc::test_support::cwnd_limited as limited;

    #[test]
    fn tcp_scalable_ssthresh_removes_one_eighth_but_keeps_two() {
        assert_eq!(Scalable.ssthresh(&limited(800, 10)), 700);
        assert_eq!(Scalable.ssthresh(&limited(80, 10)), 70);
        // 7 >> 3 = 0: small windows are not reduced at all.
        assert_eq!(Scalable.ssthresh(&limited(7, 10)), 7);
        assert_eq!(Scalable.ssthresh(&limited(1, 10)), 2);
    }

    #[test]
    fn tcp_scalable_cong_avoid_adds_one_per_100_acked_above_100_segments() {
        let mut tp = limited(1000, 10);
        for _ in 0..99 {
            Scalable.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 1000);
        Scalable.cong_avoid(&mut tp, 1);
        assert_eq!(tp.snd_cwnd, 1001);
        // A stretch ACK of 250 segments: +2, 50 credited.
        Scalable.cong_avoid(&mut tp, 250);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1003, 50));
    }

    #[test]
    fn tcp_scalable_cong_avoid_is_reno_below_100_segments() {
        let mut tp = limited(40, 10);
        for _ in 0..40 {
            Scalable.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 41);
    }

    #[test]
    fn tcp_scalable_slow_start_leftover_goes_to_additive_increase() {
        let mut tp = limited(10, 12);
        Scalable.cong_avoid(&mut tp, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 3));
    }

    #[test]
    fn tcp_scalable_does_not_grow_when_not_cwnd_limited() {
        let mut tp = limited(1000, 10);
        tp.is_cwnd_limited = false;
        Scalable.cong_avoid(&mut tp, 500);
        assert_eq!(tp.snd_cwnd, 1000);
    }
}
