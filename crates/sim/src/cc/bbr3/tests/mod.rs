//! BBRv3 tests, named after the tcp_bbr.c (v3) rule each one checks. They
//! drive the `CongestionControl` trait with synthetic ACKs, as the v1
//! tests do.

mod bounds;
mod ecn;
mod probe_bw;
mod probe_rtt;
mod startup;

use super::*;
use crate::cc::bbr::harness::RoundCounter;
use crate::cc::{CaState, CcInfo, CongestionControl, RateSample};
use crate::units::Time;

pub(super) use crate::cc::bbr::harness::{Ack, PKTS_PER_RTT, RTT};

/// A BBRv3 instance and the ConnState it controls, fed synthetic ACKs.
pub(super) type Synth = crate::cc::bbr::harness::Synth<Bbr3>;

impl RoundCounter for Bbr3 {
    fn next_rtt_delivered(&self) -> u64 {
        self.next_rtt_delivered
    }
}

impl Synth {
    pub fn new() -> Synth {
        Synth::with_seed(DEFAULT_SEED, false)
    }

    /// An ACK that does not say leaves 200 packets in flight (the BDP).
    pub fn with_seed(seed: u64, ecn_ok: bool) -> Synth {
        Synth::start(Bbr3::with_seed(seed), ecn_ok, 200)
    }

    /// Rounds at a constant bw until STARTUP and DRAIN are over (in-flight
    /// at the BDP so DRAIN ends at once): PROBE_BW's DOWN. ACKs of 100
    /// segments let cwnd reach its target (2 x BDP) on the way.
    pub fn enter_probe_bw(&mut self) {
        for _ in 0..20 {
            if self.bbr.mode() == Mode::ProbeBw {
                break;
            }
            self.ack(Ack::round(PKTS_PER_RTT).acked(100));
        }
        assert_eq!(self.bbr.mode(), Mode::ProbeBw);
        assert_eq!(self.bbr.phase(), Phase::Down);
    }

    /// From DOWN, an ACK with in-flight below the BDP: CRUISE.
    pub fn enter_cruise(&mut self) {
        self.enter_probe_bw();
        self.ack(Ack::round(PKTS_PER_RTT).in_flight(150));
        assert_eq!(self.bbr.phase(), Phase::Cruise);
    }

    /// The BDP the model holds for 200 packets per 20 ms: the bw sample is
    /// rounded up (DIV_ROUND_UP_ULL), so is the BDP: 201.
    pub const BDP: u32 = 201;
}

#[test]
fn state_label_names_the_probe_bw_phase_as_bbr_get_phase() {
    let mut s = Synth::new();
    assert_eq!(s.bbr.state_label(&s.tp), "startup");
    s.enter_probe_bw();
    assert_eq!(s.bbr.state_label(&s.tp), "probe_bw_down");
    assert_eq!(s.bbr.name(), "bbr3");
    match s.bbr.get_info() {
        Some(CcInfo::Bbr { version, .. }) => assert_eq!(version, 3),
        other => panic!("expected tcp_bbr_info, got {other:?}"),
    }
}

#[test]
fn tso_segs_add_a_min_rtt_allowance_halved_every_512_us() {
    let mut s = Synth::new();
    s.bbr.min_rtt_us = 0;
    let rate = Rate::from_mbps(100); // 12.5 MB/s >> 10 = 12207 bytes
    let lan = s.bbr.tso_segs(&s.tp, rate);
    assert_eq!(lan, ((65_536 - 1 - 320) / 1448) as u32, "capped at gso_max_size - 1 - MAX_TCP_HEADER");
    s.bbr.min_rtt_us = 1024; // 64 KB >> 2
    assert_eq!(s.bbr.tso_segs(&s.tp, rate), ((12_207 + 16_384) / 1448) as u32);
    s.bbr.min_rtt_us = 40_000; // no allowance: r >= 32
    assert_eq!(s.bbr.tso_segs(&s.tp, rate), (12_207 / 1448) as u32);
}

#[test]
fn app_limited_ack_below_max_bw_takes_the_fast_path() {
    let mut s = Synth::new();
    s.enter_cruise();
    s.ack(Ack::round(PKTS_PER_RTT).same_round().in_flight(150));
    assert!(s.bbr.try_fast_path, "cwnd reached its target");
    s.tp.pacing_rate = Rate(1);
    s.ack(Ack::round(50).same_round().in_flight(150).app_limited());
    assert_eq!(s.tp.pacing_rate, Rate(1), "model and control skipped");
    s.ack(Ack::round(50).same_round().in_flight(150));
    assert!(s.tp.pacing_rate > Rate(1), "not app-limited: the slow path sets pacing");
}
