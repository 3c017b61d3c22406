//! What a segment costs on the wire, defined once for the simulator and the
//! kernel backend's delay line (crates/linkem); python/fatpipe/wire.py is
//! the same for Python.
//!
//! * The IP packet of a segment: MSS payload plus the 40-byte TCP/IP header,
//!   plus the 12-byte timestamp option when it fits the MTU (Linux's MSS is
//!   MTU - 52 with timestamps, tcp_mtu_to_mss() less the option).
//! * The bottleneck charges the 14-byte Ethernet header on top, as tbf and
//!   netem count skb->len on a veth, so a path rate means the same on every
//!   backend (payload ceiling 1448/1514 of the rate at MTU 1500).
//! * Random loss and per-bit corruption combine into one per-packet loss
//!   probability; corruption hits the (MSS + 40)·8 bits of a packet.

/// TCP/IP header bytes without options (20-byte IPv4 + 20-byte TCP).
pub const TCP_IP_HEADER_BYTES: u32 = 40;
/// The TCP timestamp option as Linux sends it (10 bytes + 2 NOPs).
pub const TIMESTAMP_OPTION_BYTES: u32 = 12;
/// TCP/IP header bytes with the timestamp option Linux uses by default.
pub const TCP_IP_TS_HEADER_BYTES: u32 = TCP_IP_HEADER_BYTES + TIMESTAMP_OPTION_BYTES;
/// Layer-2 header a bottleneck charges per packet (Ethernet, no FCS).
pub const ETH_HEADER_BYTES: u32 = 14;

/// Bytes of the IP packet that carries an `mss`-byte segment: headers with
/// the timestamp option when that fits the MTU, else MSS + 40.
pub fn ip_packet_bytes(mss: u32, mtu: u32) -> u32 {
    (mss + TCP_IP_TS_HEADER_BYTES).min(mtu).max(mss + TCP_IP_HEADER_BYTES)
}

/// Whether an `mss`-byte segment carries the timestamp option: it fits
/// the MTU (Linux then sends it on every segment, tcp/timestamps.rs).
pub fn carries_timestamps(mss: u32, mtu: u32) -> bool {
    mss + TCP_IP_TS_HEADER_BYTES <= mtu
}

/// Bytes a bottleneck charges for an IP packet of `ip_len` bytes.
#[inline]
pub fn frame_bytes(ip_len: u32) -> u32 {
    ip_len.saturating_add(ETH_HEADER_BYTES)
}

/// Loss per data packet of `mss` payload bytes from random loss `loss` and
/// per-bit corruption `corruption`: the packet's (MSS + 40)·8 bits each flip
/// with that probability and one flipped bit loses the packet
/// (1 - (1 - p_bit)^bits), independent of the random loss.
pub fn packet_loss_probability(loss: f64, corruption: f64, mss: u64) -> f64 {
    let bits = (mss.saturating_add(TCP_IP_HEADER_BYTES as u64) * 8) as f64;
    let p_corrupt = 1.0 - (1.0 - corruption).powf(bits);
    1.0 - (1.0 - loss) * (1.0 - p_corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_carry_the_timestamp_option_only_when_it_fits_the_mtu() {
        assert_eq!(ip_packet_bytes(1448, 1500), 1500);
        assert_eq!(ip_packet_bytes(1460, 1500), 1500);
        assert_eq!(ip_packet_bytes(1000, 1500), 1052);
    }

    #[test]
    fn a_full_mtu_packet_is_a_1514_byte_frame() {
        assert_eq!(frame_bytes(1500), 1514);
    }

    #[test]
    fn corruption_alone_loses_one_minus_survival_of_every_bit() {
        let p = packet_loss_probability(0.0, 1e-6, 1460);
        assert!((p - (1.0 - (1.0f64 - 1e-6).powf(12_000.0))).abs() < 1e-15);
        assert_eq!(packet_loss_probability(0.25, 0.0, 1460), 0.25);
    }
}
