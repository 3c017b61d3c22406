//! Seeded deterministic stand-in for Linux's prandom_u32_max(): the
//! simulator has no global RNG (docs/architecture.md, Invariants), so each
//! BBR instance owns one.

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): tiny, full-period, good enough to pick a
/// gain-cycle phase.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// prandom_u32_max(ep_ro): "a pseudo-random number in interval
    /// [0, ep_ro)", computed as Linux does: (u64)rand_u32 * ep_ro >> 32.
    pub fn u32_max(&mut self, ep_ro: u32) -> u32 {
        let r = (self.next_u64() >> 32) as u32;
        ((u64::from(r) * u64::from(ep_ro)) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u32_max_stays_in_range_and_covers_it() {
        let mut rng = Rng::new(1);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = rng.u32_max(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        for _ in 0..100 {
            assert_eq!(a.u32_max(7), b.u32_max(7));
        }
    }
}
