//! The signature property of each high-speed and delay-based CCA, checked
//! through the public trait (`cc::by_name`) and on the simulated path:
//! Scalable's fixed 1/8 decrease and 0.01 increase per ACK, HighSpeed's
//! a(w)/b(w) against RFC 3649 at every row of its table, BIC's binary
//! search toward the window of the last loss, Westwood+'s ssthresh
//! from the bandwidth estimate times the minimum RTT, Vegas's 2–4
//! segments queued at the bottleneck, Illinois's alpha falling with
//! queueing delay, YeAH's fall-back to Reno mode (with precautionary
//! decongestion) when its queue estimate exceeds ALPHA, and NV's queue
//! near nv_pad.
mod common;
use common::*;
use fatpipe_sim::cc::highspeed::HSTCP_AIMD_VALS;
use fatpipe_sim::cc::{self, CongestionControl, ConnState};
use fatpipe_sim::engine::Sim;
use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::trace::RunResult;
use fatpipe_sim::units::Time;
use serde_json::json;

fn ca(cc: &str, cwnd: u32) -> (Box<dyn CongestionControl>, ConnState) {
    let mut c = cc::by_name(cc).expect("registered");
    let mut tp = ConnState::new(1448);
    c.init(&mut tp);
    tp.snd_cwnd = cwnd;
    tp.snd_ssthresh = 2; // congestion avoidance
    tp.is_cwnd_limited = true;
    (c, tp)
}

#[test]
fn scalable_adds_one_hundredth_per_ack_and_cuts_one_eighth() {
    for cwnd in [200u32, 1000, 5000] {
        let (mut c, mut tp) = ca("scalable", cwnd);
        for _ in 0..10_000 {
            c.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, cwnd + 100, "10000 ACKs at 0.01 each from {cwnd}");
        let ss = c.ssthresh(&tp);
        let w = tp.snd_cwnd as f64;
        assert!((ss as f64 - 0.875 * w).abs() <= 1.0, "ssthresh {ss} of cwnd {w}");
    }
}

/// RFC 3649 §5: b(w) interpolates log-linearly from 0.5 at Low_Window 38
/// to High_Decrease 0.1 at High_Window 83000, and a(w) = w² p(w) 2 b(w) /
/// (2 - b(w)) with the response function p(w) = 0.078 / w^1.2.
fn rfc3649(w: f64) -> (f64, f64) {
    let b = (0.1 - 0.5) * (w.ln() - 38f64.ln()) / (83000f64.ln() - 38f64.ln()) + 0.5;
    let p = 0.078 / w.powf(1.2);
    (w * w * p * 2.0 * b / (2.0 - b), b)
}

#[test]
fn highspeed_a_and_b_match_rfc3649_at_every_row_of_the_table() {
    for (i, &(w, _)) in HSTCP_AIMD_VALS.iter().enumerate() {
        let (a_rfc, b_rfc) = rfc3649(w as f64);
        // a(w): ACKs until cwnd grows by one, from cwnd = w (this row).
        let (mut c, mut tp) = ca("highspeed", w);
        let mut acks = 0u32;
        while tp.snd_cwnd == w {
            c.cong_avoid(&mut tp, 1);
            acks += 1;
        }
        let a = w as f64 / acks as f64;
        assert!((a - a_rfc).abs() < 0.1 + a * a / w as f64, "row {i} w={w}: a {a:.3} vs RFC {a_rfc:.3}");
        // b(w): the decrease at cwnd = w, within Linux's 1/256 fixed point.
        tp.snd_cwnd = w;
        let b = 1.0 - c.ssthresh(&tp) as f64 / w as f64;
        assert!((b - b_rfc).abs() <= 1.0 / 256.0 + 1.0 / w as f64, "row {i} w={w}: b {b:.4} vs RFC {b_rfc:.4}");
    }
}

/// (t_s, cwnd, ca_state, cc_mode) of stream 0.
fn trace(r: &RunResult) -> Vec<(f64, i64, String, String)> {
    let s = &r.series;
    (0..s.len())
        .filter(|&i| s.stream[i] == 0)
        .map(|i| (s.t_s[i], s.cwnd_segments[i], s.ca_state[i].to_string(), s.cc_mode[i].to_string()))
        .collect()
}

/// Indices of the first Open sample after each Recovery episode.
fn recoveries_ended(tr: &[(f64, i64, String, String)]) -> Vec<usize> {
    (1..tr.len()).filter(|&i| tr[i - 1].2 == "recovery" && tr[i].2 == "open").collect()
}

#[test]
fn bic_searches_binarily_toward_the_window_of_the_last_loss() {
    // 100 Mbit/s, 40 ms, 3 BDP of buffer: losses at ~4 BDP, long enough
    // apart for whole searches.
    let r = Plan::new("bic", 1, 100e6, 0.04, 20.0)
        .set("sample_interval_s", json!(0.02))
        .set("buffer_bytes", json!(1_500_000))
        .run();
    let tr = trace(&r);
    let at = |t: f64| tr.iter().position(|x| x.0 >= t - 1e-9).unwrap();
    let mut checked = 0;
    for e in recoveries_ended(&tr) {
        let t0 = tr[e].0;
        let start = tr[..e].iter().rposition(|x| x.2 == "open").unwrap_or(0);
        let open_before = tr[..=start].iter().rposition(|x| x.2 != "open").map_or(0, |k| k + 1);
        let next_loss = tr[e..].iter().position(|x| x.2 != "open").map_or(tr.len(), |k| e + k);
        if tr[start].0 - tr[open_before].0 < 1.0 || tr[next_loss - 1].0 - t0 < 2.0 {
            // Not one clean loss (the slow-start exit, losses in quick
            // succession), or a search cut short by the next loss.
            continue;
        }
        // cwnd when the loss was detected (the last Open sample before it).
        let peak = tr[start].1 as f64;
        let c = |dt: f64| tr[at(t0 + dt)].1 as f64;
        let (c0, c1, c2, c_end) = (c(0.0), c(0.4), c(0.8), c(2.0));
        assert!(tr[e..at(t0 + 2.0)].iter().all(|x| x.3 == "binary_search"), "t={t0}: still searching");
        // Binary search: the increase shrinks as cwnd nears W_max ...
        assert!(c1 - c0 > 2.0 * (c2 - c1), "t={t0}: {c0} → {c1} → {c2} is not concave");
        // ... and levels off at W_max: cwnd at the loss, or (1 + β)/2 of it
        // with fast convergence (at most one sample period of growth off).
        assert!(c_end <= peak + 4.0 && c_end >= 0.85 * peak, "t={t0}: plateau {c_end} vs loss at {peak}");
        checked += 1;
    }
    assert!(checked >= 1, "no complete binary search in {} samples", tr.len());
}

#[test]
fn westwood_sets_ssthresh_to_the_estimated_bandwidth_times_min_rtt_after_a_loss() {
    // 100 Mbit/s, 20 ms, half a BDP of buffer: Reno would fall to ~0.75
    // BDP; Westwood+ to the BDP (cwnd = ssthresh = bw_est · rtt_min at the
    // end of recovery, tcp_westwood_event(CA_EVENT_COMPLETE_CWR)).
    let (rate, rtt, mss, mtu) = (100e6, 0.02, 1460.0, 1500.0);
    let r = Plan::new("westwood", 1, rate, rtt, 30.0)
        .set("sample_interval_s", json!(0.005))
        .set("buffer_bytes", json!((rate * rtt / 8.0 / 2.0) as u64))
        .run();
    let tr = trace(&r);
    // The margin from the path: the estimate is of payload bytes (mss of
    // every mtu on the wire), at most 10 % below the bottleneck after the
    // 7/8 filters settle; rtt_min is the path's min RTT rounded up to a
    // jiffy (1 ms) plus the serialisation of a packet and its ACK.
    let payload_bytes_per_s = rate / 8.0 * mss / mtu;
    let min_rtt = r.path.min_rtt_s.expect("min RTT");
    let serialisation = 2.0 * mtu * 8.0 / rate;
    let bdp_lo = 0.9 * payload_bytes_per_s * min_rtt / mss;
    let bdp_hi = payload_bytes_per_s * (min_rtt + 0.001 + serialisation) / mss + 1.0;
    let reno = |before: f64| before / 2.0;
    let mut checked = 0;
    for e in recoveries_ended(&tr) {
        // The slow-start exit is skipped: the filters still hold the
        // ramp-up's low samples then (Linux's estimate lags the same way).
        if tr[e].0 < 5.0 {
            continue;
        }
        let before = tr[..e].iter().rev().find(|x| x.2 == "open").unwrap().1 as f64;
        let after = tr[e].1 as f64;
        assert!((bdp_lo..=bdp_hi).contains(&after), "t={}: cwnd {after} outside [{bdp_lo:.0}, {bdp_hi:.0}]", tr[e].0);
        assert!(after > reno(before) + 20.0, "t={}: {after} is Reno's cut of {before}", tr[e].0);
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} losses after the estimate settled");
}

/// The bottleneck queue (packets) of `plan` sampled every `step` from
/// `from` to `to`, sorted, and stream 0's retransmissions in that time.
fn queue_samples(plan: &Plan, from: Time, to: Time, step: Time) -> (Vec<usize>, u64) {
    let mut sim = Sim::new(&Scenario::from_json(&plan.json()).unwrap().sim_config());
    sim.run_until(from);
    let retrans0 = sim.sender(0).stats.retrans;
    let mut queue = Vec::new();
    let mut t = from;
    while t < to {
        t += step;
        sim.run_until(t);
        queue.push(sim.bottleneck().occupancy(t).0);
    }
    queue.sort_unstable();
    (queue, sim.sender(0).stats.retrans - retrans0)
}

#[test]
fn vegas_keeps_two_to_four_segments_queued_on_a_lossless_path() {
    // 100 Mbit/s, 20 ms, 1 BDP of buffer. Vegas's once-per-round check
    // sees the queue only after cwnd has passed twice the BDP (the round's
    // minimum RTT is from its first packets, sent into the queue the
    // previous round left), as in Linux, so slow start ends in a loss;
    // Reno's halving then leaves it above the BDP and it steps down by one
    // segment per RTT until diff = cwnd (rtt - baseRTT) / baseRTT, the
    // segments it keeps at the bottleneck, is within [alpha, beta] =
    // [2, 4] (tcp_vegas_cong_avoid()), by about 5 s. From then on: no
    // loss, and the queue's troughs, which the round's minimum RTT sees,
    // within [2, 4]; its peaks at most two segments more (each delayed
    // ACK releases a two-segment burst into the queue).
    let plan = Plan::new("vegas", 1, 100e6, 0.02, 14.0);
    let (queue, retrans) = queue_samples(&plan, Time::from_secs(6), Time::from_secs(14), Time::from_micros(500));
    let mean = queue.iter().sum::<usize>() as f64 / queue.len() as f64;
    let (p5, p95) = (queue[queue.len() / 20], queue[queue.len() * 19 / 20]);
    eprintln!("vegas queue mean {mean:.2} p5 {p5} p95 {p95}");
    assert_eq!(retrans, 0, "lossless");
    assert!((2..=4).contains(&p5), "queue troughs (p5) {p5} packets");
    assert!(p95 <= 4 + 2 && mean <= 4.0 + 2.0, "queue p95 {p95} mean {mean:.2}");
}

#[test]
fn illinois_alpha_falls_from_alpha_max_at_base_rtt_to_alpha_min_near_max_delay() {
    use fatpipe_sim::cc::illinois::{Illinois, ALPHA_MAX, ALPHA_MIN, ALPHA_SCALE};
    use fatpipe_sim::cc::AckSample;
    // A model path: a BDP of 1000 segments at 100 ms base RTT and 1000
    // segments of buffer; every segment queued adds 100 µs. The flow has
    // seen the path empty and the buffer full (a loss at 2 BDP), so the
    // max delay dm is 100 ms, and restarts from 1 BDP with an empty queue.
    let (bdp, buf, base_us, per_seg_us) = (1000u32, 1000u32, 100_000u64, 100u64);
    let mut c = Illinois::new();
    let mut tp = ConnState::new(1448);
    c.init(&mut tp);
    (tp.snd_cwnd, tp.snd_ssthresh, tp.is_cwnd_limited) = (bdp, 2, true);
    let ack = |us: u64| AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(us)), in_flight: 1 };
    c.pkts_acked(&mut tp, &ack(base_us));
    c.pkts_acked(&mut tp, &ack(base_us + buf as u64 * per_seg_us));
    // Rounds of one cwnd of ACKs at the RTT of the queue at the round's
    // start: (queue / buffer, alpha after the round, cwnd growth in it).
    let mut rounds = Vec::new();
    while tp.snd_cwnd < bdp + buf - 5 {
        let (w, q) = (tp.snd_cwnd, tp.snd_cwnd - bdp);
        for _ in 0..w {
            tp.snd_una += 1;
            tp.snd_nxt = tp.snd_una + tp.snd_cwnd as u64;
            c.pkts_acked(&mut tp, &ack(base_us + q as u64 * per_seg_us));
            c.cong_avoid(&mut tp, 1);
        }
        rounds.push((q as f64 / buf as f64, c.alpha(), tp.snd_cwnd - w));
    }
    let alpha_segs = |a: u32| a as f64 / ALPHA_SCALE as f64;
    // At base RTT: ALPHA_MAX, ten segments per RTT, after theta = 5 rounds
    // of low delay (the round before had the buffer full: alpha() holds
    // its value until then).
    let top = rounds.iter().position(|r| r.1 == ALPHA_MAX).expect("alpha reaches ALPHA_MAX");
    assert!((4..=6).contains(&top), "ALPHA_MAX after {top} rounds: {:?}", &rounds[..top + 1]);
    assert!(rounds[..=top].iter().all(|r| r.0 < 0.01), "no queue until then");
    assert!(rounds[top + 1].2 >= 9, "growth at base RTT {:?}", &rounds[top..top + 3]);
    // From then on alpha never rises while the queue grows, and is near
    // ALPHA_MIN (0.3 segments per RTT) once the delay nears the maximum.
    assert!(rounds[top..].windows(2).all(|p| p[1].1 <= p[0].1), "alpha rose with delay");
    let late: Vec<_> = rounds.iter().filter(|r| r.0 >= 0.9).collect();
    assert!(!late.is_empty());
    for r in &late {
        assert!(alpha_segs(r.1) <= 1.5 * alpha_segs(ALPHA_MIN), "alpha {} at queue {:.2}", alpha_segs(r.1), r.0);
    }
    let late_growth = late.iter().map(|r| r.2).sum::<u32>() as f64 / late.len() as f64;
    assert!(late_growth < 0.5, "growth {late_growth} segments per RTT near max delay");
    // Halfway up the buffer alpha is already well below one segment per RTT.
    let mid = rounds.iter().find(|r| r.0 >= 0.5).unwrap();
    assert!(alpha_segs(mid.1) < 1.0, "alpha {} at half the max delay", alpha_segs(mid.1));
}

#[test]
fn yeah_falls_back_to_reno_mode_and_decongests_when_its_queue_exceeds_alpha() {
    use fatpipe_sim::cc::yeah::{Yeah, TCP_YEAH_ALPHA};
    use fatpipe_sim::cc::AckSample;
    // A model path: a BDP of 1000 segments at 100 ms base RTT; every
    // segment queued adds 100 µs, so YeAH's estimate cwnd (rtt - base) /
    // rtt is the true queue, and base/PHY (12.5 ms, 125 segments) is above
    // ALPHA: the queue decides the mode.
    let (bdp, base_us, per_seg_us) = (1000u32, 100_000u64, 100u64);
    let mut c = Yeah::new();
    let mut tp = ConnState::new(1448);
    c.init(&mut tp);
    (tp.snd_cwnd, tp.snd_ssthresh, tp.is_cwnd_limited) = (bdp, 2, true);
    let ack = |us: u64| AckSample { pkts_acked: 1, rtt: Some(Time::from_micros(us)), in_flight: 1 };
    // Rounds of one cwnd of ACKs at the RTT of the queue at the round's
    // start: (queue, YeAH's estimate after it, mode, cwnd before, after).
    let mut rounds = Vec::new();
    for _ in 0..40 {
        let (w, q) = (tp.snd_cwnd, tp.snd_cwnd.saturating_sub(bdp));
        for _ in 0..w {
            tp.snd_una += 1;
            tp.snd_nxt = tp.snd_una + tp.snd_cwnd as u64;
            c.pkts_acked(&mut tp, &ack(base_us + q as u64 * per_seg_us));
            c.cong_avoid(&mut tp, 1);
        }
        rounds.push((q, c.last_queue(), c.state_label(&tp), w, tp.snd_cwnd));
    }
    let first_reno = rounds.iter().position(|r| r.2 == "reno").expect("YeAH leaves fast mode");
    // Fast mode (Scalable: +1 per 100 acked, ten segments per RTT here)
    // while the estimate stays at most ALPHA.
    for r in &rounds[1..first_reno] {
        assert!(r.1 <= TCP_YEAH_ALPHA && r.2 == "fast", "{r:?}");
        assert!(r.4 - r.3 >= 9, "fast-mode growth {r:?}");
    }
    // The round whose estimate exceeds ALPHA switches to Reno mode and
    // removes the estimated queue from cwnd (precautionary decongestion).
    let r = rounds[first_reno];
    assert!(r.1 > TCP_YEAH_ALPHA, "{r:?}");
    assert!(r.4 + TCP_YEAH_ALPHA <= r.3, "decongestion {r:?}");
    // With the queue gone, the next round ends back in fast mode.
    let next = rounds[first_reno + 1..].iter().position(|r| r.2 == "fast").map(|k| k + first_reno + 1);
    assert!(next.is_some_and(|k| k <= first_reno + 2), "{:?}", &rounds[first_reno..first_reno + 3]);
}

#[test]
fn nv_keeps_its_queue_near_nv_pad_on_a_lossless_path() {
    // 100 Mbit/s, 20 ms, 1 BDP of buffer. Once per RTT NV compares cwnd
    // with max_win = rate × min RTT / mss + nv_pad and removes 30 % of
    // any excess (tcpnv_acked()), so after its slow-start exit the queue
    // stays near nv_pad = 10 segments, far below the 167-segment buffer
    // that Reno would fill, with no loss: its troughs at nv_pad (plus the
    // packet in service and a delayed ACK's burst), its peaks (growth
    // between the once-per-RTT decisions) within twice nv_pad.
    let plan = Plan::new("nv", 1, 100e6, 0.02, 14.0);
    let (queue, retrans) = queue_samples(&plan, Time::from_secs(6), Time::from_secs(14), Time::from_micros(500));
    let mean = queue.iter().sum::<usize>() as f64 / queue.len() as f64;
    let (p5, p95) = (queue[queue.len() / 20], queue[queue.len() * 19 / 20]);
    eprintln!("nv queue mean {mean:.2} p5 {p5} p95 {p95} retrans {retrans}");
    assert_eq!(retrans, 0, "lossless");
    assert!((8..=10 + 2).contains(&p5), "queue troughs (p5) {p5}");
    assert!(mean <= 2.0 * 10.0 && p95 <= 2 * 10 + 2, "queue mean {mean:.2} p95 {p95}");
}
