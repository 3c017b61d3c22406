//! CoDel's per-queue state and arithmetic as Linux has them
//! (include/net/codel.h, include/net/codel_impl.h): time in `codel_time_t`
//! units (ns >> CODEL_SHIFT, about 1.024 µs, a wrapping u32), the inverse
//! square root of `count` kept in 16-bit fixed point and refined by one
//! Newton step per change (`codel_Newton_step`), and the control law
//! `t + interval / sqrt(count)` (`codel_control_law`). The dequeue-time
//! state machine that uses them (`codel_dequeue`) is in fq_codel.rs, where
//! the per-flow queue it pulls from lives.

use crate::units::Time;

/// codel.h CODEL_SHIFT: codel_time_t counts units of 2^10 ns.
pub const CODEL_SHIFT: u32 = 10;
/// codel.h REC_INV_SQRT_BITS (the width of codel_vars.rec_inv_sqrt).
const REC_INV_SQRT_BITS: u32 = 16;
/// codel.h REC_INV_SQRT_SHIFT.
const REC_INV_SQRT_SHIFT: u32 = 32 - REC_INV_SQRT_BITS;

/// codel.h `codel_time_t`: a wrapping 32-bit time in 1024-ns units.
pub type CodelTime = u32;

/// codel_get_time(): ktime_get_ns() >> CODEL_SHIFT, truncated to 32 bits.
#[inline]
pub fn codel_time(t: Time) -> CodelTime {
    (t.0 >> CODEL_SHIFT) as u32
}

/// A duration as codel_time_t (the netlink parameters are given in µs and
/// converted as `(val * NSEC_PER_USEC) >> CODEL_SHIFT`).
pub fn codel_duration(t: Time) -> CodelTime {
    (t.0 >> CODEL_SHIFT).min(u32::MAX as u64) as u32
}

/// codel_time_after(a, b): a is later than b (wrap-safe).
#[inline]
pub fn after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// codel_time_after_eq(a, b).
#[inline]
pub fn after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// codel_time_before(a, b).
#[inline]
pub fn before(a: CodelTime, b: CodelTime) -> bool {
    after(b, a)
}

/// codel.h `struct codel_params` (what fq_codel shares among its flows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    pub target: CodelTime,
    pub interval: CodelTime,
    /// CODEL_DISABLED_THRESHOLD (INT_MAX) when off.
    pub ce_threshold: CodelTime,
    /// Backlog (bytes) at or below which CoDel never drops: psched_mtu.
    pub mtu: u32,
    /// Mark ECN-capable packets CE instead of dropping them.
    pub ecn: bool,
}

/// codel.h CODEL_DISABLED_THRESHOLD.
pub const CODEL_DISABLED_THRESHOLD: CodelTime = i32::MAX as u32;

/// codel.h `struct codel_vars`, one per fq_codel flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Packets dropped (or marked) since entering the dropping state.
    pub count: u32,
    /// count at the last entry to the dropping state.
    pub lastcount: u32,
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16.
    pub rec_inv_sqrt: u16,
    /// When the sojourn time went above target, plus interval (0: below).
    pub first_above_time: CodelTime,
    /// When the next drop is due in the dropping state.
    pub drop_next: CodelTime,
    /// Sojourn time of the last dequeued packet.
    pub ldelay: CodelTime,
}

impl CodelVars {
    /// codel_Newton_step: one Newton iteration of rec_inv_sqrt towards
    /// 1/sqrt(count): new = (invsqrt / 2) * (3 - count * invsqrt^2).
    pub fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
        let mut val: u64 = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2 as u64);
        val >>= 2; // avoid overflow in the following multiply
        val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// The reset value of rec_inv_sqrt (count = 1): ~0U >> REC_INV_SQRT_SHIFT.
    pub const REC_INV_SQRT_ONE: u16 = (u32::MAX >> REC_INV_SQRT_SHIFT) as u16;
}

/// codel_control_law: t + interval / sqrt(count), with 1/sqrt(count) from
/// rec_inv_sqrt (reciprocal_scale(interval, rec_inv_sqrt << 16)).
#[inline]
pub fn control_law(t: CodelTime, interval: CodelTime, rec_inv_sqrt: u16) -> CodelTime {
    let scaled = ((interval as u64 * ((rec_inv_sqrt as u64) << REC_INV_SQRT_SHIFT)) >> 32) as u32;
    t.wrapping_add(scaled)
}

/// codel_should_drop: whether the head packet, enqueued at `enqueued` and
/// dequeued at `now` with `backlog` bytes left behind it, may be dropped.
/// The sojourn time must have stayed at or above target for an interval,
/// and more than an MTU must remain queued.
#[inline]
pub fn should_drop(vars: &mut CodelVars, p: &CodelParams, enqueued: CodelTime, backlog: u64, now: CodelTime) -> bool {
    vars.ldelay = now.wrapping_sub(enqueued);
    if before(vars.ldelay, p.target) || backlog <= p.mtu as u64 {
        // Went below: stay below for at least interval.
        vars.first_above_time = 0;
        return false;
    }
    if vars.first_above_time == 0 {
        // Just went above from below: if we stay above for at least
        // interval, it is ok to drop.
        vars.first_above_time = now.wrapping_add(p.interval);
        false
    } else {
        after(now, vars.first_above_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_step_converges_to_the_reciprocal_square_root_of_count() {
        let mut v = CodelVars { count: 1, rec_inv_sqrt: CodelVars::REC_INV_SQRT_ONE, ..Default::default() };
        for count in 2..=1000u32 {
            v.count = count;
            // One step per increment is coarse for small counts (count 2
            // gives 0.5); a few steps at a fixed count converge.
            for _ in 0..4 {
                v.newton_step();
            }
            let exact = 1.0 / (count as f64).sqrt();
            let got = v.rec_inv_sqrt as f64 / 65536.0;
            assert!((got - exact).abs() / exact < 0.005, "count {count}: {got} vs {exact}");
        }
    }

    #[test]
    fn control_law_spaces_drops_by_interval_over_sqrt_count() {
        let interval = codel_duration(Time::from_millis(100));
        let mut v = CodelVars { count: 1, rec_inv_sqrt: CodelVars::REC_INV_SQRT_ONE, ..Default::default() };
        // count 1: rec_inv_sqrt is 0xffff, one part in 65536 short of 1.
        assert!(control_law(0, interval, v.rec_inv_sqrt).abs_diff(interval) <= 2);
        for _ in 0..20 {
            v.count += 1;
            v.newton_step();
        }
        v.count = 4;
        for _ in 0..5 {
            v.newton_step();
        }
        // count 4: interval / 2.
        let gap = control_law(1000, interval, v.rec_inv_sqrt) - 1000;
        assert!(gap.abs_diff(interval / 2) <= interval / 200, "{gap} vs {}", interval / 2);
    }

    #[test]
    fn time_comparisons_survive_wraparound() {
        assert!(after(5, u32::MAX - 5));
        assert!(before(u32::MAX - 5, 5));
        assert!(after_eq(7, 7));
    }
}
