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
use fatpipe_sim::plan::PathDynamics;
use fatpipe_sim::units::Time;
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
}

impl MovingPlan {
    /// Reads and validates `--dynamics FILE` (errors name the file and the
    /// field, as the simulator names them).
    pub fn load(path: &str) -> Result<MovingPlan, ArgError> {
        let text = std::fs::read_to_string(path).map_err(|e| ArgError(format!("--dynamics {path}: {e}")))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ArgError(format!("--dynamics {path}: invalid JSON: {e}")))?;
        let f: DynamicsFile = serde_json::from_value(value).map_err(|e| ArgError(format!("--dynamics {path}: {e}")))?;
        let cfg = path_plan::dynamics(Some(&f.dynamics), f.loss).map_err(|e| ArgError(format!("--dynamics {path}: {e}")))?;
        Ok(MovingPlan {
            cfg,
            rtt: Time::from_secs_f64(f.rtt_s),
            loss: f.loss,
            corruption: f.corruption,
            group_mss: f.group_mss_bytes,
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
        MovingQueue { dynamics, ack, last: Time::ZERO }
    }

    /// The bottleneck's rate profile, if the schedule changes the rate.
    pub fn rate_profile(&self, base_bps: f64) -> Option<fatpipe_sim::path::profile::RateProfile> {
        self.cfg.rate_profile(fatpipe_sim::units::Rate::from_bps(base_bps.round() as u64))
    }
}

/// One queue's dynamics and its clock.
#[derive(Clone, Debug)]
pub struct MovingQueue {
    pub dynamics: Dynamics,
    /// The ACK path this queue is (None: the data queue).
    pub ack: Option<usize>,
    /// The latest run time seen: the run's clock never goes back.
    last: Time,
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

    /// Whether packets of this queue may overtake each other.
    pub fn reorders(&self) -> bool {
        match self.ack {
            Some(_) => self.dynamics.acks_reorder(),
            None => self.dynamics.data_reorders(),
        }
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
        let dir = std::env::temp_dir().join(format!("linkem-dyn-{}-{}", std::process::id(), text.len()));
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
