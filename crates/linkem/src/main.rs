//! fatpipe-linkem: a userspace delay/loss line on NFQUEUE.
//!
//! Runs inside the router namespace of the kernel backend. Each `--queue`
//! is one direction of the path: packets that iptables sends to that
//! NFQUEUE are held until arrival + one-way delay, then accepted in one
//! NFQNL_MSG_VERDICT_BATCH (constant delay ⇒ FIFO ⇒ id order). TCP segments
//! that carry payload are dropped with their flow group's probability
//! (`group_loss`, by port) or the queue's (the simulator's seeded loss
//! stages, rng.rs); fatpipe gives loss to the sender → receiver queue only,
//! where the bottleneck sits. The queue is configured without
//! NFQA_CFG_F_GSO, so the kernel software-segments GSO packets before
//! queueing and loss hits single MSS segments as on a router. Statistics (including lateness = verdict time −
//! due time) go to `--stats` as JSON every interval and on SIGINT/SIGTERM.
//!
//! A queue with a bottleneck CE threshold (`ce_k_*`) marks per segment,
//! since GSO packets arrive segmented: an ECN-capable packet that joins more
//! than K queued is marked CE when it is enqueued (link.rs, the simulator's
//! rule), kept in full until due, and handed back with its verdict
//! (NFQA_PAYLOAD); such a queue copies whole packets (copy range 64 KiB).
//!
//! A unit-mode queue's split queue is served by a thread of its own and
//! every other queue by one more (worker.rs; `--threads per-queue` and
//! `--threads one` share them out otherwise); this thread starts them,
//! handles SIGUSR1 and the parent check, and writes every queue's
//! statistics.

mod args;
mod ecn;
mod link;
mod moving;
mod netlink;
mod queue;
mod rng;
mod stats;
mod units;
mod worker;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use args::Args;
use queue::{QueueSocket, RECV_MSG_BYTES, WHOLE_PACKET_MSG_BYTES};
use worker::{Board, Timing};

static STOP: AtomicBool = AtomicBool::new(false);
static RESET_LATENESS: AtomicBool = AtomicBool::new(false);
static ORIGIN_SENT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGUSR2: the run's time zero is in `--origin-file` (moving.rs).
extern "C" fn on_usr2(_: libc::c_int) {
    ORIGIN_SENT.store(true, Ordering::SeqCst);
}

/// SIGUSR1: forget lateness seen so far (the warm-up ended).
extern "C" fn on_usr1(_: libc::c_int) {
    RESET_LATENESS.store(true, Ordering::SeqCst);
}

pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub(crate) fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

pub(crate) fn os_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
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

fn stats_json(parts: &[String], wakeups: u64, epoch: Epoch, final_: bool) -> String {
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

fn write_stats(path: &Option<String>, board: &Board, epoch: Epoch, final_: bool) {
    let text = stats_json(&board.parts(), board.wakeups.load(Ordering::Relaxed), epoch, final_);
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
        libc::signal(libc::SIGUSR2, on_usr2 as *const () as libc::sighandler_t);
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
    // Split queues come after every other queue (their statistics too).
    let mut queues = Vec::new();
    for spec in a.queues.clone() {
        queues.push(QueueSocket::open(spec, &a)?);
    }
    for i in 0..queues.len() {
        if let Some(q) = QueueSocket::open_split(&queues[i], &a) {
            queues.push(q?);
        }
    }
    let msg_bytes = if queues.iter().any(|q| q.spec.marks()) { WHOLE_PACKET_MSG_BYTES } else { RECV_MSG_BYTES };
    let timing =
        Timing { batch_ns: a.batch_ns(), max_sleep_ns: a.max_sleep_ns, stats_interval_ns: a.stats_interval_ns };
    let board = Board::new(&STOP, queues.len());
    let split: Vec<bool> = queues.iter().map(|q| q.is_split()).collect();
    let mut slots: Vec<Option<QueueSocket>> = queues.into_iter().map(Some).collect();
    let groups: Vec<Vec<(usize, QueueSocket)>> = a
        .threads
        .groups(&split)
        .into_iter()
        .map(|g| g.into_iter().filter_map(|i| slots[i].take().map(|q| (i, q))).collect())
        .collect();
    let mut epoch = Epoch::now();
    std::thread::scope(|scope| {
        for group in groups {
            // Threads inherit SCHED_FIFO and the timer slack set above.
            let board = &board;
            scope.spawn(move || worker::serve(group, msg_bytes, board, timing));
        }
        println!("ready");
        use std::io::Write;
        let _ = io::stdout().flush();
        let mut next_stats = mono_ns() + a.stats_interval_ns;
        while !STOP.load(Ordering::SeqCst) {
            // SAFETY: plain sleep; a signal cuts it short, which is fine.
            unsafe { libc::usleep(10_000) };
            if ORIGIN_SENT.swap(false, Ordering::SeqCst) {
                if let Some(path) = &a.origin_file {
                    match moving::read_origin(path, mono_ns(), clock_ns(libc::CLOCK_REALTIME)) {
                        Ok(ns) => moving::ORIGIN_NS.store(ns, Ordering::SeqCst),
                        Err(e) => {
                            *board.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(io::Error::other(e));
                            STOP.store(true, Ordering::SeqCst);
                        }
                    }
                }
            }
            if RESET_LATENESS.swap(false, Ordering::SeqCst) {
                epoch = Epoch::now();
                board.reset_gen.fetch_add(1, Ordering::SeqCst);
            }
            let now = mono_ns();
            if now >= next_stats {
                // Belt and braces beside PR_SET_PDEATHSIG: an orphan writes
                // nothing more (the stats file may be a redone run's by now).
                if a.parent_pid.is_some_and(|p| !parent_alive(p)) {
                    eprintln!("fatpipe-linkem: parent {} is gone; exiting", a.parent_pid.unwrap_or(0));
                    std::process::exit(3);
                }
                write_stats(&a.stats_path, &board, epoch, false);
                next_stats = now + a.stats_interval_ns;
            }
        }
    });
    write_stats(&a.stats_path, &board, epoch, true);
    match board.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
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
