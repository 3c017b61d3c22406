//! Thin binding layer: exposes the simulator to Python as `fatpipe._native`.
//!
//! `simulate(plan_json: str) -> dict` runs one RunPlan (the JSON of
//! `dataclasses.asdict(plan)`) with the GIL released and returns
//! {"series": {col: list}, "rpcs": {col: list}, "transfers": {col: list}, "path_series": {col: list},
//! "events": {col: list}, "path": {...}, "stats": {...}, "host_cpu": [{"label", "hosts", "busy_frac"}],
//! "captures": [{"side", "host" (a sender's index), "pcap" (bytes), "truncated"}]},
//! walking the tables' typed column iterators (fatpipe_sim::trace), so no
//! column is named here. `series_columns()`, `rpc_columns()`,
//! `path_series_columns()`, `event_columns()` and `path_facts()` expose the schema for python/fatpipe/schema.py's test.
//! The plan is a typed contract (fatpipe_sim::plan): a field the simulator
//! does not declare is a ValueError naming it, and `plan_fields()` gives,
//! per plan struct (RunPlan, HostLimits, FlowPlan, `aqm.<kind>`), the
//! fields the simulator reads and those it ignores on purpose, taken from
//! the serde structs themselves, for tests/test_plan_contract.py.
//! Configuration errors become ValueError; a panic inside the simulator
//! becomes `SimulationPanic` (a RuntimeError) carrying the panic message, so
//! the study records that one run as failed and goes on (the release
//! profile keeps panic = "unwind" for this).

mod conform;

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::trace::{
    Column, Fact, FieldDef, RunResult, EVENT_SCHEMA, PATH_SCHEMA, PATH_SERIES_SCHEMA, RPC_SCHEMA, SERIES_SCHEMA, TRANSFER_SCHEMA,
};

fn column_to_py<'py>(py: Python<'py>, c: Column<'_>) -> PyResult<Bound<'py, PyList>> {
    match c {
        Column::Int(v) => PyList::new(py, v),
        Column::Float(v) => PyList::new(py, v),
        Column::Str(v) => PyList::new(py, v),
        Column::OptInt(v) => PyList::new(py, v),
        Column::OptFloat(v) => PyList::new(py, v),
        Column::OptStr(v) => PyList::new(py, v),
        Column::OptBool(v) => PyList::new(py, v),
    }
}

fn fact_to_py<'py>(py: Python<'py>, f: Fact) -> PyResult<Bound<'py, PyAny>> {
    Ok(match f {
        Fact::Int(v) => v.into_pyobject(py)?.into_any(),
        Fact::Float(v) => v.into_pyobject(py)?.into_any(),
        Fact::Str(v) => v.into_pyobject(py)?.into_any(),
    })
}

fn to_py<'py>(py: Python<'py>, r: &RunResult) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let series = PyDict::new(py);
    for (name, col) in r.series.columns() {
        series.set_item(name, column_to_py(py, col)?)?;
    }
    out.set_item("series", series)?;

    let rpcs = PyDict::new(py);
    for (name, col) in r.rpcs.columns() {
        rpcs.set_item(name, column_to_py(py, col)?)?;
    }
    out.set_item("rpcs", rpcs)?;

    let transfers = PyDict::new(py);
    for (name, col) in r.transfers.columns() {
        transfers.set_item(name, column_to_py(py, col)?)?;
    }
    out.set_item("transfers", transfers)?;

    let path_series = PyDict::new(py);
    for (name, col) in r.path_series.columns() {
        path_series.set_item(name, column_to_py(py, col)?)?;
    }
    out.set_item("path_series", path_series)?;

    let events = PyDict::new(py);
    for (name, col) in r.events.columns() {
        events.set_item(name, column_to_py(py, col)?)?;
    }
    out.set_item("events", events)?;

    let path = PyDict::new(py);
    for (name, fact) in r.path.facts() {
        path.set_item(name, fact_to_py(py, fact)?)?;
    }
    out.set_item("path", path)?;

    let stats = PyDict::new(py);
    stats.set_item("events", r.stats.events)?;
    stats.set_item("packets_sent", r.stats.packets_sent)?;
    stats.set_item("max_pending_events", r.stats.max_pending_events)?;
    out.set_item("stats", stats)?;

    let host_cpu = PyList::empty(py);
    for m in &r.host_cpu {
        let d = PyDict::new(py);
        d.set_item("label", &m.label)?;
        d.set_item("hosts", m.hosts.clone())?;
        d.set_item("busy_frac", m.busy_frac.clone())?;
        host_cpu.append(d)?;
    }
    out.set_item("host_cpu", host_cpu)?;

    let captures = PyList::empty(py);
    for (side, host, pcap, truncated) in &r.captures {
        let d = PyDict::new(py);
        d.set_item("side", match side {
            fatpipe_sim::capture::Side::Sender => "sender",
            fatpipe_sim::capture::Side::Receiver => "receiver",
        })?;
        d.set_item("host", *host)?;
        d.set_item("pcap", pyo3::types::PyBytes::new(py, pcap))?;
        d.set_item("truncated", *truncated)?;
        captures.append(d)?;
    }
    out.set_item("captures", captures)?;
    Ok(out)
}

create_exception!(
    _native,
    SimulationPanic,
    PyRuntimeError,
    "The simulator panicked on this plan (a simulator bug); the message is the panic's."
);

/// The text a panic was raised with (`panic!` gives a &str or a String).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// Runs one plan; raises ValueError naming the offending field on bad
/// input and SimulationPanic if the simulator panics. The simulator keeps
/// no state across runs (each run builds its own `Sim`), so nothing
/// half-updated outlives a caught panic: AssertUnwindSafe holds.
///
/// `bpf_objects` maps each `bpf:…` congestion control the plan's flows name
/// to its BPF object's bytes (crates/sim/src/bpf); a bad object raises
/// ValueError naming it.
#[pyfunction]
#[pyo3(signature = (plan_json, bpf_objects = None))]
fn simulate<'py>(
    py: Python<'py>,
    plan_json: &str,
    bpf_objects: Option<std::collections::BTreeMap<String, Vec<u8>>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut catalog = fatpipe_sim::bpf::Catalog::default();
    for (name, elf) in bpf_objects.unwrap_or_default() {
        catalog.add(&name, &elf).map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    let scenario = Scenario::from_json_with(plan_json, catalog).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let result = py
        .allow_threads(move || catch_unwind(AssertUnwindSafe(|| scenario.run())))
        .map_err(|payload| SimulationPanic::new_err(format!("simulator panicked: {}", panic_message(payload.as_ref()))))?;
    to_py(py, &result)
}

/// What a BPF congestion-control object is, as the simulator loads it:
/// `{"name": registered name, "flags": tcp_congestion_ops.flags,
/// "hooks": [implemented hooks]}`; raises ValueError with the reason the
/// simulator refuses it.
#[pyfunction]
fn bpf_object_facts<'py>(py: Python<'py>, elf: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let p = fatpipe_sim::bpf::object::Program::load(elf).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    d.set_item("name", &p.name)?;
    d.set_item("flags", p.flags)?;
    d.set_item("hooks", p.hook_names())?;
    Ok(d)
}

fn schema(defs: &[FieldDef]) -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    defs.iter().map(|d| (d.name, d.kind, d.unit, d.doc)).collect()
}

/// The series columns in order: (name, kind, unit, meaning) with kind
/// "int", "float" or "str" as python/fatpipe/schema.py names them.
#[pyfunction]
fn series_columns() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    schema(SERIES_SCHEMA)
}

/// The RPC columns in order, as `series_columns()`.
#[pyfunction]
fn rpc_columns() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    schema(RPC_SCHEMA)
}

/// The transfer columns in order, as `series_columns()`.
#[pyfunction]
fn transfer_columns() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    schema(TRANSFER_SCHEMA)
}

/// The path series columns in order, as `series_columns()`.
#[pyfunction]
fn path_series_columns() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    schema(PATH_SERIES_SCHEMA)
}

/// The events columns in order, as `series_columns()` (kinds may be
/// nullable: "int | None", …).
#[pyfunction]
fn event_columns() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    schema(EVENT_SCHEMA)
}

/// The path facts in order, as `series_columns()` (kind may be "float | None").
#[pyfunction]
fn path_facts() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    schema(PATH_SCHEMA)
}

/// The header sizes of fatpipe_sim::wire, by the names python/fatpipe/wire.py
/// gives them (tests/test_schema.py checks that they agree).
#[pyfunction]
fn wire_constants() -> Vec<(&'static str, u32)> {
    use fatpipe_sim::wire;
    vec![
        ("TCP_IP_HEADER_BYTES", wire::TCP_IP_HEADER_BYTES),
        ("TIMESTAMP_OPTION_BYTES", wire::TIMESTAMP_OPTION_BYTES),
        ("TCP_IP_TS_HEADER_BYTES", wire::TCP_IP_TS_HEADER_BYTES),
        ("ETH_HEADER_BYTES", wire::ETH_HEADER_BYTES),
    ]
}

/// The fields of the run plan's structs as the simulator declares them:
/// (struct, fields read, fields ignored on purpose) for RunPlan,
/// HostLimits, FlowPlan and each `aqm.<kind>` table
/// (fatpipe_sim::plan::plan_fields).
#[pyfunction]
fn plan_fields() -> Vec<(String, Vec<&'static str>, Vec<&'static str>)> {
    fatpipe_sim::plan::plan_fields().into_iter().map(|f| (f.name, f.read, f.ignored)).collect()
}

/// Names of the congestion control algorithms the simulator implements,
/// in registry order (the names of `cca_registry()`).
#[pyfunction]
fn available_ccas() -> Vec<&'static str> {
    fatpipe_sim::cc::REGISTRY.iter().map(|c| c.name).collect()
}

/// The simulator's CCA registry (fatpipe_sim::cc::REGISTRY) in order: one
/// dict per algorithm with its name and traits (python/fatpipe/ccas.py
/// reads it).
#[pyfunction]
fn cca_registry(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    fatpipe_sim::cc::REGISTRY
        .iter()
        .map(|c| {
            let t = c.traits();
            let d = PyDict::new(py);
            d.set_item("name", c.name)?;
            d.set_item("rate_based", t.rate_based)?;
            d.set_item("loss_bound", t.loss_bound)?;
            d.set_item("linux_mainline", t.linux_mainline)?;
            d.set_item("linux_default", t.linux_default)?;
            d.set_item("needs_ecn", t.needs_ecn)?;
            Ok(d)
        })
        .collect()
}

/// Why `event` ("enter:DRAIN") cannot trigger on a flow running CCA
/// `cc`, or None (fatpipe_sim::path::trigger, the simulator's own check;
/// python/fatpipe/pathspec.py asks it while checking a spec).
#[pyfunction]
fn state_trigger_problem(event: &str, cc: &str) -> Option<String> {
    let states = fatpipe_sim::cc::by_name(cc).map_or(&[][..], |c| c.state_labels());
    if states.is_empty() {
        return Some(format!("{cc} exposes no state to watch; bbr and bbr3 do"));
    }
    fatpipe_sim::path::trigger::Trigger::parse(event, states, 1, 0, fatpipe_sim::units::Time::ZERO).err()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SimulationPanic", m.py().get_type::<SimulationPanic>())?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_object_facts, m)?)?;
    m.add_class::<conform::ConformSocket>()?;
    m.add_function(wrap_pyfunction!(available_ccas, m)?)?;
    m.add_function(wrap_pyfunction!(cca_registry, m)?)?;
    m.add_function(wrap_pyfunction!(state_trigger_problem, m)?)?;
    m.add_function(wrap_pyfunction!(series_columns, m)?)?;
    m.add_function(wrap_pyfunction!(rpc_columns, m)?)?;
    m.add_function(wrap_pyfunction!(path_series_columns, m)?)?;
    m.add_function(wrap_pyfunction!(event_columns, m)?)?;
    m.add_function(wrap_pyfunction!(path_facts, m)?)?;
    m.add_function(wrap_pyfunction!(wire_constants, m)?)?;
    m.add_function(wrap_pyfunction!(plan_fields, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_columns, m)?)?;
    Ok(())
}
