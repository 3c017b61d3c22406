//! The plan structs against a full plan as Python sends it: every field
//! is in the example, and exactly the fields listed in `IGNORED` are
//! ignored (any value passes and changes nothing); every other field is
//! read (a value of the wrong type is refused, naming the field).

use serde_json::{json, Value};

use super::*;
use crate::scenario::Scenario;

fn host() -> Value {
    json!({"rmem_max_bytes": 6_000_000, "wmem_max_bytes": 4_000_000, "stream_rate_cap_bps": null,
           "extra_rtt_s": 0.0, "ecn": 2, "gro": false, "processing_jitter_s": null,
           "start_spread_s": null, "cpu": null, "nic_rate_bps": null,
           "interrupt_coalescing_s": null, "interrupt_coalescing_frames": null, "qdisc": null})
}

fn host_cpu() -> Value {
    json!({"cores": 4, "app_threads": null, "machine": null, "rx_ring_packets": 1024,
           "send_packet_s": 1e-6, "send_byte_s": 1e-10, "receive_packet_s": 5e-7, "receive_unit_s": 2e-6,
           "receive_byte_s": 2e-10, "ack_s": 1e-6, "sack_block_s": 2e-7, "timer_s": 1e-6,
           "rtx_queue": "list", "rtx_walk_s": 5e-9})
}

fn dynamics() -> Value {
    // A trace replaces the rate: the step sets none.
    json!({"schedule": [{"at_s": 0.5, "rate_bps": null, "rtt_s": 0.04, "loss": 0.001, "on": null}],
           "drops": [{"at_s": 0.2, "count": 2, "flow": 0, "on": null}],
           "gilbert_elliott": {"r": 0.5, "bad_loss": 0.5, "good_loss": 0.0},
           "jitter": {"deviation_s": 0.001, "distribution": "normal", "reorder": true, "direction": "both"},
           "reorder": {"probability": 0.01, "gap": 5, "direction": "data"},
           "policer": {"rate_bps": 8e6, "burst_bytes": 30_000},
           "aggregation": {"direction": "ack", "interval_s": 0.001, "bytes": 10_000},
           "trace": {"ms_gaps": [1, 2], "counts": [1, 3]}})
}

/// The full plan with a BBR flow and a drop that waits for its state.
fn full_plan_with_trigger() -> Value {
    let mut p = full_plan();
    p["flows"][0]["cc"] = json!("bbr");
    p["dynamics"]["drops"].as_array_mut().expect("drops").push(json!(
        {"at_s": null, "count": 1, "flow": null, "on": {"event": "exit:STARTUP", "nth": 1, "flow": 0, "after_s": 0.01}}));
    p
}

/// A cross-traffic group with every field of its cross table.
fn cross_flow() -> Value {
    json!({"group": 1, "kind": "cross", "cc": "", "streams": 2, "mss_bytes": 1460, "sender": "", "start_s": 0.1,
           "request_bytes": null, "response_bytes": null, "concurrency": null, "rate_per_s": null, "ecn": null,
           "cwnd_clamp": null, "pacing_rate_bps": null, "app": null, "transfer": null,
           "cross": {"rate_bps": 2e6, "pattern": "on_off", "on_s": 0.01, "off_s": 0.02, "shape": 1.6,
                     "packet_bytes": 1000, "stop_s": 0.9}})
}

/// An application limit with both kinds of step (a rate, a pause).
fn app_limit() -> Value {
    json!({"rate_bps": 5e6, "tick_s": 0.001,
           "steps": [{"at_s": 0.3, "rate_bps": null, "pause_s": 0.1, "on": null},
                     {"at_s": 0.6, "rate_bps": 8e6, "pause_s": null, "on": null}]})
}

/// A transfer group with every field of its transfer table: two data sets
/// of two streams each, taken in chunks.
fn transfer_flow() -> Value {
    json!({"group": 1, "kind": "transfer", "cc": "cubic", "streams": 2, "mss_bytes": 1448, "sender": "s1",
           "start_s": 0.1, "request_bytes": null, "response_bytes": null, "concurrency": null, "rate_per_s": null,
           "ecn": null, "cwnd_clamp": null, "pacing_rate_bps": null, "app": null, "cross": null,
           "transfer": {"size_bytes": 100_000, "split": "chunks", "chunk_bytes": 20_000, "tick_s": 0.001,
                        "starts_s": [0.1, 0.4]}})
}

/// The full plan with a cross group beside the bulk one (through a FIFO:
/// cross traffic does not pass fq_codel).
fn full_plan_with_cross() -> Value {
    let mut p = full_plan();
    p["aqm"] = aqm_table("droptail");
    p["flows"].as_array_mut().expect("flows").push(cross_flow());
    p
}

fn fq_codel() -> Value {
    json!({"kind": "fq_codel", "target_s": 0.005, "interval_s": 0.1, "limit_packets": 10240,
           "ce_threshold_s": null, "quantum_bytes": 1514, "ecn": true})
}

/// A plan with every field of RunPlan, HostLimits and FlowPlan, as
/// `dataclasses.asdict(RunPlan)` gives it for a sim run.
fn full_plan() -> Value {
    json!({
        "run_id": "sim-p000-r00", "backend": "sim", "rep": 0, "seed": 7,
        "duration_s": 1.0, "warmup_s": 0.0, "sample_interval_s": 0.1,
        "rate_bps": 10e6, "rtt_s": 0.02, "loss": 0.0, "corruption": 0.0,
        "buffer_bytes": 25_000, "mtu_bytes": 1500,
        "senders": {"s1": host()}, "receiver": host(),
        "flows": [{"group": 0, "kind": "bulk", "cc": "reno", "streams": 1, "mss_bytes": 1448, "sender": "s1",
                   "start_s": 0.0, "request_bytes": null, "response_bytes": null, "concurrency": null,
                   "rate_per_s": null, "ecn": null, "cwnd_clamp": null, "pacing_rate_bps": null, "cross": null,
                   "app": app_limit(), "transfer": null}],
        "swept": {"path.loss": 0.0}, "aqm": fq_codel(), "testbed": null, "dynamics": dynamics(),
        "emulator": "auto",
        "capture": {"groups": [0], "side": "both", "snaplen_bytes": 128, "duration_s": 0.5, "max_bytes": 1_000_000}
    })
}

/// The aqm table of each kind, with every key its kind takes but one of
/// ce_threshold's three exclusive thresholds.
fn aqm_table(kind: &str) -> Value {
    match kind {
        "droptail" => json!({"kind": "droptail"}),
        "ce_threshold" => json!({"kind": "ce_threshold", "k_packets": 65}),
        "fq_codel" => fq_codel(),
        k => panic!("no example for aqm kind {k}"),
    }
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().expect("an object").keys().map(|k| k.as_str()).collect();
    k.sort_unstable();
    k
}

fn sorted(names: &[&'static str]) -> Vec<&'static str> {
    let mut n = names.to_vec();
    n.sort_unstable();
    n
}

#[test]
fn the_full_plan_has_every_field_of_every_struct() {
    let p = full_plan();
    assert_eq!(keys(&p), sorted(field_names::<RunPlan>()));
    assert_eq!(keys(&p["receiver"]), sorted(field_names::<HostLimits>()));
    assert_eq!(keys(&p["capture"]), sorted(field_names::<CapturePlan>()));
    check_fields(&p, &["capture"], "capture.", field_names::<CapturePlan>(), CapturePlan::IGNORED);
    assert_eq!(keys(&p["flows"][0]), sorted(field_names::<FlowPlan>()));
    assert_eq!(keys(&p["dynamics"]), sorted(field_names::<PathDynamics>()));
    assert_eq!(keys(&p["dynamics"]["schedule"][0]), sorted(field_names::<PathStep>()));
    assert_eq!(keys(&p["dynamics"]["gilbert_elliott"]), sorted(field_names::<GilbertElliott>()));
    assert_eq!(keys(&p["dynamics"]["jitter"]), sorted(field_names::<Jitter>()));
    assert_eq!(keys(&p["dynamics"]["reorder"]), sorted(field_names::<Reorder>()));
    assert_eq!(keys(&p["dynamics"]["policer"]), sorted(field_names::<Policer>()));
    assert_eq!(keys(&p["dynamics"]["aggregation"]), sorted(field_names::<Aggregation>()));
    assert_eq!(keys(&p["dynamics"]["trace"]), sorted(field_names::<Trace>()));
    assert_eq!(keys(&p["dynamics"]["drops"][0]), sorted(field_names::<PathDrop>()));
    let t = full_plan_with_trigger();
    assert_eq!(keys(&t["dynamics"]["drops"][1]["on"]), sorted(field_names::<StateTrigger>()));
    assert_eq!(keys(&cross_flow()), sorted(field_names::<FlowPlan>()));
    assert_eq!(keys(&cross_flow()["cross"]), sorted(field_names::<CrossFlow>()));
    assert_eq!(keys(&p["flows"][0]["app"]), sorted(field_names::<AppLimit>()));
    assert_eq!(keys(&p["flows"][0]["app"]["steps"][0]), sorted(field_names::<AppStep>()));
    assert!(Scenario::from_json(&full_plan_with_cross().to_string()).is_ok());
    assert_eq!(keys(&fq_codel()).into_iter().filter(|k| *k != AQM_KIND_KEY).collect::<Vec<_>>(), sorted(field_names::<FqCodelPlan>()));
    assert!(Scenario::from_json(&p.to_string()).is_ok());
}

/// A value no field that is read accepts: an object of a list.
fn probe() -> Value {
    json!({"probe": [[]]})
}

/// Sets each field of the object at `pointer` (in turn) to [`probe`]: the
/// plan must still give the same scenario if the field is in `ignored`,
/// else be refused with an error naming the field.
/// `at` is the object's key path in the plan (empty: the plan itself).
fn check_fields(plan: &Value, at: &[&str], prefix: &str, fields: &[&str], ignored: &[&str]) {
    // The object's RFC 6901 JSON pointer: each key after a slash.
    let pointer: String = at.iter().map(|k| format!("/{k}")).collect();
    let base = format!("{:?}", Scenario::from_json(&plan.to_string()).expect("the example is valid"));
    for f in fields {
        let mut p = plan.clone();
        p.pointer_mut(&pointer).expect("the object")[*f] = probe();
        let field = format!("{prefix}{f}");
        match Scenario::from_json(&p.to_string()) {
            Ok(s) => {
                assert!(ignored.contains(f), "{field} takes any value: type it IgnoredAny and list it in IGNORED, or read it");
                assert_eq!(format!("{s:?}"), base, "{field} is listed as ignored but changes the scenario");
            }
            Err(e) => {
                assert!(!ignored.contains(f), "{field} is listed in IGNORED but is read: {e}");
                let inside = e.field.strip_prefix(&field).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']));
                assert!(inside, "the error names {field}: {e}");
            }
        }
    }
}

#[test]
fn exactly_the_ignored_fields_are_ignored_and_the_others_read() {
    let p = full_plan();
    check_fields(&p, &[], "", field_names::<RunPlan>(), RunPlan::IGNORED);
    check_fields(&p, &["receiver"], "receiver.", field_names::<HostLimits>(), HostLimits::IGNORED);
    check_fields(&p, &["senders", "s1"], "senders.s1.", field_names::<HostLimits>(), HostLimits::IGNORED);
    check_fields(&p, &["flows", "0"], "flows[0].", field_names::<FlowPlan>(), FlowPlan::IGNORED);
    check_fields(&p, &["dynamics"], "dynamics.", field_names::<PathDynamics>(), PathDynamics::IGNORED);
    check_fields(&p, &["dynamics", "schedule", "0"], "dynamics.schedule[0].", field_names::<PathStep>(), PathStep::IGNORED);
    check_fields(&p, &["dynamics", "gilbert_elliott"], "dynamics.gilbert_elliott.", field_names::<GilbertElliott>(), GilbertElliott::IGNORED);
    check_fields(&p, &["dynamics", "jitter"], "dynamics.jitter.", field_names::<Jitter>(), Jitter::IGNORED);
    check_fields(&p, &["dynamics", "reorder"], "dynamics.reorder.", field_names::<Reorder>(), Reorder::IGNORED);
    check_fields(&p, &["dynamics", "policer"], "dynamics.policer.", field_names::<Policer>(), Policer::IGNORED);
    check_fields(&p, &["dynamics", "aggregation"], "dynamics.aggregation.", field_names::<Aggregation>(), Aggregation::IGNORED);
    check_fields(&p, &["dynamics", "trace"], "dynamics.trace.", field_names::<Trace>(), Trace::IGNORED);
    check_fields(&p, &["flows", "0", "app"], "flows[0].app.", field_names::<AppLimit>(), AppLimit::IGNORED);
    check_fields(&p, &["flows", "0", "app", "steps", "1"], "flows[0].app.steps[1].", field_names::<AppStep>(), AppStep::IGNORED);
    check_fields(&p, &["dynamics", "drops", "0"], "dynamics.drops[0].", field_names::<PathDrop>(), PathDrop::IGNORED);
    let t = full_plan_with_trigger();
    check_fields(&t, &["dynamics", "drops", "1", "on"], "dynamics.drops[1].on.", field_names::<StateTrigger>(), StateTrigger::IGNORED);
    let mut tp = full_plan();
    tp["flows"].as_array_mut().expect("flows").push(transfer_flow());
    assert_eq!(keys(&tp["flows"][1]["transfer"]), sorted(field_names::<TransferPlan>()));
    assert!(Scenario::from_json(&tp.to_string()).is_ok());
    check_fields(&tp, &["flows", "1", "transfer"], "flows[1].transfer.", field_names::<TransferPlan>(), TransferPlan::IGNORED);
    let c = full_plan_with_cross();
    check_fields(&c, &["flows", "1", "cross"], "flows[1].cross.", field_names::<CrossFlow>(), CrossFlow::IGNORED);
    let mut p = full_plan();
    p["receiver"]["cpu"] = host_cpu();
    check_fields(&p, &["receiver", "cpu"], "receiver.cpu.", field_names::<HostCpu>(), HostCpu::IGNORED);
    for k in AQM_KINDS {
        let mut p = full_plan();
        p["aqm"] = aqm_table(k.name);
        check_fields(&p, &["aqm"], "aqm.", (k.fields)(), k.ignored);
    }
}

#[test]
fn plan_fields_splits_each_structs_fields_into_read_and_ignored() {
    let all = plan_fields();
    let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "RunPlan",
            "HostLimits",
            "HostCpu",
            "FlowPlan",
            "CrossFlow",
            "AppLimit",
            "TransferPlan",
            "CapturePlan",
            "AppStep",
            "PathDynamics",
            "PathStep",
            "PathDrop",
            "StateTrigger",
            "GilbertElliott",
            "Jitter",
            "Reorder",
            "Policer",
            "Aggregation",
            "Trace",
            "aqm.droptail",
            "aqm.ce_threshold",
            "aqm.fq_codel"
        ]
    );
    let run_plan = &all[0];
    assert_eq!(run_plan.ignored, ["backend", "rep", "swept", "testbed", "emulator"]);
    assert!(run_plan.read.contains(&"aqm") && !run_plan.read.contains(&"swept"));
    let mut both: Vec<&str> = run_plan.read.iter().chain(&run_plan.ignored).copied().collect();
    both.sort_unstable();
    assert_eq!(both, sorted(field_names::<RunPlan>()));
    assert_eq!(all[19].read, ["kind"]);
    assert_eq!(all[21].read[0], "kind");
}

#[test]
fn every_aqm_kind_is_accepted_and_an_unknown_one_refused_naming_the_kinds() {
    for k in AQM_KINDS {
        let table = aqm_table(k.name);
        assert!(AqmPlan::from_table(table.as_object().unwrap()).is_ok(), "{}", k.name);
    }
    let e = AqmPlan::from_table(json!({"kind": "red"}).as_object().unwrap()).unwrap_err();
    assert_eq!((e.path.as_str(), e.message.as_str()), ("kind", "unknown queue discipline 'red'; expected droptail, ce_threshold or fq_codel"));
}

#[test]
fn integral_floats_are_whole_numbers_and_fractions_are_refused() {
    assert_eq!(from_value::<Whole>(json!(1e6)).unwrap(), Whole(1_000_000));
    let e = from_value::<Whole>(json!(1.5)).unwrap_err();
    assert_eq!(e.message, "invalid value: floating point `1.5`, expected a non-negative integer");
    assert!(from_value::<Whole>(json!(-1)).is_err());
    assert_eq!(from_value::<Seed>(json!(-1)).unwrap(), Seed(u64::MAX));
}

#[test]
fn a_cross_group_refuses_tcp_fields_and_fq_codel_naming_them() {
    let mut p = full_plan_with_cross();
    p["flows"][1]["cc"] = json!("reno");
    assert_eq!(Scenario::from_json(&p.to_string()).unwrap_err().field, "flows[1].cc");
    let mut p = full_plan_with_cross();
    p["aqm"] = fq_codel();
    let e = Scenario::from_json(&p.to_string()).unwrap_err();
    assert!(e.field == "flows[1].kind" && e.message.contains("fq_codel"), "{e}");
    let mut p = full_plan();
    p["flows"][0]["cross"] = cross_flow()["cross"].clone();
    assert_eq!(Scenario::from_json(&p.to_string()).unwrap_err().field, "flows[0].cross");
    let mut p = full_plan_with_cross();
    p["aqm"] = aqm_table("droptail");
    p["flows"].as_array_mut().unwrap().remove(0);
    p["flows"][0]["group"] = json!(0);
    assert_eq!(Scenario::from_json(&p.to_string()).unwrap_err().field, "flows");
}
