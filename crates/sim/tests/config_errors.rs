//! Bad plans are rejected with an error naming the field.
mod common;
use common::*;
use fatpipe_sim::scenario::run_json;
use serde_json::json;

fn error_of(p: Plan) -> String {
    run_json(&p.json()).map(|_| ()).expect_err("plan should be rejected").to_string()
}

#[test]
fn unknown_cc_names_the_field_and_lists_the_available_ones() {
    let e = error_of(Plan::new("foo", 1, 1e8, 0.02, 1.0));
    assert!(e.starts_with("flows[0].cc: unknown congestion control 'foo'; available: reno"), "{e}");
}

#[test]
fn out_of_range_values_name_their_field() {
    assert!(error_of(Plan::new("reno", 1, 1e8, 0.02, 1.0).set("loss", json!(1.5))).starts_with("loss:"));
    assert!(error_of(Plan::new("reno", 1, -1.0, 0.02, 1.0)).starts_with("rate_bps:"));
    assert!(error_of(Plan::new("reno", 0, 1e8, 0.02, 1.0)).starts_with("flows[0].streams:"));
    assert!(error_of(Plan::new("reno", 1, 1e8, 0.02, 1.0).flow("mss_bytes", json!(9000))).starts_with("flows[0].mss_bytes:"));
    assert!(error_of(Plan::new("reno", 1, 1e8, 0.02, 1.0).flow("sender", json!("nope"))).starts_with("flows[0].sender:"));
    assert!(error_of(Plan::new("reno", 1, 1e8, 0.02, 1.0).rmem(0)).starts_with("receiver.rmem_max_bytes:"));
    let e = error_of(Plan::new("reno", 1, 1e8, 0.02, 1.0).flow("cwnd_clamp", json!(0)));
    assert_eq!(e, "flows[0].cwnd_clamp: must be 1 to 2147483647 segments, got 0");
    let mut p = Plan::new("reno", 1, 1e8, 0.02, 1.0);
    p.0.as_object_mut().unwrap().remove("duration_s");
    assert_eq!(error_of(p), "duration_s: missing");
}

#[test]
fn unknown_fields_are_refused_naming_them_at_every_level() {
    let p = || Plan::new("reno", 1, 1e8, 0.02, 1.0);
    let e = error_of(p().set("whatever", json!({"x": 1})));
    assert!(e.starts_with("whatever: unknown field `whatever`, expected one of `run_id`"), "{e}");
    let e = error_of(p().flow("congestion_control", json!("reno")));
    assert!(e.starts_with("flows[0].congestion_control: unknown field `congestion_control`"), "{e}");
    let mut host = p();
    host.0["senders"]["s1"]["rmem_max"] = json!(1);
    assert!(error_of(host).starts_with("senders.s1.rmem_max: unknown field `rmem_max`"));
    let e = error_of(p().set("aqm", json!({"kind": "fq_codel", "target": 0.005})));
    assert!(e.starts_with("aqm.target: unknown field `target`, expected one of `target_s`"), "{e}");
    let e = error_of(p().set("aqm", json!({"kind": "droptail", "k_packets": 65})));
    assert!(e.starts_with("aqm.k_packets: unknown field `k_packets`, there are no fields"), "{e}");
}

#[test]
fn mistyped_fields_are_refused_naming_them() {
    let p = || Plan::new("reno", 1, 1e8, 0.02, 1.0);
    assert_eq!(error_of(p().flow("streams", json!("4"))), "flows[0].streams: invalid type: string \"4\", expected a non-negative integer");
    assert_eq!(error_of(p().set("loss", json!("1%"))), "loss: invalid type: string \"1%\", expected f64");
    let e = error_of(p().set("aqm", json!({"kind": "fq_codel", "target_s": "5ms"})));
    assert!(e.starts_with("aqm.target_s: invalid type: string"), "{e}");
}

#[test]
fn the_python_fields_rust_ignores_on_purpose_are_accepted_with_any_value() {
    let r = run_json(
        &Plan::new("reno", 1, 1e8, 0.02, 1.0)
            .set("swept", json!({"path.loss": 0.0}))
            .set("backend", json!("sim"))
            .set("rep", json!(3))
            .set("testbed", json!(null))
            .json(),
    );
    assert!(r.is_ok());
}
