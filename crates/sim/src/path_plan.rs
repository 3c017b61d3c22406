//! The plan's `dynamics` (base.py PathDynamics) checked and turned into
//! the path's [`DynamicsConfig`]; errors name the field
//! (`dynamics.schedule[1].rate_bps`) and what is allowed.

use crate::path::cross::{CrossPattern, CrossSpec};
use crate::path::direction::{JitterDistribution, JitterSpec, SlotSpec};
use crate::path::dynamics::{Directions, DynamicsConfig};
use crate::path::loss::GeParams;
use crate::path::trace::DeliveryTrace;
use crate::plan;
use crate::scenario::{err, non_negative, positive, probability, required, whole, ConfigError};
use crate::units::{Rate, Time};
use crate::wire;

/// The dynamics of a path whose base random loss is `loss`; `None` (an
/// old plan) is the static path.
pub fn dynamics(p: Option<&plan::PathDynamics>, loss: f64) -> Result<DynamicsConfig, ConfigError> {
    let Some(p) = p else { return Ok(DynamicsConfig::default()) };
    let mut cfg = DynamicsConfig::default();
    let mut last = 0.0f64;
    for (i, step) in p.schedule.iter().flatten().enumerate() {
        let at = |key: &str| format!("dynamics.schedule[{i}].{key}");
        let at_s = positive(step.at_s, &at("at_s"))?;
        if at_s <= last {
            return err(at("at_s"), format!("steps must be in time order, strictly after the previous ({last} s), got {at_s}"));
        }
        last = at_s;
        let t = Time::from_secs_f64(at_s);
        if step.rate_bps.is_none() && step.rtt_s.is_none() && step.loss.is_none() {
            return err(format!("dynamics.schedule[{i}]"), "a step changes at least one of rate_bps, rtt_s, loss");
        }
        if let Some(r) = step.rate_bps {
            cfg.rate_changes.push((t, Rate(positive(Some(r), &at("rate_bps"))?.round() as u64)));
        }
        if let Some(rtt) = step.rtt_s {
            cfg.rtt_changes.push((t, Time::from_secs_f64(non_negative(rtt, &at("rtt_s"))?)));
        }
        if let Some(l) = step.loss {
            cfg.loss_changes.push((t, probability(l, &at("loss"))?));
        }
    }
    if let Some(g) = &p.gilbert_elliott {
        let params = gilbert_elliott(g)?;
        for (field, mean) in std::iter::once(("loss".to_string(), loss))
            .chain(cfg.loss_changes.iter().enumerate().map(|(i, &(_, l))| (format!("dynamics.schedule[{i}].loss"), l)))
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
        let gaps: Vec<u64> = required(t.ms_gaps.as_ref(), "dynamics.trace.ms_gaps")?.iter().map(|w| w.0).collect();
        let counts: Vec<u64> = required(t.counts.as_ref(), "dynamics.trace.counts")?.iter().map(|w| w.0).collect();
        cfg.trace = Some(DeliveryTrace::from_run_lengths(&gaps, &counts).or_else(|m| err("dynamics.trace", m))?);
    }
    Ok(cfg)
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
    let dir = match j.direction.as_deref().unwrap_or("data") {
        "data" => Directions { data: true, ack: false },
        "ack" => Directions { data: false, ack: true },
        "both" => Directions { data: true, ack: true },
        d => return err("dynamics.jitter.direction", format!("unknown direction '{d}'; expected data, ack or both")),
    };
    let spec = JitterSpec { deviation: Time::from_secs_f64(deviation), distribution, reorder: j.reorder.unwrap_or(false) };
    Ok((spec, dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str, loss: f64) -> Result<DynamicsConfig, ConfigError> {
        let p: plan::PathDynamics = serde_json::from_str(json).expect("plan JSON");
        dynamics(Some(&p), loss)
    }

    #[test]
    fn an_empty_plan_is_the_static_path() {
        let cfg = parse(r#"{"schedule": [], "gilbert_elliott": null, "jitter": null, "policer": null, "aggregation": null}"#, 0.0).unwrap();
        assert!(cfg.is_static());
        assert!(dynamics(None, 0.0).unwrap().is_static());
    }

    #[test]
    fn steps_become_per_quantity_changes() {
        let cfg = parse(r#"{"schedule": [{"at_s": 1.0, "rate_bps": 1e8}, {"at_s": 2.0, "rtt_s": 0.04, "loss": 0.01}]}"#, 0.0).unwrap();
        assert_eq!(cfg.rate_changes, [(Time::from_secs(1), Rate(100_000_000))]);
        assert_eq!(cfg.rtt_changes, [(Time::from_secs(2), Time::from_millis(40))]);
        assert_eq!(cfg.loss_changes, [(Time::from_secs(2), 0.01)]);
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
}
