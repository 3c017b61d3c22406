//! Packets as a conformance script writes them: TCP flags, sequence
//! numbers relative to each side's initial sequence number (packetdrill's
//! convention: the ISN is 0, so the first data byte is 1), byte lengths,
//! the unscaled window field and the options in wire order.

use crate::tcp::Codepoint;
use crate::units::Time;

/// TCP header flag bits (RFC 9293 §3.1, RFC 3168 §6.1 for ECE/CWR).
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const URG: u8 = 0x20;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

/// One TCP option, in the order it appears on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcpOption {
    Nop,
    Mss(u32),
    /// Window scale shift.
    WScale(u8),
    SackOk,
    /// SACK blocks [left, right) in relative sequence numbers.
    Sack(Vec<(u32, u32)>),
    Timestamp { val: u32, ecr: u32 },
}

/// A TCP segment on the scripted wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// When it crossed the wire (the socket's send time for outbound).
    pub time: Time,
    pub flags: u8,
    pub seq: u32,
    /// Payload bytes.
    pub len: u32,
    pub ack: u32,
    /// The 16-bit window field as sent (scaled by the sender's shift
    /// except on SYNs).
    pub win: u32,
    pub options: Vec<TcpOption>,
    /// The IP header's ECN field.
    pub codepoint: Codepoint,
}

impl Packet {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The timestamp option's values, if present.
    pub fn timestamp(&self) -> Option<(u32, u32)> {
        self.options.iter().find_map(|o| match o {
            TcpOption::Timestamp { val, ecr } => Some((*val, *ecr)),
            _ => None,
        })
    }

    pub fn mss(&self) -> Option<u32> {
        self.options.iter().find_map(|o| match o {
            TcpOption::Mss(m) => Some(*m),
            _ => None,
        })
    }

    pub fn wscale(&self) -> Option<u8> {
        self.options.iter().find_map(|o| match o {
            TcpOption::WScale(w) => Some(*w),
            _ => None,
        })
    }

    pub fn sack_ok(&self) -> bool {
        self.options.iter().any(|o| matches!(o, TcpOption::SackOk))
    }

    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        self.options
            .iter()
            .find_map(|o| match o {
                TcpOption::Sack(b) => Some(b.as_slice()),
                _ => None,
            })
            .unwrap_or(&[])
    }

    /// The flags as packetdrill prints them (`S.`, `P.`, `F.`, `SEW`, ...).
    pub fn flag_string(&self) -> String {
        let mut s = String::new();
        for (bit, c) in [(FIN, 'F'), (SYN, 'S'), (RST, 'R'), (PSH, 'P'), (ACK, '.'), (URG, 'U'), (ECE, 'E'), (CWR, 'W')] {
            if self.flags & bit != 0 {
                s.push(c);
            }
        }
        s
    }
}

/// The options of a SYN or SYN-ACK in the order Linux writes them
/// (tcp_options_write(): MSS; SACK-permitted folded into the timestamp
/// option's two leading NOPs when both are sent, else NOP NOP SACK-permitted
/// after it; NOP and window scale), as packetdrill shows Linux's SYNs.
pub fn syn_options(mss: u32, sack_ok: bool, ts: Option<(u32, u32)>, wscale: Option<u8>) -> Vec<TcpOption> {
    let mut o = vec![TcpOption::Mss(mss)];
    match ts {
        Some((val, ecr)) => {
            if sack_ok {
                o.push(TcpOption::SackOk);
            } else {
                o.extend([TcpOption::Nop, TcpOption::Nop]);
            }
            o.push(TcpOption::Timestamp { val, ecr });
        }
        None if sack_ok => o.extend([TcpOption::Nop, TcpOption::Nop, TcpOption::SackOk]),
        None => {}
    }
    if let Some(w) = wscale {
        o.extend([TcpOption::Nop, TcpOption::WScale(w)]);
    }
    o
}

/// Options of an established segment: NOP NOP timestamp when timestamps
/// were negotiated (tcp_established_options()).
pub fn data_options(ts: Option<(u32, u32)>) -> Vec<TcpOption> {
    match ts {
        Some((val, ecr)) => vec![TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val, ecr }],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syn_options_follow_linux_order() {
        use TcpOption::*;
        assert_eq!(syn_options(1460, true, None, Some(8)), vec![Mss(1460), Nop, Nop, SackOk, Nop, WScale(8)]);
        assert_eq!(
            syn_options(1460, true, Some((100, 0)), Some(8)),
            vec![Mss(1460), SackOk, Timestamp { val: 100, ecr: 0 }, Nop, WScale(8)]
        );
    }
}
