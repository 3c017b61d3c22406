//! The end hosts' CPU and NIC (crate::host::cpu, crate::host::nic): a
//! core that cannot keep up caps what its streams get together, one
//! application thread puts every stream on one core, the NIC's ceiling
//! caps a host's streams together without losses, a receiver whose core
//! falls behind drops what its ring cannot hold, and a host with no CPU
//! model is the ideal host.
mod common;
use common::*;
use fatpipe_sim::scenario::{run_json, Scenario};
use serde_json::{json, Value};

/// A CPU model of `cores` cores in which sending costs `send_byte_s` per
/// payload byte and every other kind of work nothing unless set after.
fn cpu(cores: u64, app_threads: Option<u64>, send_byte_s: f64) -> Value {
    json!({"cores": cores, "app_threads": app_threads, "machine": null, "rx_ring_packets": 1024,
           "send_packet_s": 0.0, "send_byte_s": send_byte_s, "receive_packet_s": 0.0,
           "receive_unit_s": 0.0, "receive_byte_s": 0.0, "ack_s": 0.0, "sack_block_s": 0.0, "timer_s": 0.0,
           "rtx_queue": null, "rtx_walk_s": null})
}

/// `streams` CUBIC streams over 10 Gbit/s, 10 ms, 1 BDP; 3 s.
fn bulk(streams: u64) -> Plan {
    Plan::new("cubic", streams, 10e9, 0.01, 3.0)
}

/// A core that sends 2 Gbit/s of payload: 4 ns per byte.
const TWO_GBPS_PER_BYTE_S: f64 = 8.0 / 2e9;

#[test]
fn one_app_thread_caps_eight_streams_at_one_core() {
    let mut p = bulk(8);
    p.0["senders"]["s1"]["cpu"] = cpu(8, Some(1), TWO_GBPS_PER_BYTE_S);
    let r = p.run();
    let g = goodput(&r, 1.0, 3.0);
    // Payload the core can copy: 2 Gbit/s, whatever the streams' number.
    assert!(g <= 2.0e9 * 1.001, "8 streams on one core got {:.3} Gbit/s, over the core's 2", g / 1e9);
    assert!(g >= 1.6e9, "the core is the limit, yet only {:.3} Gbit/s", g / 1e9);
    // Every stream gets a share of the core.
    let n = r.series.len();
    assert!(r.series.delivered_bytes[n - 8..].iter().all(|&b| b > 10_000_000), "{:?}", &r.series.delivered_bytes[n - 8..]);
}

#[test]
fn a_thread_per_stream_spreads_them_over_the_cores() {
    let mut p = bulk(8);
    p.0["senders"]["s1"]["cpu"] = cpu(8, None, TWO_GBPS_PER_BYTE_S);
    let g = goodput(&p.run(), 1.0, 3.0);
    // Eight cores drive 16 Gbit/s: the 10 Gbit/s path is the limit.
    assert!(g >= 8.5e9, "8 streams on 8 cores got {:.3} Gbit/s", g / 1e9);
    // Four threads on two cores: two cores' worth.
    let mut p = bulk(8);
    p.0["senders"]["s1"]["cpu"] = cpu(2, Some(4), TWO_GBPS_PER_BYTE_S);
    let g = goodput(&p.run(), 1.0, 3.0);
    assert!((3.2e9..=4.0e9 * 1.001).contains(&g), "8 streams, 4 threads, 2 cores: {:.3} Gbit/s", g / 1e9);
}

#[test]
fn a_busy_core_delays_acks_and_stretches_the_rtt() {
    // One stream whose core saturates: its ACKs wait for the core, so the
    // measured RTT exceeds the path's, while the path's queue stays empty.
    let mut p = bulk(1);
    p.0["senders"]["s1"]["cpu"] = cpu(1, None, TWO_GBPS_PER_BYTE_S);
    let r = p.run();
    let srtt = r.series.srtt_s.last().copied().unwrap();
    assert!(srtt > 0.011, "srtt {srtt} s: a saturated core should queue ACKs");
    let q = r.path_series.queue_bytes.iter().skip(1).copied().max().unwrap_or(0);
    assert!(q < 1_250_000, "the path queued {q} bytes though the host is the limit");
}

#[test]
fn the_nic_caps_a_hosts_streams_together_without_losses() {
    let mut p = bulk(4);
    p.0["senders"]["s1"]["nic_rate_bps"] = json!(3e9);
    let r = p.run();
    let g = goodput(&r, 1.0, 3.0);
    assert!((2.7e9..=3.0e9).contains(&g), "4 streams behind a 3 Gbit/s NIC: {:.3} Gbit/s", g / 1e9);
    // TSQ keeps the NIC's queue short: nothing is dropped past slow start,
    // and the RTT stays within a few ms of the path's.
    let srtt = r.series.srtt_s.last().copied().unwrap();
    assert!(srtt < 0.015, "srtt {srtt} s behind the NIC");
    assert_eq!(r.path.queue_drops, 0, "the path dropped though the NIC is slower than it");
}

#[test]
fn a_receiver_that_falls_behind_drops_what_its_ring_cannot_hold() {
    let mut p = bulk(2);
    let mut c = cpu(1, None, 0.0);
    // 12 µs per packet: one core takes ~83 k packets/s, ~1 Gbit/s.
    c["receive_unit_s"] = json!(12e-6);
    c["rx_ring_packets"] = json!(256);
    p.0["receiver"]["cpu"] = c;
    let r = p.run();
    let g = goodput(&r, 1.0, 3.0);
    let core_bps = 1460.0 * 8.0 / 12e-6;
    assert!(g <= core_bps * 1.001 && g >= 0.7 * core_bps, "{:.3} Gbit/s for a core of {:.3}", g / 1e9, core_bps / 1e9);
    assert!(r.path.host_drops > 0, "a receiver behind its ring dropped nothing");
}

#[test]
fn a_host_without_costs_is_the_ideal_host() {
    // A CPU model whose every cost is zero changes nothing.
    let ideal = bulk(2).run();
    let mut p = bulk(2);
    p.0["senders"]["s1"]["cpu"] = cpu(1, Some(1), 0.0);
    p.0["receiver"]["cpu"] = cpu(1, None, 0.0);
    assert_eq!(p.run().series, ideal.series);
}

#[test]
fn bad_cpu_values_name_the_field_and_the_range() {
    let e = |f: &dyn Fn(&mut Value)| {
        let mut p = bulk(1);
        p.0["senders"]["s1"]["cpu"] = cpu(2, None, 0.0);
        f(&mut p.0);
        run_json(&p.json()).unwrap_err().to_string()
    };
    assert_eq!(e(&|p| p["senders"]["s1"]["cpu"]["cores"] = json!(0)), "senders.s1.cpu.cores: must be 1 to 1024 cores, got 0");
    assert_eq!(
        e(&|p| p["senders"]["s1"]["cpu"]["send_byte_s"] = json!(2e-6)),
        "senders.s1.cpu.send_byte_s: must be 0 to 0.000001 s, got 0.000002"
    );
    assert_eq!(
        e(&|p| p["senders"]["s1"]["cpu"]["rx_ring_packets"] = json!(8)),
        "senders.s1.cpu.rx_ring_packets: must be 16 to 65536 packets, got 8"
    );
    assert_eq!(e(&|p| p["senders"]["s1"]["nic_rate_bps"] = json!(0.0)), "senders.s1.nic_rate_bps: must be > 0 bit/s, got 0");
    let shared = e(&|p| {
        p["senders"]["s1"]["cpu"]["machine"] = json!("vm");
        let mut r = cpu(4, None, 0.0);
        r["machine"] = json!("vm");
        p["receiver"]["cpu"] = r;
    });
    assert_eq!(shared, "receiver.cpu.cores: hosts senders.s1 and receiver share machine 'vm' but give it 2 and 4 cores");
    assert!(Scenario::from_json(&bulk(1).json()).is_ok());
}

#[test]
fn a_paced_flow_whose_timers_wait_for_a_busy_core_keeps_its_rate() {
    // BBR paces with a timer; ACK work keeps its core busy part of the
    // time, so pacing timers often fire while it is busy and wait their
    // turn. A timer that waited must still fire when re-armed later.
    // One ACK per two segments at ~9.5 Gbit/s is ~410 k ACKs/s: at 0.5 µs
    // each the core is ~20 % busy and the path is still the limit.
    let mut p = Plan::new("bbr", 1, 10e9, 0.02, 4.0).rmem(128 << 20).wmem(128 << 20);
    let mut c = cpu(1, None, 0.0);
    c["ack_s"] = json!(0.5e-6);
    p.0["senders"]["s1"]["cpu"] = c;
    let g = goodput(&p.run(), 2.0, 4.0);
    assert!(g > 8.5e9, "bbr behind a 20 % busy core: {:.3} Gbit/s", g / 1e9);
}

/// BBR over 2 Gbit/s, 150 ms, 1 % loss (the shape of the test in Linux
/// commit 75c119afe14f), its sender's core costing 1 µs per ACK, with the
/// retransmission queue a list whose walk costs `walk_s` per segment.
fn bbr_lossy(rtx_queue: &str, walk_s: f64) -> f64 {
    let mut p = Plan::new("bbr", 1, 2e9, 0.15, 6.0).set("loss", json!(0.01)).rmem(256 << 20).wmem(256 << 20);
    let mut c = cpu(1, None, 0.0);
    c["ack_s"] = json!(1e-6);
    c["rtx_queue"] = json!(rtx_queue);
    c["rtx_walk_s"] = json!(walk_s);
    p.0["senders"]["s1"]["cpu"] = c;
    goodput(&p.run(), 2.0, 6.0)
}

#[test]
fn a_list_retransmission_queue_makes_sack_processing_cost_what_the_queue_holds() {
    let tree = bbr_lossy("rbtree", 100e-9);
    let list = bbr_lossy("list", 100e-9);
    // The rb-tree finds a block at once: the path is the limit. The list
    // walks up to the window (~25,000 segments in flight) on ACKs that
    // SACK below the highest SACK, as when a retransmission was lost
    // again: up to 2.5 ms each at 100 ns a segment.
    assert!(tree > 1.5e9, "rbtree: {:.3} Gbit/s", tree / 1e9);
    assert!(list < 0.5 * tree, "list {:.3} vs rbtree {:.3} Gbit/s", list / 1e9, tree / 1e9);
}
