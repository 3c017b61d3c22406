//! Scenario input: the JSON of `dataclasses.asdict(RunPlan)`
//! (python/fatpipe/backends/base.py), deserialised into crate::plan's
//! structs, validated into a [`Scenario`] and so a [`SimConfig`], and the
//! run entry point. crate::plan refuses an unknown or mistyped field
//! (naming its path, e.g. `flows[0].cc_name: unknown field ...`) and
//! declares the Python fields the simulator ignores on purpose (`backend`,
//! `rep`, `swept`, `testbed`); this module checks that required fields are
//! present and that values are in range, with an error naming the field.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::app::{RpcMode, RpcSpec};
use crate::app_rate::{app_schedule, AppSchedule};
use crate::plan::{self, AqmPlan, PlanError, RunPlan, Whole};
use crate::engine::{Sim, SimConfig, StreamSpec};
use crate::fq_codel::FqCodelParams;
use crate::host::cpu::CpuSeat;
use crate::host_plan::{coalescing, host_cpu, nic_rate, qdisc_paces, Coalescing, HostCpu, Placement};
use crate::path::dynamics::{Dynamics, DynamicsConfig, Triggered};
use crate::path::{Aqm, CeThreshold};
use crate::tcp::ecn::{negotiate, TCP_ECN_PASSIVE};
use crate::wire::TCP_IP_HEADER_BYTES;
use crate::trace::RunResult;
use crate::transfer::{DataSet, StreamTransfer, TransferSpec};
use crate::capture::{CaptureSpec, StreamMeta};
use crate::units::{Bytes, Rate, Time};

/// A configuration error: which field, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

pub(crate) fn err<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError { field: field.into(), message: message.into() })
}

pub(crate) fn join(path: &str, key: &str) -> String {
    match (path.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (false, true) => path.to_string(),
        (false, false) => format!("{path}.{key}"),
    }
}

impl From<PlanError> for ConfigError {
    fn from(e: PlanError) -> ConfigError {
        ConfigError { field: e.path, message: e.message }
    }
}

/// A field's value, or "missing" (absent and null alike).
pub(crate) fn required<T>(v: Option<T>, field: impl Into<String>) -> Result<T, ConfigError> {
    v.ok_or_else(|| ConfigError { field: field.into(), message: "missing".into() })
}

pub(crate) fn positive(v: Option<f64>, field: &str) -> Result<f64, ConfigError> {
    let x = required(v, field)?;
    if x <= 0.0 {
        return err(field, format!("must be > 0, got {x}"));
    }
    Ok(x)
}

pub(crate) fn non_negative(v: f64, field: &str) -> Result<f64, ConfigError> {
    if v < 0.0 {
        return err(field, format!("must be >= 0, got {v}"));
    }
    Ok(v)
}

pub(crate) fn probability(v: f64, field: &str) -> Result<f64, ConfigError> {
    if !(0.0..=1.0).contains(&v) {
        return err(field, format!("must be a probability in [0, 1], got {v}"));
    }
    Ok(v)
}

pub(crate) fn whole(v: Option<Whole>) -> Option<u64> {
    v.map(|w| w.0)
}

/// End-host limits (HostLimits).
#[derive(Clone, Debug)]
pub struct HostLimits {
    pub rmem_max_bytes: u64,
    pub wmem_max_bytes: u64,
    pub stream_rate_cap_bps: Option<f64>,
    pub extra_rtt_s: f64,
    /// net.ipv4.tcp_ecn: 0, 1 or 2 (the default).
    pub ecn: u8,
    /// The host receives through GRO (tcp/receiver/gro.rs); off unless
    /// asked for, as on the kernel backend's veth receiver.
    pub gro: bool,
    /// Mean per-packet processing delay of the host (host.rs), seconds;
    /// `None` (or 0): an ideal host.
    pub processing_jitter_s: Option<f64>,
    /// The host's streams start within this of their group's start,
    /// seconds ([`START_JITTER`] unless set).
    pub start_spread_s: f64,
    /// The host's CPU model (host/cpu.rs); `None`: infinitely fast.
    pub cpu: Option<HostCpu>,
    /// The host's total sending ceiling (host/nic.rs), bits per second.
    pub nic_rate_bps: Option<f64>,
    /// The host's receive interrupt moderation (host/coalesce.rs).
    pub coalescing: Option<Coalescing>,
    /// The host's root qdisc paces every flow (fq).
    pub qdisc_paces: bool,
}

/// Longest start spread a host may have (spec.MAX_START_SPREAD_S).
pub const MAX_START_SPREAD_S: f64 = 10.0;

/// Largest mean processing jitter a host may have: 10 ms, beyond any
/// host that still keeps up with its packets.
pub const MAX_PROCESSING_JITTER_S: f64 = 0.01;

/// A `processing_jitter_s` field: 0 to [`MAX_PROCESSING_JITTER_S`]; 0 is
/// the ideal host, as if left out.
fn processing_jitter(v: Option<f64>, field: &str) -> Result<Option<f64>, ConfigError> {
    match v {
        None => Ok(None),
        Some(x) if (0.0..=MAX_PROCESSING_JITTER_S).contains(&x) => Ok((x > 0.0).then_some(x)),
        Some(x) => err(field, format!("must be 0 to {MAX_PROCESSING_JITTER_S} s (10 ms), got {x}")),
    }
}

/// An `ecn` field: net.ipv4.tcp_ecn's 0 (off), 1 (request and accept) or
/// 2 (accept only).
fn tcp_ecn(v: Option<Whole>, field: &str) -> Result<Option<u8>, ConfigError> {
    match whole(v) {
        None => Ok(None),
        Some(v @ 0..=2) => Ok(Some(v as u8)),
        Some(v) => err(field, format!("must be 0 (off), 1 (request and accept) or 2 (accept only), got {v}")),
    }
}

/// Largest cwnd clamp: TCP_BPF_SNDCWND_CLAMP takes a positive C int.
pub const MAX_CWND_CLAMP: u64 = i32::MAX as u64;

/// A `cwnd_clamp` field: segments, 1 to [`MAX_CWND_CLAMP`]
/// (bpf_sol_tcp_setsockopt rejects `val <= 0`).
fn cwnd_clamp(v: Option<Whole>, field: &str) -> Result<Option<u32>, ConfigError> {
    match whole(v) {
        None => Ok(None),
        Some(v @ 1..=MAX_CWND_CLAMP) => Ok(Some(v as u32)),
        Some(v) => err(field, format!("must be 1 to {MAX_CWND_CLAMP} segments, got {v}")),
    }
}

/// The bottleneck discipline (RunPlan.aqm): {"kind": "droptail"},
/// {"kind": "ce_threshold"} with exactly one of k_packets, k_bytes, k_s, or
/// {"kind": "fq_codel"} with target_s, interval_s, limit_packets,
/// quantum_bytes, ecn and an optional ce_threshold_s.
fn aqm(table: Option<&Map<String, Value>>) -> Result<Aqm, ConfigError> {
    let Some(table) = table else { return Ok(Aqm::DropTail) };
    let at = |key: &str| join("aqm", key);
    let plan = AqmPlan::from_table(table).map_err(|e| ConfigError { field: at(&e.path), message: e.message })?;
    match plan {
        AqmPlan::DropTail(plan::DropTailPlan {}) => Ok(Aqm::DropTail),
        AqmPlan::CeThreshold(k) => {
            let k = match (whole(k.k_packets), whole(k.k_bytes), k.k_s) {
                (Some(packets), None, None) => CeThreshold::Packets(packets.min(u32::MAX as u64) as u32),
                (None, Some(bytes), None) => CeThreshold::Bytes(bytes),
                (None, None, Some(t)) => CeThreshold::Delay(Time::from_secs_f64(non_negative(t, &at("k_s"))?)),
                _ => return err(at("k_packets"), "a ce_threshold needs exactly one of k_packets, k_bytes, k_s"),
            };
            Ok(Aqm::CeThreshold(k))
        }
        AqmPlan::FqCodel(p) => fq_codel(&p, &at).map(Aqm::FqCodel),
    }
}

fn fq_codel(p: &plan::FqCodelPlan, at: &dyn Fn(&str) -> String) -> Result<FqCodelParams, ConfigError> {
    let positive_time = |v: Option<f64>, key: &str| positive(v, &at(key)).map(Time::from_secs_f64);
    let target = positive_time(p.target_s, "target_s")?;
    let interval = positive_time(p.interval_s, "interval_s")?;
    let ce_threshold = match p.ce_threshold_s {
        None => None,
        t => Some(positive_time(t, "ce_threshold_s")?),
    };
    let limit = required(whole(p.limit_packets), at("limit_packets"))?;
    if limit == 0 || limit > u32::MAX as u64 {
        return err(at("limit_packets"), format!("must be 1 to {}, got {limit}", u32::MAX));
    }
    let quantum = required(whole(p.quantum_bytes), at("quantum_bytes"))?;
    if quantum == 0 || quantum > i32::MAX as u64 {
        return err(at("quantum_bytes"), format!("must be 1 to {}, got {quantum}", i32::MAX));
    }
    let ecn = required(p.ecn, at("ecn"))?;
    Ok(FqCodelParams { target, interval, limit: limit as u32, ce_threshold, quantum: quantum as u32, ecn })
}

fn host_limits(h: &plan::HostLimits, path: &str) -> Result<HostLimits, ConfigError> {
    let at = |key: &str| join(path, key);
    let rmem = required(whole(h.rmem_max_bytes), at("rmem_max_bytes"))?;
    let wmem = required(whole(h.wmem_max_bytes), at("wmem_max_bytes"))?;
    if rmem == 0 {
        return err(at("rmem_max_bytes"), "must be > 0");
    }
    if wmem == 0 {
        return err(at("wmem_max_bytes"), "must be > 0");
    }
    let cap = h.stream_rate_cap_bps;
    if let Some(c) = cap {
        if c <= 0.0 {
            return err(at("stream_rate_cap_bps"), format!("must be > 0, got {c}"));
        }
    }
    let extra = non_negative(h.extra_rtt_s.unwrap_or(0.0), &at("extra_rtt_s"))?;
    let ecn = tcp_ecn(h.ecn, &at("ecn"))?.unwrap_or(TCP_ECN_PASSIVE);
    let gro = h.gro.unwrap_or(false);
    let processing_jitter_s = processing_jitter(h.processing_jitter_s, &at("processing_jitter_s"))?;
    let start_spread_s = match h.start_spread_s {
        None => START_JITTER.as_secs_f64(),
        Some(x) if (0.0..=MAX_START_SPREAD_S).contains(&x) => x,
        Some(x) => return err(at("start_spread_s"), format!("must be 0 to {MAX_START_SPREAD_S} s, got {x}")),
    };
    let cpu = match &h.cpu {
        Some(c) => Some(host_cpu(c, path)?),
        None => None,
    };
    let nic_rate_bps = nic_rate(h.nic_rate_bps, path)?;
    let coalescing = coalescing(h.interrupt_coalescing_s, h.interrupt_coalescing_frames, path)?;
    let qdisc_paces = qdisc_paces(h.qdisc.as_deref(), path)?;
    Ok(HostLimits {
        qdisc_paces,
        coalescing,
        cpu,
        nic_rate_bps,
        rmem_max_bytes: rmem,
        wmem_max_bytes: wmem,
        stream_rate_cap_bps: cap,
        extra_rtt_s: extra,
        ecn,
        gro,
        processing_jitter_s,
        start_spread_s,
    })
}

/// The RPC fields of an "rpc" flow: response_bytes, and either
/// concurrency (closed loop) or rate_per_s (open loop).
fn rpc_spec(f: &plan::FlowPlan, at: &dyn Fn(&str) -> String) -> Result<RpcSpec, ConfigError> {
    let response_bytes = required(whole(f.response_bytes), at("response_bytes"))?;
    if response_bytes == 0 {
        return err(at("response_bytes"), "must be >= 1");
    }
    let request_bytes = whole(f.request_bytes).unwrap_or(100);
    let mode = match (whole(f.concurrency), f.rate_per_s) {
        (Some(c), None) => {
            if c == 0 || c > 1_000_000 {
                return err(at("concurrency"), format!("must be between 1 and 1000000, got {c}"));
            }
            RpcMode::Closed { concurrency: c as u32 }
        }
        (None, Some(r)) => {
            if r <= 0.0 {
                return err(at("rate_per_s"), format!("must be > 0, got {r}"));
            }
            RpcMode::Open { rate_per_s: r }
        }
        (Some(_), Some(_)) => return err(at("concurrency"), "give either concurrency or rate_per_s, not both"),
        (None, None) => return err(at("concurrency"), "an rpc flow needs concurrency (closed loop) or rate_per_s (open loop)"),
    };
    Ok(RpcSpec { request_bytes, response_bytes, mode })
}

/// One flow group (FlowPlan).
#[derive(Clone, Debug)]
pub struct FlowPlan {
    pub group: u64,
    pub kind: String,
    pub cc: String,
    pub streams: u64,
    pub mss_bytes: u64,
    pub sender: String,
    pub start_s: f64,
    /// The RPC application of an "rpc" flow.
    pub rpc: Option<RpcSpec>,
    /// net.ipv4.tcp_ecn for this flow's sender, overriding its host's.
    pub ecn: Option<u8>,
    /// Per-connection cwnd clamp in segments (TCP_BPF_SNDCWND_CLAMP).
    pub cwnd_clamp: Option<u32>,
    /// Each stream's pacing cap, bit/s (SO_MAX_PACING_RATE); the stream's
    /// max pacing rate is the lower of it and its host's stream_rate_cap.
    pub pacing_rate_bps: Option<f64>,
    /// A bulk flow's application-limited writer (app_rate.rs).
    pub app: Option<AppSchedule>,
    /// A transfer flow's data sets (transfer.rs), each on its own streams.
    pub transfer: Option<TransferSpec>,
}

impl FlowPlan {
    /// Cross traffic (path/cross.rs): no TCP streams, its sources live in
    /// the path's dynamics.
    pub fn is_cross(&self) -> bool {
        self.kind == "cross"
    }

    /// Its TCP streams: none for cross traffic.
    fn tcp_streams(&self) -> u64 {
        if self.is_cross() {
            0
        } else {
            self.streams * self.data_sets()
        }
    }

    /// How many sets of `streams` connections it opens: one per data set
    /// of a transfer, one for the other kinds.
    fn data_sets(&self) -> u64 {
        self.transfer.as_ref().map_or(1, |t| t.starts.len() as u64)
    }
}

/// The group entry of a "cross" flow (its traffic is checked by
/// path_plan::cross_flow): streams and start are read; the TCP fields must
/// be left out. Cross packets are offered to the FIFO bottleneck, so a
/// discipline that holds its own queues (fq_codel) is refused.
fn cross_group(f: &plan::FlowPlan, i: usize, aqm: &Aqm, at: &dyn Fn(&str) -> String) -> Result<FlowPlan, ConfigError> {
    if matches!(aqm, Aqm::FqCodel(_)) {
        return err(at("kind"), "cross traffic is offered to the FIFO bottleneck; it is not modelled through fq_codel (use droptail or ce_threshold)");
    }
    let tcp_only = [
        ("cc", f.cc.as_ref().is_some_and(|c| !c.is_empty())),
        ("request_bytes", f.request_bytes.is_some()),
        ("response_bytes", f.response_bytes.is_some()),
        ("concurrency", f.concurrency.is_some()),
        ("rate_per_s", f.rate_per_s.is_some()),
        ("ecn", f.ecn.is_some()),
        ("cwnd_clamp", f.cwnd_clamp.is_some()),
        ("pacing_rate_bps", f.pacing_rate_bps.is_some()),
        ("app", f.app.is_some()),
        ("transfer", f.transfer.is_some()),
    ];
    if let Some((key, _)) = tcp_only.iter().find(|(_, given)| *given) {
        return err(at(key), "applies to TCP flows only, not to a flow of kind cross");
    }
    let streams = required(whole(f.streams), at("streams"))?;
    if streams == 0 || streams > MAX_CROSS_STREAMS {
        return err(at("streams"), format!("must be from 1 to {MAX_CROSS_STREAMS}, got {streams}"));
    }
    Ok(FlowPlan {
        group: whole(f.group).unwrap_or(i as u64),
        kind: "cross".into(),
        cc: String::new(),
        streams,
        mss_bytes: 0,
        sender: String::new(),
        start_s: non_negative(f.start_s.unwrap_or(0.0), &at("start_s"))?,
        rpc: None,
        ecn: None,
        cwnd_clamp: None,
        pacing_rate_bps: None,
        app: None,
        transfer: None,
    })
}

/// Flow `i` of the plan, of kind "cross", on a path of `mtu_bytes` with
/// discipline `aqm`: its group entry and the cross sources it offers to
/// the bottleneck, checked (errors name `at(key)`). The one reader of a
/// cross flow, for the simulator and the kernel backend's delay line
/// (crates/linkem), so both build the same sources.
pub fn cross_flow(
    f: &plan::FlowPlan,
    i: usize,
    aqm: &Aqm,
    mtu_bytes: u64,
    at: &dyn Fn(&str) -> String,
) -> Result<(FlowPlan, crate::path::cross::CrossSpec), ConfigError> {
    let flow = cross_group(f, i, aqm, at)?;
    let spec = crate::path_plan::cross_flow(f.cross.as_ref(), i as u32, flow.streams, flow.start_s, mtu_bytes, at)?;
    Ok((flow, spec))
}

/// Most sources in one cross group (each is scanned per cross packet).
pub const MAX_CROSS_STREAMS: u64 = 1000;

/// A validated run plan (RunPlan).
#[derive(Clone, Debug)]
pub struct Scenario {
    pub run_id: String,
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub sample_interval_s: f64,
    pub rate_bps: f64,
    pub rtt_s: f64,
    pub loss: f64,
    pub corruption: f64,
    pub buffer_bytes: u64,
    pub aqm: Aqm,
    pub mtu_bytes: u64,
    pub senders: BTreeMap<String, HostLimits>,
    pub receiver: HostLimits,
    pub flows: Vec<FlowPlan>,
    /// How the path moves (path_plan.rs); the default: it does not.
    pub dynamics: DynamicsConfig,
    /// The BPF congestion controls the flows may name (`bpf:…`), loaded.
    pub bpf: crate::bpf::Catalog,
    /// Packet captures to write (capture.rs).
    pub capture: Option<CaptureSpec>,
}

/// Largest number of streams accepted in one run (a guard against typos).
pub const MAX_STREAMS: u64 = 100_000;

impl Scenario {
    /// Parses and validates the JSON of a RunPlan: crate::plan's structs
    /// (names and types), then the values.
    pub fn from_json(text: &str) -> Result<Scenario, ConfigError> {
        Scenario::from_json_with(text, crate::bpf::Catalog::default())
    }

    /// As [`Scenario::from_json`], with the BPF congestion controls the
    /// flows may name.
    pub fn from_json_with(text: &str, bpf: crate::bpf::Catalog) -> Result<Scenario, ConfigError> {
        let v: Value = serde_json::from_str(text).map_err(|e| ConfigError { field: String::new(), message: format!("invalid JSON: {e}") })?;
        Scenario::from_plan_with(plan::from_value::<RunPlan>(v)?, bpf)
    }

    /// Validates a deserialised RunPlan.
    pub fn from_plan(p: RunPlan) -> Result<Scenario, ConfigError> {
        Scenario::from_plan_with(p, crate::bpf::Catalog::default())
    }

    /// Validates a deserialised RunPlan whose flows may name the BPF
    /// congestion controls of `bpf`.
    pub fn from_plan_with(p: RunPlan, bpf: crate::bpf::Catalog) -> Result<Scenario, ConfigError> {
        let run_id = p.run_id.unwrap_or_default();
        let seed = p.seed.map_or(0, |s| s.0);
        let duration_s = positive(p.duration_s, "duration_s")?;
        let warmup_s = non_negative(p.warmup_s.unwrap_or(0.0), "warmup_s")?;
        let sample_interval_s = positive(p.sample_interval_s, "sample_interval_s")?;
        let rate_bps = positive(p.rate_bps, "rate_bps")?;
        let rtt_s = non_negative(required(p.rtt_s, "rtt_s")?, "rtt_s")?;
        let loss = probability(required(p.loss, "loss")?, "loss")?;
        let corruption = probability(p.corruption.unwrap_or(0.0), "corruption")?;
        let buffer_bytes = required(whole(p.buffer_bytes), "buffer_bytes")?;
        let aqm = aqm(p.aqm.as_ref())?;
        let flow_ccs: Vec<(String, Option<String>)> =
            p.flows.iter().flatten().map(|f| (f.kind.clone().unwrap_or_else(|| "bulk".into()), f.cc.clone())).collect();
        let states = |g: usize| -> Result<&'static [&'static str], String> {
            let (kind, cc) = &flow_ccs[g];
            if kind == "cross" {
                return Err(format!("flow {g} is cross traffic, which has no sender state to watch"));
            }
            let cc = cc.as_deref().unwrap_or_default();
            let labels = crate::cc::build_named(cc, 0, &bpf).map_or(&[][..], |c| c.state_labels());
            if labels.is_empty() {
                return Err(format!("flow {g}'s congestion control '{cc}' exposes no state to watch; bbr and bbr3 do"));
            }
            Ok(labels)
        };
        let dynamics = crate::path_plan::dynamics(p.dynamics.as_ref(), loss, flow_ccs.len(), &states)?;
        let capture = CaptureSpec::from_plan(p.capture.as_ref())?;
        let read_trigger = |t: &plan::StateTrigger, field: &str| crate::path_plan::state_trigger(t, field, flow_ccs.len(), &states);
        let mtu_bytes = required(whole(p.mtu_bytes), "mtu_bytes")?;
        if mtu_bytes <= TCP_IP_HEADER_BYTES as u64 {
            return err("mtu_bytes", format!("must exceed the {TCP_IP_HEADER_BYTES}-byte TCP/IP header, got {mtu_bytes}"));
        }
        let mut senders = BTreeMap::new();
        for (name, h) in required(p.senders, "senders")? {
            let limits = host_limits(&h, &format!("senders.{name}"))?;
            senders.insert(name, limits);
        }
        let receiver = host_limits(&required(p.receiver, "receiver")?, "receiver")?;
        if receiver.nic_rate_bps.is_some() {
            return err("receiver.nic_rate_bps", "a receiving host's NIC ceiling is not modelled: set it on the senders (their total sending rate)");
        }
        let flows_in = required(p.flows, "flows")?;
        if flows_in.is_empty() {
            return err("flows", "at least one flow is needed");
        }
        let mut flows = Vec::new();
        let mut total = 0u64;
        let mut dynamics = dynamics;
        for (i, f) in flows_in.into_iter().enumerate() {
            let path = format!("flows[{i}]");
            let at = |key: &str| join(&path, key);
            let kind = f.kind.clone().unwrap_or_else(|| "bulk".to_string());
            let rpc = match kind.as_str() {
                "bulk" | "transfer" => None,
                "rpc" => Some(rpc_spec(&f, &at)?),
                "cross" => {
                    let (flow, spec) = cross_flow(&f, i, &aqm, mtu_bytes, &at)?;
                    dynamics.cross.push(spec);
                    flows.push(flow);
                    continue;
                }
                k => return err(at("kind"), format!("unknown flow kind '{k}'; expected bulk, rpc, transfer or cross")),
            };
            let transfer = match (kind.as_str(), &f.transfer) {
                ("transfer", t) => Some(TransferSpec::from_plan(t.as_ref(), &at)?),
                (_, None) => None,
                (k, Some(_)) => return err(at("transfer"), format!("only a flow of kind transfer takes a transfer table (this one is {k})")),
            };
            if f.cross.is_some() {
                return err(at("cross"), format!("only a flow of kind cross takes a cross table (this one is {kind})"));
            }
            let cc = required(f.cc, at("cc"))?;
            if cc.starts_with(crate::bpf::PREFIX) && bpf.program(&cc).is_none() {
                return err(
                    at("cc"),
                    format!("BPF congestion control '{cc}' was not loaded for this run (loaded: {})", bpf.keys().join(", ")),
                );
            }
            if crate::cc::build_named(&cc, 0, &bpf).is_none() {
                return err(
                    at("cc"),
                    format!("unknown congestion control '{cc}'; available: {}, or bpf:<object>", crate::cc::AVAILABLE.join(", ")),
                );
            }
            let streams = required(whole(f.streams), at("streams"))?;
            if streams == 0 {
                return err(at("streams"), "must be >= 1");
            }
            total = total.saturating_add(streams.saturating_mul(transfer.as_ref().map_or(1, |t| t.starts.len() as u64)));
            if total > MAX_STREAMS {
                return err(at("streams"), format!("more than {MAX_STREAMS} streams in one run"));
            }
            let mss = required(whole(f.mss_bytes), at("mss_bytes"))?;
            if mss == 0 || mss + TCP_IP_HEADER_BYTES as u64 > mtu_bytes {
                return err(
                    at("mss_bytes"),
                    format!("must be between 1 and mtu_bytes - {TCP_IP_HEADER_BYTES} = {}, got {mss}", mtu_bytes - TCP_IP_HEADER_BYTES as u64),
                );
            }
            let sender = required(f.sender, at("sender"))?;
            if !senders.contains_key(&sender) {
                let known: Vec<&str> = senders.keys().map(|s| s.as_str()).collect();
                return err(at("sender"), format!("unknown sender '{sender}'; senders: {}", known.join(", ")));
            }
            let start_s = non_negative(f.start_s.unwrap_or(0.0), &at("start_s"))?;
            let group = whole(f.group).unwrap_or(i as u64);
            let ecn = tcp_ecn(f.ecn, &at("ecn"))?;
            let cwnd_clamp = cwnd_clamp(f.cwnd_clamp, &at("cwnd_clamp"))?;
            if let Some(r) = f.pacing_rate_bps {
                if !(r.is_finite() && r > 0.0) {
                    return err(at("pacing_rate_bps"), format!("must be > 0 bit/s, got {r}"));
                }
            }
            let pacing_rate_bps = f.pacing_rate_bps;
            let app = app_schedule(f.app.as_ref(), &kind, &at, &read_trigger)?;
            if let Some(a) = &app {
                // Steps on a sender's state fire in the engine, as the
                // path's do (a moving path: path/dynamics.rs).
                let g = group as usize;
                dynamics.triggered.extend(a.triggered.iter().map(|(t, change)| (t.clone(), Triggered::App { group: g, change: *change })));
            }
            flows.push(FlowPlan { group, kind, cc, streams, mss_bytes: mss, sender, start_s, rpc, ecn, cwnd_clamp, pacing_rate_bps, app, transfer });
        }
        if flows.iter().all(|f| f.is_cross()) {
            return err("flows", "at least one TCP flow (kind bulk or rpc) is needed beside cross traffic");
        }
        let scenario = Scenario {
            run_id,
            seed,
            duration_s,
            warmup_s,
            sample_interval_s,
            rate_bps,
            rtt_s,
            loss,
            corruption,
            buffer_bytes,
            aqm,
            mtu_bytes,
            senders,
            receiver,
            flows,
            dynamics,
            bpf,
            capture,
        };
        scenario.place_streams()?;
        Ok(scenario)
    }

    /// Where each stream runs (host/cpu.rs): the run's machines (cores
    /// each), and per stream (in global order) its seat at its sender and
    /// at the receiver, for hosts with a CPU model. Errors when hosts that
    /// share a machine disagree on its cores.
    #[allow(clippy::type_complexity)]
    fn place_streams(&self) -> Result<(Placement, Vec<Option<CpuSeat>>, Vec<Option<CpuSeat>>), ConfigError> {
        let total: u64 = self.flows.iter().map(FlowPlan::tcp_streams).sum();
        let mut at_sender = vec![None; total as usize];
        let mut placement = Placement::default();
        for (name, host) in &self.senders {
            let Some(cpu) = &host.cpu else { continue };
            let mine: Vec<usize> = self.stream_senders().enumerate().filter(|(_, s)| *s == name).map(|(k, _)| k).collect();
            let seats = placement.seat(name, &format!("senders.{name}"), cpu, mine.len() as u32)?;
            for (k, seat) in mine.into_iter().zip(seats) {
                at_sender[k] = Some(seat);
            }
        }
        let at_receiver = match &self.receiver.cpu {
            Some(cpu) => placement.seat("receiver", "receiver", cpu, total as u32)?.into_iter().map(Some).collect(),
            None => vec![None; total as usize],
        };
        Ok((placement, at_sender, at_receiver))
    }

    /// Each stream's sender name, in global stream order.
    fn stream_senders(&self) -> impl Iterator<Item = &String> {
        self.flows.iter().flat_map(|f| std::iter::repeat_n(&f.sender, f.tcp_streams() as usize))
    }

    /// RunPlan.packet_loss_probability(): random loss combined with per-bit
    /// corruption of an (mss + 40)-byte packet.
    pub fn packet_loss_probability(&self, mss_bytes: u64) -> f64 {
        crate::wire::packet_loss_probability(self.loss, self.corruption, mss_bytes)
    }

    /// The engine configuration. Streams of a flow start at `start_s` plus
    /// a seeded random offset below their sender's start spread
    /// (`START_JITTER` unless the host sets one; and 3 µs per stream in
    /// global order, so no two collide exactly): real hosts never open
    /// their connections at the same instant, and without the offset
    /// loss-free repetitions would be identical and the first flow would
    /// always win a race that is really a coin toss.
    pub fn sim_config(&self) -> SimConfig {
        let (placement, mut sender_seats, mut receiver_seats) = self.place_streams().expect("placed when validated");
        // One NIC per sender host with a ceiling, in name order.
        let nic_hosts: Vec<&String> = self.senders.iter().filter(|(_, h)| h.nic_rate_bps.is_some()).map(|(n, _)| n).collect();
        let nics = nic_hosts.iter().map(|n| Rate(self.senders[*n].nic_rate_bps.expect("filtered").round() as u64)).collect();
        // One ACK interrupt per sender host with moderation, in name order.
        let coalescing_hosts: Vec<&String> = self.senders.iter().filter(|(_, h)| h.coalescing.is_some()).map(|(n, _)| n).collect();
        let mut streams = Vec::new();
        let mut transfers = Vec::new();
        let mut jitter = crate::rng::Rng::new(self.seed, START_JITTER_STREAM);
        let mut k = 0u64;
        for (gi, f) in self.flows.iter().enumerate() {
            if f.is_cross() {
                continue;
            }
            let host = &self.senders[&f.sender];
            let spread = Time::from_secs_f64(host.start_spread_s);
            let needs_ecn = crate::cc::build_named(&f.cc, 0, &self.bpf).is_some_and(|c| c.needs_ecn());
            let ecn = negotiate(f.ecn.unwrap_or(host.ecn), self.receiver.ecn, needs_ecn);
            for (set, s) in (0..f.data_sets()).flat_map(|set| (0..f.streams).map(move |s| (set, s))) {
                let (start, transfer) = match &f.transfer {
                    Some(t) => {
                        if s == 0 {
                            let ds = DataSet::new(t, gi as u32, set as u32, f.streams, f.mss_bytes as u32, t.starts[set as usize]);
                            transfers.push(ds);
                        }
                        let id = transfers.len() as u32 - 1;
                        (t.starts[set as usize], Some(StreamTransfer::new(id, s as u32, t)))
                    }
                    None => (Time::from_secs_f64(f.start_s), None),
                };
                streams.push(StreamSpec {
                    group: gi as u32,
                    index: (set * f.streams + s) as u32,
                    cc: f.cc.clone(),
                    mss: f.mss_bytes as u32,
                    start: start
                        + Time::from_micros(3 * k)
                        + Time::from_nanos((jitter.next_f64() * spread.as_nanos() as f64) as u64),
                    wmem_bytes: host.wmem_max_bytes,
                    rmem_bytes: self.receiver.rmem_max_bytes,
                    // The lower of the host's per-stream cap and the flow's pacing rate.
                    rate_cap: match (host.stream_rate_cap_bps, f.pacing_rate_bps) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    }
                    .map(|c| Rate(c.round() as u64)),
                    extra_rtt: Time::from_secs_f64(host.extra_rtt_s + self.receiver.extra_rtt_s),
                    rpc: f.rpc.clone(),
                    app: f.app.clone(),
                    transfer,
                    ecn,
                    cwnd_clamp: f.cwnd_clamp,
                    gro: self.receiver.gro,
                    receiver_jitter: self.receiver.processing_jitter_s.map(Time::from_secs_f64),
                    sender_jitter: host.processing_jitter_s.map(Time::from_secs_f64),
                    sender_cpu: sender_seats[k as usize].take(),
                    receiver_cpu: receiver_seats[k as usize].take(),
                    nic: nic_hosts.iter().position(|n| **n == f.sender).map(|i| i as u32),
                    ack_coalescer: coalescing_hosts.iter().position(|n| **n == f.sender).map(|i| i as u32),
                    qdisc_paces: host.qdisc_paces,
                });
                k += 1;
            }
        }
        let capture = self.capture.clone().map(|spec| (spec, self.capture_streams(&streams)));
        SimConfig {
            seed: self.seed,
            bpf: self.bpf.clone(),
            duration: Time::from_secs_f64(self.duration_s),
            sample_interval: Time::from_secs_f64(self.sample_interval_s),
            rate: Rate(self.rate_bps.round() as u64),
            rtt: Time::from_secs_f64(self.rtt_s),
            buffer: Bytes(self.buffer_bytes),
            aqm: self.aqm,
            mtu: self.mtu_bytes.min(u32::MAX as u64) as u32,
            group_loss: self.flows.iter().map(|f| self.packet_loss_probability(f.mss_bytes)).collect(),
            streams,
            transfers,
            machine_cores: placement.machine_cores,
            machine_hosts: placement.machine_hosts,
            warmup: Time::from_secs_f64(self.warmup_s),
            nics,
            receiver_coalescing: self.receiver.coalescing,
            sender_coalescing: coalescing_hosts.iter().map(|n| self.senders[*n].coalescing.expect("filtered")).collect(),
            capture,
            dynamics: (!self.dynamics.is_static()).then(|| {
                let group_mss: Vec<u64> = self.flows.iter().map(|f| f.mss_bytes).collect();
                Box::new(Dynamics::new(&self.dynamics, self.seed, Time::from_secs_f64(self.rtt_s), self.loss, self.corruption, &group_mss))
            }),
        }
    }

    /// How each stream's packets look in a capture (capture.rs).
    fn capture_streams(&self, streams: &[StreamSpec]) -> Vec<StreamMeta> {
        let hosts: Vec<&String> = self.senders.keys().collect();
        // tcp_select_initial_window(): the receiver's scale fits its
        // buffer's window in 16 bits, at most 14 (RFC 7323 §2.3).
        let mut wscale = 0u8;
        while (self.receiver.rmem_max_bytes >> wscale) > 0xFFFF && wscale < 14 {
            wscale += 1;
        }
        let mut k = 0u16;
        streams.iter().map(|s| {
            let f = &self.flows[s.group as usize];
            k = k.wrapping_add(1);
            StreamMeta {
                group: s.group,
                sender_host: hosts.iter().position(|h| **h == f.sender).unwrap_or(0) as u8,
                port: 32767u16.wrapping_add(k),
                mss: s.mss,
                wscale,
                timestamps: crate::wire::carries_timestamps(s.mss, self.mtu_bytes as u32),
                ecn: s.ecn,
                window_bytes: self.receiver.rmem_max_bytes / 2,
            }
        }).collect()
    }

    pub fn run(&self) -> RunResult {
        Sim::new(&self.sim_config()).run()
    }
}

/// Parses, validates and runs a RunPlan given as JSON.
pub fn run_json(text: &str) -> Result<RunResult, ConfigError> {
    Ok(Scenario::from_json(text)?.run())
}

/// Largest random offset added to each stream's start time, unless its
/// host sets a start spread.
pub const START_JITTER: Time = Time::from_millis(1);
/// RNG stream label of the start offsets.
const START_JITTER_STREAM: u64 = 0x5747_4a17;
