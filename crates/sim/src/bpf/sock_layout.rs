//! The simulator's `struct tcp_sock` as a BPF congestion control sees it:
//! the kernel types and fields a program may name (include/linux/tcp.h,
//! include/net/inet_connection_sock.h, include/net/sock.h, include/net/tcp.h
//! struct ack_sample and struct rate_sample), each at an offset of this
//! layout, and which of them a program may write. Programs name fields
//! through CO-RE relocations (core.rs) by type and field name, as libbpf
//! relocates them against the running kernel's BTF, so one object runs on
//! both: only the offsets differ. The layout is the simulator's own (the
//! nested structs start at offset 0 as in Linux: a `struct sock *` is a
//! `struct tcp_sock *`). A field the table lacks is one the simulator does
//! not model, and a program that reads it is refused at load, naming it.
//!
//! Writable fields are those net/ipv4/bpf_tcp_ca.c
//! (bpf_tcp_ca_btf_struct_access()) lets a BPF congestion control write:
//! sk_pacing_rate, sk_pacing_status, icsk_ca_priv, icsk_ack.pending,
//! snd_cwnd, snd_cwnd_cnt, snd_cwnd_stamp, snd_ssthresh, ecn_flags and
//! app_limited.

/// What a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// An integer of the field's size.
    Int { signed: bool },
    /// A nested struct, by its name in [`TYPES`].
    Struct(&'static str),
    /// An array of `count` integers or structs of `elem_size` bytes.
    Array { elem: &'static FieldType, elem_size: u32, count: u32 },
}

/// One field of a kernel type: its byte offset in the type, its size,
/// its bit position and width if it is a bitfield (bits counted from the
/// least significant bit of the byte at `offset`), and whether a BPF
/// congestion control may write it.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub offset: u32,
    pub size: u32,
    pub bitfield: Option<(u32, u32)>,
    pub ty: FieldType,
    pub writable: bool,
}

/// One kernel type of the layout.
#[derive(Clone, Copy, Debug)]
pub struct TypeLayout {
    pub name: &'static str,
    pub size: u32,
    pub fields: &'static [Field],
}

const U: FieldType = FieldType::Int { signed: false };
const S: FieldType = FieldType::Int { signed: true };

const fn f(name: &'static str, offset: u32, size: u32, ty: FieldType) -> Field {
    Field { name, offset, size, bitfield: None, ty, writable: false }
}
const fn w(name: &'static str, offset: u32, size: u32) -> Field {
    Field { name, offset, size, bitfield: None, ty: U, writable: true }
}
const fn bits(name: &'static str, offset: u32, bit: u32, width: u32) -> Field {
    Field { name, offset, size: 1, bitfield: Some((bit, width)), ty: U, writable: false }
}

// struct sock_common and struct sock (include/net/sock.h).
pub const SKC_STATE: u32 = 0;
pub const SK_PACING_RATE: u32 = 8;
pub const SK_MAX_PACING_RATE: u32 = 16;
pub const SK_PACING_STATUS: u32 = 24;
pub const SK_GSO_MAX_SIZE: u32 = 28;
pub const SK_PACING_SHIFT: u32 = 32;
const SOCK_SIZE: u32 = 40;

// struct inet_connection_sock (include/net/inet_connection_sock.h).
/// The byte holding icsk_ca_state:5 (bits 0–4) and the flags after it.
pub const ICSK_CA_STATE: u32 = SOCK_SIZE;
pub const ICSK_ACK_PENDING: u32 = SOCK_SIZE + 1;
pub const ICSK_CA_PRIV: u32 = SOCK_SIZE + 8;
/// ICSK_CA_PRIV_SIZE (include/net/inet_connection_sock.h): 104 bytes.
pub const ICSK_CA_PRIV_SIZE: u32 = 104;
const ICSK_SIZE: u32 = ICSK_CA_PRIV + ICSK_CA_PRIV_SIZE;

// struct tcp_sock (include/linux/tcp.h): u32 fields, then u8, then u64.
const TP: u32 = ICSK_SIZE;
pub const RCV_NXT: u32 = TP;
pub const SND_NXT: u32 = TP + 4;
pub const SND_UNA: u32 = TP + 8;
pub const MSS_CACHE: u32 = TP + 12;
pub const SND_CWND: u32 = TP + 16;
pub const SND_CWND_CNT: u32 = TP + 20;
pub const SND_CWND_CLAMP: u32 = TP + 24;
pub const SND_CWND_STAMP: u32 = TP + 28;
pub const PRIOR_CWND: u32 = TP + 32;
pub const SND_SSTHRESH: u32 = TP + 36;
pub const LSNDTIME: u32 = TP + 40;
pub const MAX_PACKETS_OUT: u32 = TP + 44;
pub const PACKETS_OUT: u32 = TP + 48;
pub const SACKED_OUT: u32 = TP + 52;
pub const LOST_OUT: u32 = TP + 56;
pub const RETRANS_OUT: u32 = TP + 60;
pub const DELIVERED: u32 = TP + 64;
pub const DELIVERED_CE: u32 = TP + 68;
pub const LOST: u32 = TP + 72;
pub const APP_LIMITED: u32 = TP + 76;
pub const SRTT_US: u32 = TP + 80;
pub const ECN_FLAGS: u32 = TP + 84;
/// The byte holding is_cwnd_limited:1 (bit 0).
pub const IS_CWND_LIMITED: u32 = TP + 85;
pub const TCP_MSTAMP: u32 = TP + 88;
pub const TCP_CLOCK_CACHE: u32 = TP + 96;
pub const TCP_WSTAMP_NS: u32 = TP + 104;
pub const DELIVERED_MSTAMP: u32 = TP + 112;
/// struct minmax rtt_min: s[] of {u32 t; u32 v;}; tcp_min_rtt() reads s[0].v.
pub const RTT_MIN: u32 = TP + 120;
/// Bytes of the whole socket image.
pub const TCP_SOCK_SIZE: u32 = TP + 144;

// struct ack_sample (include/net/tcp.h).
pub const ACK_PKTS_ACKED: u32 = 0;
pub const ACK_RTT_US: u32 = 4;
pub const ACK_IN_FLIGHT: u32 = 8;
pub const ACK_SAMPLE_SIZE: u32 = 12;

// struct rate_sample (include/net/tcp.h), the fields the simulator's
// delivery-rate sampler keeps (tcp/rate.rs); it has no prior_delivered_ce,
// snd_interval_us, rcv_interval_us, last_end_seq or is_ack_delayed.
pub const RS_PRIOR_MSTAMP: u32 = 0;
pub const RS_PRIOR_DELIVERED: u32 = 8;
pub const RS_DELIVERED: u32 = 12;
pub const RS_DELIVERED_CE: u32 = 16;
pub const RS_LOSSES: u32 = 20;
pub const RS_INTERVAL_US: u32 = 24;
pub const RS_RTT_US: u32 = 32;
pub const RS_ACKED_SACKED: u32 = 40;
pub const RS_PRIOR_IN_FLIGHT: u32 = 44;
pub const RS_IS_APP_LIMITED: u32 = 48;
pub const RS_IS_RETRANS: u32 = 49;
pub const RATE_SAMPLE_SIZE: u32 = 56;

const MINMAX_SAMPLE: FieldType = FieldType::Struct("minmax_sample");

/// Every type a program may name, with its fields.
pub const TYPES: &[TypeLayout] = &[
    TypeLayout { name: "sock_common", size: 8, fields: &[f("skc_state", SKC_STATE, 1, U)] },
    TypeLayout {
        name: "sock",
        size: SOCK_SIZE,
        fields: &[
            f("__sk_common", 0, 8, FieldType::Struct("sock_common")),
            w("sk_pacing_rate", SK_PACING_RATE, 8),
            f("sk_max_pacing_rate", SK_MAX_PACING_RATE, 8, U),
            w("sk_pacing_status", SK_PACING_STATUS, 4),
            f("sk_gso_max_size", SK_GSO_MAX_SIZE, 4, U),
            f("sk_pacing_shift", SK_PACING_SHIFT, 1, U),
        ],
    },
    TypeLayout { name: "inet_sock", size: SOCK_SIZE, fields: &[f("sk", 0, SOCK_SIZE, FieldType::Struct("sock"))] },
    TypeLayout {
        name: "inet_connection_sock",
        size: ICSK_SIZE,
        fields: &[
            f("icsk_inet", 0, SOCK_SIZE, FieldType::Struct("inet_sock")),
            bits("icsk_ca_state", ICSK_CA_STATE, 0, 5),
            bits("icsk_ca_initialized", ICSK_CA_STATE, 5, 1),
            bits("icsk_ca_setsockopt", ICSK_CA_STATE, 6, 1),
            bits("icsk_ca_dst_locked", ICSK_CA_STATE, 7, 1),
            f("icsk_ack", ICSK_ACK_PENDING, 1, FieldType::Struct("icsk_ack")),
            Field {
                name: "icsk_ca_priv",
                offset: ICSK_CA_PRIV,
                size: ICSK_CA_PRIV_SIZE,
                bitfield: None,
                ty: FieldType::Array { elem: &U, elem_size: 8, count: ICSK_CA_PRIV_SIZE / 8 },
                writable: true,
            },
        ],
    },
    // The anonymous struct of icsk_ack, named by its member.
    TypeLayout { name: "icsk_ack", size: 1, fields: &[w("pending", 0, 1)] },
    TypeLayout {
        name: "tcp_sock",
        size: TCP_SOCK_SIZE,
        fields: &[
            f("inet_conn", 0, ICSK_SIZE, FieldType::Struct("inet_connection_sock")),
            f("rcv_nxt", RCV_NXT, 4, U),
            f("snd_nxt", SND_NXT, 4, U),
            f("snd_una", SND_UNA, 4, U),
            f("mss_cache", MSS_CACHE, 4, U),
            w("snd_cwnd", SND_CWND, 4),
            w("snd_cwnd_cnt", SND_CWND_CNT, 4),
            f("snd_cwnd_clamp", SND_CWND_CLAMP, 4, U),
            w("snd_cwnd_stamp", SND_CWND_STAMP, 4),
            f("prior_cwnd", PRIOR_CWND, 4, U),
            w("snd_ssthresh", SND_SSTHRESH, 4),
            f("lsndtime", LSNDTIME, 4, U),
            f("max_packets_out", MAX_PACKETS_OUT, 4, U),
            f("packets_out", PACKETS_OUT, 4, U),
            f("sacked_out", SACKED_OUT, 4, U),
            f("lost_out", LOST_OUT, 4, U),
            f("retrans_out", RETRANS_OUT, 4, U),
            f("delivered", DELIVERED, 4, U),
            f("delivered_ce", DELIVERED_CE, 4, U),
            f("lost", LOST, 4, U),
            w("app_limited", APP_LIMITED, 4),
            f("srtt_us", SRTT_US, 4, U),
            w("ecn_flags", ECN_FLAGS, 1),
            bits("is_cwnd_limited", IS_CWND_LIMITED, 0, 1),
            f("tcp_mstamp", TCP_MSTAMP, 8, U),
            f("tcp_clock_cache", TCP_CLOCK_CACHE, 8, U),
            f("tcp_wstamp_ns", TCP_WSTAMP_NS, 8, U),
            f("delivered_mstamp", DELIVERED_MSTAMP, 8, U),
            f("rtt_min", RTT_MIN, 8, FieldType::Struct("minmax")),
        ],
    },
    TypeLayout {
        name: "minmax",
        size: 8,
        fields: &[Field {
            name: "s",
            offset: 0,
            size: 8,
            bitfield: None,
            ty: FieldType::Array { elem: &MINMAX_SAMPLE, elem_size: 8, count: 1 },
            writable: false,
        }],
    },
    // Only the windowed minimum itself (s[0].v, tcp_min_rtt()): the
    // simulator keeps neither its time stamp nor the runner-up samples.
    TypeLayout { name: "minmax_sample", size: 8, fields: &[f("v", 4, 4, U)] },
    TypeLayout {
        name: "ack_sample",
        size: ACK_SAMPLE_SIZE,
        fields: &[
            f("pkts_acked", ACK_PKTS_ACKED, 4, U),
            f("rtt_us", ACK_RTT_US, 4, S),
            f("in_flight", ACK_IN_FLIGHT, 4, U),
        ],
    },
    TypeLayout {
        name: "rate_sample",
        size: RATE_SAMPLE_SIZE,
        fields: &[
            f("prior_mstamp", RS_PRIOR_MSTAMP, 8, U),
            f("prior_delivered", RS_PRIOR_DELIVERED, 4, U),
            f("delivered", RS_DELIVERED, 4, S),
            f("delivered_ce", RS_DELIVERED_CE, 4, S),
            f("losses", RS_LOSSES, 4, S),
            f("interval_us", RS_INTERVAL_US, 8, S),
            f("rtt_us", RS_RTT_US, 8, S),
            f("acked_sacked", RS_ACKED_SACKED, 4, U),
            f("prior_in_flight", RS_PRIOR_IN_FLIGHT, 4, U),
            f("is_app_limited", RS_IS_APP_LIMITED, 1, U),
            f("is_retrans", RS_IS_RETRANS, 1, U),
        ],
    },
];

/// The type named `name`.
pub fn type_named(name: &str) -> Option<&'static TypeLayout> {
    TYPES.iter().find(|t| t.name == name)
}

impl TypeLayout {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        // The tables are 'static; find through the static slice.
        self.fields.iter().find(|f| f.name == name)
    }
}

/// The names of the writable fields, for error messages.
pub fn writable_fields() -> Vec<String> {
    TYPES
        .iter()
        .flat_map(|t| t.fields.iter().filter(|f| f.writable).map(move |f| format!("{}.{}", t.name, f.name)))
        .collect()
}

/// Byte ranges of the socket image a program may write (for the memory's
/// write mask): the writable fields of the socket types, at their place
/// in `tcp_sock`.
pub fn writable_ranges() -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    collect_writable("tcp_sock", 0, &mut out);
    out
}

fn collect_writable(type_name: &str, base: u32, out: &mut Vec<(u32, u32)>) {
    let Some(t) = type_named(type_name) else { return };
    for field in t.fields {
        if field.writable {
            out.push((base + field.offset, field.size));
        } else if let FieldType::Struct(inner) = field.ty {
            collect_writable(inner, base + field.offset, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_fit_their_types_and_do_not_overlap() {
        for t in TYPES {
            type Span = (u32, u32, Option<(u32, u32)>);
            let mut spans: Vec<Span> = t.fields.iter().map(|f| (f.offset, f.offset + f.size, f.bitfield)).collect();
            spans.sort();
            for f in t.fields {
                assert!(f.offset + f.size <= t.size, "{}.{} past the end", t.name, f.name);
                if let FieldType::Struct(inner) = f.ty {
                    assert_eq!(type_named(inner).unwrap().size, f.size, "{}.{}", t.name, f.name);
                }
            }
            for pair in spans.windows(2) {
                let bitfields_sharing_a_byte = pair[0].2.is_some() && pair[1].2.is_some() && pair[0].0 == pair[1].0;
                assert!(pair[0].1 <= pair[1].0 || bitfields_sharing_a_byte, "{}: {:?}", t.name, pair);
            }
        }
    }

    #[test]
    fn the_writable_bytes_are_bpf_tcp_ca_btf_struct_accesss_list() {
        let names = writable_fields();
        assert_eq!(names.len(), 10, "{names:?}");
        let ranges = writable_ranges();
        assert!(ranges.contains(&(SND_CWND, 4)) && ranges.contains(&(ICSK_CA_PRIV, 104)));
        assert!(ranges.contains(&(SK_PACING_RATE, 8)) && ranges.contains(&(ICSK_ACK_PENDING, 1)));
        assert_eq!(ranges.len(), 10);
    }
}
