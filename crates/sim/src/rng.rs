//! Small deterministic RNGs. Every component that needs randomness owns one,
//! seeded from the run seed and a component label, so adding a component
//! never shifts another's random stream (docs/architecture.md, Invariants:
//! no global RNG).

/// SplitMix64 (Steele, Lea, Flood 2014): used to expand seeds.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// xoshiro256** (Blackman, Vigna 2018).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator for component `label` of a run seeded with `seed`.
    pub fn new(seed: u64, label: u64) -> Rng {
        let mut sm = SplitMix64::new(seed ^ label.wrapping_mul(0xD134_2543_DE82_EF95));
        let mut s = [0u64; 4];
        for x in &mut s {
            *x = sm.next_u64();
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

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

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1]: safe to take the logarithm of.
    pub fn next_f64_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Number of Bernoulli(p) failures before the next success: the count of
    /// packets that pass before the next loss. `u64::MAX` when p = 0.
    pub fn geometric(&mut self, p: f64) -> u64 {
        if p <= 0.0 || p.is_nan() {
            return u64::MAX;
        }
        if p >= 1.0 {
            return 0;
        }
        let u = self.next_f64_open0();
        let g = (u.ln() / (-p).ln_1p()).floor();
        if g >= u64::MAX as f64 {
            u64::MAX
        } else {
            g as u64
        }
    }

    /// Exponentially distributed with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -self.next_f64_open0().ln() * mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_labels_separate_streams() {
        let mut a = Rng::new(7, 1);
        let mut b = Rng::new(7, 1);
        let mut c = Rng::new(7, 2);
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn geometric_gap_has_mean_one_over_p_minus_one() {
        let mut r = Rng::new(1, 0);
        let p = 0.01;
        let n = 200_000;
        let sum: f64 = (0..n).map(|_| r.geometric(p) as f64).sum();
        let mean = sum / n as f64;
        let expect = (1.0 - p) / p;
        assert!((mean - expect).abs() / expect < 0.02, "mean {mean}");
    }
}
