//! The send buffer an application writes into: sk_sndbuf as Linux grows
//! it (tcp_sndbuf_expand(), net/ipv4/tcp_input.c), called when the
//! connection is established (tcp_init_buffer_space()) and on ACKs while
//! the flight is below cwnd (tcp_new_space() → tcp_should_expand_sndbuf()).
//! It starts at tcp_wmem[1] (tcp_init_sock(); Linux's default 16 KB is
//! below any expansion), never shrinks, and expansion stops at tcp_wmem[2]
//! (`wmem_max_bytes`).
//!
//!   sndbuf = factor × max(TCP_INIT_CWND, cwnd, reordering + 1) × per_mss
//!   per_mss = roundup_pow_of_two(mss_clamp + SEG_OVERHEAD_BYTES) + SKB_BYTES
//!
//! with `factor` the CCA's sndbuf_expand (2, BBR's bbr_sndbuf_expand 3).
//! An application's blocking write waits for room in it
//! (tcp_sendmsg_locked() → sk_stream_wait_memory()): what an application-
//! limited writer or a transfer's chunk writer can queue
//! (Sender::send_buffer_room). Linux counts the skbs' truesize against it;
//! written data sits in TSO-sized skbs whose truesize is close to their
//! payload, so the room is counted in payload bytes here. Simplification:
//! Linux expands only while a writer waits for room (SOCK_NOSPACE); this
//! expands on every ACK below cwnd, which changes nothing for a writer that
//! has room. A bulk sender that always has data is held by wmem_max
//! instead (autotuning at its end: Sender::wmem_segs).

/// MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)): measured
/// on the kernel backend's Linux 6.18 (x86_64) as the TCP_MAXSEG at which
/// SO_SNDBUF after connect() jumps from 2 × 10 × 1280 to 2 × 10 × 2304 bytes
/// (cubic): 512 → 25600, 513 → 46080, so 1024 = 512 + this.
pub const SEG_OVERHEAD_BYTES: u64 = 512;
/// SKB_DATA_ALIGN(sizeof(struct sk_buff)), from the same measurement
/// (per_mss 1280 = 1024 + 256 and 2304 = 2048 + 256).
pub const SKB_BYTES: u64 = 256;
/// TCP_INIT_CWND (include/net/tcp.h).
const TCP_INIT_CWND: u64 = 10;
/// MAX_TCP_HEADER: SEG_OVERHEAD_BYTES less SKB_DATA_ALIGN(sizeof(struct
/// skb_shared_info)), 320 bytes on x86_64 Linux 6.x (pahole).
const MAX_TCP_HEADER_BYTES: u64 = SEG_OVERHEAD_BYTES - 320;
/// GSO_LEGACY_MAX_SIZE, a device's default gso_max_size (include/linux/netdevice.h).
const GSO_MAX_SIZE_BYTES: u64 = 65536;

/// One socket's sk_sndbuf.
#[derive(Clone, Debug)]
pub struct SendBuffer {
    bytes: u64,
    per_mss: u64,
    factor: u64,
    max_bytes: u64,
    /// The segments one skb of a write holds (size_goal / mss).
    goal_segs: u64,
}

impl SendBuffer {
    /// A socket whose MSS is `mss_clamp` (TCP_MAXSEG) and segments carry
    /// `mss` payload bytes, with a CCA whose sndbuf_expand is `factor`,
    /// under tcp_wmem[2] = `max_bytes`, whose peer's window is
    /// `peer_window_bytes`; sized as at establishment (cwnd = IW).
    pub fn new(mss_clamp: u64, mss: u64, factor: u32, max_bytes: u64, peer_window_bytes: u64) -> SendBuffer {
        let per_mss = (mss_clamp + SEG_OVERHEAD_BYTES).next_power_of_two() + SKB_BYTES;
        // tcp_xmit_size_goal(): gso_max_size less the headers, at most half
        // the largest window the peer offered (tcp_bound_to_half_wnd()),
        // at least one MSS, in whole segments.
        let half_window = if peer_window_bytes > 536 { peer_window_bytes / 2 } else { peer_window_bytes };
        let goal = (GSO_MAX_SIZE_BYTES - 1 - MAX_TCP_HEADER_BYTES).min(half_window);
        let goal_segs = (goal / mss.max(1)).max(1);
        let mut b = SendBuffer { bytes: 0, per_mss, factor: u64::from(factor), max_bytes, goal_segs };
        b.expand(0, 0);
        b
    }

    /// Segments a blocking write can queue now, with `queued` written and
    /// not yet acknowledged and the buffer at most `cap_segs`: tcp_sendmsg_
    /// locked() fills skbs of size_goal and starts each new one only while
    /// sk_wmem_queued < sk_sndbuf (sk_stream_memory_free()), so the last
    /// may pass the buffer by less than one skb.
    pub fn room_segs(&self, queued: u64, mss: u64, cap_segs: u64) -> u64 {
        let sndbuf = (self.bytes / mss.max(1)).clamp(1, cap_segs);
        if queued >= sndbuf {
            return 0;
        }
        (sndbuf - queued).div_ceil(self.goal_segs) * self.goal_segs
    }

    /// The buffer starts at `bytes` (tcp_wmem[1], or a locked SO_SNDBUF)
    /// when that is more than the expansion gave.
    pub fn start_at(&mut self, bytes: u64) {
        self.bytes = self.bytes.max(bytes);
    }

    /// tcp_sndbuf_expand() at `cwnd` and `reordering`.
    #[inline]
    pub fn expand(&mut self, cwnd: u32, reordering: u32) {
        let segs = TCP_INIT_CWND.max(u64::from(cwnd)).max(u64::from(reordering) + 1);
        let want = (self.factor * segs * self.per_mss).min(self.max_bytes);
        self.bytes = self.bytes.max(want);
    }

    /// sk_sndbuf in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn established_sndbuf_matches_what_linux_reported_for_so_sndbuf() {
        // Linux 6.18, loopback, after connect(): cubic 46080 (TCP_MAXSEG
        // 1448), 332800 (8948), 25600 (500); bbr 69120 (1448).
        let at = |mss_clamp: u64, factor| SendBuffer::new(mss_clamp, mss_clamp - 12, factor, 4 << 20, 1 << 20).bytes();
        assert_eq!(at(1448, 2), 46080);
        assert_eq!(at(8948, 2), 332800);
        assert_eq!(at(500, 2), 25600);
        assert_eq!(at(1448, 3), 69120);
    }

    #[test]
    fn it_grows_with_cwnd_never_shrinks_and_stops_at_wmem_max() {
        let mut b = SendBuffer::new(1460, 1448, 2, 1 << 20, 1 << 20);
        b.expand(100, 3);
        assert_eq!(b.bytes(), 2 * 100 * 2304);
        b.expand(20, 3);
        assert_eq!(b.bytes(), 2 * 100 * 2304);
        b.expand(10_000, 3);
        assert_eq!(b.bytes(), 1 << 20);
    }

    #[test]
    fn a_write_may_pass_the_buffer_by_less_than_one_skb() {
        // 46080 bytes of sndbuf = 46 segments of 1000; one skb holds 65 of
        // them: a 47000-byte write into an empty buffer goes through (as
        // Linux takes it in packetdrill's accept-then-write scripts).
        let b = SendBuffer::new(1000, 1000, 2, 4 << 20, 256_000);
        assert_eq!(b.room_segs(0, 1000, u64::MAX), 65);
        assert_eq!(b.room_segs(45, 1000, u64::MAX), 65);
        assert_eq!(b.room_segs(46, 1000, u64::MAX), 0);
        // Half a small peer window bounds the skb: 8 segments of 1000.
        let b = SendBuffer::new(1000, 1000, 2, 4 << 20, 16_000);
        assert_eq!(b.room_segs(40, 1000, u64::MAX), 8);
    }
}
