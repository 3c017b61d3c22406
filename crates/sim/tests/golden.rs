//! Golden runs: whole-run behaviour of every CCA locked by snapshot files.
//!
//! The simulator is deterministic, so a fixed-seed run of each algorithm on
//! a lossless and a lossy path must reproduce its summary exactly: goodput,
//! retransmissions, drops, and cwnd / delivered / srtt / ca_state / cc_mode at a few
//! instants. A refactor must leave every snapshot unchanged; a deliberate
//! behaviour change rewrites them in the same commit, saying why:
//!
//!     FATPIPE_UPDATE_GOLDEN=1 cargo test --release -p fatpipe-sim --test golden
//!
//! Snapshots live in `tests/golden/<cca>-<path>.json`.

mod common;

use std::path::PathBuf;

use common::Plan;
use fatpipe_sim::cc::AVAILABLE;
use fatpipe_sim::trace::RunResult;
use serde_json::{json, Value};

/// Instants (s) at which each stream's state is recorded.
const INSTANTS_S: [f64; 4] = [0.5, 1.0, 2.0, 4.0];
const DURATION_S: f64 = 4.0;

/// The two paths every CCA runs on: 100 Mbit/s, 40 ms, 1 BDP buffer, two
/// streams; `lossy` adds 1e-3 random loss per packet.
fn plan(cc: &str, lossy: bool) -> Plan {
    let loss = if lossy { 1e-3 } else { 0.0 };
    Plan::new(cc, 2, 100e6, 0.040, DURATION_S)
        .set("seed", json!(20261122))
        .set("sample_interval_s", json!(0.1))
        .set("loss", json!(loss))
        .flow("mss_bytes", json!(1448))
}

fn snapshot(r: &RunResult) -> Value {
    let s = &r.series;
    let mut instants = Vec::new();
    for (i, &t) in s.t_s.iter().enumerate() {
        if INSTANTS_S.iter().any(|&x| (x - t).abs() < 1e-9) {
            instants.push(json!({
                "t_s": t,
                "stream": s.stream[i],
                "cwnd_segments": s.cwnd_segments[i],
                "delivered_bytes": s.delivered_bytes[i],
                "retrans_segments": s.retrans_segments[i],
                "srtt_s": s.srtt_s[i],
                "inflight_segments": s.inflight_segments[i],
                "pacing_rate_bps": s.pacing_rate_bps[i],
                "ca_state": s.ca_state[i],
                "cc_mode": s.cc_mode[i],
            }));
        }
    }
    let last = |col: &Vec<i64>, stream: i64| -> i64 {
        (0..s.len()).rev().find(|&i| s.stream[i] == stream).map(|i| col[i]).unwrap_or(0)
    };
    let delivered: i64 = (0..2).map(|k| last(&s.delivered_bytes, k)).sum();
    let retrans: i64 = (0..2).map(|k| last(&s.retrans_segments, k)).sum();
    json!({
        "goodput_bps": delivered as f64 * 8.0 / DURATION_S,
        "retrans_segments": retrans,
        "packets_sent": r.stats.packets_sent,
        "path": {
            "packets": r.path.packets,
            "random_drops": r.path.random_drops,
            "queue_drops": r.path.queue_drops,
            "min_rtt_s": r.path.min_rtt_s,
            "bottleneck_bps": r.path.bottleneck_bps,
        },
        "instants": instants,
    })
}

/// Equal JSON, with numbers equal to 1e-12 relative: serde_json's default
/// parser may round the last digit of a float it printed itself.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.json"))
}

/// Compares every CCA's runs with its snapshot (or rewrites the snapshots).
#[test]
fn every_cca_reproduces_its_golden_runs() {
    let update = std::env::var_os("FATPIPE_UPDATE_GOLDEN").is_some();
    let mut differ = Vec::new();
    for cc in AVAILABLE {
        for (label, lossy) in [("lossless", false), ("lossy", true)] {
            let name = format!("{cc}-{label}");
            let got = snapshot(&plan(cc, lossy).run());
            let file = golden_path(&name);
            if update {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
                continue;
            }
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e} (record with FATPIPE_UPDATE_GOLDEN=1)", file.display()));
            let want: Value = serde_json::from_str(&text).unwrap();
            if !same(&want, &got) {
                differ.push(format!(
                    "{name}:\n  want {}\n  got  {}",
                    serde_json::to_string(&want).unwrap(),
                    serde_json::to_string(&got).unwrap()
                ));
            }
        }
    }
    assert!(differ.is_empty(), "golden runs changed:\n{}", differ.join("\n"));
}

/// The lossy path really loses packets and the lossless one does not drop at
/// random, so the two snapshots lock different machinery.
#[test]
fn golden_paths_exercise_loss_recovery() {
    let lossy = plan("cubic", true).run();
    let clean = plan("cubic", false).run();
    assert!(lossy.path.random_drops >= 10, "lossy path saw {} random drops", lossy.path.random_drops);
    assert_eq!(clean.path.random_drops, 0);
}
