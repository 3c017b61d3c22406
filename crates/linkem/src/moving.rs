//! A path that moves (`--dynamics FILE`): the simulator's own path
//! dynamics (fatpipe_sim::path::dynamics) applied to the kernel's packets,
//! so a schedule, bursty loss, a policer, jitter and aggregation behave as
//! in the simulator and one seed draws the same losses and delays.
//!
//! The dynamics run on the run's clock: time zero is the run's planned
//! start, which fatpipe learns only once every connection is up. It
//! writes that instant (CLOCK_REALTIME ns on this machine's clock, which
//! the kernel and hosts backends both know) to `--origin-file` and sends
//! SIGUSR2; linkem turns it into CLOCK_MONOTONIC, the clock its packets
//! are timed by. Until then packets (handshakes) take the static path:
//! the queue's constant delay, no loss, no bottleneck.

use std::sync::atomic::{AtomicU64, Ordering};

use fatpipe_sim::path::dynamics::{Dynamics, DynamicsConfig};
use fatpipe_sim::path_plan;
use fatpipe_sim::path::cross::CrossTraffic;
use fatpipe_sim::path::trace::TraceService;
use fatpipe_sim::path::{Aqm, Bottleneck};
use fatpipe_sim::plan::{self, PathDynamics};
use fatpipe_sim::scenario::{self, ConfigError};
use fatpipe_sim::units::Time;
use fatpipe_sim::wire;
use serde::Deserialize;

use crate::args::ArgError;

/// CLOCK_MONOTONIC ns of the run's time zero; 0 until fatpipe sends it.
pub static ORIGIN_NS: AtomicU64 = AtomicU64::new(0);

/// What `--dynamics FILE` holds: the run plan's `dynamics` and the base
/// path it moves from (fatpipe writes it from the same RunPlan the
/// simulator reads).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DynamicsFile {
    dynamics: PathDynamics,
    rtt_s: f64,
    loss: f64,
    corruption: f64,
    /// Each flow group's segment payload (its MSS), by group index.
    group_mss_bytes: Vec<u64>,
    /// The run's flows of kind "cross", as the plan writes them (their
    /// `group` is their index in the plan's flows), read with the
    /// simulator's reader (scenario::cross_flow); the path's MTU they are
    /// checked against; and the sample grid of their series rows.
    #[serde(default)]
    cross_flows: Vec<plan::FlowPlan>,
    #[serde(default)]
    mtu_bytes: Option<u64>,
    #[serde(default)]
    sample_interval_s: Option<f64>,
    #[serde(default)]
    duration_s: Option<f64>,
}

/// Which direction of the dynamics a queue applies (`--queue moves=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moves {
    /// Sender → receiver: loss, policer, the bottleneck's rate steps and
    /// the forward delay.
    Data,
    /// Receiver → sender, ACK path `k` (0 the shared one).
    Ack(u16),
}

/// The validated dynamics and the base path.
#[derive(Clone, Debug, PartialEq)]
pub struct MovingPlan {
    cfg: DynamicsConfig,
    rtt: Time,
    loss: f64,
    corruption: f64,
    group_mss: Vec<u64>,
    /// Cross traffic's series rows: every `interval` up to `end`.
    samples: Option<(Time, Time)>,
}

impl MovingPlan {
    /// Reads and validates `--dynamics FILE` (errors name the file and the
    /// field, as the simulator names them).
    pub fn load(path: &str) -> Result<MovingPlan, ArgError> {
        let text = std::fs::read_to_string(path).map_err(|e| ArgError(format!("--dynamics {path}: {e}")))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ArgError(format!("--dynamics {path}: invalid JSON: {e}")))?;
        let f: DynamicsFile = serde_json::from_value(value).map_err(|e| ArgError(format!("--dynamics {path}: {e}")))?;
        let bad = |e: ConfigError| ArgError(format!("--dynamics {path}: {e}"));
        // A sender's state is the simulator's to watch (path/trigger.rs):
        // fatpipe refuses `on` before a kernel run, and so does linkem.
        let no_states = |_| Err("only the simulator can watch a sender's state (on = \"enter:STATE\"); give the item a time (at)".to_string());
        let mut cfg = path_plan::dynamics(Some(&f.dynamics), f.loss, f.group_mss_bytes.len(), &no_states).map_err(bad)?;
        let mut samples = None;
        if !f.cross_flows.is_empty() {
            let need = |v: Option<f64>, key: &str| {
                v.filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| ArgError(format!("--dynamics {path}: {key} must be a positive number with cross_flows")))
            };
            let mtu = f.mtu_bytes.ok_or_else(|| ArgError(format!("--dynamics {path}: mtu_bytes is needed with cross_flows")))?;
            for (k, flow) in f.cross_flows.iter().enumerate() {
                let i = flow.group.map(|g| g.0 as usize).ok_or_else(|| ArgError(format!("--dynamics {path}: cross_flows[{k}].group is needed")))?;
                let at = |key: &str| format!("flows[{i}].{key}");
                // linkem's bottleneck is a FIFO (drop-tail or a CE threshold):
                // fatpipe refuses cross traffic with a qdisc discipline before.
                let (_, spec) = scenario::cross_flow(flow, i, &Aqm::DropTail, mtu, &at).map_err(bad)?;
                cfg.cross.push(spec);
            }
            let interval = Time::from_secs_f64(need(f.sample_interval_s, "sample_interval_s")?);
            samples = Some((interval, Time::from_secs_f64(need(f.duration_s, "duration_s")?)));
        }
        Ok(MovingPlan {
            cfg,
            rtt: Time::from_secs_f64(f.rtt_s),
            loss: f.loss,
            corruption: f.corruption,
            group_mss: f.group_mss_bytes,
            samples,
        })
    }

    /// The state of one queue: the data queue's loss, policer and forward
    /// delay, or ACK path `k` of a queue whose constant delay is
    /// `delay_ns`.
    pub fn queue(&self, seed: u64, moves: Moves, delay_ns: u64) -> MovingQueue {
        let mut dynamics = Dynamics::new(&self.cfg, seed, self.rtt, self.loss, self.corruption, &self.group_mss);
        let ack = match moves {
            Moves::Data => None,
            Moves::Ack(k) => {
                let base_back = self.rtt.saturating_sub(self.rtt.div(2));
                Some(dynamics.add_ack_path(k as u64, Time::from_nanos(delay_ns).saturating_sub(base_back)))
            }
        };
        if ack.is_some() {
            // Cross traffic joins at the bottleneck, in the data direction.
            dynamics.cross = None;
        }
        let cross = dynamics.cross.is_some().then(|| {
            let (interval, end) = self.samples.expect("validated with cross_flows");
            let sizes = self.cfg.cross.iter().map(|c| (c.group, c.packet_bytes, c.frame_bytes)).collect();
            CrossRecord { interval, end, next_k: 1, rows: Vec::new(), sizes }
        });
        MovingQueue { dynamics, ack, last: Time::ZERO, cross }
    }

    /// The bottleneck's rate profile, if the schedule changes the rate.
    pub fn rate_profile(&self, base_bps: f64) -> Option<fatpipe_sim::path::profile::RateProfile> {
        self.cfg.rate_profile(fatpipe_sim::units::Rate::from_bps(base_bps.round() as u64))
    }

    /// The bottleneck's service from the delivery trace, if the path has
    /// one: frames charged their IP bytes, as the simulator builds it
    /// (engine.rs, `trace_service(ETH_HEADER_BYTES)`).
    pub fn trace_service(&self) -> Option<TraceService> {
        self.cfg.trace.clone().map(|t| TraceService::new(t, wire::ETH_HEADER_BYTES))
    }
}

/// The series of the cross traffic a data queue offers: one row per
/// started source at every sample instant k·interval (k ≥ 1) up to the
/// run's end, as the simulator samples (engine.rs `on_sample`,
/// `cross_rows`).
#[derive(Clone, Debug)]
pub struct CrossRecord {
    interval: Time,
    end: Time,
    next_k: u64,
    /// (t_s, group, stream, IP bytes that left the bottleneck by t).
    pub rows: Vec<(f64, u32, u32, u64)>,
    /// Each group's (group, IP packet bytes, frame bytes).
    sizes: Vec<(u32, u32, u32)>,
}

/// One queue's dynamics and its clock.
#[derive(Clone, Debug)]
pub struct MovingQueue {
    pub dynamics: Dynamics,
    /// The ACK path this queue is (None: the data queue).
    pub ack: Option<usize>,
    /// The latest run time seen: the run's clock never goes back.
    last: Time,
    /// The cross traffic's series (the data queue of a path with some).
    pub cross: Option<CrossRecord>,
}

impl MovingQueue {
    /// The run's time of CLOCK_MONOTONIC `mono_ns`, or None before fatpipe
    /// has sent the origin. Packets before the origin count as at zero.
    pub fn run_time(&mut self, mono_ns: u64) -> Option<Time> {
        let origin = ORIGIN_NS.load(Ordering::Relaxed);
        if origin == 0 {
            return None;
        }
        let t = Time::from_nanos(mono_ns.saturating_sub(origin)).max(self.last);
        self.last = t;
        Some(t)
    }

    /// CLOCK_MONOTONIC ns of run time `t`.
    pub fn mono_ns(t: Time) -> u64 {
        ORIGIN_NS.load(Ordering::Relaxed) + t.as_nanos()
    }

    /// Offers `bottleneck` the cross traffic due by run time `t`, first
    /// recording the series rows of every sample instant up to `t` (each
    /// after the sources are advanced to it), as the simulator advances
    /// them before each packet of a flow and at each sample. Catch-up is
    /// exact: the sources offer their packets in time order whenever asked.
    pub fn advance_cross(&mut self, t: Time, bottleneck: &mut Bottleneck) {
        let (Some(c), Some(rec)) = (self.dynamics.cross.as_mut(), self.cross.as_mut()) else { return };
        record_samples(c, rec, t, bottleneck);
        c.advance(t, bottleneck);
    }

    /// At exit (run time `t`): the sources advanced to the run's end or
    /// `t` if earlier, and the rows of the sample instants up to then.
    pub fn finish_cross(&mut self, t: Time, bottleneck: &mut Bottleneck) {
        let (Some(c), Some(rec)) = (self.dynamics.cross.as_mut(), self.cross.as_mut()) else { return };
        let to = t.min(rec.end);
        record_samples(c, rec, to, bottleneck);
        c.advance(to, bottleneck);
    }

    /// Each cross group's (group, IP bytes that left the bottleneck by the
    /// last sample, the frame bytes of those packets, packets tail-dropped
    /// so far).
    pub fn cross_totals(&self) -> Vec<(u32, u64, u64, u64)> {
        let (Some(c), Some(rec)) = (self.dynamics.cross.as_ref(), self.cross.as_ref()) else { return Vec::new() };
        let last_t = rec.rows.last().map(|r| r.0);
        c.group_drops
            .iter()
            .map(|&(g, drops)| {
                let bytes: u64 = rec.rows.iter().rev().take_while(|r| Some(r.0) == last_t).filter(|r| r.1 == g).map(|r| r.3).sum();
                let frames = rec.sizes.iter().find(|s| s.0 == g).map_or(0, |&(_, ip, frame)| bytes / ip as u64 * frame as u64);
                (g, bytes, frames, drops)
            })
            .collect()
    }

    /// Whether packets of this queue may overtake each other.
    pub fn reorders(&self) -> bool {
        match self.ack {
            Some(_) => self.dynamics.acks_reorder(),
            None => self.dynamics.data_reorders(),
        }
    }
}

/// The rows of the sample instants from `rec.next_k` up to `to`.
fn record_samples(c: &mut CrossTraffic, rec: &mut CrossRecord, to: Time, bottleneck: &mut Bottleneck) {
    loop {
        let at = rec.interval.mul(rec.next_k);
        if at > to || at > rec.end {
            return;
        }
        c.advance(at, bottleneck);
        let t_s = at.as_secs_f64();
        rec.rows.extend(c.delivered(at).into_iter().map(|(g, s, bytes)| (t_s, g, s, bytes)));
        rec.next_k += 1;
    }
}

/// Reads the origin fatpipe wrote (SIGUSR2), CLOCK_REALTIME ns, as
/// CLOCK_MONOTONIC ns: `mono_now − (real_now − origin)`.
pub fn read_origin(path: &str, mono_now_ns: u64, real_now_ns: u64) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--origin-file {path}: {e}"))?;
    let real: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("--origin-file {path}: expected CLOCK_REALTIME ns, got {:?}", text.trim()))?;
    let mono = (mono_now_ns as i128 - (real_now_ns as i128 - real as i128)).max(1);
    if real == 0 || mono > u64::MAX as i128 {
        return Err(format!("--origin-file {path}: {real} is not a time"));
    }
    Ok(mono as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> String {
        // Tests run in parallel: each file its own name.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("linkem-dyn-{}-{n}", std::process::id()));
        std::fs::write(&dir, text).expect("temp file");
        dir.to_string_lossy().into_owned()
    }

    #[test]
    fn a_dynamics_file_is_validated_as_the_simulator_validates_a_plan() {
        let ok = write(r#"{"dynamics": {"schedule": [{"at_s": 1.0, "rate_bps": 1e8}], "gilbert_elliott": null, "jitter": null,
                          "policer": null, "aggregation": null}, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0, "group_mss_bytes": [1448]}"#);
        let plan = MovingPlan::load(&ok).expect("valid");
        assert!(plan.rate_profile(1e9).is_some());
        let bad = write(r#"{"dynamics": {"schedule": [{"at_s": 1.0}]}, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0, "group_mss_bytes": []}"#);
        let e = MovingPlan::load(&bad).unwrap_err();
        assert!(e.0.contains("dynamics.schedule[0]") && e.0.contains("at least one"), "{}", e.0);
    }

    const STATIC: &str = r#"{"schedule": [], "gilbert_elliott": null, "jitter": null, "policer": null, "aggregation": null, "trace": null}"#;

    /// An on/off cross group of two sources (group 1) at 8 Mbit/s each
    /// while on, as the plan writes it.
    fn cross_flow() -> serde_json::Value {
        serde_json::json!({"group": 1, "kind": "cross", "cc": "", "streams": 2, "mss_bytes": 0, "sender": "",
                           "start_s": 0.2, "request_bytes": null, "response_bytes": null, "concurrency": null,
                           "rate_per_s": null, "ecn": null, "cwnd_clamp": null,
                           "cross": {"rate_bps": 8e6, "pattern": "on_off", "on_s": 0.02, "off_s": 0.02, "shape": 1.5,
                                     "packet_bytes": 1200, "stop_s": null}})
    }

    #[test]
    fn cross_traffic_advanced_by_linkem_leaves_the_bottleneck_as_in_the_simulator() {
        // 10 Mbit/s, a 25 kB buffer, 16 Mbit/s of on/off cross traffic at
        // its peak (so the buffer overflows), seed 5; the TCP flow starts
        // at 3.5 s, so before then the bottleneck carries cross traffic
        // alone and the simulator's cross rows are the sources' own.
        let (rate, buffer, seed) = (1e7, 25_000u64, 5u64);
        let plan = serde_json::json!({
            "run_id": "t", "backend": "sim", "rep": 0, "seed": seed,
            "duration_s": 4.0, "warmup_s": 0.0, "sample_interval_s": 0.1,
            "rate_bps": rate, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0,
            "buffer_bytes": buffer, "mtu_bytes": 1500,
            "senders": {"s1": {"rmem_max_bytes": 1u64 << 30, "wmem_max_bytes": 1u64 << 30,
                               "stream_rate_cap_bps": null, "extra_rtt_s": 0.0}},
            "receiver": {"rmem_max_bytes": 1u64 << 30, "wmem_max_bytes": 1u64 << 30,
                         "stream_rate_cap_bps": null, "extra_rtt_s": 0.0},
            "flows": [{"group": 0, "kind": "bulk", "cc": "cubic", "streams": 1, "mss_bytes": 1448,
                       "sender": "s1", "start_s": 3.5, "request_bytes": null, "response_bytes": null,
                       "concurrency": null, "rate_per_s": null}, cross_flow()],
            "dynamics": serde_json::from_str::<serde_json::Value>(STATIC).unwrap(),
            "swept": {}
        });
        let sim = fatpipe_sim::scenario::run_json(&plan.to_string()).expect("valid plan");
        let s = &sim.series;
        let sim_rows: Vec<(f64, u32, u32, u64)> = (0..s.len())
            .filter(|&i| s.flow_group[i] == 1 && s.t_s[i] < 3.45)
            .map(|i| (s.t_s[i], 1, s.stream[i] as u32, s.delivered_bytes[i] as u64))
            .collect();

        let file = write(&format!(
            r#"{{"dynamics": {STATIC}, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0, "group_mss_bytes": [1448, 0],
                "cross_flows": [{}], "mtu_bytes": 1500, "sample_interval_s": 0.1, "duration_s": 4.0}}"#,
            cross_flow()
        ));
        let moving = MovingPlan::load(&file).expect("valid");
        let mut q = moving.queue(seed, Moves::Data, 10_000_000);
        let mut b = crate::link::bottleneck(rate, buffer, Aqm::DropTail);
        // The kernel's packets come at times of their own: catch-up at
        // irregular instants, as linkem does before each bottleneck offer.
        let mut t = Time::ZERO;
        while t < Time::from_millis(3450) {
            q.advance_cross(t, &mut b);
            t = t + Time::from_micros(3700 + (t.as_nanos() / 1000) % 2900);
        }
        let rows: Vec<_> = q.cross.as_ref().unwrap().rows.iter().copied().filter(|r| r.0 < 3.45).collect();
        assert_eq!(sim_rows.len(), 2 * 33, "two sources sampled from 0.2 s to 3.4 s every 0.1 s");
        assert_eq!(rows, sim_rows);
        let (g, bytes, frames, drops) = q.cross_totals()[0];
        assert!(g == 1 && bytes == rows.iter().rev().take(2).map(|r| r.3).sum::<u64>() && drops > 0, "{:?}", q.cross_totals());
        assert_eq!(frames, bytes / 1200 * 1214, "1200-byte IP packets in 1214-byte frames");
        assert_eq!(drops, b.drops, "every bottleneck drop is a cross packet here");
        // At exit the series runs to the run's end (4 s), not beyond.
        q.finish_cross(Time::from_secs(9), &mut b);
        assert_eq!(q.cross.as_ref().unwrap().rows.last().unwrap().0, 4.0);
        // An ACK queue has no cross traffic.
        assert!(moving.queue(seed, Moves::Ack(0), 10_000_000).cross.is_none());
    }

    #[test]
    fn a_trace_serves_the_bottleneck_at_its_opportunities() {
        // One opportunity of 1504 bytes every 2 ms: 1500-byte IP packets
        // queued at once leave one per opportunity, at 2, 4, 6 ms (the
        // 1 Gbit/s rate would send them 12 µs apart).
        let f = write(&format!(
            r#"{{"dynamics": {}, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0, "group_mss_bytes": [1448]}}"#,
            STATIC.replace(r#""trace": null"#, r#""trace": {"ms_gaps": [2], "counts": [1]}"#)
        ));
        let plan = MovingPlan::load(&f).expect("valid");
        let mut b = crate::link::bottleneck(1e9, 1 << 20, Aqm::DropTail);
        b.set_trace(plan.trace_service().expect("the trace"));
        let leave: Vec<Time> = (0..3).map(|_| b.offer(Time::from_micros(100), 1514, false).expect("room").departure).collect();
        assert_eq!(leave, vec![Time::from_millis(2), Time::from_millis(4), Time::from_millis(6)]);
        let none = write(&format!(r#"{{"dynamics": {STATIC}, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0, "group_mss_bytes": [1448]}}"#));
        assert!(MovingPlan::load(&none).expect("valid").trace_service().is_none());
    }

    #[test]
    fn cross_flows_are_checked_as_the_simulator_checks_them() {
        let file = |flow: serde_json::Value, extra: &str| {
            write(&format!(
                r#"{{"dynamics": {STATIC}, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0, "group_mss_bytes": [1448, 0],
                    "cross_flows": [{flow}]{extra}}}"#
            ))
        };
        let grid = r#", "mtu_bytes": 1500, "sample_interval_s": 0.1, "duration_s": 4.0"#;
        let mut bad = cross_flow();
        bad["cross"]["rate_bps"] = serde_json::Value::Null;
        let e = MovingPlan::load(&file(bad, grid)).unwrap_err();
        assert!(e.0.contains("flows[1].cross.rate_bps"), "{}", e.0);
        let mut tcp_key = cross_flow();
        tcp_key["cc"] = serde_json::json!("cubic");
        assert!(MovingPlan::load(&file(tcp_key, grid)).unwrap_err().0.contains("flows[1].cc"));
        let e = MovingPlan::load(&file(cross_flow(), r#", "mtu_bytes": 1500"#)).unwrap_err();
        assert!(e.0.contains("sample_interval_s"), "{}", e.0);
    }

    #[test]
    fn the_origin_is_read_as_wall_clock_and_turned_into_the_monotonic_clock() {
        let f = write("1700000000500000000\n");
        // 0.5 s after the origin on the wall clock: monotonic 0.5 s ago.
        assert_eq!(read_origin(&f, 10_000_000_000, 1_700_000_001_000_000_000), Ok(9_500_000_000));
        let bad = write("soon");
        assert!(read_origin(&bad, 1, 1).unwrap_err().contains("CLOCK_REALTIME"));
    }

    #[test]
    fn an_ack_queue_gets_the_extra_delay_beyond_the_base_backward_delay() {
        let f = write(r#"{"dynamics": {"schedule": [{"at_s": 1.0, "rtt_s": 0.1}]}, "rtt_s": 0.02, "loss": 0.0,
                         "corruption": 0.0, "group_mss_bytes": [1448]}"#);
        let plan = MovingPlan::load(&f).expect("valid");
        // 10 ms base backward delay + 5 ms extra.
        let mut q = plan.queue(1, Moves::Ack(0), 15_000_000);
        assert_eq!(q.dynamics.ack_arrival(0, Time::ZERO, 66), Time::from_millis(15));
        // After the RTT step to 100 ms: 50 ms + 5 ms.
        assert_eq!(q.dynamics.ack_arrival(0, Time::from_secs(2), 66), Time::from_secs(2) + Time::from_millis(55));
    }
}
