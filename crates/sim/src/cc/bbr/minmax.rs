//! Kathleen Nichols' windowed min/max tracker, as in Linux lib/win_minmax.c
//! and include/linux/win_minmax.h.
//!
//! > The algorithm keeps track of the best, 2nd best & 3rd best min values,
//! > maintaining an invariant that the measurement time of the n'th best >=
//! > n-1'th best. It also makes sure that the three values are widely
//! > separated in the time window since that bounds the worse case error
//! > when that data is monotonically increasing over the window.
//!
//! BBR uses it as a max filter over packet-timed rounds (t = rtt_cnt,
//! win = bbr_bw_rtts = 10). Time deltas use saturating subtraction: the
//! simulator's round counter never wraps, unlike Linux's u32.

/// `struct minmax_sample`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinmaxSample {
    /// Time the measurement was taken (rounds, for BBR).
    pub t: u32,
    /// Value measured.
    pub v: u64,
}

/// `struct minmax`: "State of the windowed min/max estimator".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Minmax {
    s: [MinmaxSample; 3],
}

impl Minmax {
    /// minmax_get(): the current best value.
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// minmax_reset(): forget everything and start from `(t, meas)`.
    pub fn reset(&mut self, t: u32, meas: u64) -> u64 {
        let val = MinmaxSample { t, v: meas };
        self.s = [val; 3];
        self.s[0].v
    }

    /// minmax_subwin_update(): "As time advances, update the 1st, 2nd, and
    /// 3rd choices."
    fn subwin_update(&mut self, win: u32, val: MinmaxSample) -> u64 {
        let dt = val.t.saturating_sub(self.s[0].t);

        if dt > win {
            // "Passed entire window without a new val so make 2nd choice
            // the new val & 3rd choice the new 2nd choice. we may have to
            // iterate this since our 2nd choice may also be outside the
            // window (we checked on entry that the third choice was in the
            // window)."
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.saturating_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // "We've passed a quarter of the window without a new val so
            // take a 2nd choice from the 2nd quarter of the window."
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // "We've passed half the window without finding a new val so
            // take a 3rd choice from the last half of the window"
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// minmax_running_max(): "Check if new measurement updates the 1st, 2nd
    /// or 3rd choice max."
    pub fn running_max(&mut self, win: u32, t: u32, meas: u64) -> u64 {
        let val = MinmaxSample { t, v: meas };

        if val.v >= self.s[0].v // found new max?
            || val.t.saturating_sub(self.s[2].t) > win
        // nothing left in window?
        {
            return self.reset(t, meas); // forget earlier samples
        }

        if val.v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }

        self.subwin_update(win, val)
    }

    /// minmax_running_min(): "Check if new measurement updates the 1st, 2nd
    /// or 3rd choice min."
    pub fn running_min(&mut self, win: u32, t: u32, meas: u64) -> u64 {
        let val = MinmaxSample { t, v: meas };

        if val.v <= self.s[0].v // found new min?
            || val.t.saturating_sub(self.s[2].t) > win
        // nothing left in window?
        {
            return self.reset(t, meas); // forget earlier samples
        }

        if val.v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }

        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_max_holds_a_peak_for_exactly_the_window() {
        let mut m = Minmax::default();
        m.reset(0, 0);
        assert_eq!(m.running_max(10, 1, 100), 100);
        for t in 2..=11 {
            assert_eq!(m.running_max(10, t, 50), 100, "t={t}");
        }
        // dt = 12 - 1 = 11 > win: the peak ages out.
        assert_eq!(m.running_max(10, 12, 50), 50);
    }

    #[test]
    fn running_max_falls_back_to_second_and_third_choices() {
        let mut m = Minmax::default();
        m.reset(0, 100);
        // Descending staircase: the 2nd/3rd choices keep the best of the
        // later sub-windows so the decay follows the data.
        for t in 1..=20u32 {
            let v = 100 - u64::from(t);
            m.running_max(8, t, v);
        }
        assert!(m.get() >= 80 && m.get() < 100, "got {}", m.get());
    }

    #[test]
    fn running_min_tracks_minimum_and_expires_it() {
        let mut m = Minmax::default();
        m.reset(0, 1000);
        assert_eq!(m.running_min(10, 0, 10), 10);
        assert_eq!(m.running_min(10, 5, 20), 10);
        assert_eq!(m.running_min(10, 10, 30), 10);
        // After the window passes, the best remaining choice takes over.
        assert_eq!(m.running_min(10, 11, 40), 20);
    }
}
