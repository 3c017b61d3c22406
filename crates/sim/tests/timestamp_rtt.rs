//! RFC 7323 §4.1 (RTTM) as Linux's tcp_ack_update_rtt() applies it: an ACK
//! of new data that Karn's rule leaves without an RTT sample (it acks
//! retransmitted data, and no SACK gave one) is timed by its echoed
//! timestamp, in whole milliseconds; the sample resets the RTO backoff
//! (RFC 6298 §5.7) like any other.

use fatpipe_sim::cc;
use fatpipe_sim::tcp::timestamps::tsval;
use fatpipe_sim::tcp::{Ack, Sender, SenderConfig};
use fatpipe_sim::units::Time;

#[path = "common/hand_env.rs"]
mod hand_env;
use hand_env::Env;

fn sender() -> Sender {
    let cfg = SenderConfig { mss: 1000, wmem_bytes: 1 << 30, rate_cap: None, qdisc_paces: false, initial_rwnd: 1 << 20, handshake_rtt: None, ecn: false };
    Sender::new(&cfg, cc::by_name("reno").unwrap())
}

fn ack(n: u64, tsecr: u32) -> Ack {
    Ack { ack: n, wnd: 1 << 20, tsecr, ..Ack::default() }
}

/// A sender whose first window was acked after 1 ms and whose next window
/// then went unanswered through two RTOs (backoff 2). Returns it with the
/// time of the last retransmission of the head.
fn backed_off_sender(env: &mut Env) -> (Sender, Time) {
    let mut s = sender();
    s.start(Time::ZERO, env);
    s.on_ack(Time::from_millis(1), &ack(10, 0), env);
    let head = s.sb.snd_una;
    let mut last = Time::ZERO;
    while s.backoff < 2 {
        let n = env.sent.len();
        env.fire_next(&mut s, Time::from_secs(60)).expect("a timer is pending");
        for &(t, seq, retrans) in &env.sent[n..] {
            if retrans && seq == head {
                last = t;
            }
        }
    }
    (s, last)
}

#[test]
fn an_ack_of_retransmitted_data_is_timed_by_its_echoed_timestamp() {
    let mut env = Env::default();
    let (mut s, retransmitted) = backed_off_sender(&mut env);
    let srtt_before = s.rtt.srtt;
    // The receiver echoes the retransmission's TSval; the ACK comes 30.4 ms
    // after it: the sample is 30 ms (or 31, by where the millisecond
    // boundaries fall), not the microsecond delta.
    let at = retransmitted + Time::from_micros(30_400);
    s.on_ack(at, &ack(s.sb.snd_una + 1, tsval(retransmitted)), &mut env);
    assert_eq!(s.backoff, 0, "a timestamp sample resets the backoff");
    let m = (s.rtt.srtt.as_nanos() as i64 - srtt_before.as_nanos() as i64) * 8 + srtt_before.as_nanos() as i64;
    assert!(m == 30_000_000 || m == 31_000_000, "srtt moved by 1/8 of a {m} ns sample");
    assert_eq!(s.tp.srtt, s.rtt.srtt);
}

#[test]
fn without_an_echo_karns_rule_leaves_the_ack_unsampled() {
    let mut env = Env::default();
    let (mut s, retransmitted) = backed_off_sender(&mut env);
    let srtt_before = s.rtt.srtt;
    s.on_ack(retransmitted + Time::from_millis(30), &ack(s.sb.snd_una + 1, 0), &mut env);
    assert_eq!(s.rtt.srtt, srtt_before, "no sample from retransmitted data");
    assert_eq!(s.backoff, 2, "the backoff stays until a valid sample");
}

#[test]
fn a_timestamp_sample_of_zero_milliseconds_counts_as_one() {
    let mut env = Env::default();
    let (mut s, retransmitted) = backed_off_sender(&mut env);
    let srtt_before = s.rtt.srtt.as_nanos() as i64;
    // The ACK arrives within the millisecond tick of the echoed TSval.
    s.on_ack(retransmitted, &ack(s.sb.snd_una + 1, tsval(retransmitted)), &mut env);
    let m = (s.rtt.srtt.as_nanos() as i64 - srtt_before) * 8 + srtt_before;
    assert_eq!(m, 1_000_000, "a 0 ms delta is taken as 1 ms");
}
