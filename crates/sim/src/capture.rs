//! Packet captures of what the simulator models (base.py CapturePlan,
//! docs/captures.md): a pcap file per capture point, as tcpdump at the
//! sender's or the receiver's interface would write it, headers only.
//!
//! * **Where.** At the sender: each transmission as TCP hands it down (a
//!   TSO burst is one packet of n × mss payload, as tcpdump sees the skb
//!   before segmentation) and each ACK as it arrives. At the receiver: each
//!   data unit as it arrives (a GRO unit as one packet, as tcpdump sees it
//!   after GRO) and each ACK as the receiver sends it.
//! * **Headers.** IPv4 (ECN codepoint in the TOS byte, DF, TTL 64, a
//!   header checksum) and TCP with byte sequence numbers from an initial
//!   sequence number of 0, the window in the negotiated scale, the
//!   timestamp option when the connection carries it (TSval on the
//!   simulator's 1 ms clock, TSecr the last one seen from the other end)
//!   and the SACK and D-SACK blocks of each ACK (RFC 2018, RFC 2883). The
//!   payload is not kept: each record holds the headers up to the snap
//!   length, with the packet's full length as its original length. The
//!   TCP checksum is left 0 (its payload is not modelled).
//! * **Handshake.** The simulator starts a connection established; a
//!   SYN, SYN-ACK and ACK with its options (MSS, SACK permitted,
//!   timestamps, window scale) are written at the stream's start so a
//!   reader learns the window scale.
//! * **Addresses.** Sender host k (in the plan's sender order) is
//!   10.1.k.2, the receiver 10.0.0.2; stream j of the run sends from port
//!   32768 + j to port 5201 + its flow group, the Linux engine's port.
//!
//! A capture stops at its `until` time, and at `max_bytes` (then marked
//! truncated). A run with a capture takes the event loop's instance with
//! every step (`Sim::run_until`, FQ: the same results, segment by segment),
//! and the hooks are compiled out of the other instances, so a run without
//! one pays nothing for them.

use crate::plan;
use crate::scenario::{err, ConfigError};
use crate::tcp::{Ack, Codepoint};
use crate::units::Time;

/// The pcap magic of a file with nanosecond timestamps.
const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_RAW: each record starts with its IP header.
const LINKTYPE_RAW: u32 = 101;
const IP_HEADER_BYTES: usize = 20;
const TCP_HEADER_BYTES: usize = 20;
const PCAP_RECORD_HEADER_BYTES: u64 = 16;

const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

/// Which end a capture is taken at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// What to capture (the plan's `capture`, checked).
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureSpec {
    /// Flow groups captured (empty: every TCP group).
    pub groups: Vec<u32>,
    pub sides: Vec<Side>,
    pub snaplen: u32,
    pub until: Time,
    pub max_bytes: u64,
}

impl CaptureSpec {
    /// The plan's `capture` (None: no capture); errors name the field.
    pub fn from_plan(p: Option<&plan::CapturePlan>) -> Result<Option<CaptureSpec>, ConfigError> {
        let Some(p) = p else { return Ok(None) };
        let sides = match p.side.as_deref() {
            Some("sender") | None => vec![Side::Sender],
            Some("receiver") => vec![Side::Receiver],
            Some("both") => vec![Side::Sender, Side::Receiver],
            Some(s) => return err("capture.side", format!("expected sender, receiver or both, got '{s}'")),
        };
        let snaplen = p.snaplen_bytes.map_or(96, |w| w.0);
        if !(40..=65535).contains(&snaplen) {
            return err("capture.snaplen_bytes", format!("from 40 (the IP and TCP headers) to 65535, got {snaplen}"));
        }
        let until_s = p.duration_s.unwrap_or(f64::INFINITY);
        if until_s.is_nan() || until_s <= 0.0 {
            return err("capture.duration_s", format!("must be > 0, got {until_s}"));
        }
        let max_bytes = p.max_bytes.map_or(u64::MAX, |w| w.0);
        Ok(Some(CaptureSpec {
            groups: p.groups.iter().flatten().map(|w| w.0 as u32).collect(),
            sides,
            snaplen: snaplen as u32,
            until: if until_s.is_finite() { Time::from_secs_f64(until_s) } else { Time::MAX },
            max_bytes,
        }))
    }
}

/// One stream as its packets show it.
#[derive(Clone, Debug)]
pub struct StreamMeta {
    pub group: u32,
    pub sender_host: u8,
    pub port: u16,
    pub mss: u32,
    /// The receiver's window scale (its rmem), which the sender's ACKs use too.
    pub wscale: u8,
    pub timestamps: bool,
    pub ecn: bool,
    /// The window each end advertises, bytes.
    pub window_bytes: u64,
}

/// One capture point's file being written: the receiver's, or one sender
/// host's (its index in the plan's sender order).
#[derive(Debug)]
struct File {
    side: Side,
    host: u8,
    bytes: Vec<u8>,
    truncated: bool,
}

/// The captures of a run.
#[derive(Debug)]
pub struct Capture {
    spec: CaptureSpec,
    streams: Vec<StreamMeta>,
    captured: Vec<bool>,
    /// Per stream: the last TSval each end sent (the other's TSecr).
    last_tsval: Vec<[u32; 2]>,
    files: Vec<File>,
    ip_id: u16,
}

impl Capture {
    pub fn new(spec: CaptureSpec, streams: Vec<StreamMeta>) -> Capture {
        let captured = streams.iter().map(|s| spec.groups.is_empty() || spec.groups.contains(&s.group)).collect();
        let mut hosts: Vec<u8> = streams.iter().map(|s| s.sender_host).collect();
        hosts.sort_unstable();
        hosts.dedup();
        let points: Vec<(Side, u8)> = spec.sides.iter().flat_map(|&side| match side {
            Side::Sender => hosts.iter().map(|&h| (side, h)).collect::<Vec<_>>(),
            Side::Receiver => vec![(side, 0)],
        }).collect();
        let files = points.into_iter().map(|(side, host)| {
            let mut bytes = Vec::with_capacity(1 << 16);
            // magic; version 2.4 (major, minor as u16 LE); thiszone, sigfigs; snaplen; link type
            bytes.extend_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
            bytes.extend_from_slice(&2u16.to_le_bytes());
            bytes.extend_from_slice(&4u16.to_le_bytes());
            bytes.extend_from_slice(&[0; 8]);
            bytes.extend_from_slice(&spec.snaplen.to_le_bytes());
            bytes.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
            File { side, host, bytes, truncated: false }
        }).collect();
        let n = streams.len();
        Capture { spec, streams, captured, last_tsval: vec![[0; 2]; n], files, ip_id: 0 }
    }

    /// Whether stream `i` is captured at `now`.
    #[inline]
    pub fn wants(&self, i: u32, now: Time) -> bool {
        now <= self.spec.until && self.captured[i as usize]
    }

    fn has(&self, side: Side) -> bool {
        self.spec.sides.contains(&side)
    }

    /// Stream `i` starts at `now`: its handshake, at the capture points.
    pub fn handshake(&mut self, now: Time, i: u32) {
        if !self.wants(i, now) {
            return;
        }
        let s = &self.streams[i as usize];
        // TCP_MAXSEG: the payload plus the timestamp option (wire.rs).
        let syn = Options::Syn { mss: s.mss + if s.timestamps { 12 } else { 0 }, wscale: s.wscale, ts: s.timestamps };
        let (ecn_syn, ecn_synack) = if s.ecn { (ECE | CWR, ECE) } else { (0, 0) };
        let wnd = s.window_bytes;
        for side in [Side::Sender, Side::Receiver] {
            if self.has(side) {
                self.write(side, now, i, true, 0, 0, SYN | ecn_syn, 0, wnd, Codepoint::NotEct, syn);
                self.write(side, now, i, false, 0, 1, SYN | ACK | ecn_synack, 0, wnd, Codepoint::NotEct, syn);
                self.write(side, now, i, true, 1, 1, ACK, 0, wnd, Codepoint::NotEct, Options::None);
            }
        }
    }

    /// `n` segments from `seq` (`segs`) of stream `i` seen at `side` at `now`.
    #[inline]
    pub fn data(&mut self, side: Side, now: Time, i: u32, segs: (u64, u32), ecn: crate::tcp::SegEcn, tsval: u32) {
        let (seq, n) = segs;
        if !self.wants(i, now) || !self.has(side) {
            return;
        }
        let mss = u64::from(self.streams[i as usize].mss);
        let flags = ACK | PSH | if ecn.cwr { CWR } else { 0 };
        let len = u64::from(n) * mss;
        self.last_tsval[i as usize][0] = tsval;
        let opts = if self.streams[i as usize].timestamps { Options::Ts(tsval) } else { Options::None };
        let wnd = self.streams[i as usize].window_bytes;
        self.write(side, now, i, true, 1 + seq * mss, 1, flags, len, wnd, ecn.codepoint, opts);
    }

    /// An ACK of stream `i` seen at `side` at `now`.
    #[inline]
    pub fn ack(&mut self, side: Side, now: Time, i: u32, ack: &Ack) {
        if !self.wants(i, now) || !self.has(side) {
            return;
        }
        let mss = u64::from(self.streams[i as usize].mss);
        let tsval = crate::tcp::timestamps::tsval(now);
        self.last_tsval[i as usize][1] = tsval;
        let flags = ACK | if ack.ece { ECE } else { 0 };
        let mut blocks = [(0u32, 0u32); 4];
        let mut n = 0;
        let byte = |seg: u64| (1 + seg * mss) as u32;
        if let Some(d) = ack.dsack {
            blocks[0] = (byte(d), byte(d + 1));
            n = 1;
        }
        for &(a, b) in ack.sack_blocks() {
            if n < blocks.len() {
                blocks[n] = (byte(a), byte(b));
                n += 1;
            }
        }
        let opts = Options::Ack { ts: self.streams[i as usize].timestamps.then_some(tsval), blocks, n };
        let wnd = u64::from(ack.wnd) * mss;
        self.write(side, now, i, false, 1, 1 + ack.ack * mss, flags, 0, wnd, Codepoint::NotEct, opts);
    }

    #[allow(clippy::too_many_arguments)]
    fn write(&mut self, side: Side, now: Time, i: u32, from_sender: bool, seq: u64, ack: u64, flags: u8, len: u64,
             wnd_bytes: u64, ecn: Codepoint, opts: Options) {
        let s = &self.streams[i as usize];
        let mut tcp_opts = [0u8; 40];
        let olen = opts.write(&mut tcp_opts, self.last_tsval[i as usize][usize::from(from_sender)]);
        let header = IP_HEADER_BYTES + TCP_HEADER_BYTES + olen;
        let total = header as u64 + len;
        let sender_ip = [10, 1, s.sender_host, 2];
        let receiver_ip = [10, 0, 0, 2];
        let (src, dst) = if from_sender { (sender_ip, receiver_ip) } else { (receiver_ip, sender_ip) };
        let receiver_port = 5201 + s.group as u16;
        let (sport, dport) = if from_sender { (s.port, receiver_port) } else { (receiver_port, s.port) };
        let scale = if flags & SYN != 0 { 0 } else { s.wscale };
        let window = (wnd_bytes >> scale).min(0xFFFF) as u16;
        self.ip_id = self.ip_id.wrapping_add(1);
        let mut h = [0u8; IP_HEADER_BYTES + TCP_HEADER_BYTES + 40];
        h[0] = 0x45;
        h[1] = match ecn {
            Codepoint::NotEct => 0,
            Codepoint::Ect0 => 2,
            Codepoint::Ce => 3,
        };
        h[2..4].copy_from_slice(&(total.min(0xFFFF) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&self.ip_id.to_be_bytes());
        h[6] = 0x40; // DF
        h[8] = 64;
        h[9] = 6;
        h[12..16].copy_from_slice(&src);
        h[16..20].copy_from_slice(&dst);
        let sum = checksum(&h[..IP_HEADER_BYTES]);
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        let t = &mut h[IP_HEADER_BYTES..];
        t[0..2].copy_from_slice(&sport.to_be_bytes());
        t[2..4].copy_from_slice(&dport.to_be_bytes());
        t[4..8].copy_from_slice(&(seq as u32).to_be_bytes());
        t[8..12].copy_from_slice(&(ack as u32).to_be_bytes());
        t[12] = (((TCP_HEADER_BYTES + olen) / 4) as u8) << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&window.to_be_bytes());
        t[TCP_HEADER_BYTES..TCP_HEADER_BYTES + olen].copy_from_slice(&tcp_opts[..olen]);
        let kept = header.min(self.spec.snaplen as usize);
        let max = self.spec.max_bytes;
        let host = if side == Side::Sender { s.sender_host } else { 0 };
        let Some(file) = self.files.iter_mut().find(|f| f.side == side && f.host == host) else { return };
        if file.truncated || file.bytes.len() as u64 + PCAP_RECORD_HEADER_BYTES + kept as u64 > max {
            file.truncated = true;
            return;
        }
        let ns = now.as_nanos();
        file.bytes.extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        file.bytes.extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        file.bytes.extend_from_slice(&(kept as u32).to_le_bytes());
        file.bytes.extend_from_slice(&(total.min(u64::from(u32::MAX)) as u32).to_le_bytes());
        file.bytes.extend_from_slice(&h[..kept]);
    }

    /// The files: (side, sender host index (0 for the receiver), pcap
    /// bytes, truncated at max_bytes).
    pub fn finish(self) -> Vec<(Side, u8, Vec<u8>, bool)> {
        self.files.into_iter().map(|f| (f.side, f.host, f.bytes, f.truncated)).collect()
    }
}

/// The TCP options a packet carries.
#[derive(Clone, Copy, Debug)]
enum Options {
    None,
    /// Timestamps (NOP, NOP, TS) with this TSval.
    Ts(u32),
    /// An ACK: timestamps if any, then SACK blocks (NOP, NOP, SACK).
    Ack { ts: Option<u32>, blocks: [(u32, u32); 4], n: usize },
    /// A SYN's: MSS, SACK permitted, timestamps if any, window scale, in
    /// Linux's layout (tcp_options_write()).
    Syn { mss: u32, wscale: u8, ts: bool },
}

impl Options {
    /// Writes the options (padded to 4 bytes) into `out`; the TSecr echoes
    /// `tsecr`. Returns their length.
    fn write(&self, out: &mut [u8; 40], tsecr: u32) -> usize {
        let mut k = 0;
        let ts = |out: &mut [u8; 40], k: &mut usize, tsval: u32| {
            out[*k..*k + 2].copy_from_slice(&[1, 1]);
            out[*k + 2..*k + 4].copy_from_slice(&[8, 10]);
            out[*k + 4..*k + 8].copy_from_slice(&tsval.to_be_bytes());
            out[*k + 8..*k + 12].copy_from_slice(&tsecr.to_be_bytes());
            *k += 12;
        };
        match *self {
            Options::None => {}
            Options::Ts(v) => ts(out, &mut k, v),
            Options::Syn { mss, wscale, ts: with_ts } => {
                out[0..4].copy_from_slice(&[2, 4, (mss >> 8) as u8, mss as u8]);
                if with_ts {
                    // SACK permitted and timestamps share one word.
                    out[4..6].copy_from_slice(&[4, 2]);
                    out[6..8].copy_from_slice(&[8, 10]);
                    out[8..16].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
                    k = 16;
                } else {
                    out[4..8].copy_from_slice(&[1, 1, 4, 2]);
                    k = 8;
                }
                out[k..k + 4].copy_from_slice(&[1, 3, 3, wscale]);
                k += 4;
            }
            Options::Ack { ts: t, blocks, n } => {
                if let Some(v) = t {
                    ts(out, &mut k, v);
                }
                // Room for what is left of the 40 bytes (Linux sends at
                // most 3 blocks with timestamps, 4 without).
                let n = n.min((40 - k - 4) / 8);
                if n > 0 {
                    out[k..k + 4].copy_from_slice(&[1, 1, 5, (2 + 8 * n) as u8]);
                    k += 4;
                    for &(a, b) in &blocks[..n] {
                        out[k..k + 4].copy_from_slice(&a.to_be_bytes());
                        out[k + 4..k + 8].copy_from_slice(&b.to_be_bytes());
                        k += 8;
                    }
                }
            }
        }
        k
    }
}

/// The IPv4 header checksum (RFC 791, RFC 1071).
fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ip_checksum_of_a_known_header() {
        // RFC 1071's worked example bytes, as an IPv4 header with its sum 0.
        let h = [0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01,
                 0xc0, 0xa8, 0x00, 0xc7];
        assert_eq!(checksum(&h), 0xb861);
    }
}
