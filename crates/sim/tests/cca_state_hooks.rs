//! The connection state and hooks BBRv3, DCTCP and the classic CCAs read:
//! each is updated or called where Linux does, with what Linux passes
//! (tcp_sock fields, tcp_in_ack_event, tcp_mark_skb_lost's
//! skb_marked_lost, tcp_rate.c's send snapshots, tcp_tso_segs).

use std::sync::{Arc, Mutex};

use fatpipe_sim::cc::{
    self, CongestionControl, ConnState, CwndEvent, RateSample, TxSnapshot, CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE,
};
use fatpipe_sim::tcp::{Ack, Sender, SenderConfig};
use fatpipe_sim::units::{Rate, Time};

#[path = "common/hand_env.rs"]
mod hand_env;
use hand_env::Env;

/// What the probe CCA saw, in call order.
#[derive(Debug, PartialEq)]
enum Seen {
    /// in_ack_event: flags, tp.delivered, tp.snd_una at the call.
    AckEvent(u32, u64, u64),
    /// skb_marked_lost: seq, snapshot, tp.lost at the call.
    Lost(u64, TxSnapshot, u64),
    /// cong_control: rs.tx_in_flight, rs.lost, rs.losses, rs.delivered_ce.
    Rate(u32, u32, u32, u32),
    /// cwnd_event(TxStart): tp.lsndtime at the call.
    TxStart(Time),
}

/// A CCA that holds cwnd at `cwnd` (owning it, as BBR does), optionally
/// paces, and records the hooks it gets.
struct Probe {
    cwnd: u32,
    pace: Option<Rate>,
    min_tso: Option<u32>,
    tso: Option<u32>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Probe {
    fn new(cwnd: u32) -> (Probe, Arc<Mutex<Vec<Seen>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (Probe { cwnd, pace: None, min_tso: None, tso: None, seen: seen.clone() }, seen)
    }
}

impl CongestionControl for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn init(&mut self, tp: &mut ConnState) {
        tp.snd_cwnd = self.cwnd;
        if let Some(r) = self.pace {
            tp.pacing_enabled = true;
            tp.pacing_rate = r;
        }
    }
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        tp.snd_ssthresh
    }
    fn owns_cwnd_and_pacing(&self) -> bool {
        true
    }
    fn cong_control(&mut self, _tp: &mut ConnState, rs: &RateSample) {
        self.seen.lock().unwrap().push(Seen::Rate(rs.tx_in_flight, rs.lost, rs.losses, rs.delivered_ce));
    }
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        if ev == CwndEvent::TxStart {
            self.seen.lock().unwrap().push(Seen::TxStart(tp.lsndtime));
        }
    }
    fn in_ack_event(&mut self, tp: &mut ConnState, flags: u32) {
        self.seen.lock().unwrap().push(Seen::AckEvent(flags, tp.delivered, tp.snd_una));
    }
    fn wants_skb_marked_lost(&self) -> bool {
        true
    }
    fn skb_marked_lost(&mut self, tp: &mut ConnState, seq: u64, tx: &TxSnapshot) {
        self.seen.lock().unwrap().push(Seen::Lost(seq, *tx, tp.lost));
    }
    fn min_tso_segs(&self, _tp: &ConnState) -> u32 {
        self.min_tso.unwrap_or(cc::TCP_MIN_TSO_SEGS)
    }
    fn tso_segs(&self, tp: &ConnState, pacing_rate: Rate) -> u32 {
        self.tso.unwrap_or_else(|| cc::tso_autosize(tp.mss_bytes, pacing_rate, tp.min_rtt, self.min_tso_segs(tp)))
    }
}

fn sender(cc: Box<dyn CongestionControl>) -> Sender {
    let cfg = SenderConfig { mss: 1000, wmem_bytes: 1 << 30, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20, handshake_rtt: None, ecn: false };
    Sender::new(&cfg, cc)
}

fn ack(n: u64, sacks: &[(u64, u64)]) -> Ack {
    let mut a = Ack { ack: n, wnd: 1 << 20, ..Ack::default() };
    for (i, b) in sacks.iter().enumerate() {
        a.sacks[i] = *b;
    }
    a.nsacks = sacks.len() as u8;
    a
}

fn take(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<Seen> {
    std::mem::take(&mut *seen.lock().unwrap())
}

#[test]
fn in_ack_event_flags_win_update_on_a_pure_cumulative_ack_and_slowpath_otherwise() {
    let (probe, seen) = Probe::new(20);
    let mut s = sender(Box::new(probe));
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    take(&seen);
    // Header-predicted ACK advancing snd_una: CA_ACK_WIN_UPDATE alone, after
    // tcp_clean_rtx_queue() counted the delivery and moved snd_una.
    s.on_ack(Time::from_millis(20), &ack(5, &[]), &mut env);
    assert_eq!(take(&seen)[0], Seen::AckEvent(CA_ACK_WIN_UPDATE, 5, 5));
    // A SACK option forces the slow path; snd_una did not move.
    s.on_ack(Time::from_millis(21), &ack(5, &[(6, 7)]), &mut env);
    assert_eq!(take(&seen)[0], Seen::AckEvent(CA_ACK_SLOWPATH, 6, 5));
    // A duplicate ACK without options: slow path, no window update.
    s.on_ack(Time::from_millis(22), &ack(5, &[]), &mut env);
    assert_eq!(take(&seen)[0], Seen::AckEvent(CA_ACK_SLOWPATH, 6, 5));
    // Advancing with SACK blocks: both flags.
    s.on_ack(Time::from_millis(23), &ack(6, &[(8, 9)]), &mut env);
    assert_eq!(take(&seen)[0], Seen::AckEvent(CA_ACK_SLOWPATH | CA_ACK_WIN_UPDATE, 8, 6));
}

#[test]
fn skb_marked_lost_gets_the_lost_segments_send_snapshot_after_tp_lost_counts_it() {
    let (probe, seen) = Probe::new(20);
    let mut s = sender(Box::new(probe));
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env); // segments 0..20, in flight 1..=20 at send
    s.on_ack(Time::from_millis(20), &ack(5, &[]), &mut env);
    take(&seen);
    // Segments 6..9 SACKed: with 3 SACKed, RACK's reordering window is 0
    // and segment 5 (sent 21 ms ago, before them) is lost.
    s.on_ack(Time::from_millis(21), &ack(5, &[(6, 9)]), &mut env);
    let seen = take(&seen);
    let tx = TxSnapshot { delivered: 0, delivered_ce: 0, in_flight: 6, lost: 0, is_app_limited: false };
    assert!(seen.contains(&Seen::Lost(5, tx, 1)), "{seen:?}");
    assert_eq!(seen.iter().filter(|x| matches!(x, Seen::Lost(..))).count(), 1);
}

#[test]
fn rate_sample_carries_the_sampled_packets_tx_in_flight_and_losses_since_it_was_sent() {
    let (probe, seen) = Probe::new(20);
    let mut s = sender(Box::new(probe));
    let mut env = Env::default();
    // (Not at time 0: a zero tx.delivered_mstamp means "no sample".)
    s.start(Time::from_millis(1), &mut env);
    // tcp_rate_skb_delivered() samples the most recently sent packet acked:
    // segment 4, sent with 5 packets in flight including itself.
    s.on_ack(Time::from_millis(20), &ack(5, &[]), &mut env);
    let got = take(&seen);
    assert!(got.contains(&Seen::Rate(5, 0, 0, 0)), "{got:?}");
    // This ACK marks segment 5 lost; its sample (segment 8, in flight 9)
    // was sent before that loss: rs->lost = tp->lost - tx.lost = 1.
    s.on_ack(Time::from_millis(21), &ack(5, &[(6, 9)]), &mut env);
    assert!(take(&seen).contains(&Seen::Rate(9, 1, 1, 0)));
    assert_eq!(s.tp.delivered_ce, 0, "no ECN yet");
}

#[test]
fn lsndtime_is_the_last_send_and_tx_start_sees_the_previous_one() {
    let (probe, seen) = Probe::new(10);
    let mut s = sender(Box::new(probe));
    let mut env = Env::default();
    let t0 = Time::from_millis(5);
    s.start(t0, &mut env);
    // tcp_finish_connect() stamped lsndtime; CA_EVENT_TX_START is raised
    // before tcp_event_data_sent() updates it.
    assert_eq!(take(&seen)[0], Seen::TxStart(t0));
    assert_eq!(s.tp.lsndtime, t0);
    assert_eq!((s.tp.snd_una, s.tp.snd_nxt), (0, 10));
    // Everything acked at 25 ms: the next send starts from idle.
    let t1 = Time::from_millis(25);
    s.on_ack(t1, &ack(10, &[]), &mut env);
    assert!(take(&seen).contains(&Seen::TxStart(t0)));
    assert_eq!(s.tp.lsndtime, t1);
    assert_eq!((s.tp.snd_una, s.tp.snd_nxt), (10, 20));
}

#[test]
fn delivered_mstamp_is_stamped_by_delivering_acks_and_restarted_by_a_send_after_idle() {
    let (probe, _seen) = Probe::new(10);
    let mut s = sender(Box::new(probe));
    s.write_seq = 10;
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    // tcp_rate_gen(): an ACK that delivers data stamps it ...
    s.on_ack(Time::from_millis(20), &ack(4, &[]), &mut env);
    assert_eq!(s.tp.delivered_mstamp, Time::from_millis(20));
    // ... a duplicate ACK delivering nothing does not.
    s.on_ack(Time::from_millis(21), &ack(4, &[]), &mut env);
    assert_eq!(s.tp.delivered_mstamp, Time::from_millis(20));
    s.on_ack(Time::from_millis(22), &ack(10, &[]), &mut env);
    // tcp_rate_skb_sent(): the first send with nothing outstanding restarts
    // the delivery clock.
    s.app_write(Time::from_millis(500), 3, &mut env);
    assert_eq!(s.tp.delivered_mstamp, Time::from_millis(500));
}

/// Segments of the first paced burst: tcp_update_skb_after_send() starts
/// pacing once data_segs_out reaches 10, so the bursts that carry the
/// first 10 segments leave at once and the next instant's burst is the
/// first one the pacing timer releases.
fn first_burst(probe: Probe) -> usize {
    let mut s = sender(Box::new(probe));
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    let unpaced = env.sent.iter().take_while(|x| x.0 == Time::ZERO).count();
    assert!(unpaced >= 10, "the first 10 segments go unpaced, {unpaced} did");
    env.fire_next(&mut s, Time::MAX).expect("pacing timer");
    let t = env.sent[unpaced].0;
    env.sent[unpaced..].iter().take_while(|x| x.0 == t).count()
}

#[test]
fn tcp_tso_segs_uses_the_algorithms_tso_goal_and_min_tso_segs() {
    // 1 ms of data at 100 Mbit/s is 12 segments of 1000 bytes
    // (tcp_tso_autosize: 12.5 MB/s >> 10 / mss).
    let paced = |min_tso: Option<u32>, tso: Option<u32>, rate: Rate| {
        let (mut p, _) = Probe::new(1000);
        (p.pace, p.min_tso, p.tso) = (Some(rate), min_tso, tso);
        first_burst(p)
    };
    assert_eq!(paced(None, None, Rate::from_mbps(100)), 12);
    // A CCA's tso_segs (BBRv3) sets the burst outright.
    assert_eq!(paced(None, Some(3), Rate::from_mbps(100)), 3);
    // At 1 Mbit/s autosizing gives 0 segments: min_tso_segs decides
    // (sysctl_tcp_min_tso_segs = 2, bbr_min_tso_segs = 1 below 1.2 Mbit/s).
    assert_eq!(paced(None, None, Rate::from_mbps(1)), 2);
    assert_eq!(paced(Some(1), None, Rate::from_mbps(1)), 1);
    let mut tp = ConnState::new(1448);
    tp.pacing_rate = Rate::from_mbps(1);
    assert_eq!(cc::by_name("bbr").unwrap().min_tso_segs(&tp), 1);
    assert_eq!(cc::by_name("cubic").unwrap().min_tso_segs(&tp), cc::TCP_MIN_TSO_SEGS);
}

#[test]
fn tcp_wstamp_is_the_next_bursts_departure_time() {
    // tcp_update_skb_after_send(): after a burst of 12 x 1000 bytes at
    // 100 Mbit/s the next one may leave 0.96 ms later.
    let (mut p, _) = Probe::new(1000);
    p.pace = Some(Rate::from_mbps(100));
    let mut s = sender(Box::new(p));
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    assert_eq!(s.tp.tcp_wstamp, Time::from_micros(960));
}
