//! Thin binding layer: exposes the simulator to Python as `fatpipe._native`.
//!
//! `simulate(plan_json: str) -> dict` runs one RunPlan (the JSON of
//! `dataclasses.asdict(plan)`) with the GIL released and returns
//! {"series": {col: list}, "rpcs": {col: list}, "path": {...}, "stats": {...}},
//! walking the tables' typed column iterators (fatpipe_sim::trace), so no
//! column is named here. `series_columns()`, `rpc_columns()` and
//! `path_facts()` expose the schema for python/fatpipe/schema.py's test.
//! Configuration errors become ValueError.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::trace::{Column, Fact, FieldDef, RunResult, PATH_SCHEMA, RPC_SCHEMA, SERIES_SCHEMA};

fn column_to_py<'py>(py: Python<'py>, c: Column<'_>) -> PyResult<Bound<'py, PyList>> {
    match c {
        Column::Int(v) => PyList::new(py, v),
        Column::Float(v) => PyList::new(py, v),
        Column::Str(v) => PyList::new(py, v),
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
    Ok(out)
}

/// Runs one plan; raises ValueError naming the offending field on bad input.
#[pyfunction]
fn simulate<'py>(py: Python<'py>, plan_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let scenario = Scenario::from_json(plan_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let result = py.allow_threads(move || scenario.run());
    to_py(py, &result)
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

/// Names of the congestion control algorithms the simulator implements.
#[pyfunction]
fn available_ccas() -> Vec<&'static str> {
    fatpipe_sim::cc::AVAILABLE.to_vec()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(available_ccas, m)?)?;
    m.add_function(wrap_pyfunction!(series_columns, m)?)?;
    m.add_function(wrap_pyfunction!(rpc_columns, m)?)?;
    m.add_function(wrap_pyfunction!(path_facts, m)?)?;
    m.add_function(wrap_pyfunction!(wire_constants, m)?)?;
    Ok(())
}
