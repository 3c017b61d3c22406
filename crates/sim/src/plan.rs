//! The run plan as Python hands it over: serde mirrors of
//! python/fatpipe/backends/base.py's `RunPlan`, `HostLimits` and
//! `FlowPlan` (the JSON of `dataclasses.asdict(plan)`) and of the `aqm`
//! table of each kind in python/fatpipe/aqm.py (`Aqm.plan()`).
//!
//! This module is the contract across the language boundary: every struct
//! refuses a field it does not declare (`deny_unknown_fields`), so a field
//! renamed on one side is an error naming it, never a silent default. The
//! fields Python sends that the simulator ignores on purpose are declared
//! too, typed [`IgnoredAny`] and listed in [`PlanStruct::IGNORED`] with the
//! reason. [`plan_fields`] gives the names to Python (through the binding,
//! for tests/test_plan_contract.py); they are taken from the derived
//! deserialisers themselves ([`field_names`]), so there is no second list.
//!
//! Serde checks names and types only. Every field is an `Option`, because
//! JSON `null` (Python's None) and a missing key mean the same; whether a
//! field is required and which values it takes is checked by
//! crate::scenario, with errors naming the field.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// A struct of the plan, with the fields it declares only to ignore them.
pub trait PlanStruct: DeserializeOwned {
    /// Fields Python sends that the simulator ignores on purpose (typed
    /// [`IgnoredAny`]); every other field is read.
    const IGNORED: &'static [&'static str];
}

/// A whole number of bytes, packets or segments. Python sends an `int`;
/// an integral float (1e6 written as 1000000.0) is accepted too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Whole(pub u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Whole, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Whole;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer")
            }
            fn visit_u64<E: de::Error>(self, x: u64) -> Result<Whole, E> {
                Ok(Whole(x))
            }
            fn visit_i64<E: de::Error>(self, x: i64) -> Result<Whole, E> {
                u64::try_from(x).map(Whole).map_err(|_| E::invalid_value(de::Unexpected::Signed(x), &self))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Whole, E> {
                if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 {
                    Ok(Whole(x as u64))
                } else {
                    Err(E::invalid_value(de::Unexpected::Float(x), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// RunPlan.seed: any JSON integer; a negative one is taken modulo 2^64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seed(pub u64);

impl<'de> Deserialize<'de> for Seed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Seed, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Seed;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_u64<E: de::Error>(self, x: u64) -> Result<Seed, E> {
                Ok(Seed(x))
            }
            fn visit_i64<E: de::Error>(self, x: i64) -> Result<Seed, E> {
                Ok(Seed(x as u64))
            }
        }
        d.deserialize_any(V)
    }
}

/// One run (base.py RunPlan).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunPlan {
    pub run_id: Option<String>,
    /// The backend's name: a plan handed to the simulator is the sim
    /// backend's by construction.
    pub backend: Option<IgnoredAny>,
    /// The repetition's index: repetitions differ through `seed`, which
    /// Python derives from it.
    pub rep: Option<IgnoredAny>,
    pub seed: Option<Seed>,
    pub duration_s: Option<f64>,
    pub warmup_s: Option<f64>,
    pub sample_interval_s: Option<f64>,
    pub rate_bps: Option<f64>,
    pub rtt_s: Option<f64>,
    pub loss: Option<f64>,
    pub corruption: Option<f64>,
    pub buffer_bytes: Option<Whole>,
    pub mtu_bytes: Option<Whole>,
    pub senders: Option<BTreeMap<String, HostLimits>>,
    pub receiver: Option<HostLimits>,
    pub flows: Option<Vec<FlowPlan>>,
    /// The sweep point's dotted keys and values, kept for the result
    /// tables: their values are already resolved into the fields above.
    pub swept: Option<IgnoredAny>,
    /// The bottleneck's discipline: a table whose `kind` selects one of
    /// the `aqm.<kind>` structs ([`AqmPlan::from_table`]).
    pub aqm: Option<Map<String, Value>>,
    /// The machines a testbed backend runs on: the simulator builds its
    /// own path (the sim backend sends null).
    pub testbed: Option<IgnoredAny>,
    /// Schedules, bursty loss, jitter, a policer, aggregation.
    pub dynamics: Option<PathDynamics>,
    /// Packet captures to write (crate::capture); null: none.
    pub capture: Option<CapturePlan>,
    /// The delay line a kernel or hosts backend puts on the path
    /// (path.emulator: linkem or netem): the simulator is its own path.
    pub emulator: Option<IgnoredAny>,
}

impl PlanStruct for RunPlan {
    const IGNORED: &'static [&'static str] = &["backend", "rep", "swept", "testbed", "emulator"];
}

/// End-host limits (base.py HostLimits) of a sender or the receiver.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLimits {
    pub rmem_max_bytes: Option<Whole>,
    pub wmem_max_bytes: Option<Whole>,
    pub stream_rate_cap_bps: Option<f64>,
    pub extra_rtt_s: Option<f64>,
    pub ecn: Option<Whole>,
    pub gro: Option<bool>,
    pub processing_jitter_s: Option<f64>,
    pub start_spread_s: Option<f64>,
    pub cpu: Option<HostCpu>,
    pub nic_rate_bps: Option<f64>,
    pub interrupt_coalescing_s: Option<f64>,
    pub interrupt_coalescing_frames: Option<Whole>,
    pub qdisc: Option<String>,
}

impl PlanStruct for HostLimits {
    const IGNORED: &'static [&'static str] = &[];
}

/// A host's CPU model (base.py HostCpu): its cores, how its application
/// threads map streams to them, and what each kind of work costs
/// (crate::host::cpu).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCpu {
    pub cores: Option<Whole>,
    pub app_threads: Option<Whole>,
    pub machine: Option<String>,
    pub rx_ring_packets: Option<Whole>,
    pub send_packet_s: Option<f64>,
    pub send_byte_s: Option<f64>,
    pub receive_packet_s: Option<f64>,
    pub receive_unit_s: Option<f64>,
    pub receive_byte_s: Option<f64>,
    pub ack_s: Option<f64>,
    pub sack_block_s: Option<f64>,
    pub timer_s: Option<f64>,
    pub rtx_queue: Option<String>,
    pub rtx_walk_s: Option<f64>,
}

impl PlanStruct for HostCpu {
    const IGNORED: &'static [&'static str] = &[];
}

/// One flow group (base.py FlowPlan).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowPlan {
    pub group: Option<Whole>,
    pub kind: Option<String>,
    pub cc: Option<String>,
    pub streams: Option<Whole>,
    pub mss_bytes: Option<Whole>,
    pub sender: Option<String>,
    pub start_s: Option<f64>,
    pub request_bytes: Option<Whole>,
    pub response_bytes: Option<Whole>,
    pub concurrency: Option<Whole>,
    pub rate_per_s: Option<f64>,
    pub ecn: Option<Whole>,
    pub cwnd_clamp: Option<Whole>,
    /// Each stream's pacing cap, bit/s (SO_MAX_PACING_RATE).
    pub pacing_rate_bps: Option<f64>,
    /// The traffic of a "cross" group (no TCP: cc, mss_bytes and sender
    /// are not read for it).
    pub cross: Option<CrossFlow>,
    /// The application's write rate of a "bulk" group (crate::app_rate);
    /// null: it always has data.
    pub app: Option<AppLimit>,
    /// The data sets of a "transfer" group (crate::transfer).
    pub transfer: Option<TransferPlan>,
}

impl PlanStruct for FlowPlan {
    const IGNORED: &'static [&'static str] = &[];
}

/// Packet captures of a run (base.py CapturePlan, crate::capture).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapturePlan {
    pub groups: Option<Vec<Whole>>,
    pub side: Option<String>,
    pub snaplen_bytes: Option<Whole>,
    pub duration_s: Option<f64>,
    pub max_bytes: Option<Whole>,
}

impl PlanStruct for CapturePlan {
    const IGNORED: &'static [&'static str] = &[];
}

/// A transfer group's data sets (base.py TransferPlan, crate::transfer).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferPlan {
    pub size_bytes: Option<Whole>,
    pub split: Option<String>,
    pub chunk_bytes: Option<Whole>,
    pub tick_s: Option<f64>,
    pub starts_s: Option<Vec<f64>>,
}

impl PlanStruct for TransferPlan {
    const IGNORED: &'static [&'static str] = &[];
}

/// An application-limited bulk sender (base.py AppLimit, crate::app_rate).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppLimit {
    pub rate_bps: Option<f64>,
    pub tick_s: Option<f64>,
    pub steps: Option<Vec<AppStep>>,
}

impl PlanStruct for AppLimit {
    const IGNORED: &'static [&'static str] = &[];
}

/// A change of the application's write rate, or a pause (base.py AppStep).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppStep {
    pub at_s: Option<f64>,
    pub rate_bps: Option<f64>,
    pub pause_s: Option<f64>,
    /// The state change the step waits for instead of `at_s` (simulator
    /// only, crate::path::trigger).
    pub on: Option<StateTrigger>,
}

impl PlanStruct for AppStep {
    const IGNORED: &'static [&'static str] = &[];
}

/// Unresponsive cross traffic (base.py CrossFlow, crate::path::cross).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossFlow {
    pub rate_bps: Option<f64>,
    pub pattern: Option<String>,
    pub on_s: Option<f64>,
    pub off_s: Option<f64>,
    pub shape: Option<f64>,
    pub packet_bytes: Option<Whole>,
    pub stop_s: Option<f64>,
}

impl PlanStruct for CrossFlow {
    const IGNORED: &'static [&'static str] = &[];
}

/// How the path moves (base.py PathDynamics, crate::path::dynamics).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathDynamics {
    pub schedule: Option<Vec<PathStep>>,
    pub gilbert_elliott: Option<GilbertElliott>,
    pub jitter: Option<Jitter>,
    pub reorder: Option<Reorder>,
    pub policer: Option<Policer>,
    pub aggregation: Option<Aggregation>,
    pub trace: Option<Trace>,
    pub drops: Option<Vec<PathDrop>>,
}

impl PlanStruct for PathDynamics {
    const IGNORED: &'static [&'static str] = &[];
}

/// A change of the path at a time (base.py PathStep).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathStep {
    pub at_s: Option<f64>,
    pub rate_bps: Option<f64>,
    pub rtt_s: Option<f64>,
    pub loss: Option<f64>,
    pub on: Option<StateTrigger>,
}

impl PlanStruct for PathStep {
    const IGNORED: &'static [&'static str] = &[];
}

/// Data packets dropped at a chosen instant (base.py PathDrop).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathDrop {
    pub at_s: Option<f64>,
    pub count: Option<Whole>,
    pub flow: Option<Whole>,
    pub on: Option<StateTrigger>,
}

impl PlanStruct for PathDrop {
    const IGNORED: &'static [&'static str] = &[];
}

/// A sender's state change that sets off a plan item (base.py
/// StateTrigger, crate::path::trigger).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateTrigger {
    pub event: Option<String>,
    pub nth: Option<Whole>,
    pub flow: Option<Whole>,
    pub after_s: Option<f64>,
}

impl PlanStruct for StateTrigger {
    const IGNORED: &'static [&'static str] = &[];
}

/// Bursty loss (base.py GilbertElliott).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    pub r: Option<f64>,
    pub bad_loss: Option<f64>,
    pub good_loss: Option<f64>,
}

impl PlanStruct for GilbertElliott {
    const IGNORED: &'static [&'static str] = &[];
}

/// Delay variation (base.py Jitter).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jitter {
    pub deviation_s: Option<f64>,
    pub distribution: Option<String>,
    pub reorder: Option<bool>,
    pub direction: Option<String>,
}

impl PlanStruct for Jitter {
    const IGNORED: &'static [&'static str] = &[];
}

/// netem's reorder knob (base.py Reorder): after `gap` - 1 packets taken
/// with their delay, the next skips the delay with `probability`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reorder {
    pub probability: Option<f64>,
    pub gap: Option<Whole>,
    pub direction: Option<String>,
}

impl PlanStruct for Reorder {
    const IGNORED: &'static [&'static str] = &[];
}

/// A token-bucket policer (base.py Policer).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policer {
    pub rate_bps: Option<f64>,
    pub burst_bytes: Option<Whole>,
}

impl PlanStruct for Policer {
    const IGNORED: &'static [&'static str] = &[];
}

/// A link that releases in bursts (base.py Aggregation).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aggregation {
    pub direction: Option<String>,
    pub interval_s: Option<f64>,
    pub bytes: Option<Whole>,
}

impl PlanStruct for Aggregation {
    const IGNORED: &'static [&'static str] = &[];
}

/// A delivery trace (base.py Trace, crate::path::trace): the distinct
/// milliseconds of one period as gaps from the one before (the first from
/// 0) and the opportunities at each.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    pub ms_gaps: Option<Vec<Whole>>,
    pub counts: Option<Vec<Whole>>,
}

impl PlanStruct for Trace {
    const IGNORED: &'static [&'static str] = &[];
}

/// The key of an aqm table that names its kind.
pub const AQM_KIND_KEY: &str = "kind";

/// `{"kind": "droptail"}`: no other key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailPlan {}

impl PlanStruct for DropTailPlan {
    const IGNORED: &'static [&'static str] = &[];
}

/// `{"kind": "ce_threshold", ...}` with exactly one of the thresholds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeThresholdPlan {
    pub k_packets: Option<Whole>,
    pub k_bytes: Option<Whole>,
    pub k_s: Option<f64>,
}

impl PlanStruct for CeThresholdPlan {
    const IGNORED: &'static [&'static str] = &[];
}

/// `{"kind": "fq_codel", ...}`: fq_codel's parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelPlan {
    pub target_s: Option<f64>,
    pub interval_s: Option<f64>,
    pub limit_packets: Option<Whole>,
    pub ce_threshold_s: Option<f64>,
    pub quantum_bytes: Option<Whole>,
    pub ecn: Option<bool>,
}

impl PlanStruct for FqCodelPlan {
    const IGNORED: &'static [&'static str] = &[];
}

/// RunPlan.aqm, its kind resolved.
#[derive(Debug)]
pub enum AqmPlan {
    DropTail(DropTailPlan),
    CeThreshold(CeThresholdPlan),
    FqCodel(FqCodelPlan),
}

/// An error in the plan: the field's dotted path (`flows[0].streams`;
/// empty for the plan as a whole) and what serde found wrong there.
#[derive(Debug)]
pub struct PlanError {
    pub path: String,
    pub message: String,
}

/// One aqm kind: its name and the parser of its table (without `kind`).
pub struct AqmKind {
    pub name: &'static str,
    parse: fn(Value) -> Result<AqmPlan, PlanError>,
    fields: fn() -> &'static [&'static str],
    ignored: &'static [&'static str],
}

/// Every aqm kind the simulator implements. The kinds are dispatched by
/// hand rather than by serde's internally tagged enum, which buffers the
/// table and so loses the path of an error inside it (`aqm.target_s`).
pub const AQM_KINDS: &[AqmKind] = &[aqm_kind::<DropTailPlan>(), aqm_kind::<CeThresholdPlan>(), aqm_kind::<FqCodelPlan>()];

/// The struct of one aqm kind.
trait AqmKindPlan: PlanStruct {
    /// The table's `kind`.
    const KIND: &'static str;
    fn into_aqm(self) -> AqmPlan;
}

impl AqmKindPlan for DropTailPlan {
    const KIND: &'static str = "droptail";
    fn into_aqm(self) -> AqmPlan {
        AqmPlan::DropTail(self)
    }
}

impl AqmKindPlan for CeThresholdPlan {
    const KIND: &'static str = "ce_threshold";
    fn into_aqm(self) -> AqmPlan {
        AqmPlan::CeThreshold(self)
    }
}

impl AqmKindPlan for FqCodelPlan {
    const KIND: &'static str = "fq_codel";
    fn into_aqm(self) -> AqmPlan {
        AqmPlan::FqCodel(self)
    }
}

const fn aqm_kind<T: AqmKindPlan>() -> AqmKind {
    AqmKind { name: T::KIND, parse: parse_aqm::<T>, fields: field_names::<T>, ignored: T::IGNORED }
}

fn parse_aqm<T: AqmKindPlan>(table: Value) -> Result<AqmPlan, PlanError> {
    from_value::<T>(table).map(T::into_aqm)
}

impl AqmPlan {
    /// Resolves an aqm table: its `kind`, then that kind's struct from the
    /// other keys. Errors carry the path inside the table (`kind`,
    /// `target_s`); the caller prefixes `aqm.`.
    pub fn from_table(table: &Map<String, Value>) -> Result<AqmPlan, PlanError> {
        let at_kind = |message: String| PlanError { path: AQM_KIND_KEY.to_string(), message };
        let name = match table.get(AQM_KIND_KEY) {
            None | Some(Value::Null) => return Err(at_kind("missing".into())),
            Some(Value::String(s)) => s.as_str(),
            Some(v) => return Err(at_kind(format!("expected a string, got {v}"))),
        };
        let Some(kind) = AQM_KINDS.iter().find(|k| k.name == name) else {
            let names: Vec<&str> = AQM_KINDS.iter().map(|k| k.name).collect();
            let (last, rest) = names.split_last().expect("at least one aqm kind");
            return Err(at_kind(format!("unknown queue discipline '{name}'; expected {} or {last}", rest.join(", "))));
        };
        let rest: Map<String, Value> = table.iter().filter(|(k, _)| *k != AQM_KIND_KEY).map(|(k, v)| (k.clone(), v.clone())).collect();
        (kind.parse)(Value::Object(rest))
    }
}

/// Deserialises `T` from a JSON value, an error naming the field's path.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, PlanError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        PlanError { path: if path == "." { String::new() } else { path }, message: e.into_inner().to_string() }
    })
}

/// The name and field names of a struct as its derived `Deserialize`
/// declares them (what serde's derive passes to `deserialize_struct`).
pub fn struct_shape<T: DeserializeOwned>() -> (&'static str, &'static [&'static str]) {
    let mut shape: (&'static str, &'static [&'static str]) = ("", &[]);
    let _ = T::deserialize(ShapeRecorder(&mut shape));
    shape
}

/// The field names of a struct ([`struct_shape`]).
pub fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    struct_shape::<T>().1
}

/// A deserializer that only records the shape of the struct asked of it.
struct ShapeRecorder<'a>(&'a mut (&'static str, &'static [&'static str]));

impl<'de> Deserializer<'de> for ShapeRecorder<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = (name, fields);
        Err(de::Error::custom("shape recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The fields of one plan struct: those the simulator reads and those it
/// ignores on purpose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanFields {
    /// `RunPlan`, `HostLimits`, `FlowPlan` (the Python dataclasses, whose
    /// names the Rust structs share) or `aqm.<kind>`.
    pub name: String,
    pub read: Vec<&'static str>,
    pub ignored: Vec<&'static str>,
}

fn fields_of(name: String, declared: &'static [&'static str], ignored: &'static [&'static str]) -> PlanFields {
    PlanFields { name, read: declared.iter().copied().filter(|f| !ignored.contains(f)).collect(), ignored: ignored.to_vec() }
}

fn dataclass<T: PlanStruct>() -> PlanFields {
    let (name, declared) = struct_shape::<T>();
    fields_of(name.to_string(), declared, T::IGNORED)
}

/// Every struct of the plan with its fields: RunPlan, HostLimits,
/// FlowPlan, then `aqm.<kind>` for each aqm kind (its `kind` key, read by
/// [`AqmPlan::from_table`], first).
pub fn plan_fields() -> Vec<PlanFields> {
    let mut out = vec![
        dataclass::<RunPlan>(),
        dataclass::<HostLimits>(),
        dataclass::<HostCpu>(),
        dataclass::<FlowPlan>(),
        dataclass::<CrossFlow>(),
        dataclass::<AppLimit>(),
        dataclass::<TransferPlan>(),
        dataclass::<CapturePlan>(),
        dataclass::<AppStep>(),
        dataclass::<PathDynamics>(),
        dataclass::<PathStep>(),
        dataclass::<PathDrop>(),
        dataclass::<StateTrigger>(),
        dataclass::<GilbertElliott>(),
        dataclass::<Jitter>(),
        dataclass::<Reorder>(),
        dataclass::<Policer>(),
        dataclass::<Aggregation>(),
        dataclass::<Trace>(),
    ];
    for k in AQM_KINDS {
        let mut f = fields_of(format!("aqm.{}", k.name), (k.fields)(), k.ignored);
        f.read.insert(0, AQM_KIND_KEY);
        out.push(f);
    }
    out
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
