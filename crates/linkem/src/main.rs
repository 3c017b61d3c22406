//! fatpipe-linkem: a userspace delay/loss line on NFQUEUE.
//!
//! Runs inside the router namespace of the kernel backend. Each `--queue`
//! is one direction of the path: packets that iptables sends to that
//! NFQUEUE are held until arrival + one-way delay, then accepted in one
//! NFQNL_MSG_VERDICT_BATCH (constant delay ⇒ FIFO ⇒ id order). TCP segments
//! that carry payload are dropped with the queue's probability (the
//! simulator's seeded loss stage, rng.rs). The queue is configured without
//! NFQA_CFG_F_GSO, so the kernel software-segments GSO packets before
//! queueing and loss hits single MSS segments as on a router. Statistics (including lateness = verdict time −
//! due time) go to `--stats` as JSON every interval and on SIGINT/SIGTERM.
//!
//! A queue with a bottleneck CE threshold (`ce_k_*`) marks per segment,
//! since GSO packets arrive segmented: an ECN-capable packet that joins more
//! than K queued is marked CE when it is enqueued (link.rs, the simulator's
//! rule), kept in full until due, and handed back with its verdict
//! (NFQA_PAYLOAD); such a queue copies whole packets (copy range 64 KiB).

mod args;
mod ecn;
mod link;
mod netlink;
mod rng;
mod stats;

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use args::{Args, QueueSpec};
use fatpipe_sim::path::Bottleneck;
use netlink::{Message, Packet};
use fatpipe_sim::path::LossStage;
use stats::QueueStats;

static STOP: AtomicBool = AtomicBool::new(false);
static RESET_LATENESS: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGUSR1: forget lateness seen so far (the warm-up ended).
extern "C" fn on_usr1(_: libc::c_int) {
    RESET_LATENESS.store(true, Ordering::SeqCst);
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn os_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Netlink messages read per recvmmsg(2) call.
const RECV_BATCH: usize = 64;
/// Bytes per message buffer: a packet message carries at most copy_range
/// (128) bytes of packet plus attributes, well under this.
const RECV_MSG_BYTES: usize = 4096;
/// Copy range of a marking queue: whole packets (NFQNL_MAX_COPY_RANGE), as
/// a verdict's NFQA_PAYLOAD replaces the packet and trims it to its length.
const WHOLE_PACKET_COPY: u32 = 0xffff;
/// Message buffer of a marking queue: a whole packet plus attributes.
const WHOLE_PACKET_MSG_BYTES: usize = WHOLE_PACKET_COPY as usize + 1024;
/// Verdict bytes gathered before a send(2): well under a netlink socket's
/// default send buffer (wmem_default, 208 KiB) with one more whole packet.
const VERDICT_FLUSH_BYTES: usize = 64 * 1024;

/// Buffers and headers for one recvmmsg(2) call.
struct RecvBuffers {
    data: Vec<u8>,
    msg_bytes: usize,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl RecvBuffers {
    fn new(msg_bytes: usize) -> Self {
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

/// A netlink socket bound to one NFQUEUE.
struct QueueSocket {
    fd: RawFd,
    spec: QueueSpec,
    /// Random loss of this queue's data segments (the simulator's stage).
    loss: LossStage,
    bottleneck: Option<Bottleneck>,
    /// Held packets: (id, due time in CLOCK_MONOTONIC ns, marked CE), FIFO.
    held: VecDeque<(u32, u64, bool)>,
    /// The whole packets of the held CE-marked ones, in the same order.
    marked: VecDeque<Vec<u8>>,
    /// Packet buffers to reuse (no allocation per mark once warm).
    spare: Vec<Vec<u8>>,
    /// Verdict messages being gathered for one send(2).
    out: Vec<u8>,
    stats: QueueStats,
    enobufs: u64,
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
    fn open(spec: QueueSpec, a: &Args) -> io::Result<Self> {
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
        let copy_range = if spec.marks() { WHOLE_PACKET_COPY } else { a.copy_range };
        send_all(fd, &netlink::encode_params(seq + 1, spec.num, copy_range, a.maxlen, a.gso))?;
        wait_ack(fd, seq + 1).map_err(|e| io::Error::new(e.kind(), format!("configure queue {}: {e}", spec.num)))?;
        // Non-blocking from now on: the main loop drains with MSG_DONTWAIT.
        let loss = rng::queue_loss(a.seed, spec.num, spec.loss);
        let bottleneck = (spec.rate_bps > 0.0).then(|| link::bottleneck(spec.rate_bps, spec.buffer_bytes, spec.aqm));
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
        })
    }

    /// Reads every message waiting in the socket, up to RECV_BATCH netlink
    /// messages per recvmmsg(2) call (one packet each: a syscall per packet
    /// was most of linkem's CPU time at 1 Gbit/s).
    fn drain(&mut self, bufs: &mut RecvBuffers) -> io::Result<()> {
        loop {
            let n = bufs.receive(self.fd);
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => return Ok(()),
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
        let is_data = p.tcp_payload.is_some_and(|n| n > 0);
        if is_data {
            s.data_packets += 1;
            // Loss acts on TCP segments with payload only (handshakes and
            // pure ACKs of this direction pass), like corruption of data.
            if self.loss.lose() {
                s.dropped += 1;
                return send_all(self.fd, &netlink::encode_verdict(self.spec.num, p.id, netlink::NF_DROP));
            }
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
        let mut due = arrival + self.spec.delay_ns;
        let mut ce = false;
        if let Some(b) = self.bottleneck.as_mut() {
            // The bottleneck queue follows the delay line (propagation
            // upstream of the router's egress queue). Only an ECN-capable
            // packet consults the discipline (a drop-tail queue ignores it).
            let ect = p.ecn.is_some_and(ecn::is_ect);
            match link::admit(b, due, p.len, ect) {
                Some(a) => {
                    due = a.depart_ns;
                    s.bottleneck_bytes += a.frame_bytes;
                    ce = a.ce;
                }
                None => {
                    s.queue_drops += 1;
                    return send_all(self.fd, &netlink::encode_verdict(self.spec.num, p.id, netlink::NF_DROP));
                }
            }
        }
        if ce {
            ce = self.mark(p, datagram);
        }
        self.held.push_back((p.id, due, ce));
        self.stats.held_max = self.stats.held_max.max(self.held.len());
        Ok(())
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
        let r = send_all(self.fd, &self.out);
        self.stats.verdict_call.record(mono_ns() - t0, 1);
        self.stats.verdict_batches += 1;
        self.out.clear();
        r
    }

    /// Accepts every held packet due before `now + early_ns`, in one batch
    /// (a release window of ±early_ns around the due time saves wake-ups).
    /// Unmarked packets leave in batch verdicts (every id up to the last
    /// unmarked one before a marked packet); a marked packet leaves in its
    /// own verdict carrying its CE-marked bytes, so order is kept.
    fn release_due(&mut self, now: u64, early_ns: u64) -> io::Result<()> {
        let mut last = None;
        while let Some(&(id, due, ce)) = self.held.front() {
            if due > now + early_ns {
                break;
            }
            self.stats.late.record(now.saturating_sub(due), 1);
            self.held.pop_front();
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
    fn release_all(&mut self) {
        let mut last = None;
        while let Some((id, _, ce)) = self.held.pop_front() {
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

    fn next_due(&self) -> Option<u64> {
        self.held.front().map(|&(_, due, _)| due)
    }
}

/// /proc/net/netfilter/nfnetlink_queue line for `num`: queue_total,
/// queue_dropped (queue maxlen exceeded), user_dropped (socket full).
fn kernel_queue_counters(num: u16) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string("/proc/net/netfilter/nfnetlink_queue").ok()?;
    text.lines().find_map(|line| {
        let f: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        (f.len() >= 7 && f[0] == num as u64).then(|| (f[2], f[5], f[6]))
    })
}

/// CPU time (user + system) this process has used, in ns (getrusage(2)).
fn cpu_ns() -> u64 {
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Where the measured part began (start, or the last SIGUSR1): wall clock
/// and CPU time, so the statistics give the delay line's CPU use over the
/// same part of the run as its lateness.
#[derive(Clone, Copy)]
struct Epoch {
    wall_ns: u64,
    cpu_ns: u64,
}

impl Epoch {
    fn now() -> Self {
        Epoch { wall_ns: mono_ns(), cpu_ns: cpu_ns() }
    }
}

fn stats_json(queues: &[QueueSocket], wakeups: u64, epoch: Epoch, final_: bool) -> String {
    let parts: Vec<String> = queues
        .iter()
        .map(|q| {
            let mut j = q.stats.to_json(&q.spec.name, q.spec.num, q.spec.delay_ns, q.spec.loss);
            j.pop();
            let (total, qdrop, udrop) = kernel_queue_counters(q.spec.num).unwrap_or((0, 0, 0));
            j.push_str(&format!(
                ",\"enobufs\":{},\"kernel_queue_total\":{},\"kernel_queue_dropped\":{},\"kernel_user_dropped\":{}}}",
                q.enobufs, total, qdrop, udrop
            ));
            j
        })
        .collect();
    let (wall_s, cpu_s) = ((mono_ns() - epoch.wall_ns) as f64 / 1e9, cpu_ns().saturating_sub(epoch.cpu_ns) as f64 / 1e9);
    format!(
        "{{\"final\":{},\"wakeups\":{},\"wall_s\":{:.6},\"cpu_s\":{:.6},\"queues\":[{}]}}\n",
        final_,
        wakeups,
        wall_s,
        cpu_s,
        parts.join(",")
    )
}

fn write_stats(path: &Option<String>, queues: &[QueueSocket], wakeups: u64, epoch: Epoch, final_: bool) {
    let text = stats_json(queues, wakeups, epoch, final_);
    match path {
        Some(p) => {
            let tmp = format!("{p}.tmp");
            if std::fs::write(&tmp, &text).is_ok() {
                let _ = std::fs::rename(&tmp, p);
            }
        }
        None if final_ => print!("{text}"),
        None => {}
    }
}

/// Die with the process that started us (`--parent-pid`): a fatpipe killed
/// with SIGKILL runs no cleanup, and an orphan delay line at SCHED_FIFO
/// would hold a CPU and later overwrite a redone run's statistics.
/// PR_SET_PDEATHSIG (prctl(2)) has the kernel send SIGKILL when the parent
/// (the thread that forked us; `ip netns exec` execs in place) exits; it
/// survives execve of a non-set-user-ID binary. If the parent died before
/// the prctl, we have already been reparented: getppid() tells.
fn die_with_parent(parent_pid: i32) {
    // SAFETY: prctl with integer arguments; getppid never fails.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
    }
    if !parent_alive(parent_pid) {
        eprintln!("fatpipe-linkem: parent {parent_pid} is gone; exiting");
        std::process::exit(3);
    }
}

/// Whether our parent is still `parent_pid` (an orphan is reparented to
/// init or a subreaper, so getppid() changes when the parent dies).
fn parent_alive(parent_pid: i32) -> bool {
    // SAFETY: getppid never fails.
    unsafe { libc::getppid() == parent_pid }
}

fn run(a: Args) -> io::Result<()> {
    if let Some(pid) = a.parent_pid {
        die_with_parent(pid);
    }
    // SAFETY: installing async-signal-safe handlers that only set an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGUSR1, on_usr1 as *const () as libc::sighandler_t);
        // 1 ns timer slack: wake-ups are the delay line's clock.
        libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0);
    }
    if a.rt_priority > 0 {
        let param = libc::sched_param { sched_priority: a.rt_priority };
        // SAFETY: valid sched_param; pid 0 = this thread. RT throttling
        // (sched_rt_runtime_us) still leaves other tasks CPU time.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            eprintln!("fatpipe-linkem: SCHED_FIFO {} refused: {}", a.rt_priority, io::Error::last_os_error());
        }
    }
    // Any socket asking for receive timestamps turns on kernel packet
    // timestamping (netstamp_needed_key), so queued packets carry
    // NFQA_TIMESTAMP = their arrival at the router. With it, the line can
    // sleep until the next due packet instead of waking for each arrival.
    // SAFETY: plain socket/setsockopt calls; the fd lives until exit.
    let _tstamp_fd = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        let one: libc::c_int = 1;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&one as *const libc::c_int).cast(), 4);
        fd
    };
    let mut queues = Vec::new();
    for spec in a.queues.clone() {
        queues.push(QueueSocket::open(spec, &a)?);
    }
    let msg_bytes = if queues.iter().any(|q| q.spec.marks()) { WHOLE_PACKET_MSG_BYTES } else { RECV_MSG_BYTES };
    let mut bufs = RecvBuffers::new(msg_bytes);
    let mut pfds: Vec<libc::pollfd> =
        queues.iter().map(|q| libc::pollfd { fd: q.fd, events: libc::POLLIN, revents: 0 }).collect();
    println!("ready");
    use std::io::Write;
    let _ = io::stdout().flush();
    let mut next_stats = mono_ns() + a.stats_interval_ns;
    let mut wakeups: u64 = 0;
    let mut epoch = Epoch::now();
    let batch_ns = a.batch_ns();
    while !STOP.load(Ordering::SeqCst) {
        wakeups += 1;
        if RESET_LATENESS.swap(false, Ordering::SeqCst) {
            epoch = Epoch::now();
            for q in queues.iter_mut() {
                q.stats.late = stats::LateHist::default();
                q.stats.read_wait = stats::LateHist::default();
                q.stats.verdict_call = stats::LateHist::default();
            }
        }
        for q in queues.iter_mut() {
            q.drain(&mut bufs)?;
        }
        let now = mono_ns();
        for q in queues.iter_mut() {
            q.release_due(now, batch_ns / 2)?;
        }
        if now >= next_stats {
            // Belt and braces beside PR_SET_PDEATHSIG: an orphan writes
            // nothing more (the stats file may be a redone run's by now).
            if a.parent_pid.is_some_and(|p| !parent_alive(p)) {
                eprintln!("fatpipe-linkem: parent {} is gone; exiting", a.parent_pid.unwrap_or(0));
                std::process::exit(3);
            }
            write_stats(&a.stats_path, &queues, wakeups, epoch, false);
            next_stats = now + a.stats_interval_ns;
        }
        // Next wake-up: when the next held packet enters its release window,
        // but not before one quantum has passed (everything due before
        // now + quantum/2 just left, so that packet is at most quantum/2 late).
        let wake = queues
            .iter()
            .filter_map(|q| q.next_due().map(|d| d.saturating_sub(batch_ns / 2).max(now + batch_ns)))
            .min()
            .unwrap_or(now + 100_000_000)
            .min(next_stats);
        // With kernel arrival timestamps, arrivals need not wake us: sleep to
        // the next due time (at most max_sleep), read what came meanwhile.
        let timestamped = queues.iter().all(|q| q.stats.packets == 0 || q.stats.timestamps_seen * 2 > q.stats.packets);
        let any_held = queues.iter().any(|q| !q.held.is_empty());
        let wake = if timestamped && any_held { wake.min(now + a.max_sleep_ns) } else { wake };
        let wait = wake.saturating_sub(mono_ns());
        let ts = libc::timespec { tv_sec: (wait / 1_000_000_000) as i64, tv_nsec: (wait % 1_000_000_000) as i64 };
        let nfds = if timestamped && any_held { 0 } else { pfds.len() as libc::nfds_t };
        // SAFETY: pfds is a valid array of pollfd; ts valid; no sigmask.
        unsafe { libc::ppoll(pfds.as_mut_ptr(), nfds, &ts, std::ptr::null()) };
    }
    for q in queues.iter_mut() {
        q.release_all();
    }
    write_stats(&a.stats_path, &queues, wakeups, epoch, true);
    Ok(())
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let a = match args::parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fatpipe-linkem: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(a) {
        eprintln!("fatpipe-linkem: {e}");
        std::process::exit(1);
    }
}
