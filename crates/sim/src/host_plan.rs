//! A host's CPU and NIC from the plan (`cpu`, `nic_rate_bps`: base.py
//! HostCpu, docs/host-model.md): their values checked, with errors naming
//! the field, and each stream placed on the core of its application
//! thread (crate::host::cpu).

use std::collections::BTreeMap;

use crate::host::cpu::{core_of, CpuCosts, CpuSeat};
use crate::plan::{self, Whole};
use crate::scenario::ConfigError;

/// Most cores a host may have.
pub const MAX_CPU_CORES: u64 = 1024;
/// Most application threads a host may run.
pub const MAX_APP_THREADS: u64 = 10_000;
/// Receive ring sizes a host may have, packets.
pub const RX_RING_PACKETS: std::ops::RangeInclusive<u64> = 16..=65_536;
/// Largest cost of one packet, unit, ACK, SACK block or timer: 10 ms.
pub const MAX_COST_S: f64 = 0.01;
/// Largest cost of one byte: 1 µs (8 Mbit/s of copying).
pub const MAX_BYTE_COST_S: f64 = 1e-6;

/// A host's validated CPU model.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCpu {
    pub cores: u32,
    /// `None`: a thread per stream.
    pub app_threads: Option<u32>,
    /// Hosts naming the same machine share its cores; `None`: the host's own.
    pub machine: Option<String>,
    pub rx_ring_packets: u32,
    pub costs: CpuCosts,
}

fn error<T>(field: String, message: String) -> Result<T, ConfigError> {
    Err(ConfigError { field, message })
}

fn count(v: Option<Whole>, field: String, range: std::ops::RangeInclusive<u64>, what: &str) -> Result<Option<u32>, ConfigError> {
    match v.map(|w| w.0) {
        None => Ok(None),
        Some(x) if range.contains(&x) => Ok(Some(x as u32)),
        Some(x) => error(field, format!("must be {} to {} {what}, got {x}", range.start(), range.end())),
    }
}

/// A cost in seconds, 0 to `max_s`, as nanoseconds (`scale` 1e9) or
/// picoseconds (1e12); left out: 0.
fn cost(v: Option<f64>, field: String, max_s: f64, scale: f64) -> Result<u64, ConfigError> {
    match v {
        None => Ok(0),
        Some(x) if (0.0..=max_s).contains(&x) => Ok((x * scale).round() as u64),
        Some(x) => error(field, format!("must be 0 to {max_s} s, got {x}")),
    }
}

/// The `cpu` object of host `path` (e.g. "senders.s1"), checked.
pub fn host_cpu(c: &plan::HostCpu, path: &str) -> Result<HostCpu, ConfigError> {
    let at = |key: &str| format!("{path}.cpu.{key}");
    let cores = count(c.cores, at("cores"), 1..=MAX_CPU_CORES, "cores")?
        .ok_or_else(|| ConfigError { field: at("cores"), message: "missing".into() })?;
    let app_threads = count(c.app_threads, at("app_threads"), 1..=MAX_APP_THREADS, "threads")?;
    let rx_ring_packets = count(c.rx_ring_packets, at("rx_ring_packets"), RX_RING_PACKETS, "packets")?
        .ok_or_else(|| ConfigError { field: at("rx_ring_packets"), message: "missing".into() })?;
    if let Some(m) = &c.machine {
        if m.is_empty() {
            return error(at("machine"), "must be a non-empty name".into());
        }
    }
    let ns = |v, key: &str| cost(v, at(key), MAX_COST_S, 1e9);
    let ps = |v, key: &str| cost(v, at(key), MAX_BYTE_COST_S, 1e12);
    let costs = CpuCosts {
        send_packet_ns: ns(c.send_packet_s, "send_packet_s")?,
        send_byte_ps: ps(c.send_byte_s, "send_byte_s")?,
        receive_packet_ns: ns(c.receive_packet_s, "receive_packet_s")?,
        receive_unit_ns: ns(c.receive_unit_s, "receive_unit_s")?,
        receive_byte_ps: ps(c.receive_byte_s, "receive_byte_s")?,
        ack_ns: ns(c.ack_s, "ack_s")?,
        sack_block_ns: ns(c.sack_block_s, "sack_block_s")?,
        timer_ns: ns(c.timer_s, "timer_s")?,
        rtx_walk_ps: match c.rtx_queue.as_deref() {
            None | Some("rbtree") => 0,
            Some("list") => ps(c.rtx_walk_s, "rtx_walk_s")?,
            Some(q) => return error(at("rtx_queue"), format!("unknown retransmission queue '{q}'; known: list (Linux before 4.15), rbtree")),
        },
    };
    Ok(HostCpu { cores, app_threads, machine: c.machine.clone(), rx_ring_packets, costs })
}

/// Longest interrupt delay a host may have (ethtool rx-usecs): 10 ms.
pub const MAX_INTERRUPT_COALESCING_S: f64 = 0.01;
/// Most packets an interrupt may wait for (ethtool rx-frames).
pub const MAX_INTERRUPT_COALESCING_FRAMES: u64 = 65_536;

/// A host's receive interrupt moderation (host/coalesce.rs): the delay
/// after the first packet, and the packet count that fires it early.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coalescing {
    pub usecs: crate::units::Time,
    pub frames: Option<u32>,
}

/// The `interrupt_coalescing_s` and `_frames` fields of host `path`: the
/// delay (0 < s <= 10 ms) is needed for a frame count; none: no moderation.
pub fn coalescing(usecs: Option<f64>, frames: Option<Whole>, path: &str) -> Result<Option<Coalescing>, ConfigError> {
    let frames = count(frames, format!("{path}.interrupt_coalescing_frames"), 1..=MAX_INTERRUPT_COALESCING_FRAMES, "packets")?;
    match usecs {
        None if frames.is_some() => error(
            format!("{path}.interrupt_coalescing_frames"),
            "needs interrupt_coalescing_s (the delay the frame count cuts short)".into(),
        ),
        None => Ok(None),
        Some(x) if x > 0.0 && x <= MAX_INTERRUPT_COALESCING_S => {
            Ok(Some(Coalescing { usecs: crate::units::Time::from_secs_f64(x), frames }))
        }
        Some(x) => error(format!("{path}.interrupt_coalescing_s"), format!("must be > 0 and at most {MAX_INTERRUPT_COALESCING_S} s, got {x}")),
    }
}

/// The root qdiscs a sending host may have: fq paces every flow at its
/// sk_pacing_rate; pfifo_fast and fq_codel (the defaults of Linux and of
/// most distributions, net.core.default_qdisc) leave pacing to the CCAs
/// that ask for it (TCP's internal pacing, tcp_needs_internal_pacing()).
pub const QDISCS: [(&str, bool); 3] = [("fq", true), ("fq_codel", false), ("pfifo_fast", false)];

/// A `qdisc` field: whether that qdisc paces every flow; left out: no.
pub fn qdisc_paces(v: Option<&str>, path: &str) -> Result<bool, ConfigError> {
    match v {
        None => Ok(false),
        Some(q) => match QDISCS.iter().find(|(name, _)| *name == q) {
            Some(&(_, paces)) => Ok(paces),
            None => {
                let known: Vec<&str> = QDISCS.iter().map(|(n, _)| *n).collect();
                error(format!("{path}.qdisc"), format!("unknown qdisc '{q}'; known: {}", known.join(", ")))
            }
        },
    }
}

/// A `nic_rate_bps` field: > 0 (bits per second).
pub fn nic_rate(v: Option<f64>, path: &str) -> Result<Option<f64>, ConfigError> {
    match v {
        None => Ok(None),
        Some(x) if x > 0.0 && x.is_finite() => Ok(Some(x)),
        Some(x) => error(format!("{path}.nic_rate_bps"), format!("must be > 0 bit/s, got {x}")),
    }
}

/// The run's machines and where each host's streams run.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// Cores of each machine.
    pub machine_cores: Vec<u32>,
    /// Each machine's label (its `machine` name, or its one host's name)
    /// and the hosts on it.
    pub machine_hosts: Vec<(String, Vec<String>)>,
    machines: BTreeMap<String, (u32, u32, String)>,
}

impl Placement {
    /// Host `host` (field path `name`, e.g. "senders.s1"; its CPU model
    /// `cpu`, `streams` streams) takes its seats: one per stream, in
    /// order. Hosts sharing a machine must give it the same number of
    /// cores.
    pub fn seat(&mut self, host: &str, name: &str, cpu: &HostCpu, streams: u32) -> Result<Vec<CpuSeat>, ConfigError> {
        // A host of its own is labelled by its name, which no `machine`
        // name (letters, digits, _ and -) can collide with once prefixed.
        let key = cpu.machine.clone().unwrap_or_else(|| format!("host {host}"));
        let next = self.machine_cores.len() as u32;
        let (index, threads_placed, first) = self.machines.entry(key.clone()).or_insert((next, 0, name.to_string()));
        let label = cpu.machine.clone().unwrap_or_else(|| host.to_string());
        if *index == next {
            self.machine_cores.push(cpu.cores);
            self.machine_hosts.push((label.clone(), Vec::new()));
        } else if self.machine_cores[*index as usize] != cpu.cores {
            let field = format!("{name}.cpu.cores");
            let first_cores = self.machine_cores[*index as usize];
            return error(field, format!("hosts {first} and {name} share machine '{label}' but give it {first_cores} and {} cores", cpu.cores));
        }
        self.machine_hosts[*index as usize].1.push(host.to_string());
        let offset = *threads_placed;
        let threads = cpu.app_threads.map_or(streams, |t| t.min(streams));
        *threads_placed += threads;
        let machine = *index;
        Ok((0..streams)
            .map(|k| CpuSeat {
                machine,
                core: core_of(k, cpu.app_threads, offset, cpu.cores),
                costs: cpu.costs,
                rx_ring_packets: cpu.rx_ring_packets,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cores: u32, app_threads: Option<u32>, machine: Option<&str>) -> HostCpu {
        HostCpu { cores, app_threads, machine: machine.map(str::to_string), rx_ring_packets: 1024, costs: CpuCosts::default() }
    }

    #[test]
    fn hosts_sharing_a_machine_continue_its_threads() {
        let mut p = Placement::default();
        let s = p.seat("s1", "senders.s1", &cpu(2, None, Some("vm")), 1).unwrap();
        let r = p.seat("receiver", "receiver", &cpu(2, None, Some("vm")), 1).unwrap();
        assert_eq!((s[0].machine, s[0].core, r[0].machine, r[0].core), (0, 0, 0, 1));
        assert_eq!(p.machine_cores, [2]);
        assert_eq!(p.machine_hosts, [("vm".to_string(), vec!["s1".to_string(), "receiver".to_string()])]);
        // Hosts of their own each get a machine.
        let mut p = Placement::default();
        p.seat("s1", "senders.s1", &cpu(2, None, None), 1).unwrap();
        let r = p.seat("receiver", "receiver", &cpu(4, None, None), 1).unwrap();
        assert_eq!((r[0].machine, r[0].core), (1, 0));
        assert_eq!(p.machine_cores, [2, 4]);
        assert_eq!(p.machine_hosts[1].0, "receiver");
    }

    #[test]
    fn a_shared_machine_with_two_core_counts_is_refused() {
        let mut p = Placement::default();
        p.seat("s1", "senders.s1", &cpu(2, None, Some("vm")), 1).unwrap();
        let e = p.seat("receiver", "receiver", &cpu(4, None, Some("vm")), 1).unwrap_err();
        assert_eq!(e.to_string(), "receiver.cpu.cores: hosts senders.s1 and receiver share machine 'vm' but give it 2 and 4 cores");
    }

    #[test]
    fn one_app_thread_puts_every_stream_on_one_core() {
        let mut p = Placement::default();
        let s = p.seat("s1", "senders.s1", &cpu(8, Some(1), None), 8).unwrap();
        assert!(s.iter().all(|x| x.core == 0));
    }
}
