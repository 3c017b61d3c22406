//! Drops at chosen instants ([[path.drops]]) and path changes that wait
//! for the sender's state (`on = "enter:DRAIN"`, path/trigger.rs), run
//! whole: each acts from its instant on and changes nothing before it.

mod common;
use common::{goodput, Plan};
use fatpipe_sim::trace::RunResult;
use serde_json::{json, Value};

fn dynamics(v: Value) -> Value {
    let mut d = json!({"schedule": [], "gilbert_elliott": null, "jitter": null, "policer": null, "aggregation": null});
    for (k, x) in v.as_object().expect("object") {
        d[k] = x.clone();
    }
    d
}

fn on(event: &str, nth: u64) -> Value {
    json!({"event": event, "nth": nth, "flow": 0, "after_s": 0.0})
}

/// The instant (s) of the `nth` entry into `state` in the run's events.
fn entered(r: &RunResult, state: &str, nth: usize) -> Option<f64> {
    let e = &r.events;
    (0..e.t_s.len()).filter(|&i| e.kind[i] == "cc_state" && e.to_state[i] == state).map(|i| e.t_s[i]).nth(nth - 1)
}

/// Each sample's delivered bytes (all streams), by sample instant.
fn delivered(r: &RunResult) -> Vec<(f64, i64)> {
    let s = &r.series;
    (0..s.len()).map(|i| (s.t_s[i], s.delivered_bytes[i])).collect()
}

/// The first sample instant at which two runs' deliveries differ.
fn first_difference(a: &RunResult, b: &RunResult) -> Option<f64> {
    delivered(a).into_iter().zip(delivered(b)).find(|(x, y)| x != y).map(|(x, _)| x.0)
}

/// 100 Mbit/s, 20 ms, a 1-BDP buffer, sampled every millisecond.
fn bbr_plan(cc: &str, duration_s: f64) -> Plan {
    Plan::new(cc, 1, 1e8, 0.02, duration_s).set("sample_interval_s", json!(0.001))
}

#[test]
fn timed_drops_lose_exactly_count_packets_from_their_instant_and_the_sender_retransmits_them() {
    // Window held below the path's BDP by the receive buffer: nothing
    // else is lost, so every drop and retransmission is the burst's.
    let plan = |drops: Value| Plan::new("cubic", 1, 1e8, 0.02, 6.0).rmem(150_000).set("sample_interval_s", json!(0.5)).set("dynamics", dynamics(json!({"drops": drops})));
    let r = plan(json!([{"at_s": 3.0, "count": 3, "flow": null, "on": null}])).run();
    let retrans = |t: f64| r.series.retrans_segments[r.series.t_s.iter().position(|&x| (x - t).abs() < 1e-9).expect("sample")];
    assert_eq!((r.path.random_drops, r.path.queue_drops), (3, 0));
    assert_eq!((retrans(3.0), retrans(6.0)), (0, 3), "no loss before 3 s, the three dropped retransmitted after");
    let base = plan(json!([])).run();
    assert_eq!(base.path.random_drops, 0);
    let t = first_difference(&base, &r).expect("the drops change the run");
    assert!(t > 3.0, "the run is unchanged up to the drops' instant; first difference at {t} s");
    // A burst of another flow's packets drops none of this one's.
    let other = Plan::new("cubic", 1, 1e8, 0.02, 2.0).rmem(150_000).set("dynamics", dynamics(json!({"drops": [{"at_s": 1.0, "count": 2, "flow": 0, "on": null}]})));
    assert_eq!(other.run().path.random_drops, 2);
}

#[test]
fn a_trigger_whose_event_never_happens_changes_nothing() {
    // BBR enters PROBE_RTT only after 10 s without a lower RTT sample: in
    // a 3 s run the trigger waits in vain, and the run is the one without it.
    let base = bbr_plan("bbr", 3.0).set("dynamics", dynamics(json!({"drops": [{"at_s": 2.9999, "count": 1, "flow": 0, "on": null}]}))).run();
    let never = bbr_plan("bbr", 3.0)
        .set("dynamics", dynamics(json!({
            "drops": [{"at_s": 2.9999, "count": 1, "flow": 0, "on": null}],
            "schedule": [{"at_s": null, "on": on("enter:PROBE_RTT", 1), "rate_bps": 1e7, "rtt_s": null, "loss": null}]})))
        .run();
    assert!(entered(&never, "probe_rtt", 1).is_none());
    assert_eq!(delivered(&base), delivered(&never));
    assert_eq!(base.events.t_s, never.events.t_s);
}

#[test]
fn a_rate_cut_on_entering_drain_takes_effect_at_the_logged_instant() {
    let base = bbr_plan("bbr", 4.0).set("dynamics", dynamics(json!({"schedule": [{"at_s": 3.99, "loss": 0.0}]}))).run();
    let cut = bbr_plan("bbr", 4.0)
        .set("dynamics", dynamics(json!({"schedule": [
            {"at_s": null, "on": on("enter:DRAIN", 1), "rate_bps": 5e7, "rtt_s": null, "loss": null},
            {"at_s": 3.99, "loss": 0.0}]})))
        .run();
    let drain = entered(&base, "drain", 1).expect("BBR drains after STARTUP");
    assert_eq!(entered(&cut, "drain", 1), Some(drain), "the same run up to the event");
    // Not before: every sample up to the event is the same. There: the
    // first packet the bottleneck admits after it is served at the new
    // rate, so its ACK (delivered_bytes counts acked bytes) comes back
    // later than in the run without the cut, by the time of the queue
    // ahead of it (at most the 1-BDP buffer, 20 ms at the old rate), the
    // RTT (20 ms) and a few packet times (the ACK of every second
    // segment, the 1 ms sample grid): within 43 ms.
    let t = first_difference(&base, &cut).expect("the cut changes the run");
    assert!(t > drain && t <= drain + 0.020 + 0.020 + 0.003, "DRAIN at {drain} s, first difference at {t} s");
    // From then on the path serves half: goodput at most 50 Mbit/s of payload.
    let g = goodput(&cut, 2.0, 3.9);
    assert!(g <= 5e7 * 1460.0 / 1514.0 * 1.01 && g > 0.8 * 5e7 * 1460.0 / 1514.0, "goodput after the cut {g:.3e}");
}

#[test]
fn nth_fires_at_that_occurrence_and_triggered_drops_lose_exactly_count_packets_after_it() {
    // BBRv3 cycles through PROBE_UP every few seconds: a burst of 4 drops
    // on its second PROBE_UP.
    let plan = |drops: Value| bbr_plan("bbr3", 8.0).set("dynamics", dynamics(json!({"drops": drops})));
    let base = plan(json!([{"at_s": 7.9999, "count": 1, "flow": 0, "on": null}])).run();
    let up2 = entered(&base, "probe_bw_up", 2).expect("a second PROBE_UP within 8 s");
    let r = plan(json!([{"at_s": 7.9999, "count": 1, "flow": 0, "on": null}, {"at_s": null, "count": 4, "flow": 0, "on": on("enter:PROBE_UP", 2)}])).run();
    assert_eq!(r.path.random_drops, base.path.random_drops + 4, "exactly the burst's four more");
    assert_eq!(entered(&r, "probe_bw_up", 2), Some(up2));
    let t = first_difference(&base, &r).expect("the drops change the run");
    assert!(t > up2, "second PROBE_UP at {up2} s, first difference at {t} s (not at the first, {:?})", entered(&base, "probe_bw_up", 1));
    let retrans = |r: &RunResult| r.series.retrans_segments.last().copied().unwrap_or(0);
    assert!(retrans(&r) >= retrans(&base) + 4, "the sender retransmits the four ({} vs {})", retrans(&r), retrans(&base));
}

#[test]
fn state_triggers_are_refused_for_a_cca_without_states() {
    let plan = Plan::new("cubic", 1, 1e8, 0.02, 1.0)
        .set("dynamics", dynamics(json!({"drops": [{"at_s": null, "count": 1, "flow": 0, "on": on("enter:DRAIN", 1)}]})));
    let e = fatpipe_sim::scenario::run_json(&plan.json()).unwrap_err();
    assert!(e.field == "dynamics.drops[0].on.flow" && e.message.contains("'cubic' exposes no state"), "{e}");
}

#[test]
fn triggered_rtt_and_loss_steps_change_the_path_from_the_event_on() {
    // On leaving STARTUP: the RTT to 60 ms and 1 % random loss (a step
    // decided at run time holds until the next timed step: profile.rs's
    // Steps::insert test).
    let plan = |steps: Value| bbr_plan("bbr", 3.0).set("sample_interval_s", json!(0.1)).set("dynamics", dynamics(json!({"schedule": steps})));
    let base = plan(json!([{"at_s": 2.99, "loss": 0.0}])).run();
    let r = plan(json!([{"at_s": null, "on": on("exit:STARTUP", 1), "rate_bps": null, "rtt_s": 0.06, "loss": 0.01}, {"at_s": 2.99, "loss": 0.0}])).run();
    let exit = entered(&r, "drain", 1).expect("BBR leaves STARTUP for DRAIN");
    let at = |t: f64| r.series.t_s.iter().position(|&x| (x - t).abs() < 1e-9).expect("sample");
    let before = (0..r.series.len()).filter(|&i| r.series.t_s[i] < exit).map(|i| r.series.srtt_s[i]).fold(0.0, f64::max);
    assert!(before < 0.06, "srtt before the event {before}");
    assert!(r.series.srtt_s[at(1.9)] >= 0.06, "srtt after the event {}", r.series.srtt_s[at(1.9)]);
    assert_eq!(base.path.random_drops, 0);
    assert!(r.path.random_drops > 0, "the triggered loss step loses packets");
    let t = first_difference(&base, &r).expect("the steps change the run");
    assert!(t > exit, "left STARTUP at {exit} s, first difference at {t} s");
}

#[test]
fn an_application_pause_triggered_on_entering_probe_refill_starts_there_and_changes_nothing_before()
{
    // A [[flows.app]] step with `on` (app_rate.rs RateBulk::insert): the
    // application of an unlimited bbr3 sender stops writing when the flow
    // first enters PROBE_REFILL, for 300 ms. What it had written (its
    // send buffer, 1 MB: 80 ms at 100 Mbit/s) still drains; then nothing
    // is sent until the pause ends (tcp_sendmsg() writes nothing, so
    // tcp_write_xmit() has nothing).
    let pause = json!({"rate_bps": null, "tick_s": 1e-3, "steps": [
        {"at_s": null, "rate_bps": null, "pause_s": 0.3, "on": on("enter:PROBE_REFILL", 1)}]});
    let base = bbr_plan("bbr3", 8.0).wmem(1_000_000).run();
    let paused = bbr_plan("bbr3", 8.0)
        .wmem(1_000_000)
        .flow("app", pause)
        .run();
    let t = entered(&paused, "probe_bw_refill", 1).expect("bbr3 enters PROBE_REFILL within 8 s");
    assert_eq!(
        entered(&base, "probe_bw_refill", 1),
        Some(t),
        "the same run up to the event"
    );
    let diff = first_difference(&base, &paused).expect("the pause changes the run");
    assert!(diff > t, "first difference at {diff} s, the event at {t} s");
    // Once the buffer has drained (well within the pause at 100 Mbit/s),
    // the connection is idle: deliveries stop until the pause ends.
    let d = delivered(&paused);
    let at = |x: f64| d.iter().find(|(s, _)| *s >= x - 1e-9).expect("a sample").1;
    assert_eq!(
        at(t + 0.29),
        at(t + 0.2),
        "nothing delivered late in the pause"
    );
    assert!(at(t + 0.6) > at(t + 0.3), "writes resume after the pause");
}
