//! Seeded loss decisions with the simulator's own loss stage (geometric
//! gaps drawn from xoshiro256** seeded by SplitMix64), so a seed loses the
//! same data segments on every machine and on both backends.

use fatpipe_sim::path::{loss_stream, LossStage};
use fatpipe_sim::rng::Rng;

use crate::args::QueueSpec;

/// The random loss of one queue's data segments: each flow group of
/// `group_loss` through its own stage, as the simulator loses each group's
/// (`Sim::new` builds group g's stage from `loss_stream(g)`), and any other
/// data segment through the queue's own stage (`queue_loss`).
#[derive(Clone, Debug)]
pub struct QueueLoss {
    other: LossStage,
    by_port: Vec<(u16, LossStage)>,
    /// (port, flow group) of each group, in `by_port`'s order.
    groups: Vec<(u16, u16)>,
}

impl QueueLoss {
    pub fn new(seed: u64, spec: &QueueSpec) -> Self {
        QueueLoss {
            other: queue_loss(seed, spec.num, spec.loss),
            by_port: spec
                .group_loss
                .iter()
                .map(|g| (g.port, LossStage::new(g.p.clamp(0.0, 1.0), Rng::new(seed, loss_stream(g.group as u64)))))
                .collect(),
            groups: spec.group_loss.iter().map(|g| (g.port, g.group)).collect(),
        }
    }

    /// The flow group whose port `ports` (source, destination) match, if
    /// any (the same match as `lose`).
    pub fn group_of(&self, ports: Option<(u16, u16)>) -> Option<u16> {
        let (src, dst) = ports?;
        self.groups.iter().find(|&&(p, _)| p == dst || p == src).map(|&(_, g)| g)
    }

    /// Whether the next data segment of no flow group is lost (the queue's
    /// own stage).
    pub fn lose_other(&mut self) -> bool {
        self.other.lose()
    }

    /// Whether the next data segment of the TCP flow with `ports` (source,
    /// destination) is lost: a flow group's segment matches its port on
    /// either side (the group's listening port is the destination of a bulk
    /// flow's data and the source of an RPC server's responses).
    pub fn lose(&mut self, ports: Option<(u16, u16)>) -> bool {
        let group = ports.and_then(|(src, dst)| self.by_port.iter().position(|&(p, _)| p == dst || p == src));
        match group {
            Some(i) => self.by_port[i].1.lose(),
            None => self.other.lose(),
        }
    }
}

/// The loss stage of NFQUEUE `num`: its data segments (payload > 0, in
/// arrival order, retransmissions included) are lost where the simulator
/// loses flow group `num`'s. The kernel and hosts backends give each flow
/// group its own stage instead (`group_loss`, [`QueueLoss`]), so every
/// group's segments pair with the simulator's run of the same seed; this
/// stage takes the data segments of no group.
pub fn queue_loss(seed: u64, num: u16, p: f64) -> LossStage {
    LossStage::new(p.clamp(0.0, 1.0), Rng::new(seed, loss_stream(num as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rate_matches_probability_within_3_sigma() {
        for &p in &[1e-4, 1e-3, 1e-2, 0.1] {
            let mut stage = queue_loss(42, 0, p);
            let n = 4_000_000u64;
            let drops = (0..n).filter(|_| stage.lose()).count() as f64;
            let expected = p * n as f64;
            let sigma = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((drops - expected).abs() < 3.0 * sigma, "p={p} drops={drops} expected={expected}");
        }
    }

    #[test]
    fn zero_never_drops_one_always_drops() {
        let mut never = queue_loss(1, 0, 0.0);
        let mut always = queue_loss(1, 0, 1.0);
        assert!(!(0..10_000).any(|_| never.lose()));
        assert!((0..10_000).all(|_| always.lose()));
    }

    #[test]
    fn data_queue_loses_the_segments_the_simulator_loses_for_group_0() {
        // The simulator's engine builds group g's stage from loss_stream(g).
        let mut sim = LossStage::new(1e-3, Rng::new(9, loss_stream(0)));
        let mut line = queue_loss(9, 0, 1e-3);
        let lost = |s: &mut LossStage| (0..200_000u32).filter(|_| s.lose()).collect::<Vec<_>>();
        let (a, b) = (lost(&mut sim), lost(&mut line));
        assert!(a.len() > 100, "expected ~200 losses, saw {}", a.len());
        assert_eq!(a, b);
    }

    fn drops(loss: &mut QueueLoss, ports: (u16, u16), n: u32) -> Vec<u32> {
        (0..n).filter(|_| loss.lose(Some(ports))).collect()
    }

    #[test]
    fn each_flow_group_loses_the_segments_the_simulator_loses_for_it() {
        let spec = crate::args::parse_queue("num=0,delay_s=0.01,group_loss=5201:0:1e-3/5202:1:4e-3").unwrap();
        let mut line = QueueLoss::new(9, &spec);
        // Interleaved arrivals of the two groups (bulk data to port 5201,
        // two in three; RPC responses from port 5202) do not disturb each
        // other's draws: (lost positions, segments seen) per group.
        let (mut a, mut b) = ((Vec::new(), 0u32), (Vec::new(), 0u32));
        for i in 0..300_000u32 {
            let (group, ports) = if i % 3 == 0 { (&mut b, (5202, 40_000)) } else { (&mut a, (40_001, 5201)) };
            if line.lose(Some(ports)) {
                group.0.push(group.1);
            }
            group.1 += 1;
        }
        let sim = |p: f64, g: u64, n: u32| {
            let mut stage = LossStage::new(p, Rng::new(9, loss_stream(g)));
            (0..n).filter(|_| stage.lose()).collect::<Vec<_>>()
        };
        let seen = (a.0.len(), b.0.len());
        assert!(seen.0 > 100 && seen.1 > 200, "expected ~200 and ~400 losses, saw {seen:?}");
        assert_eq!(a.0, sim(1e-3, 0, a.1));
        assert_eq!(b.0, sim(4e-3, 1, b.1));
    }

    #[test]
    fn a_one_group_data_queue_draws_what_the_queue_wide_stage_drew() {
        // The kernel backend's data queue is 0 and a one-group study's group
        // is 0: per-group loss keeps that run's pairing with the simulator.
        let by_group = crate::args::parse_queue("num=0,delay_s=0.01,group_loss=5201:0:1e-3").unwrap();
        let queue_wide = crate::args::parse_queue("num=0,delay_s=0.01,loss=1e-3").unwrap();
        let ports = (40_000, 5201);
        let lost = |spec| drops(&mut QueueLoss::new(3, spec), ports, 100_000);
        assert_eq!(lost(&by_group), lost(&queue_wide));
    }

    #[test]
    fn a_reverse_queue_as_the_backends_configure_it_loses_no_request_or_ack() {
        // Loss applies where the bottleneck sits (sender -> receiver); the
        // receiver -> sender queues (ACKs, RPC requests) get no loss key.
        let rev = crate::args::parse_queue("num=1,delay_s=0.01,name=ack").unwrap();
        let mut loss = QueueLoss::new(1, &rev);
        assert!(drops(&mut loss, (40_000, 5201), 1_000_000).is_empty(), "requests to an RPC server's port");
        assert!(drops(&mut loss, (5201, 40_000), 1_000_000).is_empty(), "a bulk receiver's segments");
        // ... while the same port's segments on a queue with group loss do.
        let fwd = crate::args::parse_queue("num=0,delay_s=0.01,group_loss=5201:0:1e-2").unwrap();
        assert!(!drops(&mut QueueLoss::new(1, &fwd), (5201, 40_000), 10_000).is_empty());
    }

    #[test]
    fn segments_of_no_group_use_the_queues_own_loss() {
        let spec = crate::args::parse_queue("num=0,delay_s=0.01,loss=1,group_loss=5201:0:0").unwrap();
        let mut loss = QueueLoss::new(1, &spec);
        assert!(drops(&mut loss, (40_000, 5201), 1000).is_empty());
        assert_eq!(drops(&mut loss, (40_000, 6000), 1000).len(), 1000);
        assert!(loss.lose(None), "a packet without TCP ports is no group's");
    }

    #[test]
    fn queues_draw_from_their_own_streams() {
        let positions = |num| {
            let mut s = queue_loss(9, num, 1e-2);
            (0..10_000u32).filter(|_| s.lose()).collect::<Vec<_>>()
        };
        assert_ne!(positions(0), positions(1));
    }
}
