//! RTT estimation and the retransmission timeout, as Linux does it
//! (net/ipv4/tcp_input.c: tcp_rtt_estimator, tcp_set_rto; RFC 6298).
//!
//! Linux keeps `rttvar_us` at least `tcp_rto_min` (200 ms), so the RTO is
//! srtt + max(4·mdev, 200 ms): the 200 ms floor applies to the variance
//! term, not only to the final value (RFC 6298 §2.4 allows this).

use crate::units::Time;

/// TCP_RTO_MIN (include/net/tcp.h).
pub const RTO_MIN: Time = Time::from_millis(200);
/// TCP_RTO_MAX.
pub const RTO_MAX: Time = Time::from_secs(120);
/// TCP_TIMEOUT_INIT: RTO before any RTT sample (RFC 6298 §2.1).
pub const TIMEOUT_INIT: Time = Time::from_secs(1);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// Smoothed RTT (ns); zero before the first sample.
    pub srtt: Time,
    /// Mean deviation ×4 (tp->mdev_us), ns.
    mdev: u64,
    /// Max mdev in the current window (tp->mdev_max_us), ns.
    mdev_max: u64,
    /// Variance term of the RTO (tp->rttvar_us, already ×4), ns.
    rttvar: u64,
    /// snd_nxt when the current RTT window started (tp->rtt_seq).
    rtt_seq: u64,
    /// Windowed min RTT (tcp_min_rtt). The Linux window is 300 s, longer
    /// than any run, so a running minimum is equivalent.
    pub min_rtt: Time,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator {
            srtt: Time::ZERO,
            mdev: 0,
            mdev_max: 0,
            rttvar: 0,
            rtt_seq: 0,
            min_rtt: Time::MAX,
        }
    }
}

impl RttEstimator {
    /// tcpi_rttvar: the mean deviation (tp->mdev_us >> 2).
    pub fn mdev(&self) -> Time {
        Time(self.mdev / 4)
    }

    /// tcp_rtt_estimator(): Jacobson/Karels with Linux's mdev_max window.
    pub fn sample(&mut self, m: Time, snd_una: u64, snd_nxt: u64) {
        let m = m.0.max(1) as i64;
        let rto_min = RTO_MIN.0;
        if self.srtt.0 != 0 {
            let srtt = self.srtt.0 as i64;
            let mut err = m - srtt;
            let new_srtt = srtt + (err >> 3); // srtt = 7/8 srtt + 1/8 m
            if err < 0 {
                err = -err;
                err -= (self.mdev >> 2) as i64;
                if err > 0 {
                    err >>= 3; // a falling RTT moves mdev 8x less
                }
            } else {
                err -= (self.mdev >> 2) as i64;
            }
            self.mdev = (self.mdev as i64 + err).max(0) as u64; // mdev = 3/4 mdev + 1/4 |err|
            if self.mdev > self.mdev_max {
                self.mdev_max = self.mdev;
                if self.mdev_max > self.rttvar {
                    self.rttvar = self.mdev_max;
                }
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = rto_min;
            }
            self.srtt = Time(new_srtt.max(1) as u64);
        } else {
            self.srtt = Time(m as u64);
            self.mdev = (m as u64) << 1; // make sure rto = 3*rtt
            self.rttvar = self.mdev.max(rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
        }
    }

    /// Updates the windowed min RTT (tcp_update_rtt_min).
    pub fn update_min(&mut self, m: Time) {
        if m < self.min_rtt {
            self.min_rtt = m.max(Time(1));
        }
    }

    /// __tcp_set_rto() + tcp_bound_rto(): srtt + rttvar, within [200 ms, 120 s].
    pub fn rto(&self) -> Time {
        if self.srtt.0 == 0 {
            return TIMEOUT_INIT;
        }
        let rto = Time(self.srtt.0.saturating_add(self.rttvar));
        rto.max(RTO_MIN).min(RTO_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_is_never_below_200ms_even_on_a_short_path() {
        let mut e = RttEstimator::default();
        for i in 0..100 {
            e.sample(Time::from_micros(20), i, i + 10);
        }
        assert!(e.rto() >= RTO_MIN);
        assert!(e.rto() < Time::from_millis(201));
    }

    #[test]
    fn first_sample_sets_srtt_and_rto_is_srtt_plus_at_least_200ms() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(), TIMEOUT_INIT);
        e.sample(Time::from_millis(100), 0, 10);
        assert_eq!(e.srtt, Time::from_millis(100));
        assert_eq!(e.rto(), Time::from_millis(300));
    }
}
