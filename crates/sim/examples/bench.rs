//! Throughput benchmark of the simulator (prints figures; not a test).
//!
//! `cargo run --release -p fatpipe-sim --example bench [-- seconds [cca ...]]`
//! (FATPIPE_BENCH_STREAMS=1,8 selects the stream counts; FATPIPE_BENCH_RATE,
//! _RTT and _LOSS override the path for profiling other regimes;
//! FATPIPE_BENCH_AQM=fq_codel runs the bottleneck as fq_codel with Linux's
//! defaults instead of drop-tail; FATPIPE_BENCH_GRO=1 gives the receiver
//! GRO, FATPIPE_BENCH_CAP a per-stream rate cap in bit/s,
//! FATPIPE_BENCH_JITTER a processing jitter in seconds on both hosts,
//! FATPIPE_BENCH_CPU=CORES a CPU model of that many cores on both hosts
//! with a cost per byte sent and received and per ACK (`cpu_model`);
//! FATPIPE_BENCH_PLAN=FILE runs one plan file instead, `run_plan_file`)
//! For 10 Gbit/s, 20 ms RTT, MTU 1500, loss 1e-5, 1 and 8 streams, and each
//! CCA in cc::AVAILABLE: wall time, packets transmitted, packet
//! transmissions per wall-clock second (PTS) and goodput.

use std::time::Instant;

use fatpipe_sim::cc::AVAILABLE;
use fatpipe_sim::scenario::run_json;
use serde_json::json;

/// A number from the environment, or `default`.
fn env_f64(key: &str, default: f64) -> f64 {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The bottleneck discipline: FATPIPE_BENCH_AQM=fq_codel or drop-tail.
fn aqm() -> serde_json::Value {
    match std::env::var("FATPIPE_BENCH_AQM").as_deref() {
        Ok("fq_codel") => json!({"kind": "fq_codel", "target_s": 0.005, "interval_s": 0.1, "limit_packets": 10240,
                                 "ce_threshold_s": null, "quantum_bytes": 1514, "ecn": true}),
        Ok("droptail") | Err(_) => json!({"kind": "droptail"}),
        Ok(other) => panic!("FATPIPE_BENCH_AQM={other:?}: expected droptail or fq_codel"),
    }
}

/// FATPIPE_BENCH_CPU=CORES: a CPU model on each host, a thread per stream,
/// costing 0.09 ns per byte sent, 0.19 ns per byte received and 0.5 µs per
/// ACK (the dtn-100g profile's byte costs, docs/host-model.md, and an ACK
/// cost so that every kind of work is queued): the cost of the model.
fn cpu_model() -> serde_json::Value {
    match std::env::var("FATPIPE_BENCH_CPU").ok().and_then(|v| v.parse::<u64>().ok()) {
        None => serde_json::Value::Null,
        Some(cores) => json!({"cores": cores, "app_threads": null, "machine": null, "rx_ring_packets": 1024,
                              "send_packet_s": 0.0, "send_byte_s": 0.09e-9, "receive_packet_s": 0.0,
                              "receive_unit_s": 0.0, "receive_byte_s": 0.19e-9, "ack_s": 0.5e-6,
                              "sack_block_s": 0.0, "timer_s": 0.0, "rtx_queue": null, "rtx_walk_s": null}),
    }
}

fn plan(cc: &str, streams: u64, duration: f64) -> String {
    let (rate, rtt, loss) = (env_f64("FATPIPE_BENCH_RATE", 10e9), env_f64("FATPIPE_BENCH_RTT", 0.02), env_f64("FATPIPE_BENCH_LOSS", 1e-5));
    let gro = std::env::var("FATPIPE_BENCH_GRO").is_ok_and(|v| v == "1");
    let cap = std::env::var("FATPIPE_BENCH_CAP").ok().and_then(|v| v.parse::<f64>().ok());
    let jitter = std::env::var("FATPIPE_BENCH_JITTER").ok().and_then(|v| v.parse::<f64>().ok());
    let mut host = json!({"rmem_max_bytes": 1u64 << 30, "wmem_max_bytes": 1u64 << 30,
                          "stream_rate_cap_bps": cap, "extra_rtt_s": 0.0, "processing_jitter_s": jitter});
    let mut receiver = json!({"rmem_max_bytes": 1u64 << 30, "wmem_max_bytes": 1u64 << 30,
                              "stream_rate_cap_bps": null, "extra_rtt_s": 0.0, "gro": gro,
                              "processing_jitter_s": jitter});
    let cpu = cpu_model();
    if !cpu.is_null() {
        // A tree without the host model would refuse the key: set it only when asked.
        host["cpu"] = cpu.clone();
        receiver["cpu"] = cpu;
    }
    json!({
        "run_id": "bench", "backend": "sim", "rep": 0, "seed": 42,
        "duration_s": duration, "warmup_s": 10.0, "sample_interval_s": 1.0,
        "rate_bps": rate, "rtt_s": rtt, "loss": loss, "corruption": 0.0,
        "buffer_bytes": (rate * rtt / 8.0) as u64, "mtu_bytes": 1500,
        "senders": {"s1": host}, "receiver": receiver,
        "aqm": aqm(),
        "flows": [{"group": 0, "kind": "bulk", "cc": cc, "streams": streams, "mss_bytes": 1448,
                   "sender": "s1", "start_s": 0.0}],
    })
    .to_string()
}

/// FATPIPE_BENCH_PLAN=FILE: run that plan (a run plan's JSON, as the sim
/// backend writes it: `fatpipe.backends.sim.plan_json`) instead, and print
/// its wall time, packets and events: a study's run, to profile.
fn run_plan_file(path: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("FATPIPE_BENCH_PLAN={path}: {e}"));
    let t0 = Instant::now();
    let r = run_json(&text).expect("valid plan");
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "{path}: wall {wall:.2} s, {} bottleneck packets, {} events ({:.1} ns per packet, {:.1} ns per event)",
        r.path.packets,
        r.stats.events,
        wall * 1e9 / r.path.packets.max(1) as f64,
        wall * 1e9 / r.stats.events.max(1) as f64
    );
}

fn main() {
    if let Ok(path) = std::env::var("FATPIPE_BENCH_PLAN") {
        return run_plan_file(&path);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let duration: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(70.0);
    let ccas: Vec<String> = if args.len() > 1 { args[1..].to_vec() } else { AVAILABLE.iter().map(|s| s.to_string()).collect() };
    println!(
        "{} Gbit/s, {} ms, MTU 1500, loss {:e}, buffer 1 BDP, {}, {duration} s",
        env_f64("FATPIPE_BENCH_RATE", 10e9) / 1e9,
        env_f64("FATPIPE_BENCH_RTT", 0.02) * 1e3,
        env_f64("FATPIPE_BENCH_LOSS", 1e-5),
        aqm()["kind"].as_str().unwrap_or("droptail")
    );
    println!(
        "{:<8} {:>7} {:>9} {:>13} {:>11} {:>12} {:>11} {:>10} {:>6}",
        "cca", "streams", "wall_s", "packets", "PTS_M/s", "goodput_Gb", "drops_%", "events", "maxev"
    );
    // FATPIPE_BENCH_STREAMS="8" restricts the stream counts (for profiling).
    let counts: Vec<u64> = std::env::var("FATPIPE_BENCH_STREAMS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 8]);
    for cc in &ccas {
        for &streams in &counts {
            let p = plan(cc, streams, duration);
            let t0 = Instant::now();
            let r = run_json(&p).expect("valid plan");
            let wall = t0.elapsed().as_secs_f64();
            let s = &r.series;
            let warm = 10.0f64.min(duration / 2.0);
            let (mut b0, mut b1) = (0i64, 0i64);
            for i in 0..s.len() {
                if (s.t_s[i] - warm).abs() < 1e-9 {
                    b0 += s.delivered_bytes[i];
                }
                if (s.t_s[i] - duration).abs() < 1e-9 {
                    b1 += s.delivered_bytes[i];
                }
            }
            let goodput = (b1 - b0) as f64 * 8.0 / (duration - warm);
            println!(
                "{:<8} {:>7} {:>9.2} {:>13} {:>11.2} {:>12.3} {:>11.4} {:>10} {:>6}",
                cc,
                streams,
                wall,
                r.stats.packets_sent,
                r.stats.packets_sent as f64 / wall / 1e6,
                goodput / 1e9,
                100.0 * (r.path.queue_drops + r.path.random_drops) as f64 / r.path.packets.max(1) as f64,
                r.stats.events, r.stats.max_pending_events
            );
        }
    }
}
