//! The registry of congestion control algorithms: one entry per algorithm
//! with its name, its constructor and its traits. Everything that lists
//! algorithms (the scenario's checks, the Python binding's
//! `cca_registry()`, the advisor and the report through it) reads this
//! list.

use super::{bbr, bbr3, bic, cubic, dctcp, highspeed, htcp, illinois, nv, reno, scalable, vegas, westwood, yeah};
use super::CongestionControl;

/// One algorithm the simulator implements: its name, how to build it, and
/// the facts about it that callers need without running it (the advisor,
/// the report, the scenario checks). Facts the algorithm itself answers
/// through [`CongestionControl`] (it owns cwnd and pacing, it needs ECN)
/// are read from an instance by [`Cca::traits`], not repeated here.
#[derive(Clone, Copy, Debug)]
pub struct Cca {
    /// Name as Linux spells it (`tcp_congestion_ops.name`).
    pub name: &'static str,
    /// Builds one connection's instance with its per-connection seed.
    pub build: fn(u64) -> Box<dyn CongestionControl>,
    /// Merged in mainline Linux as net/ipv4/tcp_<name>.c (BBRv3 lives in
    /// Google's out-of-tree branch: deployable only on a patched kernel).
    pub linux_mainline: bool,
    /// Linux's default (net.ipv4.tcp_congestion_control, CUBIC since
    /// 2.6.19): what hosts run unless told otherwise.
    pub linux_default: bool,
    /// Random loss bounds its rate (each loss cuts cwnd multiplicatively,
    /// so goodput falls as about 1/sqrt(p)). False for the rate-based
    /// algorithms and for Westwood, whose ssthresh after a loss is its
    /// bandwidth estimate times the minimum RTT (tcp_westwood_bw_rttmin()).
    pub loss_bound: bool,
}

/// The traits of one registry entry, with those the algorithm answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcaTraits {
    /// [`Cca::linux_mainline`].
    pub linux_mainline: bool,
    /// [`Cca::linux_default`].
    pub linux_default: bool,
    /// [`Cca::loss_bound`].
    pub loss_bound: bool,
    /// Rate-based: it models the path and paces itself, owning cwnd and
    /// pacing through `cong_control` (BBR; `owns_cwnd_and_pacing`).
    pub rate_based: bool,
    /// TCP_CONG_NEEDS_ECN ([`CongestionControl::needs_ecn`]): it needs ECN
    /// marking at the bottleneck (DCTCP).
    pub needs_ecn: bool,
}

impl Cca {
    /// The entry's traits; the algorithm's own answers come from a fresh
    /// instance.
    pub fn traits(&self) -> CcaTraits {
        let cc = (self.build)(0);
        CcaTraits {
            linux_mainline: self.linux_mainline,
            linux_default: self.linux_default,
            loss_bound: self.loss_bound,
            rate_based: cc.owns_cwnd_and_pacing(),
            needs_ecn: cc.needs_ecn(),
        }
    }
}

/// Every algorithm the simulator implements, one entry each: the only list
/// to extend when an algorithm is added. The order is the order callers
/// list them in (error messages, `AVAILABLE`, the report's colours).
pub const REGISTRY: &[Cca] = &[
    Cca { name: "reno", build: |_| Box::new(reno::Reno), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "cubic", build: |_| Box::new(cubic::Cubic::new()), linux_mainline: true, linux_default: true, loss_bound: true },
    Cca { name: "htcp", build: |_| Box::new(htcp::Htcp::new()), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "bbr", build: |seed| Box::new(bbr::Bbr::with_seed(seed)), linux_mainline: true, linux_default: false, loss_bound: false },
    Cca { name: "bbr3", build: |seed| Box::new(bbr3::Bbr3::with_seed(seed)), linux_mainline: false, linux_default: false, loss_bound: false },
    Cca { name: "dctcp", build: |_| Box::new(dctcp::Dctcp::new()), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "bic", build: |_| Box::new(bic::Bic::new()), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "highspeed", build: |_| Box::new(highspeed::HighSpeed::new()), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "scalable", build: |_| Box::new(scalable::Scalable), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "westwood", build: |_| Box::new(westwood::Westwood::new()), linux_mainline: true, linux_default: false, loss_bound: false },
    Cca { name: "illinois", build: |_| Box::new(illinois::Illinois::new()), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "yeah", build: |_| Box::new(yeah::Yeah::new()), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "vegas", build: |_| Box::new(vegas::Vegas::new()), linux_mainline: true, linux_default: false, loss_bound: true },
    Cca { name: "nv", build: |seed| Box::new(nv::Nv::with_seed(seed)), linux_mainline: true, linux_default: false, loss_bound: true },
];

/// Names of the algorithms this simulator implements, in registry order.
pub const AVAILABLE: &[&str] = &registry_names();

const fn registry_names() -> [&'static str; REGISTRY.len()] {
    let mut names = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        names[i] = REGISTRY[i].name;
        i += 1;
    }
    names
}

/// The registry entry named `name`, if any.
pub fn lookup(name: &str) -> Option<&'static Cca> {
    REGISTRY.iter().find(|c| c.name == name)
}

/// Builds the algorithm named `name`, or `None` if it is unknown.
pub fn by_name(name: &str) -> Option<Box<dyn CongestionControl>> {
    by_name_seeded(name, bbr::DEFAULT_SEED)
}

/// Builds the algorithm named `name`: a BPF object of `bpf` for a name
/// starting with `bpf:` (crate::bpf), else a native one
/// ([`by_name_seeded`]).
pub fn build_named(name: &str, seed: u64, bpf: &crate::bpf::Catalog) -> Option<Box<dyn CongestionControl>> {
    if name.starts_with(crate::bpf::PREFIX) {
        return bpf.build_algorithm(name, seed);
    }
    by_name_seeded(name, seed)
}

/// Builds the algorithm named `name` with a per-connection `seed` for the
/// algorithms that draw random numbers (BBR's probe_bw start phase, as
/// Linux's prandom_u32_max; BBRv3's probe waits, as get_random_u32_below;
/// NV's min-RTT reset period, as its get_random_bytes), so parallel streams
/// do not move in lockstep.
pub fn by_name_seeded(name: &str, seed: u64) -> Option<Box<dyn CongestionControl>> {
    lookup(name).map(|c| (c.build)(seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_builds_the_algorithm_of_its_name_once() {
        for (i, c) in REGISTRY.iter().enumerate() {
            assert_eq!((c.build)(1).name(), c.name);
            assert!(REGISTRY[..i].iter().all(|o| o.name != c.name), "{} listed twice", c.name);
        }
        assert_eq!(AVAILABLE, REGISTRY.iter().map(|c| c.name).collect::<Vec<_>>().as_slice());
    }

    #[test]
    fn traits_read_the_algorithms_own_answers() {
        let t = |name| lookup(name).unwrap().traits();
        assert!(t("bbr").rate_based && t("bbr3").rate_based && !t("cubic").rate_based);
        assert!(t("dctcp").needs_ecn && !t("reno").needs_ecn);
        assert!(!t("bbr3").linux_mainline && t("bbr").linux_mainline);
        assert!(!t("westwood").loss_bound && t("vegas").loss_bound);
    }

    #[test]
    fn rate_based_algorithms_are_not_loss_bound_and_one_is_linux_default() {
        for c in REGISTRY {
            let t = c.traits();
            assert!(!(t.rate_based && t.loss_bound), "{}: a rate-based algorithm is not bound by random loss", c.name);
        }
        let defaults: Vec<_> = REGISTRY.iter().filter(|c| c.linux_default).map(|c| c.name).collect();
        assert_eq!(defaults, ["cubic"]);
    }

    #[test]
    fn an_unknown_name_builds_nothing() {
        assert!(by_name("nope").is_none() && lookup("").is_none());
    }
}
