//! Application-limited bulk senders (crate::app_rate): the application
//! writes at a rate that changes, pauses and returns to always having
//! data.
mod common;
use common::*;
use fatpipe_sim::trace::RunResult;
use serde_json::{json, Value};

const PATH_BPS: f64 = 100e6;
const RTT_S: f64 = 0.02;
const TICK_S: f64 = 1e-3;
const MSS: f64 = 1460.0;

/// One stream over a 100 Mbit/s, 20 ms path whose application follows
/// `app`, sampled every `interval_s`.
fn run(cc: &str, app: Value, duration_s: f64, interval_s: f64) -> RunResult {
    Plan::new(cc, 1, PATH_BPS, RTT_S, duration_s).set("sample_interval_s", json!(interval_s)).flow("app", app).run()
}

/// The column `key` of the sample at `t`.
fn at<T: Copy>(r: &RunResult, col: &[T], t: f64) -> T {
    let i = r.series.t_s.iter().position(|&x| (x - t).abs() < 1e-9).unwrap_or_else(|| panic!("no sample at {t}"));
    col[i]
}

/// 20 Mbit/s, a pause from 3 to 5 s, 40 Mbit/s from 6 s, unlimited from 8 s.
fn phases() -> Value {
    json!({"rate_bps": 20e6, "tick_s": TICK_S, "steps": [
        {"at_s": 3.0, "rate_bps": null, "pause_s": 2.0},
        {"at_s": 6.0, "rate_bps": 40e6, "pause_s": null},
        {"at_s": 8.0, "rate_bps": null, "pause_s": null}]})
}

#[test]
fn delivered_bytes_follow_the_write_rate_within_a_tick() {
    let r = run("cubic", phases(), 10.0, 0.1);
    // Each write's segments are acknowledged one path delay after it, so
    // the bytes acknowledged in a window are the writes of a window as
    // long, give or take the write at each edge (a tick's bytes) and the
    // fraction of a segment carried, plus a tick's bytes for a delayed
    // ACK of the odd segment of a tick, which the next tick's segment
    // sends (tcp_send_delayed_ack(): the next segment ACKs at once).
    for (t0, t1, rate) in [(1.0, 3.0, 20e6), (6.5, 8.0, 40e6)] {
        let got = (at(&r, &r.series.delivered_bytes, t1) - at(&r, &r.series.delivered_bytes, t0)) as f64;
        let want = rate * (t1 - t0) / 8.0;
        let margin = 2.0 * rate * TICK_S / 8.0 + MSS;
        assert!((got - want).abs() <= margin, "{t0}-{t1} s at {rate:e} bit/s: {got} bytes acknowledged, {want} written (margin {margin})");
    }
}

#[test]
fn a_pause_sends_nothing_once_in_flight_data_drains() {
    let r = run("cubic", phases(), 6.0, 0.1);
    // Whatever was written before 3 s is acknowledged within an RTT plus
    // the delayed-ACK timer (40 ms, TCP_DELACK_MIN): by 3.1 s.
    let (sent, acked) = (&r.series.segs_out, &r.series.delivered_bytes);
    assert_eq!(at(&r, sent, 3.1), at(&r, sent, 4.9), "segments sent during the pause");
    assert_eq!(at(&r, acked, 3.1), at(&r, acked, 4.9), "bytes acknowledged during the pause");
    assert!(at(&r, acked, 5.5) > at(&r, acked, 4.9), "the application resumes after the pause");
}

#[test]
fn a_pause_longer_than_the_rto_restarts_cubic_from_its_initial_window() {
    // tcp_slow_start_after_idle_check() → tcp_cwnd_restart(): the first
    // write after an idle period longer than the RTO halves cwnd per RTO
    // idle, down to the initial window (10). The samples 5 ms around the
    // resumption (5 s) are less than an RTT apart, so no ACK grows cwnd
    // between them.
    let r = run("cubic", phases(), 5.1, 0.005);
    let before = at(&r, &r.series.cwnd_segments, 4.995);
    let after = at(&r, &r.series.cwnd_segments, 5.005);
    assert!(before > 10, "cwnd grew in slow start before the pause (it was {before})");
    assert_eq!(after, 10, "cwnd after 2 s idle, was {before} before");
}

#[test]
fn unlimited_fills_the_path() {
    let r = run("cubic", phases(), 10.0, 0.1);
    // CUBIC behind a one-BDP buffer keeps the link busy: at least 90 % of
    // the payload rate (1460 of each 1500-byte packet plus Ethernet).
    let payload_bps = PATH_BPS * MSS / 1514.0;
    let got = goodput(&r, 8.5, 10.0);
    assert!(got > 0.9 * payload_bps, "{got:e} bit/s with unlimited writes, payload rate {payload_bps:e}");
}

#[test]
fn rate_samples_are_app_limited_during_the_limit() {
    // BBR's STARTUP counts a round without bandwidth growth only on a
    // sample that is not app-limited (bbr_check_full_bw_reached()); the
    // write rate is flat, so STARTUP ends within 3 rounds unless every
    // sample is app-limited (tcp_rate_check_app_limited() once the written
    // data is all sent).
    let app = json!({"rate_bps": 20e6, "tick_s": TICK_S, "steps": [{"at_s": 2.0, "rate_bps": null, "pause_s": null}]});
    let r = run("bbr", app, 3.0, 0.1);
    let reached = |t: f64| at(&r, &r.series.cc_full_bw_reached, t);
    let count = |t: f64| at(&r, &r.series.cc_full_bw_count, t);
    assert_eq!((reached(1.9), count(1.9)), (Some(false), Some(0)), "after 95 rounds at a flat 20 Mbit/s");
    assert_eq!(reached(3.0), Some(true), "unlimited from 2 s: the pipe fills");
}

#[test]
fn a_flow_without_an_app_limit_is_unchanged_by_an_unlimited_one() {
    let plain = Plan::new("cubic", 1, PATH_BPS, RTT_S, 3.0).run();
    let unlimited = run("cubic", json!({"rate_bps": null, "tick_s": TICK_S, "steps": []}), 3.0, 1.0);
    assert_eq!(plain.series.delivered_bytes, unlimited.series.delivered_bytes);
}
