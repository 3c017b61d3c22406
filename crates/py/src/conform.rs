//! `fatpipe._native.ConformSocket`: the simulator's scripted socket
//! (fatpipe_sim::conform) for python/fatpipe/conform's interpreter.
//! Times are nanoseconds; packets are dicts with the option list as
//! tuples ("nop",), ("mss", n), ("wscale", n), ("sackOK",),
//! ("sack", [(l, r), ...]), ("TS", val, ecr). A refusal of the model (a
//! construct it does not cover) is a ValueError carrying the reason.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use fatpipe_sim::conform::packet::{Packet, TcpOption};
use fatpipe_sim::conform::sysctls::Sysctls;
use fatpipe_sim::conform::{ScriptedSocket, SockOpt};
use fatpipe_sim::tcp::Codepoint;
use fatpipe_sim::units::Time;

fn refused(e: String) -> PyErr {
    PyValueError::new_err(e)
}

fn option_from_py(o: &Bound<'_, PyAny>) -> PyResult<TcpOption> {
    let t = o.downcast::<PyTuple>()?;
    let kind: String = t.get_item(0)?.extract()?;
    Ok(match kind.as_str() {
        "nop" => TcpOption::Nop,
        "mss" => TcpOption::Mss(t.get_item(1)?.extract()?),
        "wscale" => TcpOption::WScale(t.get_item(1)?.extract()?),
        "sackOK" => TcpOption::SackOk,
        "sack" => TcpOption::Sack(t.get_item(1)?.extract()?),
        "TS" => TcpOption::Timestamp { val: t.get_item(1)?.extract()?, ecr: t.get_item(2)?.extract()? },
        other => return Err(refused(format!("TCP option {other:?}: not modelled"))),
    })
}

fn option_to_py<'py>(py: Python<'py>, o: &TcpOption) -> PyResult<Bound<'py, PyTuple>> {
    match o {
        TcpOption::Nop => ("nop",).into_pyobject(py),
        TcpOption::Mss(m) => ("mss", *m).into_pyobject(py),
        TcpOption::WScale(w) => ("wscale", *w).into_pyobject(py),
        TcpOption::SackOk => ("sackOK",).into_pyobject(py),
        TcpOption::Sack(b) => ("sack", b.clone()).into_pyobject(py),
        TcpOption::Timestamp { val, ecr } => ("TS", *val, *ecr).into_pyobject(py),
    }
}

fn codepoint_name(c: Codepoint) -> &'static str {
    match c {
        Codepoint::NotEct => "noecn",
        Codepoint::Ect0 => "ect0",
        Codepoint::Ce => "ce",
    }
}

fn packet_to_py<'py>(py: Python<'py>, p: &Packet) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("time_ns", p.time.as_nanos())?;
    d.set_item("flags", p.flags)?;
    d.set_item("seq", p.seq)?;
    d.set_item("len", p.len)?;
    d.set_item("ack", p.ack)?;
    d.set_item("win", p.win)?;
    let opts = PyList::empty(py);
    for o in &p.options {
        opts.append(option_to_py(py, o)?)?;
    }
    d.set_item("options", opts)?;
    d.set_item("ecn", codepoint_name(p.codepoint))?;
    Ok(d)
}

#[pyclass(unsendable)]
pub struct ConformSocket {
    inner: ScriptedSocket,
}

#[pymethods]
impl ConformSocket {
    /// A socket under the given sysctls ({"net.ipv4.tcp_sack": "1", ...},
    /// applied in order); a sysctl the simulator cannot follow is a
    /// ValueError naming it.
    #[new]
    fn new(sysctls: Vec<(String, String)>) -> PyResult<Self> {
        let mut sys = Sysctls::default();
        for (k, v) in sysctls {
            sys.set(&k, &v).map_err(refused)?;
        }
        Ok(ConformSocket { inner: ScriptedSocket::new(sys) })
    }

    /// Checks one sysctl against the model without a socket.
    #[staticmethod]
    fn check_sysctl(key: &str, value: &str) -> PyResult<()> {
        Sysctls::default().set(key, value).map_err(refused)
    }

    fn setsockopt(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let opt = match name {
            "TCP_CONGESTION" => SockOpt::Congestion(value.extract()?),
            "SO_SNDBUF" => SockOpt::SndBuf(value.extract()?),
            "SO_RCVBUF" => SockOpt::RcvBuf(value.extract()?),
            "TCP_MAXSEG" => SockOpt::MaxSeg(value.extract()?),
            "SO_MAX_PACING_RATE" => SockOpt::MaxPacingRate(value.extract()?),
            other => return Err(refused(format!("socket option {other}: not modelled"))),
        };
        self.inner.setsockopt(opt).map_err(refused)
    }

    fn maxseg(&self) -> u32 {
        self.inner.maxseg()
    }

    fn listen(&mut self) {
        self.inner.listen()
    }

    fn is_established(&self) -> bool {
        self.inner.is_established()
    }

    fn connect(&mut self, now_ns: u64) -> PyResult<()> {
        self.inner.connect(Time(now_ns)).map_err(refused)
    }

    #[pyo3(signature = (now_ns, flags, seq, len, ack, win, options))]
    #[allow(clippy::too_many_arguments)]
    fn inbound(
        &mut self,
        now_ns: u64,
        flags: u8,
        seq: u32,
        len: u32,
        ack: u32,
        win: u32,
        options: &Bound<'_, PyList>,
    ) -> PyResult<()> {
        let options = options.iter().map(|o| option_from_py(&o)).collect::<PyResult<Vec<_>>>()?;
        let p = Packet { time: Time(now_ns), flags, seq, len, ack, win, options, codepoint: Codepoint::NotEct };
        self.inner.inbound(Time(now_ns), &p).map_err(refused)
    }

    fn write(&mut self, now_ns: u64, bytes: u64) -> PyResult<u64> {
        self.inner.write(Time(now_ns), bytes).map_err(refused)
    }

    fn close(&mut self, now_ns: u64) -> PyResult<()> {
        self.inner.close(Time(now_ns)).map_err(refused)
    }

    fn next_timer(&self) -> Option<u64> {
        self.inner.next_timer().map(|t| t.as_nanos())
    }

    /// Runs timers due by `until_ns`, stopping after one that sends.
    fn advance(&mut self, until_ns: u64) -> u64 {
        self.inner.advance(Time(until_ns)).as_nanos()
    }

    fn take_output<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner.take_output().iter().map(|p| packet_to_py(py, p)).collect()
    }

    fn tcp_info<'py>(&mut self, py: Python<'py>, now_ns: u64) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.inner.tcp_info(Time(now_ns)) {
            d.set_item(k, v)?;
        }
        Ok(d)
    }
}
