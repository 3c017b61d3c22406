//! The engine calls the congestion-control hooks where Linux does, and
//! honours a CCA's pacing rate.

use std::sync::{Arc, Mutex};

use fatpipe_sim::cc::{self, AckSample, CaState, CongestionControl, ConnState, CwndEvent, RateSample};
use fatpipe_sim::tcp::{Ack, Sender, SenderConfig};
use fatpipe_sim::units::{Rate, Time};

#[path = "common/hand_env.rs"]
mod hand_env;
use hand_env::Env;

/// Reno that logs every hook call.
struct Recording {
    inner: Box<dyn CongestionControl>,
    log: Arc<Mutex<Vec<String>>>,
}

impl CongestionControl for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        self.log.lock().unwrap().push(format!("ssthresh {:?}", tp.ca_state));
        self.inner.ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        self.log.lock().unwrap().push(format!("cong_avoid {:?}", tp.ca_state));
        self.inner.cong_avoid(tp, acked)
    }
    fn set_state(&mut self, _tp: &mut ConnState, s: CaState) {
        self.log.lock().unwrap().push(format!("set_state {s:?}"));
    }
    fn cwnd_event(&mut self, _tp: &mut ConnState, ev: CwndEvent) {
        self.log.lock().unwrap().push(format!("cwnd_event {ev:?}"));
    }
    fn pkts_acked(&mut self, _tp: &mut ConnState, s: &AckSample) {
        self.log.lock().unwrap().push(format!("pkts_acked {} rtt={}", s.pkts_acked, s.rtt.is_some()));
    }
}

fn ack(n: u64, sacks: &[(u64, u64)]) -> Ack {
    let mut a = Ack { ack: n, wnd: 1 << 20, ..Ack::default() };
    for (i, b) in sacks.iter().enumerate() {
        a.sacks[i] = *b;
    }
    a.nsacks = sacks.len() as u8;
    a
}

#[test]
fn hooks_fire_at_linux_call_points_through_recovery() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let cc = Recording { inner: cc::by_name("reno").unwrap(), log: log.clone() };
    let cfg = SenderConfig { mss: 1000, wmem_bytes: 1 << 30, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20, handshake_rtt: None, ecn: false };
    let mut s = Sender::new(&cfg, Box::new(cc));
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    s.on_ack(Time::from_millis(20), &ack(10, &[]), &mut env);
    // Segment 10 lost; SACKs for 11.. arrive.
    for k in 11..16u64 {
        s.on_ack(Time::from_millis(40) + Time::from_micros(k), &ack(10, &[(11, k + 1)]), &mut env);
    }
    // The retransmission fills the hole; everything sent so far is acked
    // (high_seq is snd_nxt at the start of recovery).
    let all = s.sb.snd_nxt;
    s.on_ack(Time::from_millis(60), &ack(all, &[]), &mut env);
    let log = log.lock().unwrap().clone();
    let pos = |needle: &str| log.iter().position(|l| l == needle).unwrap_or_else(|| panic!("{needle} missing in {log:?}"));
    assert_eq!(log[0], "cwnd_event TxStart", "TX start when nothing is in flight");
    assert_eq!(log[1], "pkts_acked 10 rtt=true");
    assert_eq!(log[2], "cong_avoid Open");
    // tcp_enter_recovery: ssthresh (in the old state), then set_state.
    let ss = pos("ssthresh Disorder");
    assert_eq!(log[ss + 1], "set_state Recovery");
    assert!(pos("set_state Disorder") < ss);
    // No cong_avoid during recovery (PRR runs instead).
    let open = pos("set_state Open");
    assert!(log[ss..open].iter().all(|l| !l.starts_with("cong_avoid")), "{log:?}");
    assert_eq!(log[open + 1], "cwnd_event CompleteCwr");
    // tcp_end_cwnd_reduction sets cwnd = ssthresh; the same ACK then runs
    // cong_avoid in Open (tcp_cong_control), which may add one segment.
    assert!((10..=11).contains(&s.tp.snd_cwnd), "cwnd {} after recovery", s.tp.snd_cwnd);
    assert_eq!(s.tp.snd_ssthresh, 10);
    assert_eq!(log[open + 2], "cong_avoid Open");
}

/// A CCA that owns cwnd and paces at a fixed rate.
struct FixedPace {
    calls: Arc<Mutex<u32>>,
}

impl CongestionControl for FixedPace {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn init(&mut self, tp: &mut ConnState) {
        tp.pacing_enabled = true;
        tp.pacing_rate = Rate::from_mbps(100);
        tp.snd_cwnd = 10_000;
    }
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        tp.snd_ssthresh
    }
    fn owns_cwnd_and_pacing(&self) -> bool {
        true
    }
    fn cong_control(&mut self, _tp: &mut ConnState, rs: &RateSample) {
        assert!(rs.acked_sacked > 0);
        *self.calls.lock().unwrap() += 1;
    }
}

#[test]
fn internal_pacing_spaces_bursts_by_their_length_over_the_pacing_rate() {
    let calls = Arc::new(Mutex::new(0));
    let cfg = SenderConfig { mss: 1448, wmem_bytes: 1 << 30, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20, handshake_rtt: None, ecn: false };
    let mut s = Sender::new(&cfg, Box::new(FixedPace { calls: calls.clone() }));
    let mut env = Env::default();
    s.start(Time::ZERO, &mut env);
    while env.sent.len() < 2000 {
        env.fire_next(&mut s, Time::MAX).expect("pacing timer");
    }
    let (t0, t1) = (env.sent[0].0, env.sent[1999].0);
    let rate = 1999.0 * 1448.0 * 8.0 / (t1 - t0).as_secs_f64();
    assert!((rate / 100e6 - 1.0).abs() < 0.01, "paced at {rate:.4e}");
    // tcp_tso_autosize: ~1 ms of data per burst -> 8 segments at 100 Mbit/s.
    // tcp_update_skb_after_send() paces only from data_segs_out >= 10, so
    // the first two bursts leave together, then one burst per interval.
    let first = env.sent.iter().take_while(|x| x.0 == t0).count();
    assert_eq!(first, 16);
    let t_next = env.sent[first].0;
    let burst = env.sent[first..].iter().take_while(|x| x.0 == t_next).count();
    assert_eq!(burst, 8);
    // cong_control runs on every ACK.
    s.on_ack(Time::from_millis(200), &ack(100, &[]), &mut env);
    s.on_ack(Time::from_millis(201), &ack(102, &[]), &mut env);
    assert_eq!(*calls.lock().unwrap(), 2);
}
