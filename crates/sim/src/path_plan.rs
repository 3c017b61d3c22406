//! The plan's `dynamics` (base.py PathDynamics) checked and turned into
//! the path's [`DynamicsConfig`]; errors name the field
//! (`dynamics.schedule[1].rate_bps`) and what is allowed.

use crate::path::cross::{CrossPattern, CrossSpec};
use crate::path::direction::{JitterDistribution, JitterSpec, ReorderSpec, SlotSpec};
use crate::path::drops::DropSpec;
use crate::path::dynamics::{Directions, DynamicsConfig, Triggered};
use crate::path::loss::GeParams;
use crate::path::trace::DeliveryTrace;
use crate::path::trigger::Trigger;
use crate::plan;
use crate::scenario::{err, non_negative, positive, probability, required, whole, ConfigError};
use crate::units::{Rate, Time};
use crate::wire;

/// What a state trigger may watch, by flow (the plan's flows index): the
/// states its sender's CCA logs, or why it cannot be watched (no such
/// flow, cross traffic, a CCA that exposes no state, or a backend that
/// cannot watch a sender at all).
pub type FlowStates<'a> = &'a dyn Fn(usize) -> Result<&'static [&'static str], String>;

/// The dynamics of a path whose base random loss is `loss`, with `flows`
/// flows whose senders' states `states` gives; `None` (an old plan) is
/// the static path.
pub fn dynamics(p: Option<&plan::PathDynamics>, loss: f64, flows: usize, states: FlowStates) -> Result<DynamicsConfig, ConfigError> {
    let Some(p) = p else { return Ok(DynamicsConfig::default()) };
    let mut cfg = DynamicsConfig::default();
    let mut last = 0.0f64;
    for (i, step) in p.schedule.iter().flatten().enumerate() {
        let at = |key: &str| format!("dynamics.schedule[{i}].{key}");
        if step.rate_bps.is_none() && step.rtt_s.is_none() && step.loss.is_none() {
            return err(format!("dynamics.schedule[{i}]"), "a step changes at least one of rate_bps, rtt_s, loss");
        }
        let rate = step.rate_bps.map(|r| positive(Some(r), &at("rate_bps")).map(|r| Rate(r.round() as u64))).transpose()?;
        let rtt = step.rtt_s.map(|r| non_negative(r, &at("rtt_s")).map(Time::from_secs_f64)).transpose()?;
        let loss = step.loss.map(|l| probability(l, &at("loss"))).transpose()?;
        if let Some(on) = &step.on {
            if step.at_s.is_some() {
                return err(at("at_s"), "a step happens at a time (at_s) or on a state change (on), not both");
            }
            let trigger = state_trigger(on, &at("on"), flows, states)?;
            cfg.triggered.push((trigger, Triggered::Step { rate, rtt, loss }));
            continue;
        }
        let at_s = positive(step.at_s, &at("at_s"))?;
        if at_s <= last {
            return err(at("at_s"), format!("timed steps must be in time order, strictly after the previous ({last} s), got {at_s}"));
        }
        last = at_s;
        let t = Time::from_secs_f64(at_s);
        if let Some(r) = rate {
            cfg.rate_changes.push((t, r));
        }
        if let Some(rtt) = rtt {
            cfg.rtt_changes.push((t, rtt));
        }
        if let Some(l) = loss {
            cfg.loss_changes.push((t, l));
        }
    }
    for (i, d) in p.drops.iter().flatten().enumerate() {
        let at = |key: &str| format!("dynamics.drops[{i}].{key}");
        let count = whole(d.count).unwrap_or(1);
        if count == 0 {
            return err(at("count"), "must be >= 1 (the data packets dropped)");
        }
        let group = match whole(d.flow) {
            Some(g) if g as usize >= flows => return err(at("flow"), format!("no flow {g}: the plan has {flows} flows (0 to {})", flows.saturating_sub(1))),
            g => g.map(|g| g as usize),
        };
        match (&d.on, d.at_s) {
            (Some(on), None) => {
                let trigger = state_trigger(on, &at("on"), flows, states)?;
                cfg.triggered.push((trigger, Triggered::Drop { count, group }));
            }
            (None, Some(at_s)) => {
                let t = Time::from_secs_f64(non_negative(at_s, &at("at_s"))?);
                cfg.drops.push(DropSpec { at: t, count, group });
            }
            (Some(_), Some(_)) => return err(at("at_s"), "drops happen at a time (at_s) or on a state change (on), not both"),
            (None, None) => return err(at("at_s"), "missing: drops happen at a time (at_s) or on a state change (on)"),
        }
    }
    if let Some(g) = &p.gilbert_elliott {
        let params = gilbert_elliott(g)?;
        for (field, mean) in std::iter::once(("loss".to_string(), loss))
            .chain(p.schedule.iter().flatten().enumerate().filter_map(|(i, s)| Some((format!("dynamics.schedule[{i}].loss"), s.loss?))))
        {
            // p = r·(mean − good)/(bad − mean) must be a probability:
            // mean ≤ (bad + r·good)/(1 + r), where p reaches 1.
            let most = (params.bad_loss + params.r * params.good_loss) / (1.0 + params.r);
            if mean < params.good_loss || mean > most {
                return err(
                    field,
                    format!(
                        "a Gilbert-Elliott loss's long-run mean must be at least good_loss ({}) and at most (bad_loss + r·good_loss)/(1 + r) = {most}, got {mean}",
                        params.good_loss
                    ),
                );
            }
        }
        cfg.gilbert_elliott = Some(params);
    }
    if let Some(j) = &p.jitter {
        cfg.jitter = Some(jitter(j)?);
    }
    if let Some(r) = &p.reorder {
        cfg.reorder = Some(reorder(r)?);
    }
    if let Some(pol) = &p.policer {
        let rate = positive(pol.rate_bps, "dynamics.policer.rate_bps")?;
        let burst = required(whole(pol.burst_bytes), "dynamics.policer.burst_bytes")?;
        if burst == 0 {
            return err("dynamics.policer.burst_bytes", "must be >= 1");
        }
        cfg.policer = Some((Rate(rate.round() as u64), burst));
    }
    if let Some(a) = &p.aggregation {
        let interval = positive(a.interval_s, "dynamics.aggregation.interval_s")?;
        let budget = whole(a.bytes);
        if budget == Some(0) {
            return err("dynamics.aggregation.bytes", "must be >= 1 (or null: no budget)");
        }
        let dir = match required(a.direction.as_deref(), "dynamics.aggregation.direction")? {
            "data" => Directions { data: true, ack: false },
            "ack" => Directions { data: false, ack: true },
            d => return err("dynamics.aggregation.direction", format!("unknown direction '{d}'; expected data or ack")),
        };
        cfg.aggregation = Some((SlotSpec { interval: Time::from_secs_f64(interval), budget_bytes: budget }, dir));
    }
    if let Some(t) = &p.trace {
        if !cfg.rate_changes.is_empty() {
            return err("dynamics.trace", "a delivery trace replaces the bottleneck's rate: a schedule step cannot set rate_bps with it");
        }
        if cfg.triggered.iter().any(|t| matches!(t.1, Triggered::Step { rate: Some(_), .. })) {
            return err("dynamics.trace", "a delivery trace replaces the bottleneck's rate: a triggered step cannot set rate_bps with it");
        }
        let gaps: Vec<u64> = required(t.ms_gaps.as_ref(), "dynamics.trace.ms_gaps")?.iter().map(|w| w.0).collect();
        let counts: Vec<u64> = required(t.counts.as_ref(), "dynamics.trace.counts")?.iter().map(|w| w.0).collect();
        cfg.trace = Some(DeliveryTrace::from_run_lengths(&gaps, &counts).or_else(|m| err("dynamics.trace", m))?);
    }
    Ok(cfg)
}

/// A plan's state trigger checked: its event among the states of the
/// watched flow's CCA (`states`); errors name `field` (`dynamics.schedule[1].on`).
pub fn state_trigger(t: &plan::StateTrigger, field: &str, flows: usize, states: FlowStates) -> Result<Trigger, ConfigError> {
    let event = required(t.event.as_deref(), format!("{field}.event"))?;
    let nth = whole(t.nth).unwrap_or(1);
    let group = whole(t.flow).unwrap_or(0) as usize;
    if group >= flows {
        return err(format!("{field}.flow"), format!("no flow {group}: the plan has {flows} flows (0 to {})", flows.saturating_sub(1)));
    }
    let after = Time::from_secs_f64(non_negative(t.after_s.unwrap_or(0.0), &format!("{field}.after_s"))?);
    let names = states(group).or_else(|m| err(format!("{field}.flow"), m))?;
    let nth = u32::try_from(nth).or_else(|_| err(format!("{field}.nth"), format!("at most {}, got {nth}", u32::MAX)))?;
    Trigger::parse(event, names, nth, group, after).or_else(|m| err(format!("{field}.event"), m))
}

/// A flow group of kind "cross" (plan.rs CrossFlow) as group `group` of
/// `streams` sources from `start_s`, on a path of `mtu_bytes`; `at` names
/// a field of the flow (`flows[1].cross.rate_bps`).
pub fn cross_flow(
    c: Option<&plan::CrossFlow>,
    group: u32,
    streams: u64,
    start_s: f64,
    mtu_bytes: u64,
    at: &dyn Fn(&str) -> String,
) -> Result<CrossSpec, ConfigError> {
    let Some(c) = c else { return err(at("cross"), "a flow of kind cross needs its cross table") };
    let rate = positive(c.rate_bps, &at("cross.rate_bps"))?;
    let packet_bytes = whole(c.packet_bytes).unwrap_or(mtu_bytes);
    if !(MIN_CROSS_PACKET_BYTES..=mtu_bytes).contains(&packet_bytes) {
        return err(at("cross.packet_bytes"), format!("must be from {} to mtu_bytes ({mtu_bytes}), got {packet_bytes}", MIN_CROSS_PACKET_BYTES));
    }
    let stop = match c.stop_s {
        None => Time::MAX,
        Some(s) if s > start_s => Time::from_secs_f64(s),
        Some(s) => return err(at("cross.stop_s"), format!("must be after start_s ({start_s} s), got {s}")),
    };
    let pattern = match c.pattern.as_deref().unwrap_or("constant") {
        "constant" => CrossPattern::Constant,
        "on_off" => {
            let shape = c.shape.unwrap_or(DEFAULT_PARETO_SHAPE);
            if !(shape > 1.0 && shape.is_finite()) {
                return err(at("cross.shape"), format!("a Pareto shape must be above 1 (a finite mean), got {shape}"));
            }
            CrossPattern::OnOff {
                on_mean: Time::from_secs_f64(positive(c.on_s, &at("cross.on_s"))?),
                off_mean: Time::from_secs_f64(positive(c.off_s, &at("cross.off_s"))?),
                shape,
            }
        }
        p => return err(at("cross.pattern"), format!("unknown pattern '{p}'; expected constant or on_off")),
    };
    if matches!(pattern, CrossPattern::Constant) && (c.on_s.is_some() || c.off_s.is_some() || c.shape.is_some()) {
        return err(at("cross.pattern"), "on_s, off_s and shape apply to pattern on_off only");
    }
    Ok(CrossSpec {
        group,
        streams: streams as u32,
        rate: Rate(rate.round() as u64),
        packet_bytes: packet_bytes as u32,
        frame_bytes: wire::frame_bytes(packet_bytes as u32),
        start: Time::from_secs_f64(start_s),
        stop,
        pattern,
    })
}

/// The smallest cross-traffic packet: an IPv4 and a UDP header.
pub const MIN_CROSS_PACKET_BYTES: u64 = 28;

/// The Pareto shape of on and off periods unless the plan gives one: 1.5,
/// the middle of the self-similar range 1 < shape < 2 (Hurst 0.75).
pub const DEFAULT_PARETO_SHAPE: f64 = 1.5;

fn gilbert_elliott(g: &plan::GilbertElliott) -> Result<GeParams, ConfigError> {
    let field = "dynamics.gilbert_elliott";
    let r = positive(g.r, &format!("{field}.r"))?;
    let r = probability(r, &format!("{field}.r"))?;
    let bad_loss = probability(positive(g.bad_loss, &format!("{field}.bad_loss"))?, &format!("{field}.bad_loss"))?;
    let good_loss = probability(g.good_loss.unwrap_or(0.0), &format!("{field}.good_loss"))?;
    if good_loss >= bad_loss {
        return err(format!("{field}.good_loss"), format!("must be below bad_loss ({bad_loss}), got {good_loss}"));
    }
    Ok(GeParams { r, bad_loss, good_loss })
}

fn jitter(j: &plan::Jitter) -> Result<(JitterSpec, Directions), ConfigError> {
    let deviation = positive(j.deviation_s, "dynamics.jitter.deviation_s")?;
    let distribution = match j.distribution.as_deref().unwrap_or("uniform") {
        "uniform" => JitterDistribution::Uniform,
        "normal" => JitterDistribution::Normal,
        d => return err("dynamics.jitter.distribution", format!("unknown distribution '{d}'; expected uniform or normal")),
    };
    let dir = directions(j.direction.as_deref(), "dynamics.jitter.direction")?;
    let spec = JitterSpec { deviation: Time::from_secs_f64(deviation), distribution, reorder: j.reorder.unwrap_or(false) };
    Ok((spec, dir))
}

/// A jitter's or reorder knob's `direction` (data when null), the field
/// named `field`.
fn directions(d: Option<&str>, field: &str) -> Result<Directions, ConfigError> {
    match d.unwrap_or("data") {
        "data" => Ok(Directions { data: true, ack: false }),
        "ack" => Ok(Directions { data: false, ack: true }),
        "both" => Ok(Directions { data: true, ack: true }),
        d => err(field, format!("unknown direction '{d}'; expected data, ack or both")),
    }
}

/// netem's reorder knob: a probability above 0, at most 1; gap at least 1
/// (tc's default when only a probability is given).
fn reorder(r: &plan::Reorder) -> Result<(ReorderSpec, Directions), ConfigError> {
    let probability = positive(r.probability, "dynamics.reorder.probability")?;
    if probability > 1.0 {
        return err("dynamics.reorder.probability", format!("a probability, at most 1, got {probability}"));
    }
    let gap = whole(r.gap).unwrap_or(1);
    if gap == 0 || gap > u64::from(u32::MAX) {
        return err("dynamics.reorder.gap", format!("from 1 to {}, got {gap}", u32::MAX));
    }
    let dir = directions(r.direction.as_deref(), "dynamics.reorder.direction")?;
    Ok((ReorderSpec { probability, gap: gap as u32 }, dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str, loss: f64) -> Result<DynamicsConfig, ConfigError> {
        let p: plan::PathDynamics = serde_json::from_str(json).expect("plan JSON");
        dynamics(Some(&p), loss, 1, &|_| Ok(&["startup", "drain", "probe_bw", "probe_rtt"]))
    }

    #[test]
    fn an_empty_plan_is_the_static_path() {
        let cfg = parse(r#"{"schedule": [], "gilbert_elliott": null, "jitter": null, "policer": null, "aggregation": null}"#, 0.0).unwrap();
        assert!(cfg.is_static());
        assert!(dynamics(None, 0.0, 1, &|_| Ok(&[])).unwrap().is_static());
    }

    #[test]
    fn steps_become_per_quantity_changes() {
        let cfg = parse(r#"{"schedule": [{"at_s": 1.0, "rate_bps": 1e8}, {"at_s": 2.0, "rtt_s": 0.04, "loss": 0.01}]}"#, 0.0).unwrap();
        assert_eq!(cfg.rate_changes, [(Time::from_secs(1), Rate(100_000_000))]);
        assert_eq!(cfg.rtt_changes, [(Time::from_secs(2), Time::from_millis(40))]);
        assert_eq!(cfg.loss_changes, [(Time::from_secs(2), 0.01)]);
    }

    #[test]
    fn drops_and_triggered_items_are_read_and_checked() {
        let cfg = parse(
            r#"{"drops": [{"at_s": 1.5, "count": 3, "flow": null, "on": null}, {"at_s": null, "count": null, "flow": 0,
                "on": {"event": "enter:PROBE_RTT", "nth": 2, "flow": 0, "after_s": 0.01}}],
                "schedule": [{"at_s": 1.0, "rate_bps": 1e8}, {"on": {"event": "exit:DRAIN"}, "rate_bps": 5e7}]}"#,
            0.0,
        )
        .unwrap();
        assert_eq!(cfg.drops, [DropSpec { at: Time::from_millis(1500), count: 3, group: None }]);
        assert_eq!(cfg.rate_changes, [(Time::from_secs(1), Rate(100_000_000))]);
        assert_eq!(cfg.triggered.len(), 2);
        // Schedule steps first, then drops.
        assert_eq!(cfg.triggered[0].1, Triggered::Step { rate: Some(Rate(50_000_000)), rtt: None, loss: None });
        assert_eq!((cfg.triggered[0].0.edge, cfg.triggered[0].0.state), (crate::path::trigger::Edge::Exit, "drain"));
        assert_eq!((cfg.triggered[1].0.state, cfg.triggered[1].0.nth, cfg.triggered[1].0.after), ("probe_rtt", 2, Time::from_millis(10)));
        assert_eq!(cfg.triggered[1].1, Triggered::Drop { count: 1, group: Some(0) });
        for (json, field, says) in [
            (r#"{"drops": [{"count": 1}]}"#, "dynamics.drops[0].at_s", "missing"),
            (r#"{"drops": [{"at_s": 1.0, "count": 0}]}"#, "dynamics.drops[0].count", ">= 1"),
            (r#"{"drops": [{"at_s": 1.0, "flow": 1}]}"#, "dynamics.drops[0].flow", "no flow 1"),
            (r#"{"schedule": [{"at_s": 1.0, "on": {"event": "enter:DRAIN"}, "loss": 0.1}]}"#, "dynamics.schedule[0].at_s", "not both"),
            (r#"{"schedule": [{"on": {"event": "enter:PROBE_UP"}, "loss": 0.1}]}"#, "dynamics.schedule[0].on.event", "PROBE_BW"),
            (r#"{"schedule": [{"on": {"event": "enter:DRAIN", "flow": 2}, "loss": 0.1}]}"#, "dynamics.schedule[0].on.flow", "no flow 2"),
            (r#"{"schedule": [{"on": {"event": "enter:DRAIN", "nth": 0}, "loss": 0.1}]}"#, "dynamics.schedule[0].on.event", "from 1"),
        ] {
            let e = parse(json, 0.0).unwrap_err();
            assert!(e.field == field && e.message.contains(says), "{json}: {e}");
        }
        let p: plan::PathDynamics = serde_json::from_str(r#"{"drops": [{"on": {"event": "enter:DRAIN"}}]}"#).unwrap();
        let e = dynamics(Some(&p), 0.0, 1, &|_| Err("flow 0's congestion control 'cubic' exposes no state".into())).unwrap_err();
        assert!(e.field == "dynamics.drops[0].on.flow" && e.message.contains("cubic"), "{e}");
    }

    #[test]
    fn a_trace_becomes_the_delivery_trace_and_refuses_rate_steps() {
        let cfg = parse(r#"{"trace": {"ms_gaps": [0, 5, 5], "counts": [1, 2, 1]}}"#, 0.0).unwrap();
        assert_eq!(cfg.trace, Some(DeliveryTrace::from_timestamps(&[0, 5, 5, 10]).unwrap()));
        assert!(!cfg.is_static());
        let e = parse(r#"{"trace": {"ms_gaps": [0], "counts": [1]}}"#, 0.0).unwrap_err();
        assert!(e.field == "dynamics.trace" && e.message.contains("nonzero"), "{e}");
        let e = parse(r#"{"schedule": [{"at_s": 1.0, "rate_bps": 1e8}], "trace": {"ms_gaps": [1], "counts": [1]}}"#, 0.0).unwrap_err();
        assert!(e.field == "dynamics.trace" && e.message.contains("replaces"), "{e}");
    }

    #[test]
    fn a_cross_flow_is_checked_naming_its_fields() {
        let at = |k: &str| format!("flows[1].{k}");
        let c = |json: &str| -> plan::CrossFlow { serde_json::from_str(json).expect("plan JSON") };
        let ok = cross_flow(Some(&c(r#"{"rate_bps": 1e6, "pattern": "on_off", "on_s": 0.01, "off_s": 0.02}"#)), 1, 2, 0.5, 1500, &at).unwrap();
        assert_eq!((ok.packet_bytes, ok.frame_bytes, ok.streams, ok.start), (1500, 1514, 2, Time::from_millis(500)));
        assert_eq!(ok.pattern, CrossPattern::OnOff { on_mean: Time::from_millis(10), off_mean: Time::from_millis(20), shape: 1.5 });
        for (json, field) in [
            (r#"{"pattern": "constant"}"#, "flows[1].cross.rate_bps"),
            (r#"{"rate_bps": 1e6, "pattern": "on_off", "on_s": 0.01}"#, "flows[1].cross.off_s"),
            (r#"{"rate_bps": 1e6, "pattern": "on_off", "on_s": 0.01, "off_s": 0.01, "shape": 1.0}"#, "flows[1].cross.shape"),
            (r#"{"rate_bps": 1e6, "on_s": 0.01}"#, "flows[1].cross.pattern"),
            (r#"{"rate_bps": 1e6, "pattern": "poisson"}"#, "flows[1].cross.pattern"),
            (r#"{"rate_bps": 1e6, "packet_bytes": 9000}"#, "flows[1].cross.packet_bytes"),
            (r#"{"rate_bps": 1e6, "stop_s": 0.5}"#, "flows[1].cross.stop_s"),
        ] {
            assert_eq!(cross_flow(Some(&c(json)), 1, 1, 0.5, 1500, &at).unwrap_err().field, field, "{json}");
        }
        assert_eq!(cross_flow(None, 1, 1, 0.0, 1500, &at).unwrap_err().field, "flows[1].cross");
    }

    #[test]
    fn errors_name_the_field_and_what_is_allowed() {
        let e = parse(r#"{"schedule": [{"at_s": 2.0, "rate_bps": 1e8}, {"at_s": 1.0, "rate_bps": 1e9}]}"#, 0.0).unwrap_err();
        assert_eq!(e.field, "dynamics.schedule[1].at_s");
        assert!(e.message.contains("time order"), "{e}");
        let e = parse(r#"{"schedule": [{"at_s": 1.0}]}"#, 0.0).unwrap_err();
        assert_eq!(e.field, "dynamics.schedule[0]");
        let e = parse(r#"{"gilbert_elliott": {"r": 0.5, "bad_loss": 0.5, "good_loss": 0.0}}"#, 0.6).unwrap_err();
        assert_eq!(e.field, "loss");
        assert!(e.message.contains("at most (bad_loss"), "{e}");
        let e = parse(r#"{"jitter": {"deviation_s": 0.001, "distribution": "pareto"}}"#, 0.0).unwrap_err();
        assert!(e.field == "dynamics.jitter.distribution" && e.message.contains("uniform or normal"), "{e}");
        let e = parse(r#"{"aggregation": {"direction": "up", "interval_s": 0.001}}"#, 0.0).unwrap_err();
        assert_eq!(e.field, "dynamics.aggregation.direction");
        let e = parse(r#"{"policer": {"rate_bps": 1e6, "burst_bytes": 0}}"#, 0.0).unwrap_err();
        assert_eq!(e.field, "dynamics.policer.burst_bytes");
    }

    #[test]
    fn the_reorder_knob_is_read_and_checked() {
        let cfg = parse(r#"{"reorder": {"probability": 0.25, "gap": 5, "direction": "both"}}"#, 0.0).unwrap();
        assert_eq!(cfg.reorder, Some((ReorderSpec { probability: 0.25, gap: 5 }, Directions { data: true, ack: true })));
        let cfg = parse(r#"{"reorder": {"probability": 0.01, "gap": null, "direction": null}}"#, 0.0).unwrap();
        assert_eq!(cfg.reorder, Some((ReorderSpec { probability: 0.01, gap: 1 }, Directions { data: true, ack: false })));
        let e = parse(r#"{"reorder": {"probability": 1.5}}"#, 0.0).unwrap_err();
        assert!(e.field == "dynamics.reorder.probability" && e.message.contains("at most 1"), "{e}");
        let e = parse(r#"{"reorder": {"probability": 0.5, "gap": 0}}"#, 0.0).unwrap_err();
        assert_eq!(e.field, "dynamics.reorder.gap");
    }
}
