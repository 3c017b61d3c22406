//! Linux TCP rules checked on a sender driven by hand (no path): RTO floor
//! and backoff, PRR during recovery, RACK's reordering window.

use fatpipe_sim::cc::{self, CaState};
use fatpipe_sim::tcp::{Ack, Sender, SenderConfig};
use fatpipe_sim::units::Time;

#[path = "common/hand_env.rs"]
mod hand_env;
use hand_env::Env;

fn sender() -> Sender {
    let cfg = SenderConfig { mss: 1000, wmem_bytes: 1 << 30, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20, handshake_rtt: None, ecn: false };
    Sender::new(&cfg, cc::by_name("reno").unwrap())
}

fn ack(n: u64) -> Ack {
    Ack { ack: n, wnd: 1 << 20, ..Ack::default() }
}

fn sack(n: u64, blocks: &[(u64, u64)]) -> Ack {
    let mut a = ack(n);
    for (i, b) in blocks.iter().take(3).enumerate() {
        a.sacks[i] = *b;
    }
    a.nsacks = blocks.len().min(3) as u8;
    a
}

#[test]
fn rto_has_a_200ms_floor_and_doubles_on_each_expiry() {
    let mut env = Env::default();
    let mut s = sender();
    s.start(Time::ZERO, &mut env);
    assert_eq!(env.sent.len(), 10, "initial window of 10 segments");
    // All acked after 1 ms: srtt = 1 ms, so RTO = srtt + max(4·mdev, 200 ms).
    let t_ack = Time::from_millis(1);
    s.on_ack(t_ack, &ack(10), &mut env);
    let head = s.sb.snd_una;
    // Nothing is acked any more: let the timers run.
    let mut rto_times = Vec::new();
    while rto_times.len() < 4 {
        let n = env.sent.len();
        env.fire_next(&mut s, Time::from_secs(60)).expect("a timer is pending");
        for &(t, seq, retrans) in &env.sent[n..] {
            if retrans && seq == head {
                rto_times.push(t);
            }
        }
    }
    assert_eq!(s.tp.ca_state, CaState::Loss);
    assert_eq!(s.tp.snd_cwnd, 1, "cwnd collapses to 1 after an RTO");
    // The tail loss probe (2·srtt + 2 ms) fires first and restarts the RTO.
    let first = rto_times[0] - t_ack;
    assert!(first >= Time::from_millis(200), "first RTO after {first}");
    assert!(first <= Time::from_millis(210), "first RTO after {first}");
    for w in rto_times.windows(3) {
        let (a, b) = ((w[1] - w[0]).as_nanos() as f64, (w[2] - w[1]).as_nanos() as f64);
        assert!((b / a - 2.0).abs() < 0.02, "backoff {a} -> {b}");
    }
}

/// Grows cwnd to 20 with 20 segments outstanding (seqs 10..30).
fn sender_with_20_in_flight(env: &mut Env) -> Sender {
    let mut s = sender();
    s.start(Time::ZERO, env);
    s.on_ack(Time::from_millis(20), &ack(10), env);
    assert_eq!(s.tp.snd_cwnd, 20);
    assert_eq!(s.tp.packets_out, 20);
    s
}

#[test]
fn prr_sends_ssthresh_over_prior_cwnd_segments_per_delivered_segment() {
    let mut env = Env::default();
    let mut s = sender_with_20_in_flight(&mut env);
    // Segment 10 is lost; 11..30 arrive and are SACKed one per ACK.
    let t = Time::from_millis(40);
    let before = env.sent.len();
    let mut entered = None;
    for k in 11..30u64 {
        s.on_ack(t + Time::from_micros(k), &sack(10, &[(11, k + 1)]), &mut env);
        if entered.is_none() && s.tp.ca_state == CaState::Recovery {
            entered = Some(k);
        }
    }
    let k0 = entered.expect("entered recovery");
    assert_eq!(k0, 13, "RACK marks the hole lost once 3 segments are SACKed");
    assert_eq!(s.tp.snd_ssthresh, 10);
    assert_eq!(s.tp.prior_cwnd, 20);
    // RFC 6937: sent = ceil(prr_delivered · ssthresh / RecoverFS).
    let delivered = 19u32;
    let expect = (delivered * 10).div_ceil(20) as usize;
    let sent = env.sent.len() - before;
    assert!(sent.abs_diff(expect) <= 1, "PRR sent {sent}, RFC 6937 says {expect}");
    assert!(env.sent[before..].iter().any(|&(_, seq, r)| r && seq == 10), "fast retransmit of the hole");
}

#[test]
fn rack_marks_a_segment_lost_only_after_the_reordering_window() {
    let mut env = Env::default();
    let mut s = sender_with_20_in_flight(&mut env);
    // One SACK above a hole: below DupThresh, so RACK waits min_rtt/4.
    let t = Time::from_millis(40);
    s.on_ack(t, &sack(10, &[(11, 12)]), &mut env);
    assert_eq!(s.tp.lost_out, 0);
    assert_eq!(s.tp.ca_state, CaState::Disorder);
    let min_rtt = s.tp.min_rtt;
    let xmit = Time::from_millis(20); // segment 10 was sent at the first ACK
    let mut retrans_at = None;
    while retrans_at.is_none() {
        let n = env.sent.len();
        env.fire_next(&mut s, Time::from_secs(1)).expect("reordering timer");
        retrans_at = env.sent[n..].iter().find(|&&(_, seq, r)| r && seq == 10).map(|x| x.0);
    }
    let at = retrans_at.unwrap();
    let rack_rtt = t - xmit;
    assert!(at >= xmit + rack_rtt + min_rtt.div(4), "retransmitted at {at}, before RTT + reo_wnd");
    assert!(at <= xmit + rack_rtt + min_rtt.div(4) + Time::from_millis(4), "retransmitted late at {at}");
    assert_eq!(s.tp.ca_state, CaState::Recovery);
}

#[test]
fn wmem_bounds_unacked_segments() {
    let cfg = SenderConfig { mss: 1000, wmem_bytes: 15_000, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20, handshake_rtt: None, ecn: false };
    let mut s = Sender::new(&cfg, cc::by_name("reno").unwrap());
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    s.on_ack(Time::from_millis(20), &ack(10), &mut env);
    assert_eq!(s.tp.packets_out, 15, "cwnd 20 but only 15 KB of send buffer");
    assert!(s.tp.app_limited > 0, "a send-buffer-limited sender is marked app-limited");
}

#[test]
fn a_spurious_rto_is_undone_when_a_dsack_reports_the_retransmission_as_duplicate() {
    let mut env = Env::default();
    let mut s = sender_with_20_in_flight(&mut env);
    let prior_cwnd = s.tp.snd_cwnd;
    // No ACK for a while: TLP, then the RTO retransmits the head (seq 10).
    loop {
        let n = env.sent.len();
        env.fire_next(&mut s, Time::from_secs(5)).expect("timer");
        if env.sent[n..].iter().any(|&(_, seq, r)| r && seq == 10) && s.tp.ca_state == CaState::Loss {
            break;
        }
    }
    assert_eq!(s.tp.snd_cwnd, 1);
    let t = env.sent.last().unwrap().0;
    // The originals were only delayed: everything is acked, then the
    // retransmitted copy arrives as a duplicate and is D-SACKed.
    let all = s.sb.snd_nxt;
    s.on_ack(t + Time::from_millis(1), &ack(all), &mut env);
    assert_eq!(s.tp.ca_state, CaState::Open);
    let mut d = ack(s.sb.snd_una);
    d.dsack = Some(10);
    s.on_ack(t + Time::from_millis(2), &d, &mut env);
    assert!(s.tp.snd_cwnd >= prior_cwnd, "cwnd {} not restored to {prior_cwnd}", s.tp.snd_cwnd);
    assert_eq!(s.stats.undos, 1);
}

/// tcp_xmit_retransmit_queue() retransmits a lost skb whole
/// (tcp_retransmit_skb() up to the cwnd quota): lost segments that share
/// one run go out in one step, each on the wire in order, counted one by
/// one (retrans_out, tcpi_total_retrans) and forming one run whose
/// tx.in_flight steps per segment (tcp_set_tx_in_flight()).
#[test]
fn lost_segments_of_one_run_are_retransmitted_together_with_per_segment_counts() {
    let mut env = Env::default();
    let mut s = sender();
    s.start(Time::ZERO, &mut env);
    s.on_ack(Time::from_millis(1), &ack(10), &mut env);
    // 20 segments 10..30 in flight, all lost: the RTO (after the loss
    // probe) marks them lost and retransmits the head.
    while s.tp.ca_state != CaState::Loss {
        env.fire_next(&mut s, Time::from_secs(60)).expect("a timer is pending");
    }
    let (head, nxt) = (s.sb.snd_una, s.sb.snd_nxt);
    assert_eq!(env.sent.last().map(|&(_, q, r)| (q, r)), Some((head, true)));
    // The head's ACK: slow start lets cwnd = 2 more out, all lost ones.
    // The application has nothing unsent, so F-RTO (RFC 5682 step 2b,
    // tcp_process_loss()) has no new data to try and retransmits.
    s.write_seq = s.sb.snd_nxt;
    let t = env.sent.last().unwrap().0 + Time::from_millis(1);
    let (before, retrans_before) = (env.sent.len(), s.stats.retrans);
    s.on_ack(t, &ack(head + 1), &mut env);
    let sent: Vec<(u64, bool)> = env.sent[before..].iter().map(|&(_, q, r)| (q, r)).collect();
    let k = sent.len() as u64;
    assert!(k >= 2, "{sent:?}");
    assert_eq!(sent, (head + 1..head + 1 + k).map(|q| (q, true)).collect::<Vec<_>>());
    assert!(head + 1 + k <= nxt);
    assert_eq!((s.stats.retrans - retrans_before, s.tp.retrans_out as u64), (k, k));
    let run = *s.sb.run_at(head + 1);
    assert_eq!((run.start, run.end), (head + 1, head + 1 + k), "one run");
    let steps: Vec<u32> = (head + 1..head + 1 + k).map(|q| s.sb.get(q).in_flight).collect();
    assert!(steps.windows(2).all(|w| w[1] == w[0] + 1), "{steps:?}");
}
