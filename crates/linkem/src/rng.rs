//! Seeded loss decisions: SplitMix64 seeding a xoshiro256** generator.
//! Own small PRNG so a seed gives the same drop pattern on every machine.

pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut st = seed;
        Rng { s: [splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st)] }
    }

    /// xoshiro256** (Blackman & Vigna).
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }
}

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
            let mut rng = Rng::new(42);
            let n = 4_000_000u64;
            let drops = (0..n).filter(|_| gate.drop(&mut rng)).count() as f64;
            let expected = p * n as f64;
            let sigma = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((drops - expected).abs() < 3.0 * sigma, "p={p} drops={drops} expected={expected}");
        }
    }

    #[test]
    fn zero_never_drops_one_always_drops() {
        let mut rng = Rng::new(1);
        assert!(!(0..10_000).any(|_| LossGate::new(0.0).drop(&mut rng)));
        assert!((0..10_000).all(|_| LossGate::new(1.0).drop(&mut rng)));
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(9), Rng::new(9));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    }
}
