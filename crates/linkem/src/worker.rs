//! The delay line's threads: each serves some of the queues (its own
//! netlink sockets) in the wake-up loop below, and they share only the
//! statistics board and, in unit mode, a queue's split fates (units.rs).
//!
//! By default a split queue has a thread of its own and one thread serves
//! the other queues (`split-apart`): in unit mode the split queue's
//! segment-by-segment work (the kernel segments each handed-over unit
//! inside the data queue's verdict call and queues every segment to it)
//! then runs on the other core instead of holding up the data and ACK
//! queues. Measured on a 2-core VM (bench/README.md), a thread per queue in
//! per-segment mode cost more CPU and was later than one thread (the two
//! threads and the ACK NAPI threads then compete for both cores), so
//! without a split queue one thread serves all.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::queue::{kernel_queue_counters, QueueSocket, RecvBuffers};
use crate::mono_ns;

/// How queues are shared out among threads (`--threads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// One thread serves every queue, in turn.
    One,
    /// Each queue (a split queue included) has its own thread.
    PerQueue,
    /// Each split queue has its own thread; one thread serves the others.
    SplitApart,
}

impl Threads {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "one" => Some(Threads::One),
            "per-queue" => Some(Threads::PerQueue),
            "split-apart" => Some(Threads::SplitApart),
            _ => None,
        }
    }

    /// The queues each thread serves: lists of indices into the queue
    /// list, whose entries are split queues where `split` says so.
    pub fn groups(self, split: &[bool]) -> Vec<Vec<usize>> {
        let all = 0..split.len();
        match self {
            Threads::One => vec![all.collect()],
            Threads::PerQueue => all.map(|i| vec![i]).collect(),
            Threads::SplitApart => {
                let rest: Vec<usize> = all.clone().filter(|&i| !split[i]).collect();
                let apart = all.filter(|&i| split[i]).map(|i| vec![i]);
                std::iter::once(rest).filter(|g| !g.is_empty()).chain(apart).collect()
            }
        }
    }
}

/// What the threads share: the stop flag, the counters and each queue's
/// latest statistics (JSON, rendered by the thread that owns the queue).
pub struct Board<'a> {
    pub stop: &'a AtomicBool,
    /// Bumped when lateness so far is to be forgotten (SIGUSR1).
    pub reset_gen: AtomicU64,
    pub wakeups: AtomicU64,
    pub parts: Mutex<Vec<String>>,
    pub error: Mutex<Option<io::Error>>,
}

impl<'a> Board<'a> {
    pub fn new(stop: &'a AtomicBool, queues: usize) -> Self {
        Board {
            stop,
            reset_gen: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            parts: Mutex::new(vec![String::new(); queues]),
            error: Mutex::new(None),
        }
    }

    /// With `final_`, the cross traffic's series rows too (once, at exit:
    /// they grow through the run).
    fn publish(&self, queues: &[(usize, QueueSocket)], final_: bool) {
        let rendered: Vec<(usize, String)> = queues.iter().map(|(i, q)| (*i, queue_json(q, final_))).collect();
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        for (i, j) in rendered {
            parts[i] = j;
        }
    }

    /// The queues' statistics, in queue order.
    pub fn parts(&self) -> Vec<String> {
        self.parts.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records the first error of any thread and stops them all.
    fn fail(&self, e: io::Error) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(e);
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// One queue's statistics object, with the kernel's counters of its queue.
fn queue_json(q: &QueueSocket, final_: bool) -> String {
    let mut j = q.stats.to_json(&q.spec.name, q.spec.num, q.spec.delay_ns, q.spec.loss);
    j.pop();
    let (total, qdrop, udrop) = kernel_queue_counters(q.spec.num).unwrap_or((0, 0, 0));
    j.push_str(&format!(
        ",\"enobufs\":{},\"kernel_queue_total\":{},\"kernel_queue_dropped\":{},\"kernel_user_dropped\":{}{}}}",
        q.enobufs,
        total,
        qdrop,
        udrop,
        q.cross_json(final_)
    ));
    j
}

/// Timing of the wake-up loop (args.rs).
#[derive(Clone, Copy)]
pub struct Timing {
    pub batch_ns: u64,
    pub max_sleep_ns: u64,
    pub stats_interval_ns: u64,
}

/// Serves `queues` (index in the queue list, socket) until the board's
/// stop flag is set, then releases what is held and publishes the final
/// statistics.
pub fn serve(mut queues: Vec<(usize, QueueSocket)>, msg_bytes: usize, board: &Board, t: Timing) {
    let mut bufs = RecvBuffers::new(msg_bytes);
    if let Err(e) = serve_loop(&mut queues, &mut bufs, board, t) {
        board.fail(e);
    }
    let now = mono_ns();
    for (_, q) in queues.iter_mut() {
        q.release_all();
        q.finish_cross(now);
    }
    board.publish(&queues, true);
}

fn serve_loop(queues: &mut [(usize, QueueSocket)], bufs: &mut RecvBuffers, board: &Board, t: Timing) -> io::Result<()> {
    let mut pfds: Vec<libc::pollfd> =
        queues.iter().map(|(_, q)| libc::pollfd { fd: q.fd, events: libc::POLLIN, revents: 0 }).collect();
    let mut next_stats = mono_ns() + t.stats_interval_ns;
    let mut reset_seen = 0;
    let mut last_read = mono_ns();
    let batch_ns = t.batch_ns;
    while !board.stop.load(Ordering::SeqCst) {
        board.wakeups.fetch_add(1, Ordering::Relaxed);
        let gen = board.reset_gen.load(Ordering::SeqCst);
        if gen != reset_seen {
            reset_seen = gen;
            for (_, q) in queues.iter_mut() {
                q.stats.forget_timings();
            }
        }
        let read_at = mono_ns();
        for (_, q) in queues.iter_mut() {
            q.stats.read_gap.record(read_at.saturating_sub(last_read), 1);
            q.drain(bufs)?;
        }
        last_read = read_at;
        let now = mono_ns();
        for (_, q) in queues.iter_mut() {
            q.release_due(now, batch_ns / 2)?;
        }
        if now >= next_stats {
            board.publish(queues, false);
            next_stats = now + t.stats_interval_ns;
        }
        // Next wake-up: when the next held packet enters its release window,
        // but not before one quantum has passed (everything due before
        // now + quantum/2 just left, so that packet is at most quantum/2 late).
        let wake = queues
            .iter()
            .filter_map(|(_, q)| q.next_due().map(|d| d.saturating_sub(batch_ns / 2).max(now + batch_ns)))
            .min()
            .unwrap_or(now + 100_000_000)
            .min(next_stats);
        // With kernel arrival timestamps, arrivals need not wake us: sleep to
        // the next due time (at most max_sleep), read what came meanwhile.
        let timestamped =
            queues.iter().all(|(_, q)| q.stats.packets == 0 || q.stats.timestamps_seen * 2 > q.stats.packets);
        let any_held = queues.iter().any(|(_, q)| !q.held.is_empty());
        let wake = if timestamped && any_held { wake.min(now + t.max_sleep_ns) } else { wake };
        let wait = wake.saturating_sub(mono_ns());
        let ts = libc::timespec { tv_sec: (wait / 1_000_000_000) as i64, tv_nsec: (wait % 1_000_000_000) as i64 };
        let nfds = if timestamped && any_held { 0 } else { pfds.len() as libc::nfds_t };
        // SAFETY: pfds is a valid array of pollfd; ts valid; no sigmask.
        unsafe { libc::ppoll(pfds.as_mut_ptr(), nfds, &ts, std::ptr::null()) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_queue_threads_give_each_queue_its_own_thread_and_one_serves_all() {
        let split = [false, false, true];
        assert_eq!(Threads::PerQueue.groups(&split), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(Threads::One.groups(&split), vec![vec![0, 1, 2]]);
        assert_eq!(Threads::SplitApart.groups(&split), vec![vec![0, 1], vec![2]]);
        assert_eq!(Threads::SplitApart.groups(&[false, false]), vec![vec![0, 1]], "no split queue: one thread");
        assert_eq!(Threads::parse("split-apart"), Some(Threads::SplitApart));
        assert_eq!(Threads::parse("per-queue"), Some(Threads::PerQueue));
        assert_eq!(Threads::parse("one"), Some(Threads::One));
        assert_eq!(Threads::parse("two"), None);
    }
}
