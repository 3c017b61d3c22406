//! Pacing rate and TSO sizing (tcp_bbr.c: bbr_rate_bytes_per_sec,
//! bbr_bw_to_pacing_rate, bbr_init_pacing_rate_from_rtt,
//! bbr_set_pacing_rate, bbr_min_tso_segs, bbr_tso_segs_goal).
//!
//! Linux keeps sk_pacing_rate in bytes per second; the simulator's
//! `ConnState::pacing_rate` is in bits per second, so the value is
//! converted at the boundary (`pacing_bytes` / `set_pacing_bytes`) and all
//! comparisons happen in Linux's unit.

use super::{
    Bbr, BBR_HIGH_GAIN, BBR_MIN_TSO_RATE, BBR_PACING_MARGIN_PERCENT, BBR_SCALE, BW_SCALE,
    BW_UNIT, USEC_PER_MSEC, USEC_PER_SEC,
};
use crate::cc::{ConnState, GSO_MAX_SIZE, SK_PACING_SHIFT};
use crate::units::{Rate, Time};

/// MAX_TCP_HEADER = L1_CACHE_ALIGN(128 + MAX_HEADER) (include/net/tcp.h)
/// for a typical x86-64 distribution kernel: LL_MAX_HEADER 128
/// (CONFIG_HYPERV_NET) + 48 for IP tunnels = MAX_HEADER 176, 128 + 176 =
/// 304, aligned to 64-byte cache lines = 320.
pub const MAX_TCP_HEADER: u64 = 320;

/// sk->sk_pacing_rate in bytes per second.
pub(crate) fn pacing_bytes(tp: &ConnState) -> u64 {
    tp.pacing_rate.bps() / 8
}

/// sk->sk_max_pacing_rate in bytes per second.
pub(crate) fn max_pacing_bytes(tp: &ConnState) -> u64 {
    tp.max_pacing_rate.bps() / 8
}

/// Sets sk->sk_pacing_rate from bytes per second.
pub(crate) fn set_pacing_bytes(tp: &mut ConnState, bytes_per_sec: u64) {
    tp.pacing_rate = Rate(bytes_per_sec.saturating_mul(8));
}

/// bbr_rate_bytes_per_sec() (v1 and v3): "Return rate in bytes per
/// second, optionally with a gain": rate * mss * gain >> BBR_SCALE *
/// (USEC_PER_SEC / 100 * (100 - margin)) >> BW_SCALE. v1 always passes
/// bbr_pacing_margin_percent; v3 passes it for pacing and 0 for
/// bbr_bw_bytes_per_sec(). Computed in u128 and saturated instead of
/// Linux's u64 (documented to hold up to 2.9 Tbit/s at gain 2.89).
pub(crate) fn rate_bytes_per_sec(tp: &ConnState, rate: u64, gain: u32, margin_percent: u64) -> u64 {
    let mut r = rate as u128;
    r *= tp.mss_bytes as u128;
    r *= gain as u128;
    r >>= BBR_SCALE;
    r *= (USEC_PER_SEC / 100 * (100 - margin_percent)) as u128;
    (r >> BW_SCALE).min(u64::MAX as u128) as u64
}

impl Bbr {
    /// bbr_rate_bytes_per_sec() with v1's 1% pacing margin.
    pub(super) fn rate_bytes_per_sec(tp: &ConnState, rate: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(tp, rate, gain, BBR_PACING_MARGIN_PERCENT)
    }

    /// bbr_bw_to_pacing_rate(): "Convert a BBR bw and gain factor to a
    /// pacing rate in bytes per second", capped by sk_max_pacing_rate.
    pub(super) fn bw_to_pacing_rate(tp: &ConnState, bw: u64, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw, gain).min(max_pacing_bytes(tp))
    }

    /// bbr_init_pacing_rate_from_rtt(): "Initialize pacing rate to:
    /// high_gain * init_cwnd / RTT", with a nominal 1 ms RTT before any
    /// sample.
    pub(super) fn init_pacing_rate_from_rtt(&mut self, tp: &mut ConnState) {
        let rtt_us = if tp.srtt != Time::ZERO {
            // any RTT sample yet?
            self.has_seen_rtt = true;
            tp.srtt.as_micros().max(1)
        } else {
            USEC_PER_MSEC // use nominal default RTT
        };
        let bw = (tp.snd_cwnd as u64).saturating_mul(BW_UNIT) / rtt_us;
        let rate = Self::bw_to_pacing_rate(tp, bw, BBR_HIGH_GAIN);
        set_pacing_bytes(tp, rate);
    }

    /// bbr_set_pacing_rate(): "Pace using current bw estimate and a gain
    /// factor." Before STARTUP fills the pipe the rate only ever goes up.
    pub(super) fn set_pacing_rate(&mut self, tp: &mut ConnState, bw: u64, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);

        if !self.has_seen_rtt && tp.srtt != Time::ZERO {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > pacing_bytes(tp) {
            set_pacing_bytes(tp, rate);
        }
    }

    /// bbr_min_tso_segs() ("override sysctl_tcp_min_tso_segs"): 1 segment
    /// below bbr_min_tso_rate (1.2 Mbit/s), else 2. The engine's
    /// tcp_tso_autosize() should use this as its minimum for BBR flows.
    pub fn min_tso_segs(tp: &ConnState) -> u32 {
        if pacing_bytes(tp) < (BBR_MIN_TSO_RATE >> 3) {
            1
        } else {
            2
        }
    }

    /// bbr_tso_segs_goal(): "Sort of tcp_tso_autosize() but ignoring driver
    /// provided sk_gso_max_size": about 1 ms of data at the pacing rate,
    /// at most GSO_MAX_SIZE - 1 - MAX_TCP_HEADER bytes and 127 segments.
    pub(super) fn tso_segs_goal(tp: &ConnState) -> u32 {
        let bytes = (pacing_bytes(tp) >> SK_PACING_SHIFT).min(GSO_MAX_SIZE - 1 - MAX_TCP_HEADER);
        let segs = (bytes / u64::from(tp.mss_bytes.max(1))).max(u64::from(Self::min_tso_segs(tp)));
        segs.min(0x7F) as u32
    }
}
