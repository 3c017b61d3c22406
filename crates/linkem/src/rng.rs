//! Seeded loss decisions with the simulator's generator (xoshiro256**
//! seeded by SplitMix64), so a seed gives the same drop pattern on every
//! machine.

pub use fatpipe_sim::rng::Rng;

/// Label of linkem's loss stream in the shared seeded generator.
pub const LOSS_STREAM: u64 = 0x11_4e3e;

/// Bernoulli(p) drop decision with an integer threshold (no float per packet).
pub struct LossGate {
    threshold: u64,
    always: bool,
}

impl LossGate {
    pub fn new(p: f64) -> Self {
        let p = p.clamp(0.0, 1.0);
        LossGate { threshold: (p * 18_446_744_073_709_551_616.0) as u64, always: p >= 1.0 }
    }

    pub fn drop(&self, rng: &mut Rng) -> bool {
        self.always || (self.threshold > 0 && rng.next_u64() < self.threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rate_matches_probability_within_3_sigma() {
        for &p in &[1e-4, 1e-3, 1e-2, 0.1] {
            let gate = LossGate::new(p);
            let mut rng = Rng::new(42, LOSS_STREAM);
            let n = 4_000_000u64;
            let drops = (0..n).filter(|_| gate.drop(&mut rng)).count() as f64;
            let expected = p * n as f64;
            let sigma = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((drops - expected).abs() < 3.0 * sigma, "p={p} drops={drops} expected={expected}");
        }
    }

    #[test]
    fn zero_never_drops_one_always_drops() {
        let mut rng = Rng::new(1, LOSS_STREAM);
        assert!(!(0..10_000).any(|_| LossGate::new(0.0).drop(&mut rng)));
        assert!((0..10_000).all(|_| LossGate::new(1.0).drop(&mut rng)));
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(9, LOSS_STREAM), Rng::new(9, LOSS_STREAM));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    }
}
