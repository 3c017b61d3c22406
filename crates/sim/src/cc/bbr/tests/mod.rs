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

pub(super) use super::harness::{Ack, MSS, PKTS_PER_RTT, RTT};
use super::harness::RoundCounter;

/// bw in Linux units for 10 pkts/ms: floor(200 << 24 / 20000 us).
pub(super) const BW_10_PER_MS: u64 = (200u64 << 24) / 20_000;

/// A BBR instance and the ConnState it controls, fed synthetic ACKs.
pub(super) type Synth = super::harness::Synth<Bbr>;

impl RoundCounter for Bbr {
    fn next_rtt_delivered(&self) -> u64 {
        self.next_rtt_delivered
    }
}

impl Synth {
    pub fn new() -> Synth {
        Synth::with_seed(DEFAULT_SEED)
    }

    /// Without ECN; an ACK that does not say leaves 1000 packets in flight
    /// (well above the BDP: DRAIN does not end by itself).
    pub fn with_seed(seed: u64) -> Synth {
        Synth::start(Bbr::with_seed(seed), false, 1000)
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
}
