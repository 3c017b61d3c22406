//! HighSpeed TCP (Sally Floyd, RFC 3649) as Linux implements it in
//! net/ipv4/tcp_highspeed.c: above 38 segments, the additive increase a(w)
//! and the multiplicative decrease b(w) come from RFC 3649's Appendix B
//! table, which Linux keeps verbatim (hstcp_aimd_vals, b scaled << 8).
//! Linux has no module parameters for it; undo is tcp_reno_undo_cwnd (the
//! trait's default).

use super::{ConnState, CongestionControl};

/// hstcp_aimd_vals (RFC 3649 Appendix B): `(cwnd, md)` rows; row i holds
/// for windows up to `cwnd`, with a(w) = i + 1 segments per RTT and
/// b(w) = md / 256. The comments are Linux's (b(w) as RFC 3649 prints it).
pub const HSTCP_AIMD_VALS: [(u32, u32); 72] = [
    (38, 128), // a = 1, b = 0.50
    (118, 112), // a = 2, b = 0.44
    (221, 104), // a = 3, b = 0.41
    (347, 98), // a = 4, b = 0.38
    (495, 93), // a = 5, b = 0.37
    (663, 89), // a = 6, b = 0.35
    (851, 86), // a = 7, b = 0.34
    (1058, 83), // a = 8, b = 0.33
    (1284, 81), // a = 9, b = 0.32
    (1529, 78), // a = 10, b = 0.31
    (1793, 76), // a = 11, b = 0.30
    (2076, 74), // a = 12, b = 0.29
    (2378, 72), // a = 13, b = 0.28
    (2699, 71), // a = 14, b = 0.28
    (3039, 69), // a = 15, b = 0.27
    (3399, 68), // a = 16, b = 0.27
    (3778, 66), // a = 17, b = 0.26
    (4177, 65), // a = 18, b = 0.26
    (4596, 64), // a = 19, b = 0.25
    (5036, 62), // a = 20, b = 0.25
    (5497, 61), // a = 21, b = 0.24
    (5979, 60), // a = 22, b = 0.24
    (6483, 59), // a = 23, b = 0.23
    (7009, 58), // a = 24, b = 0.23
    (7558, 57), // a = 25, b = 0.22
    (8130, 56), // a = 26, b = 0.22
    (8726, 55), // a = 27, b = 0.22
    (9346, 54), // a = 28, b = 0.21
    (9991, 53), // a = 29, b = 0.21
    (10661, 52), // a = 30, b = 0.21
    (11358, 52), // a = 31, b = 0.20
    (12082, 51), // a = 32, b = 0.20
    (12834, 50), // a = 33, b = 0.20
    (13614, 49), // a = 34, b = 0.19
    (14424, 48), // a = 35, b = 0.19
    (15265, 48), // a = 36, b = 0.19
    (16137, 47), // a = 37, b = 0.19
    (17042, 46), // a = 38, b = 0.18
    (17981, 45), // a = 39, b = 0.18
    (18955, 45), // a = 40, b = 0.18
    (19965, 44), // a = 41, b = 0.17
    (21013, 43), // a = 42, b = 0.17
    (22101, 43), // a = 43, b = 0.17
    (23230, 42), // a = 44, b = 0.17
    (24402, 41), // a = 45, b = 0.16
    (25618, 41), // a = 46, b = 0.16
    (26881, 40), // a = 47, b = 0.16
    (28193, 39), // a = 48, b = 0.16
    (29557, 39), // a = 49, b = 0.15
    (30975, 38), // a = 50, b = 0.15
    (32450, 38), // a = 51, b = 0.15
    (33986, 37), // a = 52, b = 0.15
    (35586, 36), // a = 53, b = 0.14
    (37253, 36), // a = 54, b = 0.14
    (38992, 35), // a = 55, b = 0.14
    (40808, 35), // a = 56, b = 0.14
    (42707, 34), // a = 57, b = 0.13
    (44694, 33), // a = 58, b = 0.13
    (46776, 33), // a = 59, b = 0.13
    (48961, 32), // a = 60, b = 0.13
    (51258, 32), // a = 61, b = 0.13
    (53677, 31), // a = 62, b = 0.12
    (56230, 30), // a = 63, b = 0.12
    (58932, 30), // a = 64, b = 0.12
    (61799, 29), // a = 65, b = 0.12
    (64851, 28), // a = 66, b = 0.11
    (68113, 28), // a = 67, b = 0.11
    (71617, 27), // a = 68, b = 0.11
    (75401, 26), // a = 69, b = 0.10
    (79517, 26), // a = 70, b = 0.10
    (84035, 25), // a = 71, b = 0.10
    (89053, 24), // a = 72, b = 0.10
];

/// HSTCP_AIMD_MAX: ARRAY_SIZE(hstcp_aimd_vals).
const HSTCP_AIMD_MAX: usize = HSTCP_AIMD_VALS.len();

/// hstcp_init(): cwnd clamp that keeps cwnd * md (md <= 128) within u32.
pub const HSTCP_CWND_CLAMP: u32 = 0xffff_ffff / 128;

/// `struct hstcp`.
#[derive(Debug, Default, Clone)]
pub struct HighSpeed {
    /// Row of hstcp_aimd_vals for the current cwnd: a(w) = ai + 1.
    ai: usize,
}

impl HighSpeed {
    pub fn new() -> HighSpeed {
        HighSpeed::default()
    }

    /// a(w) of the current row, segments per RTT.
    pub fn a(&self) -> u32 {
        self.ai as u32 + 1
    }

    /// b(w) of the current row, fixed point << 8.
    pub fn md(&self) -> u32 {
        HSTCP_AIMD_VALS[self.ai].1
    }

    /// The AIMD-row walk of hstcp_cong_avoid(): move `ai` so that
    /// hstcp_aimd_vals[ai - 1].cwnd < cwnd <= hstcp_aimd_vals[ai].cwnd.
    fn update_row(&mut self, cwnd: u32) {
        if cwnd > HSTCP_AIMD_VALS[self.ai].0 {
            while cwnd > HSTCP_AIMD_VALS[self.ai].0 && self.ai < HSTCP_AIMD_MAX - 1 {
                self.ai += 1;
            }
        } else if self.ai > 0 && cwnd <= HSTCP_AIMD_VALS[self.ai - 1].0 {
            while self.ai > 0 && cwnd <= HSTCP_AIMD_VALS[self.ai - 1].0 {
                self.ai -= 1;
            }
        }
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    /// hstcp_init(): start at row 0, clamp cwnd so the MD arithmetic fits.
    fn init(&mut self, tp: &mut ConnState) {
        self.ai = 0;
        tp.snd_cwnd_clamp = tp.snd_cwnd_clamp.min(HSTCP_CWND_CLAMP);
    }

    /// hstcp_ssthresh(): max(cwnd - (cwnd * md) >> 8, 2) with the row of
    /// the last cong_avoid (RFC 3649 §5: w ← (1 - b(w)) w).
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        let cwnd = tp.snd_cwnd;
        let cut = ((cwnd as u64 * self.md() as u64) >> 8) as u32;
        cwnd.saturating_sub(cut).max(2)
    }

    /// hstcp_cong_avoid(): only when cwnd-limited. In slow start
    /// tcp_slow_start() (the leftover is dropped, as Linux does); otherwise
    /// walk to the row of cwnd and add a(w) / cwnd per ACK (RFC 3649 §5:
    /// w ← w + a(w)/w), once per ACK whatever it acks.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            tp.slow_start(acked);
            return;
        }
        self.update_row(tp.snd_cwnd);
        if tp.snd_cwnd < tp.snd_cwnd_clamp {
            tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.saturating_add(self.a());
            if tp.snd_cwnd_cnt >= tp.snd_cwnd {
                tp.snd_cwnd_cnt -= tp.snd_cwnd;
                tp.snd_cwnd += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cc::test_support::cwnd_limited as limited;

    #[test]
    fn hstcp_aimd_vals_is_rfc3649_appendix_b() {
        assert_eq!(HSTCP_AIMD_VALS.len(), 72);
        assert_eq!(HSTCP_AIMD_VALS[0], (38, 128));
        assert_eq!(HSTCP_AIMD_VALS[7], (1058, 83));
        assert_eq!(HSTCP_AIMD_VALS[71], (89053, 24));
        // Windows rise and decreases fall (or stay) row by row.
        for r in HSTCP_AIMD_VALS.windows(2) {
            assert!(r[0].0 < r[1].0 && r[0].1 >= r[1].1, "{r:?}");
        }
    }

    #[test]
    fn hstcp_init_clamps_cwnd_for_the_md_arithmetic() {
        let mut tp = ConnState::new(1448);
        HighSpeed::new().init(&mut tp);
        assert_eq!(tp.snd_cwnd_clamp, 0xffff_ffff / 128);
    }

    #[test]
    fn hstcp_cong_avoid_walks_to_the_row_of_cwnd_both_ways() {
        let mut h = HighSpeed::new();
        let mut tp = limited(1058, 10);
        h.cong_avoid(&mut tp, 1);
        assert_eq!(h.a(), 8); // 851 < 1058 <= 1058
        tp.snd_cwnd = 1059;
        h.cong_avoid(&mut tp, 1);
        assert_eq!(h.a(), 9);
        tp.snd_cwnd = 100;
        h.cong_avoid(&mut tp, 1);
        assert_eq!(h.a(), 2); // 38 < 100 <= 118
        tp.snd_cwnd = 38;
        h.cong_avoid(&mut tp, 1);
        assert_eq!(h.a(), 1);
        tp.snd_cwnd = 1_000_000;
        h.cong_avoid(&mut tp, 1);
        assert_eq!(h.a(), 72, "the last row holds beyond the table");
    }

    #[test]
    fn hstcp_cong_avoid_adds_a_of_w_per_cwnd_acks_whatever_each_ack_acks() {
        let mut h = HighSpeed::new();
        let mut tp = limited(1000, 10); // row 7: a = 8
        for _ in 0..125 {
            h.cong_avoid(&mut tp, 2); // delayed ACKs still count once
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1001, 0));
    }

    #[test]
    fn hstcp_ssthresh_cuts_by_md_over_256_of_the_current_row() {
        let mut h = HighSpeed::new();
        let mut tp = limited(1058, 10);
        h.cong_avoid(&mut tp, 1);
        tp.snd_cwnd = 1058;
        assert_eq!(h.ssthresh(&tp), 1058 - ((1058 * 83) >> 8));
        let mut h = HighSpeed::new();
        assert_eq!(h.ssthresh(&limited(30, 10)), 15, "row 0 is Reno's 1/2");
        assert_eq!(h.ssthresh(&limited(3, 10)), 2);
    }

    #[test]
    fn hstcp_slow_start_drops_the_leftover() {
        let mut h = HighSpeed::new();
        let mut tp = limited(10, 12);
        h.cong_avoid(&mut tp, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 0));
    }

    #[test]
    fn hstcp_does_not_grow_at_the_clamp_or_when_not_cwnd_limited() {
        let mut h = HighSpeed::new();
        let mut tp = limited(500, 10);
        tp.snd_cwnd_clamp = 500;
        for _ in 0..1000 {
            h.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 500);
        tp.snd_cwnd_clamp = 1000;
        tp.is_cwnd_limited = false;
        h.cong_avoid(&mut tp, 1000);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (500, 0));
    }
}
