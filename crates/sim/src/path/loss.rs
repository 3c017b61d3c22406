//! Random loss of data packets: independent (Bernoulli per packet, drawn
//! as geometric gaps) or bursty (Gilbert-Elliott, netem's `loss gemodel`),
//! with the long-run mean changing at scheduled instants.

use crate::rng::Rng;
use crate::units::Time;
use crate::wire::packet_loss_probability;

/// Label of the seeded stream that draws the random losses of flow group
/// `group`'s data segments. fatpipe-linkem draws its data queue's losses
/// from group 0's stream with [`LossStage`] too, so one seed loses the same
/// data segments (counted in order, retransmissions included) on the
/// kernel path and in the simulator: their runs pair up (common random
/// numbers) and a kernel-vs-sim comparison can difference them.
pub fn loss_stream(group: u64) -> u64 {
    0x105_5000 + group
}

/// Random per-packet loss whose cost grows with losses, not packets: the gap
/// to the next loss is drawn geometrically.
#[derive(Clone, Debug)]
pub struct LossStage {
    p: f64,
    rng: Rng,
    /// Packets still to pass before the next loss.
    gap: u64,
}

impl LossStage {
    pub fn new(p: f64, rng: Rng) -> LossStage {
        let mut s = LossStage { p, rng, gap: 0 };
        s.gap = s.rng.geometric(p);
        s
    }

    /// Changes the loss probability from the next packet on (a scheduled
    /// step): the gap to the next loss is drawn afresh, which is exact for
    /// a memoryless (geometric) gap.
    pub fn set_p(&mut self, p: f64) {
        self.p = p;
        self.gap = self.rng.geometric(p);
    }

    /// Whether the next packet is lost.
    #[inline]
    pub fn lose(&mut self) -> bool {
        if self.gap > 0 {
            if self.gap != u64::MAX {
                self.gap -= 1;
            }
            return false;
        }
        self.gap = self.rng.geometric(self.p);
        true
    }

    /// How many of the next `n` packets pass before the next loss (all `n`
    /// when none of them is lost); they are consumed. When fewer than `n`
    /// pass, the packet after them is the lost one: `lose()` then says so.
    /// Exactly what `n` calls of `lose()` would decide, in one step (a
    /// burst is split only where a packet of it is lost).
    #[inline]
    pub fn pass(&mut self, n: u64) -> u64 {
        let k = self.gap.min(n);
        if self.gap != u64::MAX {
            self.gap -= k;
        }
        k
    }
}


/// The Gilbert-Elliott chain's parameters other than the chance of
/// entering the bad state, which follows from the long-run mean asked for
/// ([`GilbertElliott::enter_bad_probability`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeParams {
    /// Chance per packet of leaving the bad state (netem's r).
    pub r: f64,
    /// Loss per packet in the bad state (netem's 1-h).
    pub bad_loss: f64,
    /// Loss per packet in the good state (netem's 1-k).
    pub good_loss: f64,
}

/// Bursty loss: a two-state Markov chain stepped once per packet, as
/// sch_netem.c's loss_gilb_ell() steps it (Linux 3.3+, `tc qdisc ... netem
/// loss gemodel p r 1-h 1-k`): a packet finds the chain in a state, the
/// chain moves (good -> bad with p, bad -> good with r), and the packet is
/// lost with the loss probability of the state it found. So a fraction
/// p/(p+r) of packets find the bad state, bursts of bad packets last 1/r
/// packets on average, and the long-run loss is
/// (r·good_loss + p·bad_loss)/(p + r).
#[derive(Clone, Debug)]
pub struct GilbertElliott {
    params: GeParams,
    p: f64,
    bad: bool,
    rng: Rng,
}

impl GilbertElliott {
    /// A chain whose long-run loss is `mean`, starting in the good state.
    pub fn new(mean: f64, params: GeParams, rng: Rng) -> GilbertElliott {
        GilbertElliott { params, p: Self::enter_bad_probability(mean, params), bad: false, rng }
    }

    /// netem's p for a long-run loss `mean`: solving
    /// mean = (r·good + p·bad)/(p + r) for p gives
    /// p = r·(mean − good)/(bad − mean), clamped to [0, 1] (a mean outside
    /// (good, bad) is refused when the plan is read).
    pub fn enter_bad_probability(mean: f64, g: GeParams) -> f64 {
        if mean <= g.good_loss {
            return 0.0;
        }
        if mean >= g.bad_loss {
            return 1.0;
        }
        (g.r * (mean - g.good_loss) / (g.bad_loss - mean)).clamp(0.0, 1.0)
    }

    /// The long-run loss of the chain as set (for tests and reports).
    pub fn mean(&self) -> f64 {
        let (p, g) = (self.p, self.params);
        if p + g.r == 0.0 {
            return g.good_loss;
        }
        (g.r * g.good_loss + p * g.bad_loss) / (p + g.r)
    }

    /// A new long-run mean from the next packet on (the state is kept).
    pub fn set_mean(&mut self, mean: f64) {
        self.p = Self::enter_bad_probability(mean, self.params);
    }

    /// Whether the next packet is lost (two uniform draws, as netem).
    pub fn lose(&mut self) -> bool {
        let g = self.params;
        let (leave, loss) = if self.bad { (g.r, g.bad_loss) } else { (self.p, g.good_loss) };
        if self.rng.next_f64() < leave {
            self.bad = !self.bad;
        }
        self.rng.next_f64() < loss
    }
}

/// One flow group's loss on a path that moves: its process and the
/// scheduled changes of the path's random loss, applied at the first
/// packet at or after each instant. The group's mean per packet combines
/// the path's loss with its corruption for the group's segment size
/// (wire.rs), as at the start.
#[derive(Clone, Debug)]
pub struct ScheduledLoss {
    process: LossProcess,
    /// (instant, the path's random loss from then on).
    steps: Vec<(Time, f64)>,
    next: usize,
    corruption: f64,
    mss_bytes: u64,
}

/// A loss process.
#[derive(Clone, Debug)]
pub enum LossProcess {
    Independent(LossStage),
    GilbertElliott(GilbertElliott),
}

impl LossProcess {
    fn set_mean(&mut self, mean: f64) {
        match self {
            LossProcess::Independent(s) => s.set_p(mean),
            LossProcess::GilbertElliott(g) => g.set_mean(mean),
        }
    }

    fn lose(&mut self) -> bool {
        match self {
            LossProcess::Independent(s) => s.lose(),
            LossProcess::GilbertElliott(g) => g.lose(),
        }
    }
}

impl ScheduledLoss {
    /// Group `group`'s loss: random loss `loss` and per-bit `corruption`
    /// for segments of `mss_bytes`, Gilbert-Elliott when `ge` is given,
    /// changing at `steps`; drawn from the group's seeded stream
    /// ([`loss_stream`]) so that a seed loses the same packets wherever
    /// this code runs.
    pub fn new(seed: u64, group: u64, loss: f64, corruption: f64, mss_bytes: u64, ge: Option<GeParams>, steps: Vec<(Time, f64)>) -> ScheduledLoss {
        let rng = Rng::new(seed, loss_stream(group));
        let mean = packet_loss_probability(loss, corruption, mss_bytes);
        let process = match ge {
            Some(g) => LossProcess::GilbertElliott(GilbertElliott::new(mean, g, rng)),
            None => LossProcess::Independent(LossStage::new(mean, rng)),
        };
        ScheduledLoss { process, steps, next: 0, corruption, mss_bytes }
    }

    /// The path's random loss from `at` on (a step a state trigger
    /// decided), up to the next step scheduled after it.
    pub fn insert_step(&mut self, at: Time, loss: f64) {
        let i = self.steps.partition_point(|s| s.0 <= at).max(self.next);
        self.steps.insert(i, (at, loss));
    }

    /// Whether the group's next data packet, reaching the path at `now`, is
    /// lost.
    pub fn lose(&mut self, now: Time) -> bool {
        while let Some(&(at, loss)) = self.steps.get(self.next) {
            if at > now {
                break;
            }
            self.process.set_mean(packet_loss_probability(loss, self.corruption, self.mss_bytes));
            self.next += 1;
        }
        self.process.lose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_stage_drops_about_p_of_packets() {
        let mut l = LossStage::new(0.01, Rng::new(3, 9));
        let lost = (0..1_000_000).filter(|_| l.lose()).count();
        assert!((9_000..11_000).contains(&lost), "{lost}");
    }

    #[test]
    fn a_burst_passes_the_loss_stage_as_its_packets_would_one_by_one() {
        let (mut one, mut burst) = (LossStage::new(0.05, Rng::new(7, 1)), LossStage::new(0.05, Rng::new(7, 1)));
        for n in [1u64, 3, 45, 7, 64, 2, 45, 45, 30] {
            let by_one: Vec<bool> = (0..n).map(|_| one.lose()).collect();
            let mut by_burst = Vec::new();
            while (by_burst.len() as u64) < n {
                let k = burst.pass(n - by_burst.len() as u64);
                by_burst.extend(std::iter::repeat_n(false, k as usize));
                if (by_burst.len() as u64) < n {
                    by_burst.push(burst.lose());
                }
            }
            assert_eq!(by_one, by_burst, "burst of {n}");
        }
    }

    fn ge(r: f64, bad_loss: f64, good_loss: f64) -> GeParams {
        GeParams { r, bad_loss, good_loss }
    }

    /// Half-width of a 99.9 % interval of a Markov-modulated loss count:
    /// the binomial one widened by the chain's burstiness, sqrt of the
    /// variance inflation (1 + 2·ρ/(1 − ρ)) with ρ = 1 − p − r, the chain's
    /// lag-one autocorrelation (an upper bound of the loss process's).
    fn ge_interval(mean: f64, p: f64, r: f64, n: f64) -> f64 {
        let rho = 1.0 - p - r;
        3.29 * (n * mean * (1.0 - mean) * (1.0 + 2.0 * rho / (1.0 - rho))).sqrt()
    }

    #[test]
    fn gilbert_elliott_long_run_loss_is_the_mean_asked_for() {
        for (mean, g) in [(0.01, ge(0.25, 1.0, 0.0)), (0.001, ge(0.5, 0.8, 0.0)), (0.05, ge(0.1, 0.5, 0.01))] {
            let mut c = GilbertElliott::new(mean, g, Rng::new(11, 3));
            assert!((c.mean() - mean).abs() < 1e-12, "{} vs {mean}", c.mean());
            let n = 2_000_000u64;
            let lost = (0..n).filter(|_| c.lose()).count() as f64;
            let half = ge_interval(mean, c.p, g.r, n as f64);
            assert!((lost - mean * n as f64).abs() < half, "mean {mean}: lost {lost} of {n}, interval ±{half:.0}");
        }
    }

    #[test]
    fn gilbert_elliott_losses_come_in_bursts_of_mean_length_one_over_r() {
        // bad_loss = 1, good_loss = 0: every bad packet is lost, so a loss
        // burst is a bad sojourn: geometric with mean 1/r.
        let mut c = GilbertElliott::new(0.01, ge(0.25, 1.0, 0.0), Rng::new(5, 1));
        let (mut bursts, mut lost, mut in_burst) = (0u64, 0u64, false);
        for _ in 0..4_000_000 {
            let l = c.lose();
            lost += l as u64;
            bursts += (l && !in_burst) as u64;
            in_burst = l;
        }
        let mean_burst = lost as f64 / bursts as f64;
        assert!((mean_burst - 4.0).abs() < 0.15, "mean burst {mean_burst:.2} packets, expected 1/r = 4");
    }

    #[test]
    fn independent_loss_changes_its_mean_at_a_step() {
        let mut l = ScheduledLoss::new(1, 0, 0.0, 0.0, 1448, None, vec![(Time::from_secs(1), 0.02)]);
        assert!(!(0..100_000).any(|_| l.lose(Time::from_millis(999))), "no loss before the step");
        let lost = (0..100_000).filter(|_| l.lose(Time::from_secs(1))).count() as f64;
        let half = 3.29 * (100_000.0f64 * 0.02 * 0.98).sqrt();
        assert!((lost - 2_000.0).abs() < half, "{lost} lost after the step, expected 2000 ± {half:.0}");
    }

    #[test]
    fn a_scheduled_loss_without_steps_draws_what_the_plain_stage_draws() {
        let mut plain = LossStage::new(0.01, Rng::new(9, loss_stream(2)));
        let mut scheduled = ScheduledLoss::new(9, 2, 0.01, 0.0, 1448, None, Vec::new());
        for k in 0..100_000u64 {
            assert_eq!(plain.lose(), scheduled.lose(Time(k)), "packet {k}");
        }
    }
}
