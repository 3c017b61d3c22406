//! Thin binding layer: exposes the simulator to Python as `fatpipe._native`.
//!
//! `simulate(plan_json: str) -> dict` runs one RunPlan (the JSON of
//! `dataclasses.asdict(plan)`) with the GIL released and returns
//! {"series": {col: list}, "rpcs": {col: list}, "path": {...}, "stats": {...}}.
//! Configuration errors become ValueError.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::trace::RunResult;

fn to_py<'py>(py: Python<'py>, r: &RunResult) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let series = PyDict::new(py);
    let s = &r.series;
    series.set_item("flow_group", PyList::new(py, &s.flow_group)?)?;
    series.set_item("stream", PyList::new(py, &s.stream)?)?;
    series.set_item("t_s", PyList::new(py, &s.t_s)?)?;
    series.set_item("delivered_bytes", PyList::new(py, &s.delivered_bytes)?)?;
    series.set_item("cwnd_segments", PyList::new(py, &s.cwnd_segments)?)?;
    series.set_item("srtt_s", PyList::new(py, &s.srtt_s)?)?;
    series.set_item("min_rtt_s", PyList::new(py, &s.min_rtt_s)?)?;
    series.set_item("retrans_segments", PyList::new(py, &s.retrans_segments)?)?;
    series.set_item("segs_out", PyList::new(py, &s.segs_out)?)?;
    series.set_item("pacing_rate_bps", PyList::new(py, &s.pacing_rate_bps)?)?;
    series.set_item("delivery_rate_bps", PyList::new(py, &s.delivery_rate_bps)?)?;
    series.set_item("inflight_segments", PyList::new(py, &s.inflight_segments)?)?;
    series.set_item("ca_state", PyList::new(py, &s.ca_state)?)?;
    series.set_item("rwnd_limited_s", PyList::new(py, &s.rwnd_limited_s)?)?;
    series.set_item("sndbuf_limited_s", PyList::new(py, &s.sndbuf_limited_s)?)?;
    series.set_item("busy_s", PyList::new(py, &s.busy_s)?)?;
    out.set_item("series", series)?;

    let rpcs = PyDict::new(py);
    let p = &r.rpcs;
    rpcs.set_item("flow_group", PyList::new(py, &p.flow_group)?)?;
    rpcs.set_item("stream", PyList::new(py, &p.stream)?)?;
    rpcs.set_item("start_s", PyList::new(py, &p.start_s)?)?;
    rpcs.set_item("duration_s", PyList::new(py, &p.duration_s)?)?;
    rpcs.set_item("response_bytes", PyList::new(py, &p.response_bytes)?)?;
    out.set_item("rpcs", rpcs)?;

    let path = PyDict::new(py);
    path.set_item("emulator", "sim")?;
    path.set_item("min_rtt_s", r.path.min_rtt_s)?;
    path.set_item("packets", r.path.packets)?;
    path.set_item("random_drops", r.path.random_drops)?;
    path.set_item("queue_drops", r.path.queue_drops)?;
    path.set_item("bottleneck_bps", r.path.bottleneck_bps)?;
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
    Ok(())
}
