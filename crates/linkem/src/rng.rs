//! Seeded loss decisions with the simulator's own loss stage (geometric
//! gaps drawn from xoshiro256** seeded by SplitMix64), so a seed loses the
//! same data segments on every machine and on both backends.

use fatpipe_sim::path::{loss_stream, LossStage};
use fatpipe_sim::rng::Rng;

/// The loss stage of NFQUEUE `num`: its data segments (payload > 0, in
/// arrival order, retransmissions included) are lost where the simulator
/// loses flow group `num`'s. The kernel backend's data direction is queue 0
/// and carries every flow, which pairs a one-group study's kernel run with
/// the simulator's run of the same seed.
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

    #[test]
    fn queues_draw_from_their_own_streams() {
        let positions = |num| {
            let mut s = queue_loss(9, num, 1e-2);
            (0..10_000u32).filter(|_| s.lose()).collect::<Vec<_>>()
        };
        assert_ne!(positions(0), positions(1));
    }
}
