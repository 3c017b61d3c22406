//! BBR tests, named after the tcp_bbr.c rule each one checks. They drive
//! the `CongestionControl` trait with synthetic ACKs (`Synth`) or with a
//! tiny fluid "pipe" (`pipe::Pipe`) that produces tcp_rate.c rate samples
//! for a given bottleneck rate and RTT.

mod filters;
mod hooks;
mod lt_bw;
mod pacing;
mod pipe;
mod probe_bw;
mod probe_rtt;
mod recovery;
mod startup_drain;

use super::*;
use crate::cc::{CaState, CongestionControl, ConnState, RateSample};
use crate::units::Time;

pub(super) const MSS: u32 = 1448;
/// Round-trip time of the synthetic path.
pub(super) const RTT: Time = Time::from_millis(20);
/// Synthetic bottleneck: 10 packets per ms (= 115.84 Mbit/s at MSS 1448),
/// measured over one RTT: 200 packets per 20 ms.
pub(super) const PKTS_PER_RTT: i64 = 200;
/// bw in Linux units for 10 pkts/ms: floor(200 << 24 / 20000 us).
pub(super) const BW_10_PER_MS: u64 = (200u64 << 24) / 20_000;

/// One synthetic ACK.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ack {
    /// Time since the previous ACK.
    pub dt: Time,
    /// Segments newly acked (rs.acked_sacked).
    pub acked: u32,
    /// Rate sample: delivered over interval.
    pub delivered: i64,
    pub interval: Time,
    pub rtt: Option<Time>,
    pub app_limited: bool,
    /// rs.prior_delivered reaches next_rtt_delivered: a round starts.
    pub new_round: bool,
    pub losses: u32,
    /// Packets in flight after the ACK (tp.packets_out here).
    pub in_flight: u32,
}

impl Ack {
    /// A new-round ACK carrying a sample of `delivered` packets per RTT.
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
            in_flight: 1000,
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
    pub fn app_limited(mut self) -> Ack {
        self.app_limited = true;
        self
    }
    pub fn rtt(mut self, rtt: Time) -> Ack {
        self.rtt = Some(rtt);
        self
    }
    pub fn acked(mut self, n: u32) -> Ack {
        self.acked = n;
        self
    }
    pub fn losses(mut self, n: u32) -> Ack {
        self.losses = n;
        self
    }
}

/// A BBR instance and the ConnState it controls, fed synthetic ACKs.
pub(super) struct Synth {
    pub tp: ConnState,
    pub bbr: Bbr,
}

impl Synth {
    pub fn new() -> Synth {
        Synth::with_seed(DEFAULT_SEED)
    }

    pub fn with_seed(seed: u64) -> Synth {
        let mut tp = ConnState::new(MSS);
        tp.now = Time::from_millis(1);
        tp.delivered_mstamp = tp.now; // the handshake's ACK (tcp_rate_gen)
        let mut bbr = Bbr::with_seed(seed);
        bbr.init(&mut tp);
        Synth { tp, bbr }
    }

    /// Applies one ACK as the engine would (counters first, then
    /// cong_control) and returns the rate sample it passed.
    pub fn ack(&mut self, a: Ack) -> RateSample {
        self.tp.now += a.dt;
        let prior_delivered = if a.new_round {
            self.tp.delivered
        } else {
            self.bbr.next_rtt_delivered.saturating_sub(1)
        };
        self.tp.delivered += u64::from(a.acked);
        if a.acked > 0 {
            self.tp.delivered_mstamp = self.tp.now; // tcp_rate_gen()
        }
        self.tp.lost += u64::from(a.losses);
        self.tp.packets_out = a.in_flight;
        if let Some(rtt) = a.rtt {
            self.tp.srtt = if self.tp.srtt == Time::ZERO {
                rtt
            } else {
                Time((self.tp.srtt.0 * 7 + rtt.0) / 8)
            };
            self.tp.min_rtt = self.tp.min_rtt.min(rtt);
        }
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0; // tcp_rate_gen()
        }
        let rs = RateSample {
            prior_delivered,
            prior_mstamp: self.tp.now.saturating_sub(a.interval),
            delivered: a.delivered,
            interval: a.interval,
            rtt: a.rtt,
            losses: a.losses,
            acked_sacked: a.acked,
            // in flight before the ACK: what it acked or marked lost too
            prior_in_flight: a.in_flight.saturating_add(a.acked).saturating_add(a.losses),
            is_app_limited: a.app_limited,
            is_retrans: false,
            ..RateSample::default()
        };
        self.bbr.cong_control(&mut self.tp, &rs);
        rs
    }

    /// Rounds at a constant bw until STARTUP and DRAIN are over; in-flight
    /// at the BDP so DRAIN ends at once. The phase is then pinned to a
    /// 1.0-gain phase starting now, so tests control cycling.
    pub fn enter_probe_bw(&mut self) {
        for _ in 0..20 {
            if self.bbr.mode() == Mode::ProbeBw {
                break;
            }
            self.ack(Ack::round(PKTS_PER_RTT).in_flight(200));
        }
        assert_eq!(self.bbr.mode(), Mode::ProbeBw);
        self.pin_phase(2);
    }

    /// Forces the gain-cycle phase, starting now.
    pub fn pin_phase(&mut self, idx: u32) {
        self.bbr.cycle_idx = idx;
        self.bbr.cycle_mstamp = self.tp.delivered_mstamp;
        self.bbr.update_gains();
    }

    /// sk_pacing_rate in bytes per second.
    pub fn pacing_bytes(&self) -> u64 {
        self.tp.pacing_rate.bps() / 8
    }
}
