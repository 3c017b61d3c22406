//! One NFQUEUE direction of the delay line: its netlink socket, the held
//! packets and their release in batch verdicts (see main.rs for the whole),
//! and, in unit mode, GSO packets held whole or split (units.rs).

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};

use fatpipe_sim::path::Bottleneck;
use fatpipe_sim::units::Time;

use crate::args::{Args, QueueSpec};
use crate::moving::{Moves, MovingQueue};
use crate::netlink::{self, Message, Packet};
use crate::stats::QueueStats;
use crate::units::{self, Fate, SharedSplitFates, SplitUnit};
use crate::{clock_ns, ecn, link, mono_ns, os_err, rng};

/// Netlink messages read per recvmmsg(2) call.
const RECV_BATCH: usize = 64;
/// Bytes per message buffer: a packet message carries at most copy_range
/// (128) bytes of packet plus attributes, well under this.
pub const RECV_MSG_BYTES: usize = 4096;
/// Copy range of a marking queue: whole packets (NFQNL_MAX_COPY_RANGE), as
/// a verdict's NFQA_PAYLOAD replaces the packet and trims it to its length.
const WHOLE_PACKET_COPY: u32 = 0xffff;
/// Message buffer of a marking queue: a whole packet plus attributes.
pub const WHOLE_PACKET_MSG_BYTES: usize = WHOLE_PACKET_COPY as usize + 1024;
/// Verdict bytes gathered before a send(2): well under a netlink socket's
/// default send buffer (wmem_default, 208 KiB) with one more whole packet.
const VERDICT_FLUSH_BYTES: usize = 64 * 1024;

/// Buffers and headers for one recvmmsg(2) call.
pub struct RecvBuffers {
    data: Vec<u8>,
    msg_bytes: usize,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl RecvBuffers {
    pub fn new(msg_bytes: usize) -> Self {
        let mut b = RecvBuffers {
            data: vec![0u8; RECV_BATCH * msg_bytes],
            msg_bytes,
            iovs: Vec::with_capacity(RECV_BATCH),
            hdrs: Vec::with_capacity(RECV_BATCH),
        };
        for i in 0..RECV_BATCH {
            // SAFETY: the pointer stays inside `data`, which is never resized.
            let base = unsafe { b.data.as_mut_ptr().add(i * msg_bytes) };
            b.iovs.push(libc::iovec { iov_base: base.cast(), iov_len: msg_bytes });
        }
        for i in 0..RECV_BATCH {
            // SAFETY: a zeroed mmsghdr is valid; we then point it at iovs[i].
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = &mut b.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            b.hdrs.push(h);
        }
        b
    }

    /// recvmmsg(MSG_DONTWAIT): number of messages read, or -1 (errno set).
    fn receive(&mut self, fd: RawFd) -> i32 {
        for h in self.hdrs.iter_mut() {
            h.msg_len = 0;
        }
        // SAFETY: hdrs point at RECV_BATCH valid iovecs into `data`.
        unsafe {
            libc::recvmmsg(fd, self.hdrs.as_mut_ptr(), RECV_BATCH as u32, libc::MSG_DONTWAIT, std::ptr::null_mut())
        }
    }

    fn message(&self, i: usize) -> &[u8] {
        let len = (self.hdrs[i].msg_len as usize).min(self.msg_bytes);
        &self.data[i * self.msg_bytes..i * self.msg_bytes + len]
    }
}

/// How a queue treats GSO packets (units.rs).
enum Role {
    /// Every packet on its own: the kernel segments GSO packets first.
    Segments,
    /// Unit mode: GSO packets whole unless a segment inside is lost,
    /// dropped or marked; the fates of those units go to the split queue
    /// (shared with it: it may run on another thread) before the verdict
    /// that hands the unit over is sent.
    Units { split: SharedSplitFates },
    /// The split queue of a unit-mode queue, with the fates of its units.
    Split(SharedSplitFates),
}

/// A netlink socket bound to one NFQUEUE.
pub struct QueueSocket {
    pub fd: RawFd,
    pub spec: QueueSpec,
    /// Random loss of this queue's data segments (the simulator's stages).
    loss: rng::QueueLoss,
    bottleneck: Option<Bottleneck>,
    /// Held packets: (id, due time in CLOCK_MONOTONIC ns, marked CE), FIFO.
    pub held: VecDeque<(u32, u64, bool)>,
    /// The whole packets of the held CE-marked ones, in the same order.
    marked: VecDeque<Vec<u8>>,
    /// Packet buffers to reuse (no allocation per mark once warm).
    spare: Vec<Vec<u8>>,
    /// Verdict messages being gathered for one send(2): single verdicts
    /// (drops, hand-offs to the split queue) appended while reading, batch
    /// verdicts while releasing; sent in that order.
    out: Vec<u8>,
    pub stats: QueueStats,
    pub enobufs: u64,
    role: Role,
    /// Scratch: the fates of the current packet's segments.
    fates: Vec<Fate>,
    /// The path's dynamics in this queue's direction (moving.rs).
    moving: Option<Box<MovingQueue>>,
    /// Packets may overtake each other (jitter with reordering): `held` is
    /// kept in due order and each packet leaves with its own verdict (a
    /// batch verdict accepts every lower id).
    single_verdicts: bool,
}

fn send_all(fd: RawFd, msg: &[u8]) -> io::Result<()> {
    // SAFETY: msg is a valid buffer of msg.len() bytes.
    let n = unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), 0) };
    if n < 0 {
        return Err(os_err("netlink send"));
    }
    Ok(())
}

fn wait_ack(fd: RawFd, seq: u32) -> io::Result<()> {
    let mut buf = vec![0u8; 8192];
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(os_err("netlink recv (config ack)"));
        }
        for m in netlink::decode(&buf[..n as usize]) {
            if let Message::Error { seq: s, errno } = m {
                if s == seq {
                    if errno != 0 {
                        return Err(io::Error::from_raw_os_error(-errno));
                    }
                    return Ok(());
                }
            }
        }
    }
}

impl QueueSocket {
    /// The queue `spec` describes (in unit mode if it names a split queue).
    pub fn open(spec: QueueSpec, a: &Args) -> io::Result<Self> {
        let role = if spec.split_queue.is_some() {
            Role::Units { split: Arc::new(Mutex::new(Default::default())) }
        } else {
            Role::Segments
        };
        Self::open_as(spec, a, role)
    }

    /// The split queue of unit-mode queue `of`: no loss and no bottleneck
    /// of its own (the fates were decided by `of`), whole-packet copies if
    /// `of` marks CE, and GSO packets segmented by the kernel.
    pub fn open_split(of: &QueueSocket, a: &Args) -> Option<io::Result<Self>> {
        let Role::Units { split } = &of.role else { return None };
        let fates = Arc::clone(split);
        let of = &of.spec;
        let num = of.split_queue?;
        let spec = QueueSpec {
            num,
            name: format!("{}-split", of.name),
            delay_ns: of.delay_ns,
            loss: 0.0,
            group_loss: Vec::new(),
            rate_bps: 0.0,
            buffer_bytes: u64::MAX,
            aqm: of.aqm,
            split_queue: None,
            mss: Default::default(),
            moves: None,
        };
        Some(Self::open_as(spec, a, Role::Split(fates)))
    }

    fn open_as(spec: QueueSpec, a: &Args, role: Role) -> io::Result<Self> {
        // SAFETY: plain socket(2) call.
        let fd = unsafe {
            libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, netlink::NETLINK_NETFILTER)
        };
        if fd < 0 {
            return Err(os_err("socket(AF_NETLINK, NETLINK_NETFILTER)"));
        }
        // SAFETY: zeroed sockaddr_nl is valid; we pass its size.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as u16;
        let rc = unsafe {
            libc::bind(fd, (&addr as *const libc::sockaddr_nl).cast(), std::mem::size_of::<libc::sockaddr_nl>() as u32)
        };
        if rc < 0 {
            return Err(os_err("bind netlink"));
        }
        let rcvbuf = a.rcvbuf_bytes as libc::c_int;
        // SO_RCVBUFFORCE: root may exceed net.core.rmem_max (a large buffer
        // is what keeps bursts of a fat pipe from overflowing the socket).
        let rc = unsafe {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&rcvbuf as *const libc::c_int).cast(), 4)
        };
        if rc < 0 {
            return Err(os_err("setsockopt SO_RCVBUFFORCE"));
        }
        let seq = spec.num as u32 * 10 + 1;
        send_all(fd, &netlink::encode_bind(seq, spec.num))?;
        wait_ack(fd, seq).map_err(|e| io::Error::new(e.kind(), format!("bind queue {}: {e}", spec.num)))?;
        // A unit-mode queue marks nothing itself (its split queue does), so
        // it never needs whole copies of 64 KB packets; it takes GSO packets
        // whole (NFQA_CFG_F_GSO), every other queue has them segmented.
        let units = matches!(role, Role::Units { .. });
        let copy_range = if spec.marks() && !units { WHOLE_PACKET_COPY } else { a.copy_range };
        send_all(fd, &netlink::encode_params(seq + 1, spec.num, copy_range, a.maxlen, a.gso || units))?;
        wait_ack(fd, seq + 1).map_err(|e| io::Error::new(e.kind(), format!("configure queue {}: {e}", spec.num)))?;
        // Non-blocking from now on: the main loop drains with MSG_DONTWAIT.
        let loss = rng::QueueLoss::new(a.seed, &spec);
        let mut bottleneck = (spec.rate_bps > 0.0).then(|| link::bottleneck(spec.rate_bps, spec.buffer_bytes, spec.aqm));
        let moving = spec.moves.and_then(|m| a.dynamics.as_ref().map(|p| Box::new(p.queue(a.seed, m, spec.delay_ns))));
        if let (Some(b), Some(Moves::Data), Some(p)) = (bottleneck.as_mut(), spec.moves, a.dynamics.as_ref()) {
            if let Some(profile) = p.rate_profile(spec.rate_bps) {
                b.set_rate_profile(profile);
            }
            if let Some(trace) = p.trace_service() {
                b.set_trace(trace);
            }
        }
        let served = moving.as_ref().is_some_and(|m| m.cross.is_some())
            || a.dynamics.as_ref().is_some_and(|p| p.trace_service().is_some());
        if spec.moves == Some(Moves::Data) && bottleneck.is_none() && served {
            return Err(io::Error::other(format!(
                "queue {}: cross traffic and a delivery trace need this queue's bottleneck (rate_bps, buffer_bytes)",
                spec.num
            )));
        }
        let single_verdicts = moving.as_ref().is_some_and(|m| m.reorders());
        Ok(QueueSocket {
            fd,
            spec,
            loss,
            bottleneck,
            held: VecDeque::new(),
            marked: VecDeque::new(),
            spare: Vec::new(),
            out: Vec::new(),
            stats: QueueStats::default(),
            enobufs: 0,
            role,
            fates: Vec::new(),
            moving,
            single_verdicts,
        })
    }

    /// Reads every message waiting in the socket, up to RECV_BATCH netlink
    /// messages per recvmmsg(2) call (one packet each: a syscall per packet
    /// was most of linkem's CPU time at 1 Gbit/s). The single verdicts of
    /// each call's packets (drops, hand-offs to the split queue) leave in
    /// one send(2) after it, not one each.
    pub fn drain(&mut self, bufs: &mut RecvBuffers) -> io::Result<()> {
        loop {
            let n = bufs.receive(self.fd);
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => return self.send_out(),
                    // The socket buffer overflowed: the kernel dropped packets.
                    Some(libc::ENOBUFS) => {
                        self.enobufs += 1;
                        continue;
                    }
                    _ => return Err(io::Error::new(e.kind(), format!("recv queue {}: {e}", self.spec.num))),
                }
            }
            let now = mono_ns();
            let now_real = clock_ns(libc::CLOCK_REALTIME);
            for i in 0..n as usize {
                let datagram = bufs.message(i);
                for m in netlink::decode(datagram) {
                    if let Message::Packet(p) = m {
                        self.on_packet(&p, datagram, now, now_real)?;
                    }
                }
            }
            self.send_out()?;
            if (n as usize) < RECV_BATCH {
                return Ok(()); // the socket is empty
            }
        }
    }

    /// `datagram` is the netlink datagram `p` was decoded from (its
    /// `data` range holds the copied packet).
    fn on_packet(&mut self, p: &Packet, datagram: &[u8], now: u64, now_real: u64) -> io::Result<()> {
        let s = &mut self.stats;
        s.packets += 1;
        s.bytes += p.len as u64;
        s.max_packet_bytes = s.max_packet_bytes.max(p.len);
        s.gso_packets += p.gso as u64;
        if let Role::Split(fates) = &self.role {
            // A segment of a unit split by the unit-mode queue: its fate was
            // decided there, in order (units.rs).
            let fate = p.tcp_seq.and_then(|seq| units::lock(fates).take(seq));
            return match fate {
                Some(fate) => self.apply(p, datagram, fate),
                None => {
                    self.stats.unit_mismatches += 1;
                    self.hold(p.id, now, false);
                    Ok(())
                }
            };
        }
        // Arrival time: the kernel's timestamp when it has one (it tells how
        // long the packet waited in our socket), else our receive time.
        let arrival = match p.tstamp_ns {
            Some(t) if t <= now_real && now_real - t < 10_000_000_000 => {
                s.timestamps_seen += 1;
                s.read_wait.record(now_real - t, 1);
                now - (now_real - t)
            }
            _ => now,
        };
        let due = arrival + self.spec.delay_ns;
        let ect = p.ecn.is_some_and(ecn::is_ect);
        let payload = p.tcp_payload.unwrap_or(0);
        // A GSO packet (unit mode only: otherwise the kernel segmented it)
        // is n segments of the flow's MSS, each decided on its own.
        let (n, mss) = match self.role {
            Role::Units { .. } if p.gso && payload > 0 => {
                let mss = self.spec.mss.mss(p.tcp_ports);
                (units::segment_count(payload, mss), mss)
            }
            _ => (1, payload),
        };
        let header = p.len.saturating_sub(payload);
        let mut fates = std::mem::take(&mut self.fates);
        fates.clear();
        for i in 0..n {
            let segment = units::segment_payload(payload, mss, i);
            fates.push(self.decide(segment > 0, p.tcp_ports, arrival, due, header + segment, ect));
        }
        let r = if n == 1 {
            self.apply(p, datagram, fates[0])
        } else if units::whole(&fates) {
            self.stats.units += 1;
            self.stats.unit_segments += n as u64;
            self.hold(p.id, units::unit_due(&fates).unwrap_or(due), false);
            Ok(())
        } else if units::none_pass(&fates) {
            // Every segment is lost or dropped: drop the packet whole, which
            // is what the split queue would do segment by segment.
            self.stats.dropped_units += 1;
            self.append_single(p.id, netlink::NF_DROP);
            Ok(())
        } else {
            self.split(p, mss, &fates)
        };
        self.fates = fates;
        r
    }

    /// The fate of one segment (or packet) of `ip_len` bytes that reaches
    /// the bottleneck at `due` (arrival + delay), of the TCP flow with
    /// `ports`. Loss acts on TCP segments with payload only (handshakes and
    /// pure ACKs of this direction pass), each flow group's by its own stage,
    /// like corruption of data; the bottleneck queue follows the delay line
    /// (propagation upstream of the router's egress queue), and only an
    /// ECN-capable packet consults its discipline (drop-tail ignores it).
    fn decide(&mut self, is_data: bool, ports: Option<(u16, u16)>, arrival: u64, due: u64, ip_len: u32, ect: bool) -> Fate {
        if let Some(t) = self.moving.as_deref_mut().and_then(|m| m.run_time(arrival)) {
            return self.decide_moving(is_data, ports, t, ip_len, ect);
        }
        if self.moving.is_some() {
            // Before the run's origin (handshakes): the constant delay only.
            return Fate::Pass { due_ns: due, ce: false };
        }
        let s = &mut self.stats;
        if is_data {
            s.data_packets += 1;
            if self.loss.lose(ports) {
                s.dropped += 1;
                return Fate::Lost;
            }
        }
        let Some(b) = self.bottleneck.as_mut() else {
            return Fate::Pass { due_ns: due, ce: false };
        };
        match link::admit(b, due, ip_len, ect) {
            Some(a) => {
                s.bottleneck_bytes += a.frame_bytes;
                Fate::Pass { due_ns: a.depart_ns, ce: a.ce }
            }
            None => {
                s.queue_drops += 1;
                Fate::QueueDrop
            }
        }
    }

    /// `decide` on a moving path, at run time `t`: the data queue applies
    /// the drops at chosen instants, each group's scheduled loss, the policer (data segments, as the
    /// simulator polices its data), the bottleneck at its rate then and
    /// the forward delay with jitter and slots; an ACK queue its ACK
    /// path's delay, jitter and slots. The simulator's code throughout
    /// (engine/moving.rs does the same steps in the same order).
    fn decide_moving(&mut self, is_data: bool, ports: Option<(u16, u16)>, t: Time, ip_len: u32, ect: bool) -> Fate {
        let m = self.moving.as_deref_mut().expect("moving");
        let s = &mut self.stats;
        let frame = fatpipe_sim::wire::frame_bytes(ip_len);
        let fate = match m.ack {
            Some(k) => Fate::Pass { due_ns: MovingQueue::mono_ns(m.dynamics.ack_arrival(k, t, frame)), ce: false },
            None => {
                if is_data {
                    s.data_packets += 1;
                    let group = self.loss.group_of(ports).map(|g| g as usize);
                    let lost = m.dynamics.drops.drop(t, group)
                        || match group {
                            Some(g) => m.dynamics.loss.get_mut(g).is_some_and(|l| l.lose(t)),
                            None => self.loss.lose_other(),
                        };
                    if lost {
                        s.dropped += 1;
                        return Fate::Lost;
                    }
                    if let Some(p) = m.dynamics.policer.as_mut() {
                        if !p.admit(t, frame) {
                            s.policer_drops += 1;
                            return Fate::Lost;
                        }
                    }
                }
                if let Some(b) = self.bottleneck.as_mut() {
                    m.advance_cross(t, b);
                }
                let (leave, ce) = match self.bottleneck.as_mut() {
                    Some(b) => match b.offer(t, frame, ect) {
                        Some(a) => {
                            s.bottleneck_bytes += frame as u64;
                            (a.departure, a.ce)
                        }
                        None => {
                            s.queue_drops += 1;
                            return Fate::QueueDrop;
                        }
                    },
                    None => (t, false),
                };
                Fate::Pass { due_ns: MovingQueue::mono_ns(m.dynamics.data_arrival(t, leave, frame)), ce }
            }
        };
        s.reordered = m.dynamics.reordered();
        fate
    }

    /// Carries out `fate` for packet `p` (one segment).
    fn apply(&mut self, p: &Packet, datagram: &[u8], fate: Fate) -> io::Result<()> {
        match fate {
            Fate::Lost | Fate::QueueDrop => {
                self.append_single(p.id, netlink::NF_DROP);
                Ok(())
            }
            Fate::Pass { due_ns, ce } => {
                let ce = ce && self.mark(p, datagram);
                self.hold(p.id, due_ns, ce);
                Ok(())
            }
        }
    }

    fn hold(&mut self, id: u32, due: u64, ce: bool) {
        if self.single_verdicts && self.held.back().is_some_and(|b| b.1 > due) {
            // It overtakes: held stays in due order (marked copies too).
            let k = self.held.partition_point(|h| h.1 <= due);
            let marked_before = self.held.iter().take(k).filter(|h| h.2).count();
            self.held.insert(k, (id, due, ce));
            if ce {
                let packet = self.marked.pop_back().expect("the copy mark() kept");
                self.marked.insert(marked_before, packet);
            }
        } else {
            self.held.push_back((id, due, ce));
        }
        self.stats.held_max = self.stats.held_max.max(self.held.len());
    }

    /// Hands GSO packet `p` to the split queue, where the kernel segments
    /// it and each segment meets the fate decided here (units.rs).
    /// The split queue learns the unit's fates now; the verdict that hands
    /// the unit over is sent after this call, so they are there before its
    /// first segment reaches the split queue.
    fn split(&mut self, p: &Packet, mss: u32, fates: &[Fate]) -> io::Result<()> {
        let (Role::Units { split }, Some(queue)) = (&self.role, self.spec.split_queue) else {
            unreachable!("only a unit-mode queue sees GSO packets of several segments")
        };
        units::lock(split).push(SplitUnit { first_seq: p.tcp_seq.unwrap_or(0), mss, fates: fates.to_vec() });
        self.stats.split_units += 1;
        self.append_single(p.id, netlink::requeue_verdict(queue));
        Ok(())
    }

    /// Appends a verdict for packet `id` alone (sent with the next send(2)).
    fn append_single(&mut self, id: u32, verdict: u32) {
        self.out = netlink::append_verdict(std::mem::take(&mut self.out), self.spec.num, id, verdict);
    }

    /// Sends the verdicts gathered so far, if any (no statistics: see
    /// flush_verdicts for releases).
    fn send_out(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let r = send_all(self.fd, &self.out);
        self.out.clear();
        r
    }

    /// Keeps a CE-marked copy of `p` to hand back with its verdict; false
    /// (counted in ce_unmarkable) if the copy is not the whole packet.
    fn mark(&mut self, p: &Packet, datagram: &[u8]) -> bool {
        let Some(bytes) = datagram.get(p.data.clone()).filter(|d| d.len() == p.len as usize) else {
            self.stats.ce_unmarkable += 1;
            return false;
        };
        let mut packet = self.spare.pop().unwrap_or_default();
        packet.clear();
        packet.extend_from_slice(bytes);
        if !ecn::set_ce(&mut packet) {
            self.spare.push(packet);
            self.stats.ce_unmarkable += 1;
            return false;
        }
        self.stats.ce_marks += 1;
        self.marked.push_back(packet);
        true
    }

    /// Sends the gathered verdicts (if any) in one send(2).
    fn flush_verdicts(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let t0 = mono_ns();
        let r = self.send_out();
        self.stats.verdict_call.record(mono_ns() - t0, 1);
        self.stats.verdict_batches += 1;
        r
    }

    /// Accepts every held packet due before `now + early_ns`, in one batch
    /// (a release window of ±early_ns around the due time saves wake-ups).
    /// Unmarked packets leave in batch verdicts (every id up to the last
    /// unmarked one before a marked packet); a marked packet leaves in its
    /// own verdict carrying its CE-marked bytes, so order is kept.
    pub fn release_due(&mut self, now: u64, early_ns: u64) -> io::Result<()> {
        let mut last = None;
        while let Some(&(id, due, ce)) = self.held.front() {
            if due > now + early_ns {
                break;
            }
            self.stats.late.record(now.saturating_sub(due), 1);
            self.held.pop_front();
            if self.single_verdicts && !ce {
                // Out of id order: this packet alone.
                self.append_single(id, netlink::NF_ACCEPT);
                if self.out.len() >= VERDICT_FLUSH_BYTES {
                    self.flush_verdicts()?;
                }
                continue;
            }
            if ce {
                self.append_marked(last.take(), id);
                if self.out.len() >= VERDICT_FLUSH_BYTES {
                    self.flush_verdicts()?;
                }
            } else {
                last = Some(id);
            }
        }
        if let Some(id) = last {
            self.out = netlink::append_verdict_batch(std::mem::take(&mut self.out), self.spec.num, id, netlink::NF_ACCEPT);
        }
        self.flush_verdicts()
    }

    /// Appends the batch verdict of the unmarked run ending at `plain` (if
    /// any), then the verdict of marked packet `id` with its bytes.
    fn append_marked(&mut self, plain: Option<u32>, id: u32) {
        let q = self.spec.num;
        let mut out = std::mem::take(&mut self.out);
        if let Some(p) = plain {
            out = netlink::append_verdict_batch(out, q, p, netlink::NF_ACCEPT);
        }
        let packet = self.marked.pop_front().unwrap_or_default();
        self.out = netlink::append_verdict_with_packet(out, q, id, netlink::NF_ACCEPT, &packet);
        self.spare.push(packet);
    }

    /// Releases everything held at once (on exit), marked packets included.
    pub fn release_all(&mut self) {
        let mut last = None;
        while let Some((id, _, ce)) = self.held.pop_front() {
            if self.single_verdicts && !ce {
                self.append_single(id, netlink::NF_ACCEPT);
                continue;
            }
            if ce {
                self.append_marked(last.take(), id);
                if self.out.len() >= VERDICT_FLUSH_BYTES {
                    let _ = self.flush_verdicts();
                }
            } else {
                last = Some(id);
            }
        }
        if let Some(id) = last {
            self.out = netlink::append_verdict_batch(std::mem::take(&mut self.out), self.spec.num, id, netlink::NF_ACCEPT);
        }
        let _ = self.flush_verdicts();
    }

    /// At exit, at CLOCK_MONOTONIC `now`: the cross traffic advanced to
    /// the run's end (or now) and its last series rows recorded.
    pub fn finish_cross(&mut self, now: u64) {
        let (Some(m), Some(b)) = (self.moving.as_deref_mut(), self.bottleneck.as_mut()) else { return };
        if let Some(t) = m.run_time(now) {
            m.finish_cross(t, b);
        }
    }

    /// The cross traffic's statistics as a JSON member (`,"cross":{...}`),
    /// empty without cross traffic: per group the IP bytes that left the
    /// bottleneck by the last sample, their frames' bytes and the packets
    /// tail-dropped; with `series`, the sampled rows too ([t_s, group,
    /// stream, bytes]).
    pub fn cross_json(&self, series: bool) -> String {
        let Some(m) = self.moving.as_deref() else { return String::new() };
        let Some(rec) = m.cross.as_ref() else { return String::new() };
        let groups: Vec<String> = m
            .cross_totals()
            .iter()
            .map(|(g, bytes, frames, drops)| {
                format!("{{\"group\":{g},\"delivered_bytes\":{bytes},\"frame_bytes\":{frames},\"drops\":{drops}}}")
            })
            .collect();
        let mut j = format!(",\"cross\":{{\"groups\":[{}]", groups.join(","));
        if series {
            let rows: Vec<String> = rec.rows.iter().map(|(t, g, s, b)| format!("[{t},{g},{s},{b}]")).collect();
            j.push_str(&format!(",\"series\":[{}]", rows.join(",")));
        }
        j.push('}');
        j
    }

    /// Whether this is the split queue of a unit-mode queue.
    pub fn is_split(&self) -> bool {
        matches!(self.role, Role::Split(_))
    }

    pub fn next_due(&self) -> Option<u64> {
        self.held.front().map(|&(_, due, _)| due)
    }
}

/// /proc/net/netfilter/nfnetlink_queue line for `num`: queue_total,
/// queue_dropped (queue maxlen exceeded), user_dropped (socket full).
pub fn kernel_queue_counters(num: u16) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string("/proc/net/netfilter/nfnetlink_queue").ok()?;
    text.lines().find_map(|line| {
        let f: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        (f.len() >= 7 && f[0] == num as u64).then(|| (f[2], f[5], f[6]))
    })
}
