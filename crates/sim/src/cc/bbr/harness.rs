//! The test harness BBR v1 (`bbr::tests`) and BBRv3 (`bbr3::tests`) share:
//! synthetic ACKs (`Ack`) carrying tcp_rate.c rate samples, fed to an
//! algorithm through the `CongestionControl` trait as the engine does
//! (`Synth::ack`: counters, in_ack_event, then cong_control). Each
//! version's tests add their own constructors and shortcuts (entering
//! PROBE_BW, pinning a phase) on `Synth<Bbr>` / `Synth<Bbr3>`.

use crate::cc::{CongestionControl, ConnState, RateSample, CA_ACK_ECE};
use crate::units::Time;

pub(crate) const MSS: u32 = 1448;
/// Round-trip time of the synthetic path.
pub(crate) const RTT: Time = Time::from_millis(20);
/// Synthetic bottleneck: 10 packets per ms (= 115.84 Mbit/s at MSS 1448),
/// measured over one RTT: 200 packets per 20 ms.
pub(crate) const PKTS_PER_RTT: i64 = 200;

/// The round bookkeeping the harness reads to place a same-round sample
/// (bbr->next_rtt_delivered in both versions).
pub(crate) trait RoundCounter: CongestionControl {
    fn next_rtt_delivered(&self) -> u64;
}

/// One synthetic ACK and the rate sample it carries.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ack {
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
    /// Packets in flight after the ACK (tp.packets_out); `None`: the
    /// harness's default ([`Synth::default_in_flight`]).
    pub in_flight: Option<u32>,
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
            lost: 0,
            tx_in_flight: 200,
            ce: 0,
            ece: false,
            in_flight: None,
        }
    }
    pub fn dt(mut self, dt: Time) -> Ack {
        self.dt = dt;
        self
    }
    pub fn in_flight(mut self, n: u32) -> Ack {
        self.in_flight = Some(n);
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
    /// The RTT sample only; the sampling interval stays one `RTT`.
    pub fn rtt(mut self, rtt: Time) -> Ack {
        self.rtt = Some(rtt);
        self
    }
    /// A round that lasted `rtt`: the RTT sample and the sampling interval.
    pub fn round_trip(mut self, rtt: Time) -> Ack {
        self.rtt = Some(rtt);
        self.interval = rtt;
        self
    }
    pub fn acked(mut self, n: u32) -> Ack {
        self.acked = n;
        self
    }
    /// Segments this ACK marked lost (rs.losses).
    pub fn losses(mut self, n: u32) -> Ack {
        self.losses = n;
        self
    }
    /// rs.losses with BBRv3's per-sample loss facts: rs.lost since the
    /// sampled packet was sent and its rs.tx_in_flight.
    pub fn marked_lost(mut self, losses: u32, lost: u32, tx_in_flight: u32) -> Ack {
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
}

/// A BBR instance and the ConnState it controls, fed synthetic ACKs.
pub(crate) struct Synth<B> {
    pub tp: ConnState,
    pub bbr: B,
    /// Packets in flight after an ACK that does not say.
    pub default_in_flight: u32,
}

impl<B: RoundCounter> Synth<B> {
    /// `bbr` started (init) on a fresh connection 1 ms in, whose handshake
    /// ACK set delivered_mstamp (tcp_rate_gen).
    pub fn start(mut bbr: B, ecn_ok: bool, default_in_flight: u32) -> Synth<B> {
        let mut tp = ConnState::new(MSS);
        tp.now = Time::from_millis(1);
        tp.delivered_mstamp = tp.now;
        tp.ecn_ok = ecn_ok;
        bbr.init(&mut tp);
        Synth { tp, bbr, default_in_flight }
    }

    /// Applies one ACK as the engine does: counters, in_ack_event, then
    /// cong_control. Returns the rate sample.
    pub fn ack(&mut self, a: Ack) -> RateSample {
        let in_flight = a.in_flight.unwrap_or(self.default_in_flight);
        self.tp.now += a.dt;
        let prior_delivered = if a.new_round {
            self.tp.delivered
        } else {
            self.bbr.next_rtt_delivered().saturating_sub(1)
        };
        self.tp.delivered += u64::from(a.acked);
        self.tp.delivered_ce += u64::from(a.ce);
        if a.acked > 0 {
            self.tp.delivered_mstamp = self.tp.now; // tcp_rate_gen()
        }
        self.tp.lost += u64::from(a.losses);
        self.tp.packets_out = in_flight;
        if let Some(rtt) = a.rtt {
            self.tp.srtt = if self.tp.srtt == Time::ZERO { rtt } else { Time((self.tp.srtt.0 * 7 + rtt.0) / 8) };
            self.tp.min_rtt = self.tp.min_rtt.min(rtt);
        }
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0; // tcp_rate_gen()
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
            // in flight before the ACK: what it acked or marked lost too
            prior_in_flight: in_flight.saturating_add(a.acked).saturating_add(a.losses),
            is_app_limited: a.app_limited,
            is_retrans: false,
        };
        let flags = if a.ece { CA_ACK_ECE } else { 0 };
        self.bbr.in_ack_event(&mut self.tp, flags);
        self.bbr.cong_control(&mut self.tp, &rs);
        rs
    }

    /// sk_pacing_rate in bytes per second.
    pub fn pacing_bytes(&self) -> u64 {
        self.tp.pacing_rate.bps() / 8
    }
}
