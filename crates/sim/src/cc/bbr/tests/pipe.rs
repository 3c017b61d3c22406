//! A tiny packet-level "pipe" for end-to-end checks: one BBR flow, a FIFO
//! bottleneck of a given rate with an unbounded buffer, a fixed base RTT,
//! an optional token-bucket policer, one ACK per packet, and rate samples
//! built the way tcp_rate.c builds them (tcp_rate_skb_sent,
//! tcp_rate_skb_delivered, tcp_rate_gen). Lost packets are detected when a
//! later packet is acked and are not retransmitted.

use super::*;
use crate::units::{Bytes, Rate};
use std::collections::VecDeque;

struct Pkt {
    tx: Time,
    /// None: dropped by the policer.
    ack_at: Option<Time>,
    delivered: u64,
    delivered_mstamp: Time,
    first_tx: Time,
    app_limited: bool,
}

struct Policer {
    rate: Rate,
    depth: u64,
    tokens: u64,
    last: Time,
}

pub(super) struct Pipe {
    pub tp: ConnState,
    pub bbr: Bbr,
    pub bottleneck: Rate,
    pub base_rtt: Time,
    link_free: Time,
    flight: VecDeque<Pkt>,
    next_send: Time,
    first_tx_mstamp: Time,
    policer: Option<Policer>,
}

impl Pipe {
    pub fn new(bottleneck: Rate, base_rtt: Time) -> Pipe {
        let mut tp = ConnState::new(MSS);
        tp.now = Time::from_millis(1);
        tp.delivered_mstamp = tp.now; // the handshake's ACK (tcp_rate_gen)
        let mut bbr = Bbr::with_seed(7);
        bbr.init(&mut tp);
        Pipe {
            tp,
            bbr,
            bottleneck,
            base_rtt,
            link_free: Time::ZERO,
            flight: VecDeque::new(),
            next_send: Time::ZERO,
            first_tx_mstamp: Time::ZERO,
            policer: None,
        }
    }

    pub fn with_policer(mut self, rate: Rate, depth: Bytes) -> Pipe {
        self.policer = Some(Policer {
            rate,
            depth: depth.get(),
            tokens: depth.get(),
            last: self.tp.now,
        });
        self
    }

    /// Runs for `d`, calling `on_ack` after every ACK.
    pub fn run_for(&mut self, d: Time, mut on_ack: impl FnMut(&Pipe)) {
        let end = self.tp.now + d;
        loop {
            let next_ack = self.flight.iter().find_map(|p| p.ack_at);
            let next_send = (self.tp.in_flight() < self.tp.snd_cwnd)
                .then(|| self.tp.now.max(self.next_send));
            let t = match (next_ack, next_send) {
                (Some(a), Some(s)) => a.min(s),
                (Some(a), None) => a,
                (None, Some(s)) => s,
                (None, None) => break,
            };
            if t > end {
                break;
            }
            self.tp.now = t;
            if next_ack == Some(t) {
                self.ack();
                on_ack(self);
            } else {
                self.send();
            }
        }
        self.tp.now = end;
    }

    fn policer_admits(&mut self, now: Time) -> bool {
        let Some(p) = self.policer.as_mut() else {
            return true;
        };
        let refill = p.rate.bytes_in(now - p.last).get();
        if refill > 0 {
            p.tokens = (p.tokens + refill).min(p.depth);
            p.last = now;
        }
        if p.tokens >= u64::from(MSS) {
            p.tokens -= u64::from(MSS);
            true
        } else {
            false
        }
    }

    fn send(&mut self) {
        let now = self.tp.now;
        if self.tp.in_flight() == 0 {
            self.bbr.cwnd_event(&mut self.tp, crate::cc::CwndEvent::TxStart);
        }
        // tcp_rate_skb_sent()
        if self.tp.packets_out == 0 {
            self.first_tx_mstamp = now;
            self.tp.delivered_mstamp = now;
        }
        let ack_at = if self.policer_admits(now) {
            let start = now.max(self.link_free);
            self.link_free = start + self.bottleneck.transmit_time(Bytes(u64::from(MSS)));
            Some(self.link_free + self.base_rtt)
        } else {
            None
        };
        self.flight.push_back(Pkt {
            tx: now,
            ack_at,
            delivered: self.tp.delivered,
            delivered_mstamp: self.tp.delivered_mstamp,
            first_tx: self.first_tx_mstamp,
            app_limited: self.tp.app_limited != 0,
        });
        self.tp.packets_out += 1;
        self.next_send = if self.tp.pacing_rate.bps() > 0 {
            now + self.tp.pacing_rate.transmit_time(Bytes(u64::from(MSS)))
        } else {
            now
        };
    }

    fn ack(&mut self) {
        let now = self.tp.now;
        let prior_in_flight = self.tp.in_flight();
        let mut losses = 0u32;
        while self.flight.front().is_some_and(|p| p.ack_at.is_none()) {
            self.flight.pop_front();
            losses += 1;
        }
        let pkt = self.flight.pop_front().expect("an acked packet");
        self.tp.packets_out -= losses + 1;
        self.tp.lost += u64::from(losses);
        self.tp.delivered += 1;

        // RTT (tcp_ack_update_rtt) before the rate sample, as in Linux.
        let rtt = now - pkt.tx;
        self.tp.srtt = if self.tp.srtt == Time::ZERO {
            rtt
        } else {
            Time((self.tp.srtt.0 * 7 + rtt.0) / 8)
        };
        self.tp.min_rtt = self.tp.min_rtt.min(rtt);

        // tcp_rate_skb_delivered()
        let snd_interval = pkt.tx - pkt.first_tx;
        self.first_tx_mstamp = pkt.tx;
        // tcp_rate_gen()
        self.tp.delivered_mstamp = now;
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0;
        }
        let ack_interval = now - pkt.delivered_mstamp;
        let mut interval = snd_interval.max(ack_interval);
        if interval < self.tp.min_rtt {
            interval = Time::ZERO; // invalid: shorter than min_rtt
        }
        let rs = RateSample {
            prior_delivered: pkt.delivered,
            prior_mstamp: pkt.delivered_mstamp,
            delivered: (self.tp.delivered - pkt.delivered) as i64,
            interval,
            rtt: Some(rtt),
            losses,
            acked_sacked: 1,
            prior_in_flight,
            is_app_limited: pkt.app_limited,
            is_retrans: false,
            ..RateSample::default()
        };
        self.bbr.cong_control(&mut self.tp, &rs);
    }
}

/// Whole-loop check: STARTUP -> DRAIN -> PROBE_BW on a 100 Mbit/s, 20 ms
/// path; the model converges to the path and the link stays busy.
#[test]
fn pipe_startup_drain_probe_bw_models_the_path() {
    let rate = Rate::from_mbps(100);
    let mut p = Pipe::new(rate, RTT);
    let mut modes = vec![p.bbr.mode()];
    p.run_for(Time::from_secs(1), |p| {
        if *modes.last().unwrap() != p.bbr.mode() {
            modes.push(p.bbr.mode());
        }
    });
    assert_eq!(&modes[..3], &[Mode::Startup, Mode::Drain, Mode::ProbeBw], "{modes:?}");
    let delivered_before = p.tp.delivered;
    let mut max_rtt = Time::ZERO;
    p.run_for(Time::from_secs(2), |p| max_rtt = max_rtt.max(p.tp.srtt));
    assert_eq!(p.bbr.mode(), Mode::ProbeBw);

    let bw = p.bbr.bw_rate(MSS).bps() as f64;
    assert!((bw / 100e6 - 1.0).abs() < 0.02, "bw estimate {bw}");
    let tx = rate.transmit_time(Bytes(u64::from(MSS)));
    assert_eq!(u64::from(p.bbr.min_rtt_us()), (RTT + tx).as_micros());
    // Throughput over the last 2 s: the link is kept busy.
    let goodput = (p.tp.delivered - delivered_before) as f64 * f64::from(MSS) * 8.0 / 2.0;
    assert!(goodput > 0.95 * 100e6, "goodput {goodput}");
    // cwnd ~ 2 x BDP (BDP ~ 173 packets) plus the quantization budget.
    assert!((340..=420).contains(&p.tp.snd_cwnd), "cwnd {}", p.tp.snd_cwnd);
    // The queue stays bounded: smoothed RTT well below 2 x base RTT.
    assert!(max_rtt < RTT.mul(2), "max srtt {max_rtt}");
}

/// PROBE_RTT end to end: the path's RTT rises to 30 ms after 1 s, so no
/// sample matches the 20 ms min_rtt any more (nor did any after STARTUP,
/// as the quantization budget keeps a few packets queued); 10 s after it
/// was last seen the filter expires, cwnd drops to 4 for >= 200 ms and one
/// round, and min_rtt is re-measured at 30 ms.
#[test]
fn pipe_probe_rtt_remeasures_min_rtt_after_10s() {
    let mut p = Pipe::new(Rate::from_mbps(20), RTT);
    p.run_for(Time::from_secs(1), |_| {});
    assert_eq!(p.bbr.min_rtt_us() / 1000, 20);
    p.base_rtt = Time::from_millis(30);
    let mut entered = None;
    let mut left = None;
    let mut cwnd_in_probe_rtt = 0;
    p.run_for(Time::from_secs(11), |p| {
        if p.bbr.mode() == Mode::ProbeRtt {
            entered.get_or_insert(p.tp.now);
            cwnd_in_probe_rtt = cwnd_in_probe_rtt.max(p.tp.snd_cwnd);
        } else if entered.is_some() && left.is_none() {
            left = Some(p.tp.now);
        }
    });
    let (entered, left) = (entered.expect("PROBE_RTT entered"), left.expect("and left"));
    assert!(entered > Time::from_secs(10), "entered at {entered}");
    assert!(left - entered > Time::from_millis(200), "lasted {}", left - entered);
    assert_eq!(cwnd_in_probe_rtt, 4);
    assert_eq!(p.bbr.min_rtt_us() / 1000, 30, "min_rtt re-measured");
}

/// Policer end to end: a 10 Mbit/s token bucket on a 100 Mbit/s path is
/// detected (lt_use_bw) and modelled within 10%.
#[test]
fn pipe_policer_detected_by_lt_bw() {
    let mut p = Pipe::new(Rate::from_mbps(100), RTT)
        .with_policer(Rate::from_mbps(10), Bytes(100_000));
    let mut detected = None;
    p.run_for(Time::from_secs(5), |p| {
        if p.bbr.lt_use_bw() && detected.is_none() {
            detected = Some(p.bbr.bw_rate(MSS));
        }
    });
    let lt = detected.expect("policer detected").bps() as f64;
    assert!((lt / 10e6 - 1.0).abs() < 0.10, "lt_bw {lt}");
}
