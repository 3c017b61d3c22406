//! A path that moves (docs/path-dynamics.md): scheduled steps of rate,
//! RTT and loss (at instants, or when a sender's state changes:
//! trigger.rs), drops at chosen instants, bursty loss, a policer, jitter, aggregation, a delivery
//! trace and cross traffic, as one
//! configuration ([`DynamicsConfig`], validated from the plan by
//! crate::path_plan) and the state that applies it packet by packet
//! ([`Dynamics`]). The bottleneck's rate over time is the bottleneck's own
//! ([`super::profile::RateProfile`]). The same code serves the simulator's
//! engine and the kernel backend's delay line, so both move alike.

use crate::rng::Rng;
use crate::units::{Rate, Time};

use super::cross::{CrossSpec, CrossTraffic};
use super::direction::{Direction, JitterSpec, ReorderSpec, SlotSpec};
use super::drops::{DropSpec, ScheduledDrops};
use super::loss::{GeParams, ScheduledLoss};
use super::policer::TokenBucket;
use super::profile::{RateProfile, Steps};
use super::trace::{DeliveryTrace, TraceService};
use super::trigger::{Pending, Trigger};
use crate::app_rate::AppChange;

/// Which directions a jitter or an aggregating link applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Directions {
    /// Sender → receiver (data).
    pub data: bool,
    /// Receiver → sender (ACKs).
    pub ack: bool,
}

/// How the path moves, validated; the default is the static path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DynamicsConfig {
    /// Scheduled changes, each list sorted by instant.
    pub rate_changes: Vec<(Time, Rate)>,
    pub rtt_changes: Vec<(Time, Time)>,
    pub loss_changes: Vec<(Time, f64)>,
    pub gilbert_elliott: Option<GeParams>,
    pub jitter: Option<(JitterSpec, Directions)>,
    /// netem's reorder knob, and the directions it applies to.
    pub reorder: Option<(ReorderSpec, Directions)>,
    /// Rate and burst (bytes of frames) of a policer before the bottleneck.
    pub policer: Option<(Rate, u64)>,
    pub aggregation: Option<(SlotSpec, Directions)>,
    /// The bottleneck's service from a delivery trace (replaces the rate).
    pub trace: Option<DeliveryTrace>,
    /// Cross-traffic groups, by group.
    pub cross: Vec<CrossSpec>,
    /// Drops at chosen instants ([[path.drops]] with `at`).
    pub drops: Vec<DropSpec>,
    /// Steps and drops that wait for a sender's state (`on`).
    pub triggered: Vec<(Trigger, Triggered)>,
}

/// What a state trigger does when it fires (at its instant).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Triggered {
    /// A [[path.schedule]] step: the values given, from then on.
    Step { rate: Option<Rate>, rtt: Option<Time>, loss: Option<f64> },
    /// A [[path.drops]] burst: `count` data packets (of flow `group`, or any).
    Drop { count: u64, group: Option<usize> },
    /// A [[flows.app]] step of flow `group`'s application (every stream's:
    /// the engine hands it to them, crate::app_rate::RateBulk::insert).
    App { group: usize, change: AppChange },
}

impl DynamicsConfig {
    /// Nothing moves: the engine keeps its static path.
    pub fn is_static(&self) -> bool {
        *self == DynamicsConfig::default()
    }

    /// The bottleneck's rate over time, if a timed step changes it (a
    /// triggered step adds to it when it fires: Bottleneck::step_rate).
    pub fn rate_profile(&self, base: Rate) -> Option<RateProfile> {
        (!self.rate_changes.is_empty()).then(|| RateProfile::new(Steps::new(base, self.rate_changes.iter().copied())))
    }
}

/// RNG stream labels: the data direction's jitter, and each ACK path's.
const DATA_JITTER_STREAM: u64 = 0x7177_E000;
const ACK_JITTER_STREAM: u64 = 0x7177_E100;
/// The reorder knob's draws: the data direction's, and each ACK path's.
const DATA_REORDER_STREAM: u64 = 0x7E0D_E000;
const ACK_REORDER_STREAM: u64 = 0x7E0D_E100;

/// The state of a path that moves, beside the bottleneck.
#[derive(Clone, Debug)]
pub struct Dynamics {
    rtt: Steps<Time>,
    /// Each flow group's loss, by group index.
    pub loss: Vec<ScheduledLoss>,
    pub policer: Option<TokenBucket>,
    /// The cross-traffic sources, if any group is cross traffic.
    pub cross: Option<CrossTraffic>,
    /// Drops at chosen instants, and those triggers added.
    pub drops: ScheduledDrops,
    /// State triggers not yet fired (the engine reads the senders' logs).
    pub triggers: Pending<Triggered>,
    data: Direction,
    /// Each ACK path (one per extra delay) and its extra delay.
    acks: Vec<(Direction, Time)>,
    cfg: DynamicsConfig,
    seed: u64,
}

impl Dynamics {
    /// The state for `cfg` on a path of base RTT `rtt`, random loss `loss`
    /// and corruption `corruption`, with flow groups of `group_mss` bytes
    /// (each group's loss drawn from its own seeded stream).
    pub fn new(cfg: &DynamicsConfig, seed: u64, rtt: Time, loss: f64, corruption: f64, group_mss: &[u64]) -> Dynamics {
        let loss = group_mss
            .iter()
            .enumerate()
            .map(|(g, &mss)| ScheduledLoss::new(seed, g as u64, loss, corruption, mss, cfg.gilbert_elliott, cfg.loss_changes.clone()))
            .collect();
        Dynamics {
            rtt: Steps::new(rtt, cfg.rtt_changes.iter().copied()),
            loss,
            policer: cfg.policer.map(|(rate, burst)| TokenBucket::new(rate, burst)),
            cross: (!cfg.cross.is_empty()).then(|| CrossTraffic::new(&cfg.cross, seed)),
            drops: ScheduledDrops::new(&cfg.drops),
            triggers: Pending::new(cfg.triggered.iter().cloned()),
            data: Self::direction(cfg, true, Rng::new(seed, DATA_JITTER_STREAM), Rng::new(seed, DATA_REORDER_STREAM)),
            acks: Vec::new(),
            cfg: cfg.clone(),
            seed,
        }
    }

    fn direction(cfg: &DynamicsConfig, data: bool, rng: Rng, reorder_rng: Rng) -> Direction {
        let on = |d: Directions| if data { d.data } else { d.ack };
        let jitter = cfg.jitter.filter(|&(_, d)| on(d)).map(|(j, _)| j);
        let slots = cfg.aggregation.filter(|&(_, d)| on(d)).map(|(s, _)| s);
        let reorder = cfg.reorder.filter(|&(_, d)| on(d)).map(|(r, _)| r);
        Direction::new(jitter, slots, rng).with_reorder(reorder, reorder_rng)
    }

    /// Adds an ACK path whose delay exceeds the base backward delay by
    /// `extra` (the hosts' access links), drawing its jitter from ACK
    /// stream `stream`; returns its index here.
    pub fn add_ack_path(&mut self, stream: u64, extra: Time) -> usize {
        let (jitter_rng, reorder_rng) =
            (Rng::new(self.seed, ACK_JITTER_STREAM + stream), Rng::new(self.seed, ACK_REORDER_STREAM + stream));
        self.acks.push((Self::direction(&self.cfg, false, jitter_rng, reorder_rng), extra));
        self.acks.len() - 1
    }

    /// The one-way delay sender → receiver for a packet entering the path
    /// at `t`: half the RTT in effect (as the static path splits it).
    pub fn forward_delay(&self, t: Time) -> Time {
        self.rtt.at(t).div(2)
    }

    /// The one-way delay receiver → sender at `t`: the other half.
    pub fn backward_delay(&self, t: Time) -> Time {
        let rtt = self.rtt.at(t);
        rtt.saturating_sub(rtt.div(2))
    }

    /// When a data packet of `frame_bytes` that entered the path at `enter`
    /// and left the bottleneck at `leave` reaches the receiver.
    pub fn data_arrival(&mut self, enter: Time, leave: Time, frame_bytes: u32) -> Time {
        let delay = self.forward_delay(enter);
        self.data.arrival(leave, delay, frame_bytes)
    }

    /// When an ACK of `frame_bytes` sent at `now` on ACK path `k` reaches
    /// its sender.
    pub fn ack_arrival(&mut self, k: usize, now: Time, frame_bytes: u32) -> Time {
        let delay = self.backward_delay(now);
        let (dir, extra) = &mut self.acks[k];
        dir.arrival(now, delay + *extra, frame_bytes)
    }

    /// Whether data packets may overtake each other.
    pub fn data_reorders(&self) -> bool {
        self.data.reorders()
    }

    /// Whether ACKs may overtake each other.
    pub fn acks_reorder(&self) -> bool {
        self.acks.first().is_some_and(|(d, _)| d.reorders())
    }

    /// Packets (data and ACKs) that arrived before one sent earlier.
    pub fn reordered(&self) -> u64 {
        self.data.reordered + self.acks.iter().map(|(d, _)| d.reordered).sum::<u64>()
    }

    /// The bottleneck's rate over time from `base`, if a step changes it.
    pub fn rate_profile(&self, base: Rate) -> Option<RateProfile> {
        self.cfg.rate_profile(base)
    }

    /// The bottleneck's service from the trace, if any; frames are charged
    /// less `overhead_bytes` (the Ethernet header: mahimahi counts IP packets).
    pub fn trace_service(&self, overhead_bytes: u32) -> Option<TraceService> {
        self.cfg.trace.clone().map(|t| TraceService::new(t, overhead_bytes))
    }

    /// Carries out what a trigger decided, from `at` on: RTT and loss
    /// steps and drops here; the rate step, which the bottleneck applies
    /// (Bottleneck::step_rate), is returned.
    pub fn apply(&mut self, at: Time, what: Triggered) -> Option<Rate> {
        match what {
            Triggered::Step { rate, rtt, loss } => {
                if let Some(rtt) = rtt {
                    self.rtt.insert(at, rtt);
                }
                if let Some(loss) = loss {
                    for l in &mut self.loss {
                        l.insert_step(at, loss);
                    }
                }
                rate
            }
            Triggered::Drop { count, group } => {
                self.drops.add(DropSpec { at, count, group });
                None
            }
            Triggered::App { .. } => None, // the engine's (Sim::check_triggers)
        }
    }

    /// Data packets the policer dropped.
    pub fn policer_drops(&self) -> u64 {
        self.policer.as_ref().map_or(0, |p| p.drops)
    }
}
