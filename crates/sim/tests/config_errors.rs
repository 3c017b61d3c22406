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
fn unknown_fields_such_as_swept_are_ignored() {
    let r = run_json(&Plan::new("reno", 1, 1e8, 0.02, 1.0).set("whatever", json!({"x": 1})).json());
    assert!(r.is_ok());
}
