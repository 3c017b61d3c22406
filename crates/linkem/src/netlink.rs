//! nfnetlink_queue messages, encoded and decoded by pure functions.
//!
//! Layout (include/uapi/linux/netlink.h, netfilter/nfnetlink.h,
//! netfilter/nfnetlink_queue.h): nlmsghdr (16 bytes, host order) +
//! nfgenmsg (family, version, res_id = queue number in big endian) +
//! attributes (nlattr: u16 len, u16 type, payload padded to 4 bytes).
//! Attribute payloads of nfnetlink_queue are big endian.

pub const NETLINK_NETFILTER: i32 = 12;
const NFNL_SUBSYS_QUEUE: u16 = 3;
pub const NFQNL_MSG_PACKET: u16 = 0;
pub const NFQNL_MSG_VERDICT: u16 = 1;
pub const NFQNL_MSG_CONFIG: u16 = 2;
pub const NFQNL_MSG_VERDICT_BATCH: u16 = 3;

const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
pub const NLMSG_ERROR: u16 = 2;

// enum nfqnl_attr_type
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_TIMESTAMP: u16 = 4;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CAP_LEN: u16 = 13;
const NFQA_SKB_INFO: u16 = 14;
// enum nfqnl_attr_config
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
pub const NFQA_CFG_F_FAIL_OPEN: u32 = 1 << 0;
pub const NFQA_CFG_F_GSO: u32 = 1 << 2;
pub const NFQA_SKB_GSO: u32 = 1 << 1;
pub const NFQNL_CFG_CMD_BIND: u8 = 1;
pub const NFQNL_COPY_PACKET: u8 = 2;

pub const NF_DROP: u32 = 0;
pub const NF_ACCEPT: u32 = 1;
const NF_QUEUE: u32 = 3;
/// NF_VERDICT_QBITS: the queue number of an NF_QUEUE verdict sits above it.
const NF_VERDICT_QBITS: u32 = 16;

/// The verdict that hands a packet to NFQUEUE `queue` (NF_QUEUE_NR();
/// nf_reinject() queues it again at the same hook, and a queue without
/// NFQA_CFG_F_GSO segments a GSO packet first: nfqnl_enqueue_packet()).
pub fn requeue_verdict(queue: u16) -> u32 {
    ((queue as u32) << NF_VERDICT_QBITS) | NF_QUEUE
}

const AF_INET: u8 = 2;
const AF_UNSPEC: u8 = 0;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Builds one netlink message for the queue subsystem, at the end of `buf`
/// (several messages in one buffer go out in one send(2): the kernel's
/// netlink_rcv_skb processes each in turn).
struct MsgBuilder {
    buf: Vec<u8>,
    start: usize,
}

impl MsgBuilder {
    fn new(msg_type: u16, flags: u16, seq: u32, family: u8, queue: u16) -> Self {
        Self::append_to(Vec::with_capacity(64), msg_type, flags, seq, family, queue)
    }

    fn append_to(mut buf: Vec<u8>, msg_type: u16, flags: u16, seq: u32, family: u8, queue: u16) -> Self {
        let start = buf.len();
        buf.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_len, patched in finish()
        buf.extend_from_slice(&((NFNL_SUBSYS_QUEUE << 8) | msg_type).to_ne_bytes());
        buf.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_pid: kernel
        buf.push(family); // nfgenmsg.nfgen_family
        buf.push(0); // NFNETLINK_V0
        buf.extend_from_slice(&queue.to_be_bytes()); // res_id
        MsgBuilder { buf, start }
    }

    fn attr(mut self, attr_type: u16, payload: &[u8]) -> Self {
        let len = 4 + payload.len();
        self.buf.extend_from_slice(&(len as u16).to_ne_bytes());
        self.buf.extend_from_slice(&attr_type.to_ne_bytes());
        self.buf.extend_from_slice(payload);
        self.buf.resize(align4(self.buf.len()), 0);
        self
    }

    fn finish(mut self) -> Vec<u8> {
        let len = (self.buf.len() - self.start) as u32;
        self.buf[self.start..self.start + 4].copy_from_slice(&len.to_ne_bytes());
        self.buf
    }
}

/// NFQNL_MSG_CONFIG / NFQNL_CFG_CMD_BIND for `queue` (asks for an ACK).
pub fn encode_bind(seq: u32, queue: u16) -> Vec<u8> {
    // struct nfqnl_msg_config_cmd { __u8 command; __u8 _pad; __be16 pf; }
    let cmd = [NFQNL_CFG_CMD_BIND, 0, 0, AF_INET];
    MsgBuilder::new(NFQNL_MSG_CONFIG, NLM_F_ACK, seq, AF_UNSPEC, queue)
        .attr(NFQA_CFG_CMD, &cmd)
        .finish()
}

/// Copy mode, queue length and flags. `flags` are set within `mask`, so
/// FAIL_OPEN and GSO are switched off explicitly unless requested.
pub fn encode_params(seq: u32, queue: u16, copy_range: u32, maxlen: u32, gso: bool) -> Vec<u8> {
    // struct nfqnl_msg_config_params { __be32 copy_range; __u8 copy_mode; } __packed
    let mut params = copy_range.to_be_bytes().to_vec();
    params.push(NFQNL_COPY_PACKET);
    let mask = NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO;
    let flags = if gso { NFQA_CFG_F_GSO } else { 0 };
    MsgBuilder::new(NFQNL_MSG_CONFIG, NLM_F_ACK, seq, AF_UNSPEC, queue)
        .attr(NFQA_CFG_PARAMS, &params)
        .attr(NFQA_CFG_QUEUE_MAXLEN, &maxlen.to_be_bytes())
        .attr(NFQA_CFG_MASK, &mask.to_be_bytes())
        .attr(NFQA_CFG_FLAGS, &flags.to_be_bytes())
        .finish()
}

/// Appends to `out` a verdict for one packet (drops and NF_QUEUE hand-offs
/// leave the FIFO early; gathered with the batch verdicts that follow them,
/// they go out in one send(2), in order, so no batch verdict covers them
/// first).
pub fn append_verdict(out: Vec<u8>, queue: u16, id: u32, verdict: u32) -> Vec<u8> {
    let mut hdr = [0u8; 8];
    hdr[..4].copy_from_slice(&verdict.to_be_bytes());
    hdr[4..].copy_from_slice(&id.to_be_bytes());
    MsgBuilder::append_to(out, NFQNL_MSG_VERDICT, 0, 0, AF_UNSPEC, queue)
        .attr(NFQA_VERDICT_HDR, &hdr)
        .finish()
}

/// Appends to `out` a NFQNL_MSG_VERDICT_BATCH: the verdict applies to every
/// queued packet with an id <= `id` (nfqnl_recv_verdict_batch), which is
/// what a FIFO delay line with constant delay needs.
pub fn append_verdict_batch(out: Vec<u8>, queue: u16, id: u32, verdict: u32) -> Vec<u8> {
    let mut hdr = [0u8; 8];
    hdr[..4].copy_from_slice(&verdict.to_be_bytes());
    hdr[4..].copy_from_slice(&id.to_be_bytes());
    MsgBuilder::append_to(out, NFQNL_MSG_VERDICT_BATCH, 0, 0, AF_UNSPEC, queue)
        .attr(NFQA_VERDICT_HDR, &hdr)
        .finish()
}

/// Appends to `out` a verdict for one packet that also replaces its
/// contents with `packet` (NFQA_PAYLOAD; nfqnl_mangle). `packet` must be
/// the whole packet: the kernel trims the skb to the length given.
pub fn append_verdict_with_packet(out: Vec<u8>, queue: u16, id: u32, verdict: u32, packet: &[u8]) -> Vec<u8> {
    let mut hdr = [0u8; 8];
    hdr[..4].copy_from_slice(&verdict.to_be_bytes());
    hdr[4..].copy_from_slice(&id.to_be_bytes());
    MsgBuilder::append_to(out, NFQNL_MSG_VERDICT, 0, 0, AF_UNSPEC, queue)
        .attr(NFQA_VERDICT_HDR, &hdr)
        .attr(NFQA_PAYLOAD, packet)
        .finish()
}

/// What we need of one queued packet.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Packet {
    pub queue: u16,
    pub id: u32,
    /// Length of the packet in the kernel (NFQA_CAP_LEN, else payload length).
    pub len: u32,
    /// The skb was a GSO super-packet (NFQA_SKB_INFO & NFQA_SKB_GSO).
    pub gso: bool,
    /// Kernel receive timestamp (NFQA_TIMESTAMP, CLOCK_REALTIME ns) if set.
    pub tstamp_ns: Option<u64>,
    /// TCP payload bytes of an IPv4/TCP packet, None for other packets.
    pub tcp_payload: Option<u32>,
    /// The IPv4 ECN codepoint (ecn.rs), None for other packets.
    pub ecn: Option<u8>,
    /// Sequence number and (source, destination) ports of an IPv4/TCP
    /// packet, None for other packets.
    pub tcp_seq: Option<u32>,
    pub tcp_ports: Option<(u16, u16)>,
    /// Where the copied packet bytes (NFQA_PAYLOAD) sit in the datagram
    /// given to [`decode`]; shorter than `len` when the copy was truncated.
    pub data: std::ops::Range<usize>,
}

/// One decoded netlink message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Packet(Packet),
    /// NLMSG_ERROR: 0 is an ACK, negative is -errno.
    Error { seq: u32, errno: i32 },
    Other { msg_type: u16 },
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// TCP payload length of an IPv4 packet whose first bytes are `ip`.
pub fn ipv4_tcp_payload(ip: &[u8]) -> Option<u32> {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
        return None;
    }
    let ihl = ((ip[0] & 0x0f) as usize) * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let doff = ((*ip.get(ihl + 12)? >> 4) as usize) * 4;
    Some(total.saturating_sub(ihl + doff) as u32)
}

/// The TCP header of an IPv4/TCP packet whose first bytes are `ip`.
fn ipv4_tcp_header(ip: &[u8]) -> Option<&[u8]> {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
        return None;
    }
    let ihl = ((ip[0] & 0x0f) as usize) * 4;
    ip.get(ihl..ihl + 8)
}

/// Sequence number and (source, destination) ports of an IPv4/TCP packet.
pub fn ipv4_tcp_seq_ports(ip: &[u8]) -> Option<(u32, (u16, u16))> {
    let t = ipv4_tcp_header(ip)?;
    Some((be32(&t[4..8]), (u16::from_be_bytes([t[0], t[1]]), u16::from_be_bytes([t[2], t[3]]))))
}

/// `attrs` starts `at` bytes into the datagram.
fn decode_packet(queue: u16, mut attrs: &[u8], mut at: usize) -> Option<Packet> {
    let mut p = Packet { queue, ..Default::default() };
    let mut have_id = false;
    let mut cap_len = None;
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let ty = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff; // strip NLA_F_NESTED/NET_BYTEORDER
        if len < 4 || len > attrs.len() {
            break;
        }
        let body = &attrs[4..len];
        match ty {
            NFQA_PACKET_HDR if body.len() >= 4 => {
                p.id = be32(body);
                have_id = true;
            }
            NFQA_PAYLOAD => {
                p.len = body.len() as u32;
                p.tcp_payload = ipv4_tcp_payload(body);
                p.ecn = crate::ecn::ipv4_codepoint(body);
                if let Some((seq, ports)) = ipv4_tcp_seq_ports(body) {
                    (p.tcp_seq, p.tcp_ports) = (Some(seq), Some(ports));
                }
                p.data = at + 4..at + len;
            }
            NFQA_CAP_LEN if body.len() >= 4 => cap_len = Some(be32(body)),
            NFQA_SKB_INFO if body.len() >= 4 => p.gso = be32(body) & NFQA_SKB_GSO != 0,
            // struct nfqnl_msg_packet_timestamp { __aligned_be64 sec; __aligned_be64 usec; }
            NFQA_TIMESTAMP if body.len() >= 16 => {
                p.tstamp_ns = Some(be64(body) * 1_000_000_000 + be64(&body[8..]) * 1000)
            }
            _ => {}
        }
        let step = align4(len).min(attrs.len());
        attrs = &attrs[step..];
        at += step;
    }
    if let Some(c) = cap_len {
        p.len = c;
    }
    have_id.then_some(p)
}

/// Decodes every netlink message in one datagram.
pub fn decode(mut buf: &[u8]) -> Vec<Message> {
    let mut out = Vec::new();
    let mut at = 0; // offset of `buf` in the datagram
    while buf.len() >= 16 {
        let len = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        let ty = u16::from_ne_bytes([buf[4], buf[5]]);
        let seq = u32::from_ne_bytes([buf[8], buf[9], buf[10], buf[11]]);
        if len < 16 || len > buf.len() {
            break;
        }
        let body = &buf[16..len];
        if ty == NLMSG_ERROR && body.len() >= 4 {
            let errno = i32::from_ne_bytes([body[0], body[1], body[2], body[3]]);
            out.push(Message::Error { seq, errno });
        } else if ty == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET && body.len() >= 4 {
            let queue = u16::from_be_bytes([body[2], body[3]]);
            match decode_packet(queue, &body[4..], at + 16 + 4) {
                Some(p) => out.push(Message::Packet(p)),
                None => out.push(Message::Other { msg_type: ty }),
            }
        } else {
            out.push(Message::Other { msg_type: ty });
        }
        let step = align4(len).min(buf.len());
        buf = &buf[step..];
        at += step;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_verdict_batch(queue: u16, id: u32, verdict: u32) -> Vec<u8> {
        append_verdict_batch(Vec::new(), queue, id, verdict)
    }

    /// A NFQNL_MSG_PACKET as the kernel sends it (captured on x86-64 from
    /// queue 0 of the router namespace, copy_range 128, 1500-byte MTU):
    /// packet id 7, hw proto 0x0800, hook FORWARD, a TCP segment of 1448
    /// payload bytes (IP total 1500, TCP header 32), CAP_LEN 1500, SKB_INFO 0.
    fn captured_packet() -> Vec<u8> {
        let mut ip = vec![0u8; 52];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&1500u16.to_be_bytes());
        ip[9] = 6;
        ip[20 + 12] = 8 << 4; // doff = 8 words = 32 bytes
        let mut m = MsgBuilder::new(NFQNL_MSG_PACKET, 0, 0, AF_INET, 0);
        let mut hdr = 7u32.to_be_bytes().to_vec();
        hdr.extend_from_slice(&[0x08, 0x00, 2]);
        m = m.attr(NFQA_PACKET_HDR, &hdr);
        m = m.attr(NFQA_SKB_INFO, &0u32.to_be_bytes());
        m = m.attr(NFQA_CAP_LEN, &1500u32.to_be_bytes());
        m = m.attr(NFQA_PAYLOAD, &ip);
        m.finish()
    }

    #[test]
    fn decodes_packet_id_length_and_tcp_payload() {
        let msgs = decode(&captured_packet());
        assert_eq!(msgs.len(), 1);
        let Message::Packet(p) = &msgs[0] else { panic!("{msgs:?}") };
        assert_eq!(p.id, 7);
        assert_eq!(p.queue, 0);
        assert_eq!(p.len, 1500);
        assert_eq!(p.tcp_payload, Some(1448));
        assert!(!p.gso);
        assert_eq!(p.tstamp_ns, None);
        assert_eq!(p.ecn, Some(crate::ecn::NOT_ECT));
        assert_eq!((p.tcp_seq, p.tcp_ports), (Some(0), Some((0, 0))));
    }

    #[test]
    fn decodes_tcp_sequence_number_and_ports() {
        let mut ip = vec![0u8; 52];
        ip[0] = 0x45;
        ip[9] = 6;
        ip[20..22].copy_from_slice(&40000u16.to_be_bytes());
        ip[22..24].copy_from_slice(&5201u16.to_be_bytes());
        ip[24..28].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        assert_eq!(ipv4_tcp_seq_ports(&ip), Some((0xdead_beef, (40000, 5201))));
        ip[9] = 17; // UDP
        assert_eq!(ipv4_tcp_seq_ports(&ip), None);
    }

    #[test]
    fn requeue_verdict_carries_the_queue_number_above_nf_verdict_qbits() {
        // NF_QUEUE_NR(9) = (9 << 16) | NF_QUEUE (include/uapi/linux/netfilter.h).
        assert_eq!(requeue_verdict(9), 0x0009_0003);
    }

    #[test]
    fn packet_data_range_points_at_the_copied_ip_packet_in_the_datagram() {
        // Second of two messages, so the range must carry the first one's length.
        let mut buf = captured_packet();
        let first = buf.len();
        let mut second = captured_packet();
        second[first - 52 + 1] = crate::ecn::ECT_0; // TOS of the second's IP header
        buf.extend_from_slice(&second);
        let msgs = decode(&buf);
        let Message::Packet(p) = &msgs[1] else { panic!("{msgs:?}") };
        assert_eq!(p.data.len(), 52);
        assert_eq!(&buf[p.data.clone()], &second[first - 52..]);
        assert_eq!(p.ecn, Some(crate::ecn::ECT_0));
    }

    #[test]
    fn verdicts_append_into_one_buffer_each_with_its_own_length() {
        let out = append_verdict_batch(Vec::new(), 0, 9, NF_ACCEPT);
        let n1 = out.len();
        let out = append_verdict_with_packet(out, 0, 10, NF_ACCEPT, &[0x45, 3, 0, 5, 1]);
        assert_eq!(&out[..n1], &encode_verdict_batch(0, 9, NF_ACCEPT)[..]);
        let second = &out[n1..];
        assert_eq!(u32::from_ne_bytes(second[0..4].try_into().unwrap()) as usize, second.len()); // the 5-byte payload padded to 8
        assert_eq!(u16::from_ne_bytes(second[4..6].try_into().unwrap()), (3 << 8) | NFQNL_MSG_VERDICT);
        assert_eq!(&second[28..32], &10u32.to_be_bytes()); // id
        assert_eq!(u16::from_ne_bytes(second[32..34].try_into().unwrap()), 9); // payload attr len
        assert_eq!(u16::from_ne_bytes(second[34..36].try_into().unwrap()), NFQA_PAYLOAD);
        assert_eq!(&second[36..41], &[0x45, 3, 0, 5, 1]);
    }

    #[test]
    fn decodes_two_messages_in_one_datagram_and_acks() {
        let mut buf = captured_packet();
        // NLMSG_ERROR with error 0 (an ACK) for seq 5.
        let mut ack = Vec::new();
        ack.extend_from_slice(&36u32.to_ne_bytes());
        ack.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        ack.extend_from_slice(&0u16.to_ne_bytes());
        ack.extend_from_slice(&5u32.to_ne_bytes());
        ack.extend_from_slice(&0u32.to_ne_bytes());
        ack.extend_from_slice(&0i32.to_ne_bytes());
        ack.extend_from_slice(&[0u8; 16]);
        buf.extend_from_slice(&ack);
        let msgs = decode(&buf);
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1], Message::Error { seq: 5, errno: 0 });
    }

    #[test]
    fn single_verdicts_append_after_what_the_buffer_holds() {
        let out = append_verdict(vec![1, 2, 3, 4], 65000, 77, requeue_verdict(65000));
        assert_eq!(&out[..4], &[1, 2, 3, 4]);
        let m = &out[4..];
        assert_eq!(u32::from_ne_bytes(m[0..4].try_into().unwrap()) as usize, m.len());
        assert_eq!(m.len(), 16 + 4 + 4 + 8);
        assert_eq!(u16::from_ne_bytes(m[4..6].try_into().unwrap()), (3 << 8) | NFQNL_MSG_VERDICT);
        assert_eq!(&m[18..20], &65000u16.to_be_bytes()); // res_id
        assert_eq!(&m[24..28], &requeue_verdict(65000).to_be_bytes());
        assert_eq!(&m[28..32], &77u32.to_be_bytes()); // id
    }

    #[test]
    fn verdict_batch_layout() {
        let m = encode_verdict_batch(1, 0x01020304, NF_ACCEPT);
        assert_eq!(m.len(), 16 + 4 + 4 + 8);
        assert_eq!(u32::from_ne_bytes(m[0..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes(m[4..6].try_into().unwrap()), (3 << 8) | 3);
        assert_eq!(&m[18..20], &[0, 1]); // res_id = queue 1, big endian
        assert_eq!(&m[24..28], &[0, 0, 0, 1]); // NF_ACCEPT
        assert_eq!(&m[28..32], &[1, 2, 3, 4]); // id
    }

    #[test]
    fn params_switch_off_fail_open_and_gso() {
        let m = encode_params(2, 0, 128, 1000, false);
        // params attr: len 9 (4 + 5), padded to 12
        assert_eq!(u16::from_ne_bytes(m[20..22].try_into().unwrap()), 9);
        assert_eq!(&m[24..28], &128u32.to_be_bytes());
        assert_eq!(m[28], NFQNL_COPY_PACKET);
        // mask then flags
        let tail = &m[m.len() - 16..];
        assert_eq!(&tail[4..8], &(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO).to_be_bytes());
        assert_eq!(&tail[12..16], &0u32.to_be_bytes());
    }

    #[test]
    fn non_tcp_has_no_payload() {
        let mut ip = vec![0u8; 40];
        ip[0] = 0x45;
        ip[9] = 1; // ICMP
        assert_eq!(ipv4_tcp_payload(&ip), None);
    }
}
