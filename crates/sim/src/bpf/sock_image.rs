//! The socket image: the simulator's connection state ([`ConnState`])
//! written into the `tcp_sock` bytes a program reads (before each hook),
//! and the fields it may write read back (after each hook and around each
//! kfunc), at the offsets of sock_layout.rs. Units become Linux's: sequence
//! numbers in bytes, times in µs, ns or jiffies, rates in bytes per second.

use super::memory::Memory;
use super::object::SOCK_BASE;
use super::sock_layout::*;
use crate::cc::jiffies::jiffies;
use crate::cc::{ConnState, RateSample};
use crate::units::{Rate, Time};

/// TCP_ESTABLISHED (include/net/tcp_states.h).
const TCP_ESTABLISHED: u8 = 1;
/// enum sk_pacing (include/net/sock.h).
pub const SK_PACING_NONE: u32 = 0;
pub const SK_PACING_NEEDED: u32 = 1;
pub const SK_PACING_FQ: u32 = 2;
/// TCP_ECN_OK (tp->ecn_flags bit 0; TCP_ECN_MODE_RFC3168 since 6.18).
const TCP_ECN_OK: u8 = 1;
/// icsk_ca_initialized: bit 5 of the icsk_ca_state byte.
const CA_INITIALIZED: u8 = 1 << 5;
/// sk_gso_max_size's default (GSO_LEGACY_MAX_SIZE).
const GSO_MAX_SIZE: u32 = crate::cc::GSO_MAX_SIZE as u32;

/// Sequence number of segment `seg`: the simulator numbers segments; the
/// kernel numbers bytes from the ISN (here 0, so the SYN is byte 0).
pub fn seq_of(seg: u64, mss_bytes: u32) -> u32 {
    (seg.wrapping_mul(mss_bytes as u64) as u32).wrapping_add(1)
}

fn put32(b: &mut [u8], at: u32, v: u32) {
    b[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: u32, v: u64) {
    b[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes());
}
fn get32(b: &[u8], at: u32) -> u32 {
    u32::from_le_bytes(b[at as usize..at as usize + 4].try_into().expect("4 bytes"))
}
fn get64(b: &[u8], at: u32) -> u64 {
    u64::from_le_bytes(b[at as usize..at as usize + 8].try_into().expect("8 bytes"))
}

/// How long the simulated host has been up when the run starts, as a
/// program's clocks see it: Linux's jiffies start at INITIAL_JIFFIES
/// (include/linux/jiffies.h, -300 s in 32 bits, so they wrap 5 minutes
/// after boot) and its monotonic clock at 0 at boot, so on a real host
/// neither reads 0 when a connection starts, and CCAs use 0 as "unset"
/// (htcp_state()'s `if (ca->undo_last_cong)`, BIC's and CUBIC's
/// `epoch_start == 0`). The simulator's native algorithms keep their own
/// clocks from the run's start and mark "unset" otherwise; a program gets
/// a host booted 10 minutes earlier.
pub const UPTIME: Time = Time::from_secs(600);

/// INITIAL_JIFFIES as jiffies_64 holds it: (unsigned int)(-300 * HZ).
const INITIAL_JIFFIES: u64 = (1u64 << 32) - 300 * crate::cc::jiffies::HZ;

/// jiffies_64 at simulated time `t` (bpf_jiffies64()).
pub fn kernel_jiffies(t: Time) -> u64 {
    INITIAL_JIFFIES + jiffies(t + UPTIME)
}

/// The monotonic clock at simulated time `t`, ns (bpf_ktime_get_ns(),
/// tcp_clock_ns()).
pub fn kernel_ns(t: Time) -> u64 {
    (t + UPTIME).as_nanos()
}

fn micros(t: Time) -> u64 {
    kernel_ns(t) / 1000
}

/// Writes `tp` into the image. Fields the stack does not keep in
/// [`ConnState`] (snd_cwnd_stamp, ecn_flags' other bits, icsk_ca_priv,
/// icsk_ack.pending) keep what the program last wrote.
pub fn write(mem: &mut Memory, tp: &ConnState, initialized: bool) {
    let b = mem.region_bytes_mut(SOCK_BASE);
    b[SKC_STATE as usize] = TCP_ESTABLISHED;
    put64(b, SK_PACING_RATE, tp.pacing_rate.bps() / 8);
    put64(b, SK_MAX_PACING_RATE, if tp.max_pacing_rate.0 == u64::MAX { u64::MAX } else { tp.max_pacing_rate.bps() / 8 });
    let status = if tp.pacing_enabled {
        SK_PACING_NEEDED
    } else if tp.qdisc_paces {
        SK_PACING_FQ
    } else {
        SK_PACING_NONE
    };
    put32(b, SK_PACING_STATUS, status);
    put32(b, SK_GSO_MAX_SIZE, GSO_MAX_SIZE);
    b[SK_PACING_SHIFT as usize] = crate::cc::SK_PACING_SHIFT as u8;
    b[ICSK_CA_STATE as usize] = tp.ca_state as u8 | if initialized { CA_INITIALIZED } else { 0 };
    // The sender receives no data: rcv_nxt stays at the peer's ISN + 1.
    put32(b, RCV_NXT, 1);
    put32(b, SND_NXT, seq_of(tp.snd_nxt, tp.mss_bytes));
    put32(b, SND_UNA, seq_of(tp.snd_una, tp.mss_bytes));
    put32(b, MSS_CACHE, tp.mss_bytes);
    put32(b, SND_CWND, tp.snd_cwnd);
    put32(b, SND_CWND_CNT, tp.snd_cwnd_cnt);
    put32(b, SND_CWND_CLAMP, tp.snd_cwnd_clamp);
    put32(b, PRIOR_CWND, tp.prior_cwnd);
    put32(b, SND_SSTHRESH, tp.snd_ssthresh);
    put32(b, LSNDTIME, kernel_jiffies(tp.lsndtime) as u32);
    put32(b, MAX_PACKETS_OUT, tp.max_packets_out);
    put32(b, PACKETS_OUT, tp.packets_out);
    put32(b, SACKED_OUT, tp.sacked_out);
    put32(b, LOST_OUT, tp.lost_out);
    put32(b, RETRANS_OUT, tp.retrans_out);
    put32(b, DELIVERED, tp.delivered as u32);
    put32(b, DELIVERED_CE, tp.delivered_ce as u32);
    put32(b, LOST, tp.lost as u32);
    put32(b, APP_LIMITED, tp.app_limited as u32);
    // tp->srtt_us is the smoothed RTT in µs << 3.
    put32(b, SRTT_US, ((tp.srtt.as_nanos() / 1000) << 3) as u32);
    let ecn = b[ECN_FLAGS as usize] & !TCP_ECN_OK;
    b[ECN_FLAGS as usize] = ecn | if tp.ecn_ok { TCP_ECN_OK } else { 0 };
    b[IS_CWND_LIMITED as usize] = u8::from(tp.cwnd_limited_flag);
    put64(b, TCP_MSTAMP, micros(tp.now));
    put64(b, TCP_CLOCK_CACHE, kernel_ns(tp.now));
    put64(b, TCP_WSTAMP_NS, kernel_ns(tp.tcp_wstamp));
    put64(b, DELIVERED_MSTAMP, micros(tp.delivered_mstamp));
    // tcp_min_rtt(): ~0U before the first sample.
    let min_rtt = if tp.min_rtt == Time::MAX { u32::MAX } else { (tp.min_rtt.as_nanos() / 1000) as u32 };
    put32(b, RTT_MIN + 4, min_rtt);
}

/// Reads the writable fields back into `tp`.
pub fn read(mem: &Memory, tp: &mut ConnState) {
    let b = mem.region_bytes(SOCK_BASE);
    tp.snd_cwnd = get32(b, SND_CWND);
    tp.snd_cwnd_cnt = get32(b, SND_CWND_CNT);
    tp.snd_ssthresh = get32(b, SND_SSTHRESH);
    let app_limited = get32(b, APP_LIMITED);
    if app_limited != tp.app_limited as u32 {
        tp.app_limited = app_limited as u64;
    }
    tp.ecn_ok = b[ECN_FLAGS as usize] & TCP_ECN_OK != 0;
    let rate = get64(b, SK_PACING_RATE);
    if rate != tp.pacing_rate.bps() / 8 {
        tp.pacing_rate = Rate(rate.saturating_mul(8));
    }
    tp.pacing_enabled = get32(b, SK_PACING_STATUS) == SK_PACING_NEEDED;
}

/// tp->snd_cwnd_stamp as the program last left it.
pub fn set_cwnd_stamp(mem: &mut Memory, jiffies: u32) {
    put32(mem.region_bytes_mut(SOCK_BASE), SND_CWND_STAMP, jiffies);
}

/// Writes rate sample `rs` into the rate_sample region (struct
/// rate_sample, tcp_rate_gen()): delivered -1 and interval 0 when invalid,
/// rtt_us -1 without an RTT.
pub fn write_rate_sample(mem: &mut Memory, rs: &RateSample) {
    let b = mem.region_bytes_mut(super::object::RATE_SAMPLE_BASE);
    put64(b, RS_PRIOR_MSTAMP, micros(rs.prior_mstamp));
    put32(b, RS_PRIOR_DELIVERED, rs.prior_delivered as u32);
    put32(b, RS_DELIVERED, rs.delivered as i32 as u32);
    put32(b, RS_DELIVERED_CE, rs.delivered_ce);
    put32(b, RS_LOSSES, rs.losses);
    put64(b, RS_INTERVAL_US, rs.interval.as_nanos() / 1000);
    put64(b, RS_RTT_US, rs.rtt.map_or(-1i64, |t| (t.as_nanos() / 1000) as i64) as u64);
    put32(b, RS_ACKED_SACKED, rs.acked_sacked);
    put32(b, RS_PRIOR_IN_FLIGHT, rs.prior_in_flight);
    b[RS_IS_APP_LIMITED as usize] = u8::from(rs.is_app_limited);
    b[RS_IS_RETRANS as usize] = u8::from(rs.is_retrans);
}
