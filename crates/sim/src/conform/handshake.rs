//! What the three-way handshake settles (tcp_connect_init(),
//! tcp_openreq_init(), tcp_rcv_synsent_state_process(),
//! tcp_select_initial_window()): MSS, window scales, SACK, timestamps and
//! ECN, from this side's settings and the peer's SYN or SYN-ACK.

use super::packet::{Packet, CWR, ECE};
use super::sysctls::Sysctls;
use crate::wire::{TCP_IP_HEADER_BYTES, TIMESTAMP_OPTION_BYTES};

/// The MTU of the scripted interface (packetdrill's tun device: 1500).
pub const MTU: u32 = 1500;
/// TCP_MSS_DEFAULT: the MSS assumed when a SYN carries no MSS option
/// (RFC 9293 §3.7.1; Linux's tcp_parse_options() leaves mss_clamp at 536).
pub const TCP_MSS_DEFAULT: u32 = 536;
/// TCP_MAX_WSCALE (RFC 7323 §2.3).
pub const TCP_MAX_WSCALE: u32 = 14;

/// The settled connection parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// mss_cache: payload bytes per segment, less the timestamp option
    /// when timestamps are on (tcp_sync_mss()).
    pub mss: u32,
    /// The peer's shift applied to the windows it advertises.
    pub snd_wscale: u8,
    /// Our shift, applied to the windows we advertise.
    pub rcv_wscale: u8,
    pub sack: bool,
    pub timestamps: bool,
    pub ecn: bool,
}

/// The MSS this side advertises (tcp_advertise_mss(): the route MTU less
/// the IP and TCP headers), clamped by TCP_MAXSEG.
pub fn advmss(user_mss: Option<u32>) -> u32 {
    let mss = MTU - TCP_IP_HEADER_BYTES;
    user_mss.map_or(mss, |u| mss.min(u))
}

/// tcp_select_initial_window()'s window scale: the shift that lets the
/// largest buffer the socket may grow to (tcp_rmem[2], rmem_max) fit the
/// 16-bit field: ilog2(space) − 15, clamped to 0..=14. A socket with
/// SO_RCVBUF set is bounded by that buffer instead.
pub fn rcv_wscale(sys: &Sysctls, rcvbuf_locked: Option<u64>) -> u8 {
    let space = match rcvbuf_locked {
        Some(b) => b,
        None => sys.tcp_rmem[2].max(sys.rmem_max),
    };
    let ilog2 = 63 - space.max(1).leading_zeros();
    ilog2.saturating_sub(15).min(TCP_MAX_WSCALE) as u8
}

/// The receive window the socket opens with: half the receive buffer
/// (tcp_win_from_space() with tcp_adv_win_scale = 1), rounded down to
/// whole advertised segments (tcp_select_initial_window()).
pub fn initial_rcv_wnd(sys: &Sysctls, rcvbuf: Option<u64>, advmss: u32) -> u32 {
    let space = rcvbuf.unwrap_or(sys.tcp_rmem[1]) / 2;
    let space = space - space % advmss as u64;
    space.min(u32::MAX as u64) as u32
}

/// The parameters settled by the peer's SYN (`syn`, passive side) or
/// SYN-ACK (active side), given what this side offered.
pub fn settle(sys: &Sysctls, user_mss: Option<u32>, rcvbuf: Option<u64>, peer: &Packet, we_asked_ecn: bool) -> Negotiated {
    let timestamps = sys.tcp_timestamps && peer.timestamp().is_some();
    let peer_mss = peer.mss().unwrap_or(TCP_MSS_DEFAULT);
    let mut mss = advmss(user_mss).min(peer_mss);
    if timestamps {
        mss -= TIMESTAMP_OPTION_BYTES;
    }
    let (snd_wscale, rcv_wscale) = match peer.wscale() {
        Some(w) if sys.tcp_window_scaling => ((w as u32).min(TCP_MAX_WSCALE) as u8, rcv_wscale(sys, rcvbuf)),
        _ => (0, 0),
    };
    let ecn = if peer.has(super::packet::SYN) && peer.has(super::packet::ACK) {
        // tcp_ecn_rcv_synack(): ECN is on if we asked and the SYN-ACK has
        // ECE without CWR.
        we_asked_ecn && peer.has(ECE) && !peer.has(CWR)
    } else {
        // tcp_ecn_create_request(): a SYN with ECE and CWR asks for ECN;
        // tcp_ecn 1 or 2 accepts (or the CCA needs ECN, left to the caller).
        peer.has(ECE) && peer.has(CWR) && sys.tcp_ecn >= 1
    };
    Negotiated { mss, snd_wscale, rcv_wscale, sack: sys.tcp_sack && peer.sack_ok(), timestamps, ecn }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_scale_fits_the_largest_buffer_in_16_bits() {
        let mut s = Sysctls::default();
        assert_eq!(rcv_wscale(&s, None), 7); // 6 MB: ilog2 = 22
        s.tcp_rmem = [4096, 540_000, 15 * 1024 * 1024];
        assert_eq!(rcv_wscale(&s, None), 8);
        assert_eq!(rcv_wscale(&s, Some(60_000)), 0);
    }
}
