//! ECN end to end (RFC 3168 as Linux does it) and DCTCP (RFC 8257,
//! tcp_dctcp.c): negotiation, ECT on data, CE marking at the bottleneck,
//! the receiver's echo, the sender's one CWR reduction per window, and
//! DCTCP's behaviour on a CE-threshold path.

mod common;

use common::Plan;
use fatpipe_sim::cc::{self, CaState, CcInfo};
use fatpipe_sim::engine::Sim;
use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::tcp::{Ack, Codepoint, Receiver, RxAction, SegEcn, Sender, SenderConfig};
use fatpipe_sim::units::Time;
use serde_json::json;

#[path = "common/hand_env.rs"]
mod hand_env;
use hand_env::Env;

fn sender(cc_name: &str, ecn: bool) -> Sender {
    let cfg = SenderConfig { mss: 1000, wmem_bytes: 1 << 30, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20, handshake_rtt: None, ecn };
    Sender::new(&cfg, cc::by_name(cc_name).unwrap())
}

fn ack(n: u64, ece: bool) -> Ack {
    Ack { ack: n, wnd: 1 << 20, ece, ..Ack::default() }
}

fn sack(n: u64, block: (u64, u64), ece: bool) -> Ack {
    let mut a = ack(n, ece);
    a.sacks[0] = block;
    a.nsacks = 1;
    a
}

const ECT: SegEcn = SegEcn { codepoint: Codepoint::Ect0, cwr: false };
const CE: SegEcn = SegEcn { codepoint: Codepoint::Ce, cwr: false };

// ------------------------------------------------------------ sender rules

#[test]
fn tcp_ecn_send_marks_new_data_ect_only_on_negotiated_flows() {
    let mut env = Env::default();
    let mut s = sender("reno", false);
    s.start(Time::ZERO, &mut env);
    assert!(env.ecn.iter().all(|e| *e == SegEcn::NOT_ECT));
    let mut env = Env::default();
    let mut s = sender("reno", true);
    s.start(Time::ZERO, &mut env);
    assert_eq!(env.ecn.len(), 10);
    assert!(env.ecn.iter().all(|e| *e == ECT), "new data is ECT(0), no CWR yet");
}

/// A sender with 20 segments in flight (10..30) after slow start's first
/// round, driven to retransmit segment 10 by SACKs of 11..14.
fn retransmission_codepoint(cc_name: &str) -> SegEcn {
    let mut env = Env::default();
    let mut s = sender(cc_name, true);
    s.start(Time::ZERO, &mut env);
    s.on_ack(Time::from_millis(20), &ack(10, false), &mut env);
    let t = Time::from_millis(40);
    for k in 11..15 {
        s.on_ack(t, &sack(10, (11, k + 1), false), &mut env);
    }
    // RACK needs time past the reordering window: let the timer fire.
    while !env.sent.iter().any(|&(_, seq, re)| re && seq == 10) {
        env.fire_next(&mut s, Time::from_secs(5)).expect("a timer is pending");
    }
    let i = env.sent.iter().position(|&(_, seq, re)| re && seq == 10).unwrap();
    env.ecn[i]
}

#[test]
fn tcp_ecn_send_leaves_retransmissions_not_ect_unless_the_cca_needs_ecn() {
    assert_eq!(retransmission_codepoint("reno"), SegEcn::NOT_ECT, "INET_ECN_dontxmit");
    assert_eq!(retransmission_codepoint("dctcp"), ECT, "tcp_ca_needs_ecn keeps ECT");
}

/// Grows cwnd to 20 with 20 segments outstanding (seqs 10..30).
fn ecn_sender_with_20_in_flight(cc_name: &str, env: &mut Env) -> Sender {
    let mut s = sender(cc_name, true);
    s.start(Time::ZERO, env);
    s.on_ack(Time::from_millis(20), &ack(10, false), env);
    assert_eq!((s.tp.snd_cwnd, s.tp.packets_out), (20, 20));
    s
}

fn cwr_reduces_once_per_window(cc_name: &str) {
    let mut env = Env::default();
    let mut s = ecn_sender_with_20_in_flight(cc_name, &mut env);
    let t = Time::from_millis(40);
    let sent_before = env.sent.len();
    // tcp_try_to_open() → tcp_enter_cwr(): ssthresh from the CCA, CWR state.
    s.on_ack(t, &ack(11, true), &mut env);
    assert_eq!(s.tp.ca_state, CaState::Cwr);
    let ssthresh = s.tp.snd_ssthresh;
    assert!(ssthresh < 20, "{cc_name}: ssthresh {ssthresh}");
    assert_eq!(s.stats.ecn_reductions, 1);
    // Every ECE until high_seq (30) is acked belongs to the same window.
    for n in 12..=30 {
        s.on_ack(t, &ack(n, true), &mut env);
        assert_eq!(s.tp.snd_ssthresh, ssthresh, "{cc_name}: one reduction per window (ack {n})");
    }
    assert_eq!(s.stats.ecn_reductions, 1);
    // PRR took cwnd down toward ssthresh, not below it.
    assert!(s.tp.snd_cwnd <= ssthresh + 1, "{cc_name}: cwnd {}", s.tp.snd_cwnd);
    // tcp_ecn_queue_cwr(): the first new segment after the reduction, and
    // only it, carries CWR.
    let cwrs: Vec<usize> = (sent_before..env.sent.len()).filter(|&i| env.ecn[i].cwr).collect();
    assert_eq!(cwrs, vec![sent_before], "{cc_name}: CWR on the first new segment only");
    // Past high_seq the window is over (tcp_fastretrans_alert() exits CWR
    // once something above high_seq is acked) and a new ECE reduces again.
    let high = s.sb.snd_nxt;
    s.on_ack(t + Time::from_millis(1), &ack(31, false), &mut env);
    s.on_ack(t + Time::from_millis(2), &ack(high.min(s.sb.snd_nxt), false), &mut env);
    assert_eq!(s.tp.ca_state, CaState::Open, "{cc_name}");
    s.on_ack(t + Time::from_millis(3), &ack(s.sb.snd_una + 1, true), &mut env);
    assert_eq!(s.stats.ecn_reductions, 2, "{cc_name}");
    assert!(s.tp.snd_ssthresh < ssthresh, "{cc_name}");
}

#[test]
fn ece_reduces_reno_once_per_window_through_cwr() {
    cwr_reduces_once_per_window("reno");
}

#[test]
fn ece_reduces_cubic_once_per_window_through_cwr() {
    cwr_reduces_once_per_window("cubic");
}

#[test]
fn ece_reduces_htcp_and_dctcp_once_per_window_through_cwr() {
    cwr_reduces_once_per_window("htcp");
    cwr_reduces_once_per_window("dctcp");
}

#[test]
fn ece_is_ignored_on_a_connection_without_ecn() {
    let mut env = Env::default();
    let mut s = sender("reno", false);
    s.start(Time::ZERO, &mut env);
    s.on_ack(Time::from_millis(20), &ack(10, true), &mut env);
    assert_eq!(s.tp.ca_state, CaState::Open);
    assert_eq!((s.tp.delivered_ce, s.tp.snd_cwnd), (0, 20));
}

#[test]
fn tcp_count_delivered_counts_segments_acked_by_ece_acks_as_delivered_ce() {
    let mut env = Env::default();
    let mut s = ecn_sender_with_20_in_flight("dctcp", &mut env);
    let t = Time::from_millis(40);
    s.on_ack(t, &ack(14, true), &mut env); // 4 cumulatively
    s.on_ack(t, &sack(14, (15, 18), true), &mut env); // 3 SACKed
    // The rate sample carries the marks delivered since its packet (sent
    // before any) left: rs->delivered_ce, what DCTCP-style CCAs read.
    assert_eq!(s.rate.rs.delivered_ce, 7, "{:?}", s.rate.rs);
    s.on_ack(t, &ack(20, false), &mut env); // 3 more (14, 18, 19) without ECE
    assert_eq!(s.tp.delivered_ce, 7);
    assert_eq!(s.tp.delivered, 10 + 4 + 3 + 3);
}

#[test]
fn an_ece_ack_forbids_undoing_the_reduction() {
    // tcp_fastretrans_alert() step A / tcp_enter_recovery(sk, ece_ack):
    // prior_ssthresh stays 0, so a D-SACK later cannot restore cwnd.
    let mut env = Env::default();
    let mut s = ecn_sender_with_20_in_flight("reno", &mut env);
    let t = Time::from_millis(40);
    s.on_ack(t, &ack(11, true), &mut env);
    let cut = s.tp.snd_ssthresh;
    let mut d = ack(12, true);
    d.dsack = Some(11);
    s.on_ack(t, &d, &mut env);
    assert_eq!(s.tp.snd_ssthresh, cut);
    assert_eq!(s.stats.undos, 0);
}

// ---------------------------------------------------------- receiver rules

fn ece_of(a: RxAction) -> bool {
    match a {
        RxAction::AckNow(a) | RxAction::AckThenSchedule(a, ..) => a.ece,
        x => panic!("expected an ACK, got {x:?}"),
    }
}

#[test]
fn rfc3168_receiver_sets_ece_on_every_ack_from_a_ce_segment_until_cwr() {
    let mut r = Receiver::new(1 << 20, 1000, Time::from_millis(200)).with_ecn(true, false);
    let t = Time::from_millis(1);
    assert!(!ece_of(r.on_data(0, t, ECT)));
    assert!(ece_of(r.on_data(1, t, CE)));
    assert!(ece_of(r.on_data(2, t, ECT)));
    assert!(ece_of(r.on_data(3, t, ECT)));
    let cwr = SegEcn { codepoint: Codepoint::Ect0, cwr: true };
    assert!(!ece_of(r.on_data(4, t, cwr)), "CWR ends the echo");
    assert!(!ece_of(r.on_data(5, t, ECT)));
}

#[test]
fn dctcp_receiver_acks_at_once_when_the_ce_state_flips_with_the_prior_state_first() {
    let mut r = Receiver::new(1 << 20, 1000, Time::from_millis(200)).with_ecn(true, true);
    let t = Time::from_millis(1);
    // Leave quick-ACK mode (16 quick ACKs), then one segment arms the
    // delayed ACK.
    for seq in 0..16 {
        assert!(!ece_of(r.on_data(seq, t, ECT)));
    }
    assert!(matches!(r.on_data(16, t, ECT), RxAction::Schedule(..)));
    assert!(r.take_lead_ack().is_none());
    // CE: the held ACK goes first with ECE clear (up to segment 16), then
    // this segment's ACK at once with ECE.
    let now = r.on_data(17, t, CE);
    let lead = r.take_lead_ack().expect("the prior state's ACK");
    assert_eq!((lead.ack, lead.ece), (17, false));
    match now {
        RxAction::AckNow(a) => assert_eq!((a.ack, a.ece), (18, true)),
        x => panic!("expected an immediate ACK, got {x:?}"),
    }
    // The state stays CE: ordinary delayed ACKing (the delayed-ACK event
    // still pending serves), with ECE.
    assert!(matches!(r.on_data(18, t, CE), RxAction::Schedule(..) | RxAction::None));
    assert!(ece_of(r.on_data(19, t, CE)));
    // Back to ECT: an immediate ACK with ECE clear, no CWR needed.
    assert!(!ece_of(r.on_data(20, t, ECT)));
}

// ------------------------------------------------------------ end to end

fn ce_path(cc_name: &str, k_packets: u64) -> Plan {
    Plan::new(cc_name, 1, 100e6, 0.010, 2.0)
        .set("buffer_bytes", json!(4 * 125_000))
        .set("aqm", json!({"kind": "ce_threshold", "k_packets": k_packets}))
}

#[test]
fn ecn_is_used_only_when_the_sender_requests_and_the_receiver_accepts() {
    // net.ipv4.tcp_ecn = 2 everywhere (Linux's default): no ECN, no marks.
    assert_eq!(ce_path("reno", 20).run().path.ce_marks, 0);
    // The sender's host requests it.
    let mut p = ce_path("reno", 20);
    p.0["senders"]["s1"]["ecn"] = json!(1);
    assert!(p.run().path.ce_marks > 0);
    // ... or the flow does; but a receiver with tcp_ecn = 0 refuses.
    let p = ce_path("reno", 20).flow("ecn", json!(1));
    assert!(p.run().path.ce_marks > 0);
    let mut p = ce_path("reno", 20).flow("ecn", json!(1));
    p.0["receiver"]["ecn"] = json!(0);
    assert_eq!(p.run().path.ce_marks, 0);
    // DCTCP requests it whatever the hosts say (TCP_CONG_NEEDS_ECN).
    assert!(ce_path("dctcp", 20).run().path.ce_marks > 0);
}

#[test]
fn cubic_with_ecn_on_a_ce_threshold_path_reduces_by_cwr_and_loses_nothing() {
    let plan = ce_path("cubic", 40).flow("ecn", json!(1)).set("sample_interval_s", json!(0.1));
    let mut sim = Sim::new(&Scenario::from_json(&plan.json()).unwrap().sim_config());
    sim.run_until(Time::from_secs(2));
    let s = sim.sender(0);
    assert!(s.stats.ecn_reductions >= 2, "{}", s.stats.ecn_reductions);
    assert_eq!((s.stats.retrans, s.stats.recoveries), (0, 0));
    assert!(s.tp.delivered_ce > 0);
    let r = sim.run();
    assert_eq!((r.path.queue_drops, r.path.random_drops), (0, 0));
    assert!(r.path.ce_marks > 0);
    let goodput = common::goodput(&r, 1.0, 2.0);
    assert!(goodput > 0.9 * 100e6 * 1460.0 / 1500.0, "goodput {goodput}");
}

#[test]
fn dctcp_two_flows_at_10g_keep_the_queue_near_k_with_full_link_and_no_drops() {
    const K: usize = 65;
    let plan = Plan::new("dctcp", 2, 10e9, 100e-6, 0.5)
        .set("buffer_bytes", json!(1_000_000))
        .set("sample_interval_s", json!(0.1))
        .set("aqm", json!({"kind": "ce_threshold", "k_packets": K}))
        .flow("mss_bytes", json!(1448));
    let mut sim = Sim::new(&Scenario::from_json(&plan.json()).unwrap().sim_config());
    let warm = Time::from_millis(100);
    sim.run_until(warm);
    let busy0 = sim.bottleneck().busy;
    let mut queue = Vec::new();
    let step = Time::from_micros(10);
    let mut t = warm;
    while t < Time::from_millis(500) {
        t += step;
        sim.run_until(t);
        queue.push(sim.bottleneck().occupancy(t).0);
    }
    let used = (sim.bottleneck().busy - busy0).as_secs_f64() / (t - warm).as_secs_f64();
    queue.sort_unstable();
    let mean = queue.iter().sum::<usize>() as f64 / queue.len() as f64;
    let (p5, p95) = (queue[queue.len() / 20], queue[queue.len() * 19 / 20]);
    let alphas: Vec<f64> = (0..2)
        .map(|i| match sim.sender(i).cc_info() {
            Some(CcInfo::Dctcp { enabled: true, alpha, .. }) => alpha as f64 / 1024.0,
            x => panic!("expected DCTCP info, got {x:?}"),
        })
        .collect();
    let retrans: u64 = (0..2).map(|i| sim.sender(i).stats.retrans).sum();
    let r = sim.run();
    eprintln!("used {used:.4} queue mean {mean:.1} p5 {p5} p95 {p95} alpha {alphas:?} marks {}", r.path.ce_marks);
    assert!(used >= 0.99, "link use {used}");
    assert_eq!((r.path.queue_drops, retrans), (0, 0));
    assert!(r.path.ce_marks > 0);
    assert!((K as f64 * 0.6..=K as f64 * 1.3).contains(&mean), "mean queue {mean} packets");
    assert!(p5 >= K / 3 && p95 <= K + K / 2, "queue p5 {p5} p95 {p95}");
    for a in alphas {
        assert!(a > 0.0 && a < 0.3, "alpha {a}");
    }
}

#[test]
fn the_plans_aqm_becomes_the_bottlenecks_discipline() {
    use fatpipe_sim::path::{Aqm, CeThreshold};
    let aqm = |v: serde_json::Value| Scenario::from_json(&Plan::new("reno", 1, 1e8, 0.01, 1.0).set("aqm", v).json()).unwrap().aqm;
    assert_eq!(aqm(json!(null)), Aqm::DropTail);
    assert_eq!(aqm(json!({"kind": "droptail"})), Aqm::DropTail);
    assert_eq!(aqm(json!({"kind": "ce_threshold", "k_packets": 65})), Aqm::CeThreshold(CeThreshold::Packets(65)));
    assert_eq!(aqm(json!({"kind": "ce_threshold", "k_bytes": 100000})), Aqm::CeThreshold(CeThreshold::Bytes(100_000)));
    assert_eq!(
        aqm(json!({"kind": "ce_threshold", "k_s": 100e-6})),
        Aqm::CeThreshold(CeThreshold::Delay(Time::from_micros(100)))
    );
}

#[test]
fn aqm_and_ecn_keys_are_validated_with_the_allowed_values() {
    let bad = |p: Plan| Scenario::from_json(&p.json()).unwrap_err().to_string();
    let e = bad(Plan::new("reno", 1, 1e8, 0.01, 1.0).set("aqm", json!({"kind": "red"})));
    assert!(e.contains("aqm.kind") && e.contains("droptail, ce_threshold or fq_codel"), "{e}");
    let e = bad(Plan::new("reno", 1, 1e8, 0.01, 1.0).set("aqm", json!({"kind": "ce_threshold"})));
    assert!(e.contains("exactly one of k_packets, k_bytes, k_s"), "{e}");
    let e = bad(Plan::new("reno", 1, 1e8, 0.01, 1.0).flow("ecn", json!(3)));
    assert!(e.contains("flows[0].ecn") && e.contains("2 (accept only)"), "{e}");
}
