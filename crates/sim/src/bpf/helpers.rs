//! What a BPF congestion control may call, as the simulator provides it:
//! the helpers Linux offers struct_ops tcp_congestion_ops programs
//! (net/ipv4/bpf_tcp_ca.c bpf_tcp_ca_get_func_proto(), and the base
//! helpers of kernel/bpf/helpers.c bpf_base_func_proto()) that a
//! congestion control uses, the kfuncs of bpf_tcp_ca_check_kfunc_ids
//! (tcp_slow_start, tcp_cong_avoid_ai, tcp_reno_*), and the kernel
//! configuration values a program may read as `__kconfig` externs. The
//! kfuncs run the simulator's own implementations of those functions on
//! the connection (cc/mod.rs, cc/reno.rs), through the socket image.

use super::memory::{Fault, Memory};
use super::object::SOCK_BASE;
use super::sock_image;
use super::vm::Calls;
use crate::cc::jiffies::HZ;
use crate::cc::prandom::Prandom;
use super::cca;
use super::sock_layout::{ACK_IN_FLIGHT, ACK_PKTS_ACKED, ACK_RTT_US, ACK_SAMPLE_SIZE};
use crate::cc::{reno, AckSample, ConnState, CongestionControl, RateSample};
use crate::units::Time;

/// Helper numbers (include/uapi/linux/bpf.h, ___BPF_FUNC_MAPPER).
pub const KTIME_GET_NS: i32 = 5;
pub const TRACE_PRINTK: i32 = 6;
pub const GET_PRANDOM_U32: i32 = 7;
pub const GET_SMP_PROCESSOR_ID: i32 = 8;
pub const SETSOCKOPT: i32 = 49;
pub const TCP_SEND_ACK: i32 = 116;
pub const JIFFIES64: i32 = 118;
pub const KTIME_GET_BOOT_NS: i32 = 125;
pub const KTIME_GET_COARSE_NS: i32 = 160;
pub const KTIME_GET_TAI_NS: i32 = 208;

/// The helpers the simulator provides, with their names.
pub const HELPERS: &[(i32, &str)] = &[
    (KTIME_GET_NS, "bpf_ktime_get_ns"),
    (TRACE_PRINTK, "bpf_trace_printk"),
    (GET_PRANDOM_U32, "bpf_get_prandom_u32"),
    (GET_SMP_PROCESSOR_ID, "bpf_get_smp_processor_id"),
    (SETSOCKOPT, "bpf_setsockopt"),
    (TCP_SEND_ACK, "bpf_tcp_send_ack"),
    (JIFFIES64, "bpf_jiffies64"),
    (KTIME_GET_BOOT_NS, "bpf_ktime_get_boot_ns"),
    (KTIME_GET_COARSE_NS, "bpf_ktime_get_coarse_ns"),
    (KTIME_GET_TAI_NS, "bpf_ktime_get_tai_ns"),
];

/// The kfuncs, numbered by their place here: bpf_tcp_ca_check_kfunc_ids
/// (net/ipv4/bpf_tcp_ca.c), then the CUBIC and DCTCP functions their files
/// register as kfuncs (tcp_cubic_check_kfunc_ids, tcp_dctcp_check_kfunc_ids,
/// tcp_bbr_check_kfunc_ids; bbr_sndbuf_expand is not provided: the
/// simulator does not model send-buffer expansion).
pub const KFUNCS: &[&str] = &[
    "tcp_slow_start",
    "tcp_cong_avoid_ai",
    "tcp_reno_cong_avoid",
    "tcp_reno_ssthresh",
    "tcp_reno_undo_cwnd",
    "cubictcp_init",
    "cubictcp_recalc_ssthresh",
    "cubictcp_cong_avoid",
    "cubictcp_state",
    "cubictcp_cwnd_event",
    "cubictcp_acked",
    "dctcp_init",
    "dctcp_update_alpha",
    "dctcp_cwnd_event",
    "dctcp_ssthresh",
    "dctcp_cwnd_undo",
    "dctcp_state",
    "bbr_init",
    "bbr_main",
    "bbr_undo_cwnd",
    "bbr_cwnd_event",
    "bbr_ssthresh",
    "bbr_min_tso_segs",
    "bbr_set_state",
];

/// The kfunc number of `name`.
pub fn kfunc_id(name: &str) -> Option<i32> {
    KFUNCS.iter().position(|k| *k == name).map(|i| i as i32)
}

/// The simulated kernel's configuration: HZ is the simulator's jiffy
/// (cc/jiffies.rs), so a program's jiffies arithmetic matches the native
/// algorithms'; LINUX_KERNEL_VERSION is libbpf's special extern, the
/// kernel whose TCP the simulator follows (6.18).
pub const KCONFIG: &[(&str, u64)] = &[("CONFIG_HZ", HZ), ("LINUX_KERNEL_VERSION", (6 << 16) | (18 << 8))];

/// The value of `__kconfig` extern `name`.
pub fn kconfig_value(name: &str) -> Option<u64> {
    KCONFIG.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// SOL_TCP and TCP_CONGESTION (include/uapi/linux/tcp.h).
const SOL_TCP: u64 = 6;
const TCP_CONGESTION: u64 = 13;
/// TCP_CA_NAME_MAX.
const TCP_CA_NAME_MAX: u64 = 16;
const ENOENT: i64 = 2;
const EINVAL: i64 = 22;
const EOPNOTSUPP: i64 = 95;

/// The connection a hook runs on: what its helpers and kfuncs reach.
pub struct HookCalls<'a> {
    pub tp: &'a mut ConnState,
    pub rng: &'a mut Prandom,
    /// Set by bpf_setsockopt(TCP_CONGESTION): the algorithm to switch to
    /// when the hook returns (tcp_set_congestion_control()).
    pub switch_to: &'a mut Option<String>,
    /// The kernel algorithm behind the cubictcp_* and dctcp_* kfuncs:
    /// the simulator's own CUBIC or DCTCP, whose state lives here rather
    /// than in icsk_ca_priv (a program calling them leaves that area to
    /// them in the kernel too).
    pub kernel_cca: &'a mut Option<Box<dyn CongestionControl>>,
    /// The connection's seed, for a kernel algorithm that draws random
    /// numbers (BBR's cycle phase).
    pub seed: u64,
    /// The rate sample of the cong_control call under way (bbr_main's).
    pub rate_sample: Option<&'a RateSample>,
}

fn neg(errno: i64) -> u64 {
    (-errno) as u64
}

impl HookCalls<'_> {
    /// Runs `f` on the kernel algorithm `family` (built on first use) and
    /// the connection, as [`on_image`].
    fn on_kernel_cca<R>(
        &mut self,
        family: &'static str,
        sk: u64,
        mem: &mut Memory,
        f: impl FnOnce(&mut dyn CongestionControl, &mut ConnState) -> R,
    ) -> Result<R, Fault> {
        if self.kernel_cca.as_ref().is_none_or(|c| c.name() != family) {
            *self.kernel_cca = crate::cc::by_name_seeded(family, self.seed);
        }
        let cc = self.kernel_cca.as_mut().expect("the registry has cubic, dctcp and bbr");
        on_image(self.tp, sk, mem, |tp| f(cc.as_mut(), tp))
    }

    /// The struct ack_sample at `addr`.
    fn ack_sample(mem: &Memory, addr: u64) -> Result<AckSample, Fault> {
        let b = mem.read_bytes(addr, ACK_SAMPLE_SIZE as usize)?;
        let word = |at: u32| u32::from_le_bytes(b[at as usize..at as usize + 4].try_into().expect("4 bytes"));
        let rtt_us = word(ACK_RTT_US) as i32;
        Ok(AckSample {
            pkts_acked: word(ACK_PKTS_ACKED),
            rtt: (rtt_us >= 0).then(|| Time::from_micros(rtt_us as u64)),
            in_flight: word(ACK_IN_FLIGHT),
        })
    }
}

impl Calls for HookCalls<'_> {
    fn helper(&mut self, id: i32, a: [u64; 5], mem: &mut Memory) -> Result<u64, Fault> {
        let now = self.tp.now;
        Ok(match id {
            KTIME_GET_NS | KTIME_GET_BOOT_NS | KTIME_GET_TAI_NS => sock_image::kernel_ns(now),
            // ktime_get_coarse_ns(): the time of the last tick.
            KTIME_GET_COARSE_NS => {
                let tick = 1_000_000_000 / HZ;
                sock_image::kernel_ns(now) / tick * tick
            }
            JIFFIES64 => sock_image::kernel_jiffies(now),
            GET_PRANDOM_U32 => self.rng.next_u32() as u64,
            GET_SMP_PROCESSOR_ID => 0,
            // The output has nowhere to go; the length is checked as the
            // kernel checks it.
            TRACE_PRINTK => {
                mem.read_bytes(a[0], a[1] as usize)?;
                0
            }
            // The simulated sender receives no data to acknowledge.
            TCP_SEND_ACK => 0,
            SETSOCKOPT => {
                if a[1] != SOL_TCP || a[2] != TCP_CONGESTION {
                    return Ok(neg(EOPNOTSUPP));
                }
                let len = a[4].min(TCP_CA_NAME_MAX) as usize;
                let raw = mem.read_bytes(a[3], len)?;
                let name = String::from_utf8_lossy(raw.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
                if name.is_empty() {
                    return Ok(neg(EINVAL));
                }
                if crate::cc::lookup(&name).is_none() {
                    return Ok(neg(ENOENT));
                }
                *self.switch_to = Some(name);
                0
            }
            core_poison if core_poison == super::core::POISON_HELPER => {
                return Err(Fault { what: "reached an access CO-RE could not relocate".into() })
            }
            _ => return Err(Fault { what: format!("helper {id} is not provided") }),
        })
    }

    fn kfunc(&mut self, id: i32, a: [u64; 5], mem: &mut Memory) -> Result<u64, Fault> {
        match KFUNCS.get(id as usize).copied() {
            Some("tcp_slow_start") => on_image(self.tp, a[0], mem, |tp| tp.slow_start(a[1] as u32) as u64),
            Some("tcp_cong_avoid_ai") => on_image(self.tp, a[0], mem, |tp| {
                tp.cong_avoid_ai(a[1] as u32, a[2] as u32);
                0
            }),
            Some("tcp_reno_cong_avoid") => on_image(self.tp, a[0], mem, |tp| {
                reno::Reno.cong_avoid(tp, a[2] as u32);
                0
            }),
            Some("tcp_reno_ssthresh") => on_image(self.tp, a[0], mem, |tp| reno::Reno.ssthresh(tp) as u64),
            Some("tcp_reno_undo_cwnd") => on_image(self.tp, a[0], mem, |tp| reno::Reno.undo_cwnd(tp) as u64),
            Some(name @ ("cubictcp_init" | "dctcp_init" | "bbr_init")) => {
                let family = family_of(name);
                self.on_kernel_cca(family, a[0], mem, |cc, tp| {
                    cc.init(tp);
                    0
                })
            }
            Some("cubictcp_recalc_ssthresh") => self.on_kernel_cca("cubic", a[0], mem, |cc, tp| cc.ssthresh(tp) as u64),
            Some("dctcp_ssthresh") => self.on_kernel_cca("dctcp", a[0], mem, |cc, tp| cc.ssthresh(tp) as u64),
            Some("cubictcp_cong_avoid") => self.on_kernel_cca("cubic", a[0], mem, |cc, tp| {
                cc.cong_avoid(tp, a[2] as u32);
                0
            }),
            Some(name @ ("cubictcp_state" | "dctcp_state" | "bbr_set_state")) => {
                let family = family_of(name);
                let state = cca::state_of(a[1] & 0xff).ok_or_else(|| Fault { what: format!("{name}: CA state {} does not exist", a[1]) })?;
                self.on_kernel_cca(family, a[0], mem, |cc, tp| {
                    cc.set_state(tp, state);
                    0
                })
            }
            Some(name @ ("cubictcp_cwnd_event" | "dctcp_cwnd_event" | "bbr_cwnd_event")) => {
                let family = family_of(name);
                match cca::event_of(a[1] & 0xffff_ffff) {
                    Some(ev) => self.on_kernel_cca(family, a[0], mem, |cc, tp| {
                        cc.cwnd_event(tp, ev);
                        0
                    }),
                    // The receiver's CE events: the simulator's receiver runs DCTCP's half.
                    None => Ok(0),
                }
            }
            Some("cubictcp_acked") => {
                let sample = Self::ack_sample(mem, a[1])?;
                self.on_kernel_cca("cubic", a[0], mem, |cc, tp| {
                    cc.pkts_acked(tp, &sample);
                    0
                })
            }
            Some("dctcp_update_alpha") => self.on_kernel_cca("dctcp", a[0], mem, |cc, tp| {
                cc.in_ack_event(tp, a[1] as u32);
                0
            }),
            Some("dctcp_cwnd_undo") => self.on_kernel_cca("dctcp", a[0], mem, |cc, tp| cc.undo_cwnd(tp) as u64),
            Some("bbr_undo_cwnd") => self.on_kernel_cca("bbr", a[0], mem, |cc, tp| cc.undo_cwnd(tp) as u64),
            Some("bbr_ssthresh") => self.on_kernel_cca("bbr", a[0], mem, |cc, tp| cc.ssthresh(tp) as u64),
            Some("bbr_min_tso_segs") => self.on_kernel_cca("bbr", a[0], mem, |cc, tp| cc.min_tso_segs(tp) as u64),
            Some("bbr_main") => {
                // bbr_main(sk, ack, flag, rs): the sample cong_control got.
                let rs = match self.rate_sample {
                    Some(rs) if a[3] == super::object::RATE_SAMPLE_BASE => *rs,
                    _ => return Err(Fault { what: "bbr_main: rs is not the rate sample cong_control was given".into() }),
                };
                self.on_kernel_cca("bbr", a[0], mem, |cc, tp| {
                    cc.cong_control(tp, &rs);
                    0
                })
            }
            _ => Err(Fault { what: format!("kfunc {id} is not provided") }),
        }
    }
}

/// Runs `f` on connection `tp` as the socket image at `sk` holds it: the
/// program's writes so far are read into `tp`, `f` runs the simulator's
/// own code, and the result is written back for the program to read.
fn on_image<R>(tp: &mut ConnState, sk: u64, mem: &mut Memory, f: impl FnOnce(&mut ConnState) -> R) -> Result<R, Fault> {
    if sk != SOCK_BASE {
        return Err(Fault { what: format!("a kfunc was passed {sk:#x}, not the socket ({SOCK_BASE:#x})") });
    }
    sock_image::read(mem, tp);
    let r = f(tp);
    sock_image::write(mem, tp, true);
    Ok(r)
}

/// The kernel algorithm a kfunc belongs to, by its name's prefix.
fn family_of(kfunc: &str) -> &'static str {
    if kfunc.starts_with("cubictcp_") {
        "cubic"
    } else if kfunc.starts_with("dctcp_") {
        "dctcp"
    } else {
        "bbr"
    }
}
