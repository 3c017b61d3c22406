//! fq_codel as Linux implements it (net/sched/sch_fq_codel.c, with CoDel
//! from include/net/codel_impl.h): per-flow queues served by deficit round
//! robin with a quantum of bytes, new flows ahead of old ones, CoDel on
//! each flow deciding at dequeue time from the packet's sojourn time, CE
//! instead of a drop for ECN-capable packets, an optional CE threshold, and
//! a packet limit enforced by dropping from the head of the fattest flow.
//!
//! Flows: Linux hashes the 5-tuple into 1024 buckets (fq_codel_classify),
//! so two connections can share a queue. The simulator gives every stream
//! its own queue (a perfect hash: one flow per stream, no collisions).
//! Memory accounting (memory_limit, 32 MB of skb truesize by default) is
//! not modelled: the packet limit is the only overflow rule.
//!
//! Unlike the FIFO bottleneck, which knows a packet's departure when it is
//! enqueued, fq_codel decides order and drops when the link asks for the
//! next packet; the engine dequeues whenever the link frees (one pending
//! event for the link, engine.rs `Net::serve_link`).

use std::collections::VecDeque;

use crate::codel::{self, after, after_eq, before, codel_duration, codel_time, CodelParams, CodelTime, CodelVars};
use crate::units::Time;

/// fq_codel's configuration (tc-fq_codel's target, interval, limit,
/// ce_threshold, quantum and ecn/noecn), with Linux's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqCodelParams {
    /// Acceptable standing sojourn time (default 5 ms).
    pub target: Time,
    /// Window over which the sojourn time must stay above target before
    /// dropping starts (default 100 ms).
    pub interval: Time,
    /// Packets held over all flows (default 10240).
    pub limit: u32,
    /// Mark ECN-capable packets CE when their sojourn time exceeds this
    /// (default off).
    pub ce_threshold: Option<Time>,
    /// DRR quantum in bytes (default psched_mtu: 1514, an Ethernet frame).
    pub quantum: u32,
    /// CE instead of drop for ECN-capable packets (default on).
    pub ecn: bool,
}

/// psched_mtu() of a 1500-byte-MTU Ethernet device: MTU + 14-byte header.
pub const PSCHED_MTU: u32 = 1514;
/// fq_codel_init: q->drop_batch_size = 64.
pub const DROP_BATCH_SIZE: u32 = 64;

impl Default for FqCodelParams {
    /// fq_codel_init's defaults.
    fn default() -> Self {
        FqCodelParams {
            target: Time::from_millis(5),
            interval: Time::from_millis(100),
            limit: 10 * 1024,
            ce_threshold: None,
            quantum: PSCHED_MTU,
            ecn: true,
        }
    }
}

/// A packet held by the qdisc: enqueue time (codel_set_enqueue_time),
/// length, ECN capability and whether it has been marked CE.
#[derive(Clone, Copy, Debug)]
pub struct Queued<T> {
    pub enqueued: CodelTime,
    pub bytes: u32,
    pub ecn_capable: bool,
    pub ce: bool,
    pub item: T,
}

impl<T> Queued<T> {
    /// INET_ECN_set_ce: true for an ECN-capable packet (now CE).
    #[inline]
    fn set_ce(&mut self) -> bool {
        if self.ecn_capable {
            self.ce = true;
        }
        self.ecn_capable
    }
}

/// struct fq_codel_flow.
#[derive(Clone, Debug)]
struct Flow<T> {
    q: VecDeque<Queued<T>>,
    /// q->backlogs[idx]: bytes queued in this flow.
    backlog: u64,
    deficit: i32,
    cvars: CodelVars,
    /// Whether the flow is on new_flows or old_flows (!list_empty(flowchain)).
    listed: bool,
}

impl<T> Default for Flow<T> {
    fn default() -> Self {
        Flow { q: VecDeque::new(), backlog: 0, deficit: 0, cvars: CodelVars::default(), listed: false }
    }
}

/// The fq_codel qdisc over packets carrying `T`.
#[derive(Clone, Debug)]
pub struct FqCodel<T> {
    cparams: CodelParams,
    quantum: i32,
    limit: u32,
    flows: Vec<Flow<T>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// sch->q.qlen and sch->qstats.backlog.
    qlen: u32,
    backlog: u64,
    /// Packets dropped by CoDel at dequeue.
    pub codel_drops: u64,
    /// Packets dropped by fq_codel_drop on overflow (drop_overlimit).
    pub overlimit_drops: u64,
    /// Packets marked CE (CoDel's ecn_mark plus ce_threshold's ce_mark).
    pub ce_marks: u64,
}

impl<T> FqCodel<T> {
    pub fn new(p: &FqCodelParams) -> FqCodel<T> {
        FqCodel {
            cparams: CodelParams {
                target: codel_duration(p.target),
                interval: codel_duration(p.interval),
                ce_threshold: p.ce_threshold.map_or(codel::CODEL_DISABLED_THRESHOLD, codel_duration),
                mtu: PSCHED_MTU,
                ecn: p.ecn,
            },
            quantum: p.quantum.min(i32::MAX as u32) as i32,
            limit: p.limit.max(1),
            flows: Vec::new(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            qlen: 0,
            backlog: 0,
            codel_drops: 0,
            overlimit_drops: 0,
            ce_marks: 0,
        }
    }

    /// Packets and bytes held.
    pub fn len(&self) -> (u32, u64) {
        (self.qlen, self.backlog)
    }

    pub fn is_empty(&self) -> bool {
        self.qlen == 0
    }

    /// Bytes queued in `flow`.
    pub fn flow_backlog(&self, flow: u32) -> u64 {
        self.flows.get(flow as usize).map_or(0, |f| f.backlog)
    }

    /// All drops: CoDel's and the overflow's.
    pub fn drops(&self) -> u64 {
        self.codel_drops + self.overlimit_drops
    }

    /// fq_codel_enqueue: the packet joins its flow's tail; a flow that was
    /// on no list joins new_flows with a full quantum; over the limit,
    /// fq_codel_drop sheds packets from the fattest flow.
    pub fn enqueue(&mut self, now: Time, flow: u32, bytes: u32, ecn_capable: bool, item: T) {
        let idx = flow as usize;
        if idx >= self.flows.len() {
            self.flows.resize_with(idx + 1, Flow::default);
        }
        let f = &mut self.flows[idx];
        f.q.push_back(Queued { enqueued: codel_time(now), bytes, ecn_capable, ce: false, item });
        f.backlog += bytes as u64;
        self.backlog += bytes as u64;
        if !f.listed {
            f.listed = true;
            self.new_flows.push_back(flow);
            f.deficit = self.quantum;
        }
        self.qlen += 1;
        if self.qlen > self.limit {
            let before = self.qlen;
            self.drop_fattest(DROP_BATCH_SIZE);
            self.overlimit_drops += (before - self.qlen) as u64;
        }
    }

    /// fq_codel_drop: finds the flow with the largest byte backlog and
    /// drops from its head until half of that backlog is gone, at most
    /// `max_packets`; its CoDel count grows by the packets dropped.
    fn drop_fattest(&mut self, max_packets: u32) {
        let mut idx = 0;
        let mut maxbacklog = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > maxbacklog {
                maxbacklog = f.backlog;
                idx = i;
            }
        }
        let threshold = maxbacklog >> 1;
        let f = &mut self.flows[idx];
        let (mut len, mut i) = (0u64, 0u32);
        loop {
            let Some(p) = f.q.pop_front() else { break };
            len += p.bytes as u64;
            i += 1;
            if i >= max_packets || len >= threshold {
                break;
            }
        }
        f.cvars.count = f.cvars.count.wrapping_add(i);
        f.backlog -= len;
        self.backlog -= len;
        self.qlen -= i;
    }

    /// fq_codel_dequeue at `now`: the head of new_flows (else old_flows)
    /// is served while it has deficit; a flow out of deficit gets another
    /// quantum and moves to the tail of old_flows; CoDel runs on the flow
    /// chosen; an emptied new flow passes through old_flows once (so that
    /// it cannot starve them), an emptied old flow leaves the lists.
    pub fn dequeue(&mut self, now: Time) -> Option<Queued<T>> {
        let now = codel_time(now);
        loop {
            let (from_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i),
                (None, Some(&i)) => (false, i),
                (None, None) => return None,
            };
            let f = &mut self.flows[idx as usize];
            if f.deficit <= 0 {
                f.deficit = f.deficit.saturating_add(self.quantum);
                self.pop_head(from_new);
                self.old_flows.push_back(idx);
                continue;
            }
            match self.codel_dequeue(idx as usize, now) {
                Some(p) => {
                    let f = &mut self.flows[idx as usize];
                    f.deficit = f.deficit.saturating_sub(p.bytes as i32);
                    return Some(p);
                }
                None => {
                    self.pop_head(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx);
                    } else {
                        self.flows[idx as usize].listed = false;
                    }
                }
            }
        }
    }

    fn pop_head(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// fq_codel's dequeue_func: the flow's head packet, out of the counts.
    #[inline]
    fn dequeue_head(&mut self, idx: usize) -> Option<Queued<T>> {
        let f = &mut self.flows[idx];
        let p = f.q.pop_front()?;
        f.backlog -= p.bytes as u64;
        self.backlog -= p.bytes as u64;
        self.qlen -= 1;
        Some(p)
    }

    /// codel_should_drop for a packet just taken (None: the flow is empty).
    #[inline]
    fn should_drop(&mut self, idx: usize, p: Option<&Queued<T>>, now: CodelTime) -> bool {
        let vars = &mut self.flows[idx].cvars;
        match p {
            None => {
                vars.first_above_time = 0;
                false
            }
            Some(p) => codel::should_drop(vars, &self.cparams, p.enqueued, self.backlog, now),
        }
    }

    /// codel_dequeue on flow `idx`: in the dropping state, drop (or mark)
    /// each time drop_next comes, spacing the next by interval/sqrt(count);
    /// leave it when the sojourn time goes below target. Outside it, enter
    /// it on the first should-drop verdict, resuming near the last count
    /// if the previous episode was recent (within 16 intervals).
    fn codel_dequeue(&mut self, idx: usize, now: CodelTime) -> Option<Queued<T>> {
        let cp = self.cparams;
        let mut skb = self.dequeue_head(idx);
        if skb.is_none() {
            self.flows[idx].cvars.dropping = false;
            return None;
        }
        let drop = self.should_drop(idx, skb.as_ref(), now);
        if self.flows[idx].cvars.dropping {
            if !drop {
                // Sojourn time below target: leave the dropping state.
                self.flows[idx].cvars.dropping = false;
            } else if after_eq(now, self.flows[idx].cvars.drop_next) {
                // Time for the next drop (several, if the backlog is large).
                while self.flows[idx].cvars.dropping && after_eq(now, self.flows[idx].cvars.drop_next) {
                    let v = &mut self.flows[idx].cvars;
                    v.count = v.count.wrapping_add(1);
                    v.newton_step();
                    let p = skb.as_mut().expect("should_drop held for a packet");
                    if cp.ecn && p.set_ce() {
                        self.ce_marks += 1;
                        v.drop_next = codel::control_law(v.drop_next, cp.interval, v.rec_inv_sqrt);
                        break; // goto end
                    }
                    self.codel_drops += 1;
                    skb = self.dequeue_head(idx);
                    if !self.should_drop(idx, skb.as_ref(), now) {
                        self.flows[idx].cvars.dropping = false;
                    } else {
                        let v = &mut self.flows[idx].cvars;
                        v.drop_next = codel::control_law(v.drop_next, cp.interval, v.rec_inv_sqrt);
                    }
                }
            }
        } else if drop {
            let p = skb.as_mut().expect("should_drop held for a packet");
            if cp.ecn && p.set_ce() {
                self.ce_marks += 1;
            } else {
                self.codel_drops += 1;
                skb = self.dequeue_head(idx);
                self.should_drop(idx, skb.as_ref(), now);
            }
            let v = &mut self.flows[idx].cvars;
            v.dropping = true;
            // If the sojourn went above target soon after the last episode,
            // resume from the drop rate that controlled it then.
            let delta = v.count.wrapping_sub(v.lastcount);
            if delta > 1 && before(now.wrapping_sub(v.drop_next), cp.interval.wrapping_mul(16)) {
                v.count = delta;
                v.newton_step();
            } else {
                v.count = 1;
                v.rec_inv_sqrt = CodelVars::REC_INV_SQRT_ONE;
            }
            v.lastcount = v.count;
            v.drop_next = codel::control_law(now, cp.interval, v.rec_inv_sqrt);
        }
        // end: the CE threshold marks on the sojourn time alone.
        if let Some(p) = skb.as_mut() {
            if after(self.flows[idx].cvars.ldelay, cp.ce_threshold) && !p.ce && p.set_ce() {
                self.ce_marks += 1;
            }
        }
        skb
    }

    /// CoDel state of `flow` (for tests).
    pub fn codel_vars(&self, flow: u32) -> Option<&CodelVars> {
        self.flows.get(flow as usize).map(|f| &f.cvars)
    }
}

#[cfg(test)]
#[path = "fq_codel_tests.rs"]
mod tests;
