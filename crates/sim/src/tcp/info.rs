//! The sender's `tcp_info`: what Linux's tcp_get_info() (net/ipv4/tcp.c)
//! reports to getsockopt(TCP_INFO), plus the CCA's mode that
//! TCP_CC_INFO / INET_DIAG expose (ca_ops->get_info). The engine's sampler
//! reads a connection only through this snapshot, as the kernel backend
//! reads a real socket.

use crate::cc::CaState;
use crate::tcp::chrono::ChronoKind;
use crate::tcp::Sender;
use crate::units::{Bytes, Rate, Time};

/// A snapshot of one connection, fields named after `struct tcp_info`
/// (include/uapi/linux/tcp.h) without the `tcpi_` prefix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpInfo {
    /// tcpi_ca_state (icsk_ca_state).
    pub ca_state: CaState,
    /// The CCA's own mode (e.g. BBR's "probe_bw", CUBIC's "cong_avoid"),
    /// empty when it has none; not part of tcp_info (Linux exposes it, where
    /// at all, through the CCA's get_info).
    pub cc_mode: &'static str,
    /// tcpi_snd_mss: payload bytes per segment (mss_cache).
    pub snd_mss: u32,
    /// tcpi_snd_cwnd, segments.
    pub snd_cwnd: u32,
    /// tcpi_rtt: smoothed RTT.
    pub rtt: Time,
    /// tcpi_min_rtt (tcp_min_rtt()); `None` before the first RTT sample
    /// (Linux reports ~0U).
    pub min_rtt: Option<Time>,
    /// tcpi_unacked: packets_out.
    pub unacked: u32,
    /// tcpi_sacked: sacked_out.
    pub sacked: u32,
    /// tcpi_lost: lost_out.
    pub lost: u32,
    /// tcpi_retrans: retrans_out.
    pub retrans: u32,
    /// tcpi_total_retrans: retransmitted segments since the start.
    pub total_retrans: u64,
    /// tcpi_data_segs_out: data segments sent including retransmissions.
    pub data_segs_out: u64,
    /// tcpi_bytes_acked: payload bytes cumulatively acknowledged.
    pub bytes_acked: Bytes,
    /// tcpi_pacing_rate (sk_pacing_rate, capped by sk_max_pacing_rate).
    pub pacing_rate: Rate,
    /// tcpi_delivery_rate (tcp_compute_delivery_rate(): rate_delivered ·
    /// mss / rate_interval) in bit/s, without Linux's rounding to whole
    /// bytes per second; 0 before the first sample.
    pub delivery_rate_bps: f64,
    /// tcpi_busy_time: time with data in flight (all chrono states).
    pub busy_time: Time,
    /// tcpi_rwnd_limited: time limited by the receive window.
    pub rwnd_limited: Time,
    /// tcpi_sndbuf_limited: time limited by the send buffer.
    pub sndbuf_limited: Time,
}

impl TcpInfo {
    /// tcp_packets_in_flight(): unacked - (sacked + lost) + retrans.
    pub fn packets_in_flight(&self) -> u32 {
        self.unacked.saturating_sub(self.sacked.saturating_add(self.lost)).saturating_add(self.retrans)
    }

    /// Linux's name of tcpi_ca_state (as `ss -i` and the kernel backend
    /// print it).
    pub fn ca_state_name(&self) -> &'static str {
        match self.ca_state {
            CaState::Open => "open",
            CaState::Disorder => "disorder",
            CaState::Cwr => "cwr",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
}

impl Sender {
    /// tcp_get_info() at `now`. Takes `&mut self` because the reported
    /// pacing rate of a CCA that does not set it is brought up to date
    /// first (tcp_update_pacing_rate()), as Linux keeps it current per ACK.
    pub fn tcp_info(&mut self, now: Time) -> TcpInfo {
        let pacing_rate = self.reported_pacing_rate();
        let tp = &self.tp;
        let mss = tp.mss_bytes as u64;
        let rate = &self.rate;
        let delivery_rate_bps = if rate.rate_interval > Time::ZERO {
            (rate.rate_delivered * mss * 8) as f64 / rate.rate_interval.as_secs_f64()
        } else {
            0.0
        };
        TcpInfo {
            ca_state: tp.ca_state,
            cc_mode: self.cc.state_label(tp),
            snd_mss: tp.mss_bytes,
            snd_cwnd: tp.snd_cwnd,
            rtt: tp.srtt,
            min_rtt: (tp.min_rtt != Time::MAX).then_some(tp.min_rtt),
            unacked: tp.packets_out,
            sacked: tp.sacked_out,
            lost: tp.lost_out,
            retrans: tp.retrans_out,
            total_retrans: self.stats.retrans,
            data_segs_out: self.stats.segs_out,
            bytes_acked: Bytes(self.sb.snd_una.saturating_mul(mss)),
            pacing_rate,
            delivery_rate_bps,
            busy_time: self.chrono.busy(now),
            rwnd_limited: self.chrono.total(ChronoKind::RwndLimited, now),
            sndbuf_limited: self.chrono.total(ChronoKind::SndbufLimited, now),
        }
    }
}
