//! BBRv3 tests, named after the tcp_bbr.c (v3) rule each one checks. They
//! drive the `CongestionControl` trait with synthetic ACKs, as the v1
//! tests do.

mod bounds;
mod ecn;
mod probe_bw;
mod probe_rtt;
mod startup;

use super::*;
use crate::cc::{CaState, CcInfo, CongestionControl, ConnState, RateSample, CA_ACK_ECE};
use crate::units::Time;

pub(super) const MSS: u32 = 1448;
/// Round-trip time of the synthetic path.
pub(super) const RTT: Time = Time::from_millis(20);
/// Synthetic bottleneck: 200 packets per 20 ms RTT (10 packets per ms).
pub(super) const PKTS_PER_RTT: i64 = 200;

/// One synthetic ACK and the rate sample it carries.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ack {
    pub dt: Time,
    pub acked: u32,
    pub delivered: i64,
    pub interval: Time,
    pub rtt: Option<Time>,
    pub app_limited: bool,
    pub new_round: bool,
    /// Segments this ACK marked lost (rs.losses).
    pub losses: u32,
    /// rs.lost: lost since the sampled packet was sent.
    pub lost: u32,
    /// rs.tx_in_flight.
    pub tx_in_flight: u32,
    /// rs.delivered_ce, also added to tp.delivered_ce.
    pub ce: u32,
    /// The ACK carries ECE.
    pub ece: bool,
    /// Packets in flight after the ACK (tp.packets_out).
    pub in_flight: u32,
}

impl Ack {
    /// A new-round ACK whose sample is `delivered` packets per RTT.
    pub fn round(delivered: i64) -> Ack {
        Ack {
            dt: RTT,
            acked: 10,
            delivered,
            interval: RTT,
            rtt: Some(RTT),
            app_limited: false,
            new_round: true,
            losses: 0,
            lost: 0,
            tx_in_flight: 200,
            ce: 0,
            ece: false,
            in_flight: 200,
        }
    }
    pub fn dt(mut self, dt: Time) -> Ack {
        self.dt = dt;
        self
    }
    pub fn in_flight(mut self, n: u32) -> Ack {
        self.in_flight = n;
        self
    }
    pub fn same_round(mut self) -> Ack {
        self.new_round = false;
        self
    }
    pub fn rtt(mut self, rtt: Time) -> Ack {
        self.rtt = Some(rtt);
        self.interval = rtt;
        self
    }
    pub fn losses(mut self, losses: u32, lost: u32, tx_in_flight: u32) -> Ack {
        self.losses = losses;
        self.lost = lost;
        self.tx_in_flight = tx_in_flight;
        self
    }
    pub fn ce(mut self, ce: u32) -> Ack {
        self.ce = ce;
        self.ece = ce > 0;
        self
    }
    pub fn acked(mut self, n: u32) -> Ack {
        self.acked = n;
        self
    }
    pub fn app_limited(mut self) -> Ack {
        self.app_limited = true;
        self
    }
}

/// A BBRv3 instance and the ConnState it controls, fed synthetic ACKs.
pub(super) struct Synth {
    pub tp: ConnState,
    pub bbr: Bbr3,
}

impl Synth {
    pub fn new() -> Synth {
        Synth::with_seed(DEFAULT_SEED, false)
    }

    pub fn with_seed(seed: u64, ecn_ok: bool) -> Synth {
        let mut tp = ConnState::new(MSS);
        tp.now = Time::from_millis(1);
        tp.delivered_mstamp = tp.now;
        tp.ecn_ok = ecn_ok;
        let mut bbr = Bbr3::with_seed(seed);
        bbr.init(&mut tp);
        Synth { tp, bbr }
    }

    /// Applies one ACK as the engine does: counters, in_ack_event, then
    /// cong_control. Returns the rate sample.
    pub fn ack(&mut self, a: Ack) -> RateSample {
        self.tp.now += a.dt;
        let prior_delivered = if a.new_round {
            self.tp.delivered
        } else {
            self.bbr.next_rtt_delivered.saturating_sub(1)
        };
        self.tp.delivered += u64::from(a.acked);
        self.tp.delivered_ce += u64::from(a.ce);
        if a.acked > 0 {
            self.tp.delivered_mstamp = self.tp.now;
        }
        self.tp.lost += u64::from(a.losses);
        self.tp.packets_out = a.in_flight;
        if let Some(rtt) = a.rtt {
            self.tp.srtt = if self.tp.srtt == Time::ZERO { rtt } else { Time((self.tp.srtt.0 * 7 + rtt.0) / 8) };
            self.tp.min_rtt = self.tp.min_rtt.min(rtt);
        }
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0;
        }
        let rs = RateSample {
            prior_delivered,
            prior_mstamp: self.tp.now.saturating_sub(a.interval),
            delivered: a.delivered,
            delivered_ce: a.ce,
            tx_in_flight: a.tx_in_flight,
            lost: a.lost,
            interval: a.interval,
            rtt: a.rtt,
            losses: a.losses,
            acked_sacked: a.acked,
            prior_in_flight: a.in_flight.saturating_add(a.acked).saturating_add(a.losses),
            is_app_limited: a.app_limited,
            is_retrans: false,
        };
        let flags = if a.ece { CA_ACK_ECE } else { 0 };
        self.bbr.in_ack_event(&mut self.tp, flags);
        self.bbr.cong_control(&mut self.tp, &rs);
        rs
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
    assert_eq!(s.bbr.state_label(), "startup");
    s.enter_probe_bw();
    assert_eq!(s.bbr.state_label(), "probe_bw_down");
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
