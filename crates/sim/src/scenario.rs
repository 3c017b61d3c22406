//! Scenario input: the JSON of `dataclasses.asdict(RunPlan)`
//! (python/fatpipe/backends/base.py), validated into a [`SimConfig`], and
//! the run entry point. Unknown fields (e.g. `swept`) are ignored; bad
//! values are rejected with an error naming the field.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::app::{RpcMode, RpcSpec};
use crate::engine::{Sim, SimConfig, StreamSpec};
use crate::fq_codel::FqCodelParams;
use crate::path::{Aqm, CeThreshold};
use crate::tcp::ecn::{negotiate, TCP_ECN_PASSIVE};
use crate::wire::TCP_IP_HEADER_BYTES;
use crate::trace::RunResult;
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

fn err<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError { field: field.into(), message: message.into() })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, path: &str) -> Result<Obj<'a>, ConfigError> {
        match v.as_object() {
            Some(map) => Ok(Obj { map, path: path.to_string() }),
            None => err(path, "expected an object"),
        }
    }
    fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }
    fn opt(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }
    fn req(&self, key: &str) -> Result<&'a Value, ConfigError> {
        self.opt(key).ok_or_else(|| ConfigError { field: self.field(key), message: "missing".into() })
    }
    fn f64(&self, key: &str) -> Result<f64, ConfigError> {
        let v = self.req(key)?;
        match v.as_f64() {
            Some(x) if x.is_finite() => Ok(x),
            _ => err(self.field(key), format!("expected a finite number, got {v}")),
        }
    }
    fn opt_f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        match self.opt(key) {
            None => Ok(None),
            Some(_) => self.f64(key).map(Some),
        }
    }
    fn u64(&self, key: &str) -> Result<u64, ConfigError> {
        let v = self.req(key)?;
        if let Some(x) = v.as_u64() {
            return Ok(x);
        }
        match v.as_f64() {
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 => Ok(x as u64),
            _ => err(self.field(key), format!("expected a non-negative integer, got {v}")),
        }
    }
    fn opt_u64(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.opt(key) {
            None => Ok(None),
            Some(_) => self.u64(key).map(Some),
        }
    }
    fn opt_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => match v.as_bool() {
                Some(b) => Ok(Some(b)),
                None => err(self.field(key), format!("expected true or false, got {v}")),
            },
        }
    }
    fn str(&self, key: &str) -> Result<&'a str, ConfigError> {
        let v = self.req(key)?;
        v.as_str().ok_or_else(|| ConfigError { field: self.field(key), message: format!("expected a string, got {v}") })
    }
    fn positive(&self, key: &str) -> Result<f64, ConfigError> {
        let x = self.f64(key)?;
        if x <= 0.0 {
            return err(self.field(key), format!("must be > 0, got {x}"));
        }
        Ok(x)
    }
    fn probability(&self, key: &str) -> Result<f64, ConfigError> {
        let x = self.f64(key)?;
        if !(0.0..=1.0).contains(&x) {
            return err(self.field(key), format!("must be a probability in [0, 1], got {x}"));
        }
        Ok(x)
    }
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
}

/// An `ecn` field: net.ipv4.tcp_ecn's 0 (off), 1 (request and accept) or
/// 2 (accept only).
fn tcp_ecn(o: &Obj<'_>, key: &str) -> Result<Option<u8>, ConfigError> {
    match o.opt_u64(key)? {
        None => Ok(None),
        Some(v @ 0..=2) => Ok(Some(v as u8)),
        Some(v) => err(o.field(key), format!("must be 0 (off), 1 (request and accept) or 2 (accept only), got {v}")),
    }
}

/// Largest cwnd clamp: TCP_BPF_SNDCWND_CLAMP takes a positive C int.
pub const MAX_CWND_CLAMP: u64 = i32::MAX as u64;

/// A `cwnd_clamp` field: segments, 1 to [`MAX_CWND_CLAMP`]
/// (bpf_sol_tcp_setsockopt rejects `val <= 0`).
fn cwnd_clamp(o: &Obj<'_>, key: &str) -> Result<Option<u32>, ConfigError> {
    match o.opt_u64(key)? {
        None => Ok(None),
        Some(v @ 1..=MAX_CWND_CLAMP) => Ok(Some(v as u32)),
        Some(v) => err(o.field(key), format!("must be 1 to {MAX_CWND_CLAMP} segments, got {v}")),
    }
}

/// The bottleneck discipline (RunPlan.aqm): {"kind": "droptail"},
/// {"kind": "ce_threshold"} with exactly one of k_packets, k_bytes, k_s, or
/// {"kind": "fq_codel"} with target_s, interval_s, limit_packets,
/// quantum_bytes, ecn and an optional ce_threshold_s.
fn aqm(v: Option<&Value>) -> Result<Aqm, ConfigError> {
    let Some(v) = v else { return Ok(Aqm::DropTail) };
    let o = Obj::new(v, "aqm")?;
    match o.str("kind")? {
        "droptail" => Ok(Aqm::DropTail),
        "ce_threshold" => {
            let given: Vec<&str> = ["k_packets", "k_bytes", "k_s"].into_iter().filter(|k| o.opt(k).is_some()).collect();
            if given.len() != 1 {
                return err(o.field("k_packets"), "a ce_threshold needs exactly one of k_packets, k_bytes, k_s");
            }
            let k = match given[0] {
                "k_packets" => CeThreshold::Packets(o.u64("k_packets")?.min(u32::MAX as u64) as u32),
                "k_bytes" => CeThreshold::Bytes(o.u64("k_bytes")?),
                _ => {
                    let t = o.f64("k_s")?;
                    if t < 0.0 {
                        return err(o.field("k_s"), format!("must be >= 0, got {t}"));
                    }
                    CeThreshold::Delay(Time::from_secs_f64(t))
                }
            };
            Ok(Aqm::CeThreshold(k))
        }
        "fq_codel" => fq_codel(&o).map(Aqm::FqCodel),
        k => err(o.field("kind"), format!("unknown queue discipline '{k}'; expected droptail, ce_threshold or fq_codel")),
    }
}

fn fq_codel(o: &Obj<'_>) -> Result<FqCodelParams, ConfigError> {
    let positive_time = |key: &str| -> Result<Time, ConfigError> {
        let t = o.f64(key)?;
        if t <= 0.0 {
            return err(o.field(key), format!("must be > 0, got {t}"));
        }
        Ok(Time::from_secs_f64(t))
    };
    let target = positive_time("target_s")?;
    let interval = positive_time("interval_s")?;
    let ce_threshold = match o.opt("ce_threshold_s") {
        None => None,
        Some(_) => Some(positive_time("ce_threshold_s")?),
    };
    let limit = o.u64("limit_packets")?;
    if limit == 0 || limit > u32::MAX as u64 {
        return err(o.field("limit_packets"), format!("must be 1 to {}, got {limit}", u32::MAX));
    }
    let quantum = o.u64("quantum_bytes")?;
    if quantum == 0 || quantum > i32::MAX as u64 {
        return err(o.field("quantum_bytes"), format!("must be 1 to {}, got {quantum}", i32::MAX));
    }
    let ecn = match o.req("ecn")?.as_bool() {
        Some(b) => b,
        None => return err(o.field("ecn"), "expected true or false"),
    };
    Ok(FqCodelParams { target, interval, limit: limit as u32, ce_threshold, quantum: quantum as u32, ecn })
}

fn host_limits(v: &Value, path: &str) -> Result<HostLimits, ConfigError> {
    let o = Obj::new(v, path)?;
    let rmem = o.u64("rmem_max_bytes")?;
    let wmem = o.u64("wmem_max_bytes")?;
    if rmem == 0 {
        return err(o.field("rmem_max_bytes"), "must be > 0");
    }
    if wmem == 0 {
        return err(o.field("wmem_max_bytes"), "must be > 0");
    }
    let cap = o.opt_f64("stream_rate_cap_bps")?;
    if let Some(c) = cap {
        if c <= 0.0 {
            return err(o.field("stream_rate_cap_bps"), format!("must be > 0, got {c}"));
        }
    }
    let extra = o.opt_f64("extra_rtt_s")?.unwrap_or(0.0);
    if extra < 0.0 {
        return err(o.field("extra_rtt_s"), format!("must be >= 0, got {extra}"));
    }
    let ecn = tcp_ecn(&o, "ecn")?.unwrap_or(TCP_ECN_PASSIVE);
    let gro = o.opt_bool("gro")?.unwrap_or(false);
    Ok(HostLimits { rmem_max_bytes: rmem, wmem_max_bytes: wmem, stream_rate_cap_bps: cap, extra_rtt_s: extra, ecn, gro })
}

/// The RPC fields of an "rpc" flow: response_bytes, and either
/// concurrency (closed loop) or rate_per_s (open loop).
fn rpc_spec(f: &Obj<'_>) -> Result<RpcSpec, ConfigError> {
    let response_bytes = f.u64("response_bytes")?;
    if response_bytes == 0 {
        return err(f.field("response_bytes"), "must be >= 1");
    }
    let request_bytes = f.opt_u64("request_bytes")?.unwrap_or(100);
    let concurrency = f.opt_u64("concurrency")?;
    let rate = f.opt_f64("rate_per_s")?;
    let mode = match (concurrency, rate) {
        (Some(c), None) => {
            if c == 0 || c > 1_000_000 {
                return err(f.field("concurrency"), format!("must be between 1 and 1000000, got {c}"));
            }
            RpcMode::Closed { concurrency: c as u32 }
        }
        (None, Some(r)) => {
            if r <= 0.0 {
                return err(f.field("rate_per_s"), format!("must be > 0, got {r}"));
            }
            RpcMode::Open { rate_per_s: r }
        }
        (Some(_), Some(_)) => return err(f.field("concurrency"), "give either concurrency or rate_per_s, not both"),
        (None, None) => return err(f.field("concurrency"), "an rpc flow needs concurrency (closed loop) or rate_per_s (open loop)"),
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
}

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
}

/// Largest number of streams accepted in one run (a guard against typos).
pub const MAX_STREAMS: u64 = 100_000;

impl Scenario {
    /// Parses and validates the JSON of a RunPlan.
    pub fn from_json(text: &str) -> Result<Scenario, ConfigError> {
        let v: Value = serde_json::from_str(text).map_err(|e| ConfigError { field: String::new(), message: format!("invalid JSON: {e}") })?;
        let o = Obj::new(&v, "")?;
        let run_id = o.opt("run_id").and_then(|v| v.as_str()).unwrap_or("").to_string();
        let seed = match o.opt("seed") {
            None => 0,
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or(0),
            Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64().unwrap_or(0) as u64,
            Some(x) => return err("seed", format!("expected an integer, got {x}")),
        };
        let duration_s = o.positive("duration_s")?;
        let warmup_s = o.opt_f64("warmup_s")?.unwrap_or(0.0);
        if warmup_s < 0.0 {
            return err("warmup_s", format!("must be >= 0, got {warmup_s}"));
        }
        let sample_interval_s = o.positive("sample_interval_s")?;
        let rate_bps = o.positive("rate_bps")?;
        let rtt_s = o.f64("rtt_s")?;
        if rtt_s < 0.0 {
            return err("rtt_s", format!("must be >= 0, got {rtt_s}"));
        }
        let loss = o.probability("loss")?;
        let corruption = o.opt_f64("corruption")?.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&corruption) {
            return err("corruption", format!("must be a probability in [0, 1], got {corruption}"));
        }
        let buffer_bytes = o.u64("buffer_bytes")?;
        let aqm = aqm(o.opt("aqm"))?;
        let mtu_bytes = o.u64("mtu_bytes")?;
        if mtu_bytes <= TCP_IP_HEADER_BYTES as u64 {
            return err("mtu_bytes", format!("must exceed the {TCP_IP_HEADER_BYTES}-byte TCP/IP header, got {mtu_bytes}"));
        }
        let mut senders = BTreeMap::new();
        match o.req("senders")? {
            Value::Object(m) => {
                for (name, hv) in m {
                    senders.insert(name.clone(), host_limits(hv, &format!("senders.{name}"))?);
                }
            }
            x => return err("senders", format!("expected an object of host limits, got {x}")),
        }
        let receiver = host_limits(o.req("receiver")?, "receiver")?;
        let flows_v = match o.req("flows")? {
            Value::Array(a) => a,
            x => return err("flows", format!("expected a list, got {x}")),
        };
        if flows_v.is_empty() {
            return err("flows", "at least one flow is needed");
        }
        let mut flows = Vec::new();
        let mut total = 0u64;
        for (i, fv) in flows_v.iter().enumerate() {
            let path = format!("flows[{i}]");
            let f = Obj::new(fv, &path)?;
            let kind = f.opt("kind").and_then(|v| v.as_str()).unwrap_or("bulk").to_string();
            let rpc = match kind.as_str() {
                "bulk" => None,
                "rpc" => Some(rpc_spec(&f)?),
                k => return err(f.field("kind"), format!("unknown flow kind '{k}'; expected bulk or rpc")),
            };
            let cc = f.str("cc")?.to_string();
            if crate::cc::by_name(&cc).is_none() {
                return err(
                    f.field("cc"),
                    format!("unknown congestion control '{cc}'; available: {}", crate::cc::AVAILABLE.join(", ")),
                );
            }
            let streams = f.u64("streams")?;
            if streams == 0 {
                return err(f.field("streams"), "must be >= 1");
            }
            total = total.saturating_add(streams);
            if total > MAX_STREAMS {
                return err(f.field("streams"), format!("more than {MAX_STREAMS} streams in one run"));
            }
            let mss = f.u64("mss_bytes")?;
            if mss == 0 || mss + TCP_IP_HEADER_BYTES as u64 > mtu_bytes {
                return err(
                    f.field("mss_bytes"),
                    format!("must be between 1 and mtu_bytes - {TCP_IP_HEADER_BYTES} = {}, got {mss}", mtu_bytes - TCP_IP_HEADER_BYTES as u64),
                );
            }
            let sender = f.str("sender")?.to_string();
            if !senders.contains_key(&sender) {
                let known: Vec<&str> = senders.keys().map(|s| s.as_str()).collect();
                return err(f.field("sender"), format!("unknown sender '{sender}'; senders: {}", known.join(", ")));
            }
            let start_s = f.opt_f64("start_s")?.unwrap_or(0.0);
            if start_s < 0.0 {
                return err(f.field("start_s"), format!("must be >= 0, got {start_s}"));
            }
            let group = f.opt_u64("group")?.unwrap_or(i as u64);
            let ecn = tcp_ecn(&f, "ecn")?;
            let cwnd_clamp = cwnd_clamp(&f, "cwnd_clamp")?;
            flows.push(FlowPlan { group, kind, cc, streams, mss_bytes: mss, sender, start_s, rpc, ecn, cwnd_clamp });
        }
        Ok(Scenario {
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
        })
    }

    /// RunPlan.packet_loss_probability(): random loss combined with per-bit
    /// corruption of an (mss + 40)-byte packet.
    pub fn packet_loss_probability(&self, mss_bytes: u64) -> f64 {
        crate::wire::packet_loss_probability(self.loss, self.corruption, mss_bytes)
    }

    /// The engine configuration. Streams of a flow start at `start_s` plus
    /// a seeded random offset below `START_JITTER` (and 3 µs per stream in
    /// global order, so no two collide exactly): real hosts never open
    /// their connections at the same instant, and without the offset
    /// loss-free repetitions would be identical and the first flow would
    /// always win a race that is really a coin toss.
    pub fn sim_config(&self) -> SimConfig {
        let mut streams = Vec::new();
        let mut jitter = crate::rng::Rng::new(self.seed, START_JITTER_STREAM);
        let mut k = 0u64;
        for (gi, f) in self.flows.iter().enumerate() {
            let host = &self.senders[&f.sender];
            let needs_ecn = crate::cc::by_name(&f.cc).is_some_and(|c| c.needs_ecn());
            let ecn = negotiate(f.ecn.unwrap_or(host.ecn), self.receiver.ecn, needs_ecn);
            for s in 0..f.streams {
                streams.push(StreamSpec {
                    group: gi as u32,
                    index: s as u32,
                    cc: f.cc.clone(),
                    mss: f.mss_bytes as u32,
                    start: Time::from_secs_f64(f.start_s)
                        + Time::from_micros(3 * k)
                        + Time::from_nanos((jitter.next_f64() * START_JITTER.as_nanos() as f64) as u64),
                    wmem_bytes: host.wmem_max_bytes,
                    rmem_bytes: self.receiver.rmem_max_bytes,
                    rate_cap: host.stream_rate_cap_bps.map(|c| Rate(c.round() as u64)),
                    extra_rtt: Time::from_secs_f64(host.extra_rtt_s + self.receiver.extra_rtt_s),
                    rpc: f.rpc.clone(),
                    ecn,
                    cwnd_clamp: f.cwnd_clamp,
                    gro: self.receiver.gro,
                });
                k += 1;
            }
        }
        SimConfig {
            seed: self.seed,
            duration: Time::from_secs_f64(self.duration_s),
            sample_interval: Time::from_secs_f64(self.sample_interval_s),
            rate: Rate(self.rate_bps.round() as u64),
            rtt: Time::from_secs_f64(self.rtt_s),
            buffer: Bytes(self.buffer_bytes),
            aqm: self.aqm,
            mtu: self.mtu_bytes.min(u32::MAX as u64) as u32,
            group_loss: self.flows.iter().map(|f| self.packet_loss_probability(f.mss_bytes)).collect(),
            streams,
        }
    }

    pub fn run(&self) -> RunResult {
        Sim::new(&self.sim_config()).run()
    }
}

/// Parses, validates and runs a RunPlan given as JSON.
pub fn run_json(text: &str) -> Result<RunResult, ConfigError> {
    Ok(Scenario::from_json(text)?.run())
}

/// Largest random offset added to each stream's start time.
pub const START_JITTER: Time = Time::from_millis(1);
/// RNG stream label of the start offsets.
const START_JITTER_STREAM: u64 = 0x5747_4a17;
