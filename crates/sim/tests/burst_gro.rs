//! TSO bursts through the path as one unit, and GRO at the receiver
//! (engine.rs `Tx::transmit_burst`, tcp/receiver/gro.rs).
mod common;
#[path = "common/hand_env.rs"]
mod hand_env;

use common::{goodput, Plan};
use fatpipe_sim::cc::{self, tso_autosize};
use fatpipe_sim::engine::Sim;
use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::tcp::{Ack, Sender, SenderConfig};
use fatpipe_sim::units::{Rate, Time};
use hand_env::Env;
use serde_json::json;

/// A CUBIC sender (MSS 1448, 20 ms handshake RTT, no buffer limits) that
/// has sent its initial window into a hand-driven environment.
fn started_cubic_sender() -> (Sender, Env) {
    let cfg = SenderConfig { mss: 1448, wmem_bytes: 1 << 30, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20,
                             handshake_rtt: Some(Time::from_millis(20)), ecn: false };
    let mut s = Sender::new(&cfg, cc::by_name("cubic").unwrap());
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    (s, env)
}

#[test]
fn unpaced_new_data_leaves_in_tso_bursts_of_tcp_tso_autosize_segments() {
    // tcp_write_xmit() builds skbs of tcp_tso_segs() segments, sized from
    // sk_pacing_rate (kept by tcp_update_pacing_rate() for every flow) even
    // when the flow is not paced.
    let (mut s, mut env) = started_cubic_sender();
    // IW 10 at 200 % of 10 segments per 20 ms (1.16 MB/s): 1 ms is one
    // segment, so the minimum of 2 (tcp_min_tso_segs) applies.
    assert_eq!(env.bursts, vec![(0, 2), (2, 2), (4, 2), (6, 2), (8, 2)]);
    // A cwnd of 2000 segments: 1 ms of 200 % of cwnd/srtt is capped at
    // 64 KB, 45 segments; the quota goes out as such bursts.
    s.tp.snd_cwnd = 2000;
    env.bursts.clear();
    s.on_ack(Time::from_millis(20), &Ack { ack: 10, wnd: 1 << 20, ..Ack::default() }, &mut env);
    let goal = tso_autosize(1448, Rate::from_gbps(100), Time::MAX, 2);
    assert_eq!(goal, 45);
    assert!(env.bursts.len() > 10);
    assert!(env.bursts.iter().all(|&(_, n)| n <= goal), "{:?}", env.bursts);
    assert!(env.bursts.iter().filter(|&&(_, n)| n == goal).count() >= env.bursts.len() - 1);
    // Consecutive, without gaps: the bursts are the segments in order.
    assert!(env.bursts.windows(2).all(|w| w[0].0 + w[0].1 as u64 == w[1].0));
}

#[test]
fn new_data_queued_a_burst_at_a_time_keeps_per_segment_in_flight_and_counts() {
    // tcp_write_xmit() queues and sends each TSO skb as one unit
    // (tcp_event_new_data_sent adds tcp_skb_pcount to packets_out); the
    // sender queues all new segments one push allows at once: one run,
    // one snapshot, tx.in_flight counting each segment
    // (tcp_set_tx_in_flight), the same TSO packets on the wire.
    let (mut s, mut env) = started_cubic_sender();
    assert_eq!((s.sb.snd_nxt, s.tp.packets_out, s.stats.segs_out), (10, 10, 10));
    assert_eq!(s.sb.run_count(), 1, "the initial window is one run");
    assert_eq!((0..10).map(|q| s.sb.get(q).in_flight).collect::<Vec<_>>(), (1..=10).collect::<Vec<u32>>());
    // An ACK of 4 frees room for 4 + cwnd growth: one more run, its
    // in_flight continuing from what is still out.
    s.on_ack(Time::from_millis(20), &Ack { ack: 4, wnd: 1 << 20, ..Ack::default() }, &mut env);
    let sent = s.sb.snd_nxt - 10;
    assert!(sent >= 4, "{sent}");
    assert_eq!(s.sb.run_count(), 2);
    assert_eq!((10..s.sb.snd_nxt).map(|q| s.sb.get(q).in_flight).collect::<Vec<_>>(), (7..7 + sent as u32).collect::<Vec<u32>>());
    // The wire saw every segment once, in order, as TSO packets.
    assert_eq!(env.sent.iter().map(|&(_, q, _)| q).collect::<Vec<_>>(), (0..s.sb.snd_nxt).collect::<Vec<_>>());
}

/// A paced 1-stream BBR flow at 10 Gbit/s, 20 ms (TSO bursts of ~45
/// segments), run for `secs`; returns (segments received, ACKs sent).
fn received_and_acks(gro: bool, loss: f64, secs: f64) -> (u64, u64, f64) {
    let mut plan = Plan::new("bbr", 1, 10e9, 0.02, secs).set("loss", json!(loss));
    plan.0["receiver"]["gro"] = json!(gro);
    let mut sim = Sim::new(&Scenario::from_json(&plan.json()).unwrap().sim_config());
    sim.run_until(Time::from_secs_f64(secs));
    let r = sim.receiver(0);
    let (rcv, acks) = (r.rcv_nxt, r.acks_sent);
    (rcv, acks, goodput(&sim.into_result(), 1.0, secs))
}

#[test]
fn a_gro_receiver_acks_once_per_tso_burst_instead_of_every_second_segment() {
    let (rcv_off, acks_off, _) = received_and_acks(false, 0.0, 3.0);
    let (rcv_on, acks_on, _) = received_and_acks(true, 0.0, 3.0);
    // Without GRO: delayed ACKs, one per two full segments.
    let per_ack_off = rcv_off as f64 / acks_off as f64;
    assert!((1.8..=2.2).contains(&per_ack_off), "{per_ack_off} segments per ACK without GRO");
    // With GRO: one ACK per super-packet of up to 45 segments (64 KB).
    let per_ack_on = rcv_on as f64 / acks_on as f64;
    assert!((20.0..=45.0).contains(&per_ack_on), "{per_ack_on} segments per ACK with GRO");
}

#[test]
fn gro_keeps_goodput_and_random_loss_stays_per_segment() {
    // Loss splits GRO units (a sequence gap flushes), so the sender still
    // sees each loss; goodput stays at the bottleneck's (BBR ignores 1e-4).
    let (_, _, off) = received_and_acks(false, 1e-4, 4.0);
    let (_, _, on) = received_and_acks(true, 1e-4, 4.0);
    assert!((on / off - 1.0).abs() < 0.05, "goodput with GRO {on}, without {off}");
    assert!(on > 9.0e9, "{on}");
}
