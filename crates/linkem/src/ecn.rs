//! The IPv4 header's ECN field on the delay line: reading a packet's
//! codepoint and marking it CE, as a Linux qdisc does (INET_ECN_set_ce /
//! IP_ECN_set_ce in include/net/inet_ecn.h), with the header checksum
//! fixed incrementally (RFC 1624 eqn. 3).
//!
//! Only IPv4 is handled: the kernel backend's namespaces talk IPv4 only
//! (path.py), and a packet that is not IPv4 reads as not ECN-capable, so
//! it is never marked (only tail-dropped).

/// RFC 3168 §5 codepoints of the two ECN bits (INET_ECN_*).
pub const NOT_ECT: u8 = 0b00;
pub const ECT_1: u8 = 0b01;
pub const ECT_0: u8 = 0b10;
pub const CE: u8 = 0b11;
const ECN_MASK: u8 = 0b11;
/// Offsets in the IPv4 header: TOS (DSCP + ECN) and header checksum.
const TOS: usize = 1;
const CHECK: usize = 10;
const MIN_HEADER: usize = 20;

/// The ECN codepoint of an IPv4 packet whose first bytes are `ip`, or
/// None if it is not IPv4.
pub fn ipv4_codepoint(ip: &[u8]) -> Option<u8> {
    (ip.len() >= MIN_HEADER && ip[0] >> 4 == 4).then(|| ip[TOS] & ECN_MASK)
}

/// Whether a codepoint asks a marking queue to consult its discipline:
/// ECT(0), ECT(1) or CE, as the simulator's `SegEcn::is_ect` (a CE packet
/// counts as marked again, as INET_ECN_set_ce returns 1 for it).
pub fn is_ect(codepoint: u8) -> bool {
    codepoint != NOT_ECT
}

/// Sets CE in the IPv4 header `ip` and fixes its checksum; returns
/// whether the packet now carries CE (false for a not-ECT packet, which is
/// left alone, and for a packet that is not IPv4). As IP_ECN_set_ce.
pub fn set_ce(ip: &mut [u8]) -> bool {
    let Some(codepoint) = ipv4_codepoint(ip) else { return false };
    match codepoint {
        NOT_ECT => false,
        ECT_0 | ECT_1 => {
            // The 16-bit word holding TOS (version/IHL in its high byte).
            let old = u16::from_be_bytes([ip[0], ip[TOS]]);
            ip[TOS] |= CE;
            let new = u16::from_be_bytes([ip[0], ip[TOS]]);
            let hc = u16::from_be_bytes([ip[CHECK], ip[CHECK + 1]]);
            ip[CHECK..CHECK + 2].copy_from_slice(&checksum_update(hc, old, new).to_be_bytes());
            true
        }
        _ => true, // CE already
    }
}

/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), the header checksum after one
/// 16-bit word changed from `m` to `m_new`, in one's complement arithmetic
/// (what a full recomputation gives, unlike eqn. 2's -0 corner case).
pub fn checksum_update(hc: u16, m: u16, m_new: u16) -> u16 {
    let sum = (!hc as u32) + (!m as u32) + (m_new as u32);
    !fold(sum)
}

/// One's complement sum folded to 16 bits.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The IPv4 header checksum of `header` computed from scratch (RFC 791:
/// the one's complement of the one's complement sum of its 16-bit words,
/// the checksum field taken as zero). For tests.
#[cfg(test)]
pub fn ipv4_header_checksum(header: &[u8]) -> u16 {
    let mut sum = 0u32;
    for (i, w) in header.chunks(2).enumerate() {
        if i == CHECK / 2 {
            continue;
        }
        sum += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32;
    }
    !fold(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 20-byte IPv4/TCP header with TOS `tos` and a valid checksum.
    fn header(tos: u8, id: u16, ttl: u8) -> Vec<u8> {
        let mut h = vec![0x45, tos, 0x05, 0xdc, 0, 0, 0x40, 0, ttl, 6, 0, 0, 198, 18, 1, 1, 198, 19, 0, 1];
        h[4..6].copy_from_slice(&id.to_be_bytes());
        let c = ipv4_header_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    fn checksum_of(h: &[u8]) -> u16 {
        u16::from_be_bytes([h[10], h[11]])
    }

    #[test]
    fn set_ce_turns_ect0_and_ect1_into_ce_keeping_dscp() {
        for ect in [ECT_0, ECT_1] {
            let mut h = header(0xb8 | ect, 1, 64); // DSCP EF + ECT
            assert!(set_ce(&mut h));
            assert_eq!(h[1], 0xb8 | CE);
            assert_eq!(ipv4_codepoint(&h), Some(CE));
        }
    }

    #[test]
    fn set_ce_leaves_not_ect_packets_alone() {
        let mut h = header(0x00, 1, 64);
        let before = h.clone();
        assert!(!set_ce(&mut h));
        assert_eq!(h, before);
    }

    #[test]
    fn set_ce_on_a_ce_packet_reports_it_marked_and_changes_nothing() {
        let mut h = header(CE, 1, 64);
        let before = h.clone();
        assert!(set_ce(&mut h));
        assert_eq!(h, before);
    }

    #[test]
    fn non_ipv4_packets_are_not_ect_and_never_marked() {
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x60;
        assert_eq!(ipv4_codepoint(&v6), None);
        assert!(!set_ce(&mut v6));
        assert_eq!(ipv4_codepoint(&[0x45, 2]), None); // too short
    }

    #[test]
    fn incremental_checksum_after_marking_equals_a_full_recomputation() {
        // Every id and TTL pair in a coarse grid, both ECT codepoints: the
        // RFC 1624 update must agree with RFC 791's sum, including headers
        // whose checksum is 0x0000 or 0xffff-adjacent.
        let mut checked = 0;
        for ect in [ECT_0, ECT_1] {
            for id in (0..=u16::MAX).step_by(251) {
                for ttl in [1u8, 63, 64, 128, 255] {
                    let mut h = header(ect, id, ttl);
                    assert!(set_ce(&mut h));
                    assert_eq!(checksum_of(&h), ipv4_header_checksum(&h), "id {id} ttl {ttl} ect {ect}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 2500);
    }

    #[test]
    fn a_marked_header_verifies_as_a_receiver_checks_it() {
        // ip_fast_csum over the whole header (checksum included) folds to 0xffff.
        let mut h = header(ECT_0, 0x1c46, 64);
        assert!(set_ce(&mut h));
        let sum: u32 = h.chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
        assert_eq!(fold(sum), 0xffff);
    }

    #[test]
    fn rfc1624_update_matches_its_worked_example() {
        // RFC 1624 §4: HC = 0xdd2f, m = 0x5555 -> m' = 0x3285 gives HC' = 0x0000.
        assert_eq!(checksum_update(0xdd2f, 0x5555, 0x3285), 0x0000);
    }
}
