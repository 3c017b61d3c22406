//! Command-line arguments of fatpipe-linkem (an argument list, no shell).
//!
//! ```text
//! fatpipe-linkem --queue num=0,delay_s=0.01,group_loss=5201:0:1e-3/5202:1:4e-3,name=fwd \
//!                --queue num=1,delay_s=0.01,name=rev \
//!                [--seed 1] [--stats PATH] [--stats-interval-s 1]
//!                [--maxlen 1000000] [--rcvbuf-bytes 268435456] [--copy-range 128] [--gso]
//!                [--threads split-apart|per-queue|one]
//! ```

use std::fmt;

use fatpipe_sim::path::{Aqm, CeThreshold};
use fatpipe_sim::units::Time;

use crate::moving::{Moves, MovingPlan};
use crate::units::MssMap;
use crate::worker::Threads;

/// One direction of the path: an NFQUEUE number, its one-way delay and loss.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueSpec {
    pub num: u16,
    pub name: String,
    /// Constant one-way delay added to every packet of this queue.
    pub delay_ns: u64,
    /// Probability that a TCP segment carrying payload is dropped (one
    /// that belongs to no flow group of `group_loss`).
    pub loss: f64,
    /// Each flow group's own loss of TCP segments carrying payload, by the
    /// group's port (rng.rs: the simulator's stage of that group).
    pub group_loss: Vec<GroupLoss>,
    /// Bottleneck rate after the delay (0 = no bottleneck in this direction).
    pub rate_bps: f64,
    /// Bottleneck buffer of frames (tail drop when queued + arriving bytes
    /// would exceed it; an empty queue always accepts a packet).
    pub buffer_bytes: u64,
    /// The bottleneck's discipline: drop-tail, or a CE threshold K
    /// (`ce_k_packets`, `ce_k_bytes` or `ce_k_s`), the simulator's
    /// [`Aqm::CeThreshold`] rule. Needs a bottleneck (`rate_bps`).
    pub aqm: Aqm,
    /// Unit mode (units.rs): GSO packets are queued whole and sent to this
    /// split queue when a segment inside them is lost, dropped or marked.
    pub split_queue: Option<u16>,
    /// Unit mode: each flow's segment payload size (its GSO size).
    pub mss: MssMap,
    /// The direction of the path's dynamics (`--dynamics`) this queue
    /// applies: `moves=data` or `moves=ack:K`; None: it does not move.
    pub moves: Option<Moves>,
}

impl QueueSpec {
    /// Whether this queue marks CE (it then copies whole packets, so that
    /// it can hand a marked one back with its verdict).
    pub fn marks(&self) -> bool {
        matches!(self.aqm, Aqm::CeThreshold(_))
    }
}

/// The random loss of one flow group's data segments: those whose source
/// or destination port is `port` (the receiver's listening port of the
/// group), each lost with probability `p` drawn from the simulator's stream
/// of group `group`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupLoss {
    pub port: u16,
    pub group: u16,
    pub p: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub queues: Vec<QueueSpec>,
    pub seed: u64,
    pub stats_path: Option<String>,
    pub stats_interval_ns: u64,
    /// NFQA_CFG_QUEUE_MAXLEN: packets the kernel holds for us per queue.
    pub maxlen: u32,
    /// SO_RCVBUFFORCE of each netlink socket.
    pub rcvbuf_bytes: usize,
    /// Bytes of each packet copied to us (IP + TCP headers suffice).
    pub copy_range: u32,
    /// Set NFQA_CFG_F_GSO: accept GSO super-packets unsegmented (loss would
    /// then hit 64 KB at once; off by default).
    pub gso: bool,
    /// Release quantum: linkem wakes at most once per quantum and releases
    /// every packet due within half a quantum of the wake-up, so each packet
    /// leaves within ±quantum/2 of its due time. None = the default,
    /// `default_batch_ns()` of the shortest queue delay.
    pub batch_ns: Option<u64>,
    /// SCHED_FIFO priority (0 = leave the scheduler alone). A delay line
    /// preempted by other work is late, so the kernel backend asks for one.
    pub rt_priority: i32,
    /// Longest sleep while packets are held and arrivals are timestamped
    /// by the kernel (bounds how late new arrivals are read).
    pub max_sleep_ns: u64,
    /// The process that started linkem: linkem exits when it dies
    /// (PR_SET_PDEATHSIG, and getppid() checked in the loop), so a killed
    /// fatpipe leaves no delay line running. None = live on.
    pub parent_pid: Option<i32>,
    /// How the queues are shared out among threads (worker.rs).
    pub threads: Threads,
    /// The path's dynamics (moving.rs), applied by the queues with `moves=`.
    pub dynamics: Option<MovingPlan>,
    /// Where fatpipe writes the run's time zero before sending SIGUSR2.
    pub origin_file: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

pub const USAGE: &str = "usage: fatpipe-linkem --queue num=N,delay_s=SECONDS[,loss=P][,name=NAME] \
[--queue ...] [--seed N] [--stats PATH] [--stats-interval-s S] [--maxlen N] \
[--rcvbuf-bytes N] [--copy-range N] [--batch-us N] [--rt-priority N] [--parent-pid PID] [--gso] \
[--threads split-apart|per-queue|one] [--dynamics FILE --origin-file FILE]\n\
  queue keys: num, delay_s, loss, group_loss (PORT:GROUP:P/PORT:GROUP:P, each flow group's loss by its\n\
  port; loss then covers the other packets), name, rate_bps (bottleneck after the delay), buffer_bytes,\n\
  and at most one CE threshold of that bottleneck: ce_k_packets, ce_k_bytes, ce_k_s;\n\
  unit mode (GSO packets whole unless a segment is lost, dropped or marked): units_split (the split\n\
  queue's number), mss (PORT:BYTES/PORT:BYTES, segment payload by flow port), default_mss;\n\
  moves (data, or ack:K: the direction of --dynamics this queue applies)";

/// Parses `5201:1448/5202:8948` (segment payload bytes by TCP port).
fn parse_mss_map(text: &str) -> Result<Vec<(u16, u32)>, ArgError> {
    text.split('/')
        .map(|pair| {
            let (port, mss) = pair
                .split_once(':')
                .ok_or_else(|| ArgError(format!("--queue mss: expected PORT:BYTES, got {pair:?}")))?;
            let mss = parse_num::<u32>("--queue mss", mss)?;
            if mss == 0 {
                return Err(ArgError(format!("--queue mss: a segment size must be > 0, got {pair:?}")));
            }
            Ok((parse_num::<u16>("--queue mss port", port)?, mss))
        })
        .collect()
}

/// Parses `5201:0:1e-3/5202:1:4e-3` (port, flow group, loss probability).
fn parse_group_loss(text: &str) -> Result<Vec<GroupLoss>, ArgError> {
    let groups = text
        .split('/')
        .map(|item| {
            let [port, group, p] = item.split(':').collect::<Vec<_>>()[..] else {
                return Err(ArgError(format!("--queue group_loss: expected PORT:GROUP:P, got {item:?}")));
            };
            let p = parse_num::<f64>("--queue group_loss probability", p)?;
            if !(0.0..=1.0).contains(&p) {
                return Err(ArgError(format!("--queue group_loss: a loss probability must be in [0, 1], got {item:?}")));
            }
            Ok(GroupLoss {
                port: parse_num::<u16>("--queue group_loss port", port)?,
                group: parse_num::<u16>("--queue group_loss group", group)?,
                p,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, g) in groups.iter().enumerate() {
        if groups[..i].iter().any(|h| h.port == g.port || h.group == g.group) {
            return Err(ArgError(format!(
                "--queue group_loss {text:?}: each port and each group may appear once (port {}, group {})",
                g.port, g.group
            )));
        }
    }
    Ok(groups)
}

fn parse_num<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, ArgError> {
    text.parse::<T>()
        .map_err(|_| ArgError(format!("{what}: cannot parse {text:?}")))
}

/// Parses `num=0,delay_s=0.01,loss=1e-3,name=fwd`.
pub fn parse_queue(text: &str) -> Result<QueueSpec, ArgError> {
    let mut num = None;
    let mut delay_s = None;
    let mut loss = 0.0;
    let mut group_loss = Vec::new();
    let mut name = None;
    let mut rate_bps = 0.0;
    let mut buffer_bytes = u64::MAX;
    let mut thresholds = Vec::new();
    let mut split_queue = None;
    let mut mss = MssMap::default();
    let mut moves = None;
    for part in text.split(',') {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| ArgError(format!("--queue {text:?}: expected key=value, got {part:?}")))?;
        match key {
            "num" => num = Some(parse_num::<u16>("--queue num", value)?),
            "delay_s" => delay_s = Some(parse_num::<f64>("--queue delay_s", value)?),
            "loss" => loss = parse_num::<f64>("--queue loss", value)?,
            "group_loss" => group_loss = parse_group_loss(value)?,
            "name" => name = Some(value.to_string()),
            "rate_bps" => rate_bps = parse_num::<f64>("--queue rate_bps", value)?,
            "buffer_bytes" => buffer_bytes = parse_num::<u64>("--queue buffer_bytes", value)?,
            "units_split" => split_queue = Some(parse_num::<u16>("--queue units_split", value)?),
            "mss" => mss.by_port = parse_mss_map(value)?,
            "default_mss" => mss.default_mss = parse_num::<u32>("--queue default_mss", value)?,
            "moves" => {
                moves = Some(match value.split_once(':') {
                    None if value == "data" => Moves::Data,
                    Some(("ack", k)) => Moves::Ack(parse_num::<u16>("--queue moves=ack:K", k)?),
                    _ => return Err(ArgError(format!("--queue {text:?}: moves must be data or ack:K, got {value:?}"))),
                })
            }
            // The simulator's units (scenario.rs): packets clamped to u32,
            // bytes of frames, seconds rounded to the nanosecond.
            "ce_k_packets" => thresholds
                .push(CeThreshold::Packets(parse_num::<u64>("--queue ce_k_packets", value)?.min(u32::MAX as u64) as u32)),
            "ce_k_bytes" => thresholds.push(CeThreshold::Bytes(parse_num::<u64>("--queue ce_k_bytes", value)?)),
            "ce_k_s" => {
                let s = parse_num::<f64>("--queue ce_k_s", value)?;
                if !(s >= 0.0 && s.is_finite()) {
                    return Err(ArgError(format!("--queue {text:?}: ce_k_s must be a time >= 0, got {value:?}")));
                }
                thresholds.push(CeThreshold::Delay(Time::from_secs_f64(s)));
            }
            _ => return Err(ArgError(format!("--queue {text:?}: unknown key {key:?}"))),
        }
    }
    let num = num.ok_or_else(|| ArgError(format!("--queue {text:?}: num= is required")))?;
    let delay_s = delay_s.ok_or_else(|| ArgError(format!("--queue {text:?}: delay_s= is required")))?;
    if !(0.0..=10.0).contains(&delay_s) {
        return Err(ArgError(format!("--queue {text:?}: delay_s must be in [0, 10]")));
    }
    if !(0.0..=1.0).contains(&loss) {
        return Err(ArgError(format!("--queue {text:?}: loss must be in [0, 1]")));
    }
    if split_queue == Some(num) {
        return Err(ArgError(format!("--queue {text:?}: units_split must name another queue than num")));
    }
    if split_queue.is_some() && mss.default_mss == 0 {
        return Err(ArgError(format!("--queue {text:?}: unit mode (units_split) needs default_mss > 0")));
    }
    let aqm = match thresholds[..] {
        [] => Aqm::DropTail,
        [k] if rate_bps > 0.0 => Aqm::CeThreshold(k),
        [_] => return Err(ArgError(format!("--queue {text:?}: a CE threshold needs a bottleneck (rate_bps=)"))),
        _ => {
            return Err(ArgError(format!(
                "--queue {text:?}: give one CE threshold (ce_k_packets, ce_k_bytes or ce_k_s), got {}",
                thresholds.len()
            )))
        }
    };
    Ok(QueueSpec {
        num,
        name: name.unwrap_or_else(|| format!("q{num}")),
        delay_ns: (delay_s * 1e9).round() as u64,
        loss,
        group_loss,
        rate_bps,
        buffer_bytes,
        aqm,
        split_queue,
        mss,
        moves,
    })
}

/// Default release quantum: 1 % of the shortest one-way delay, so release
/// timing errs by at most 0.5 % of any queue's delay, within 10–200 µs (each
/// wake-up costs tens of µs of CPU on a virtual machine; 200 µs caps them at
/// 5,000 per second).
pub fn default_batch_ns(queues: &[QueueSpec]) -> u64 {
    let shortest = queues.iter().map(|q| q.delay_ns).filter(|&d| d > 0).min().unwrap_or(0);
    (shortest / 100).clamp(10_000, 200_000)
}

impl Args {
    pub fn batch_ns(&self) -> u64 {
        self.batch_ns.unwrap_or_else(|| default_batch_ns(&self.queues))
    }
}

pub fn parse_args(argv: &[String]) -> Result<Args, ArgError> {
    let mut args = Args {
        queues: Vec::new(),
        seed: 1,
        stats_path: None,
        stats_interval_ns: 1_000_000_000,
        maxlen: 1_000_000,
        rcvbuf_bytes: 256 << 20,
        copy_range: 128,
        gso: false,
        batch_ns: None,
        rt_priority: 0,
        max_sleep_ns: 1_000_000,
        parent_pid: None,
        threads: Threads::SplitApart,
        dynamics: None,
        origin_file: None,
    };
    let mut i = 0;
    while i < argv.len() {
        let flag = argv[i].as_str();
        if flag == "--gso" {
            args.gso = true;
            i += 1;
            continue;
        }
        let value = argv
            .get(i + 1)
            .ok_or_else(|| ArgError(format!("{flag}: missing value")))?;
        match flag {
            "--queue" => args.queues.push(parse_queue(value)?),
            "--seed" => args.seed = parse_num("--seed", value)?,
            "--stats" => args.stats_path = Some(value.clone()),
            "--stats-interval-s" => {
                let s: f64 = parse_num("--stats-interval-s", value)?;
                args.stats_interval_ns = (s * 1e9) as u64;
            }
            "--maxlen" => args.maxlen = parse_num("--maxlen", value)?,
            "--rcvbuf-bytes" => args.rcvbuf_bytes = parse_num("--rcvbuf-bytes", value)?,
            "--batch-us" => args.batch_ns = Some(parse_num::<u64>("--batch-us", value)? * 1000),
            "--rt-priority" => args.rt_priority = parse_num("--rt-priority", value)?,
            "--copy-range" => args.copy_range = parse_num("--copy-range", value)?,
            "--threads" => {
                args.threads = Threads::parse(value).ok_or_else(|| {
                    ArgError(format!("--threads: expected split-apart, per-queue or one, got {value:?}"))
                })?
            }
            "--dynamics" => args.dynamics = Some(MovingPlan::load(value)?),
            "--origin-file" => args.origin_file = Some(value.clone()),
            "--parent-pid" => {
                let pid: i32 = parse_num("--parent-pid", value)?;
                if pid <= 1 {
                    return Err(ArgError(format!("--parent-pid must be a process id > 1, got {pid}")));
                }
                args.parent_pid = Some(pid);
            }
            _ => return Err(ArgError(format!("unknown flag {flag:?}\n{USAGE}"))),
        }
        i += 2;
    }
    if args.queues.is_empty() {
        return Err(ArgError(format!("at least one --queue is required\n{USAGE}")));
    }
    let mut nums: Vec<u16> = args.queues.iter().flat_map(|q| [Some(q.num), q.split_queue]).flatten().collect();
    let count = nums.len();
    nums.sort_unstable();
    nums.dedup();
    if nums.len() != count {
        return Err(ArgError("--queue numbers (num and units_split) must be distinct".into()));
    }
    let moving = args.queues.iter().any(|q| q.moves.is_some());
    if moving != args.dynamics.is_some() || args.dynamics.is_some() != args.origin_file.is_some() {
        return Err(ArgError("--dynamics, --origin-file and a queue with moves= go together".into()));
    }
    if args.queues.iter().filter(|q| q.moves == Some(Moves::Data)).count() > 1 {
        return Err(ArgError("one queue at most has moves=data".into()));
    }
    if args.copy_range < 60 {
        return Err(ArgError("--copy-range must be >= 60 (IP + TCP headers)".into()));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_two_queues_with_delay_and_loss() {
        let a = parse_args(&argv(&[
            "--queue", "num=0,delay_s=0.01,loss=1e-3,name=fwd",
            "--queue", "num=1,delay_s=0.01",
            "--seed", "7", "--stats", "/tmp/s.json",
        ]))
        .unwrap();
        assert_eq!(a.queues.len(), 2);
        assert_eq!(a.queues[0].delay_ns, 10_000_000);
        assert_eq!(a.queues[0].loss, 1e-3);
        assert_eq!(a.queues[0].name, "fwd");
        assert_eq!(a.queues[1].name, "q1");
        assert_eq!(a.queues[1].loss, 0.0);
        assert_eq!(a.seed, 7);
        assert_eq!(a.stats_path.as_deref(), Some("/tmp/s.json"));
        assert!(!a.gso);
        assert_eq!(a.queues[0].rate_bps, 0.0);
        let q = parse_queue("num=2,delay_s=0,rate_bps=1e9,buffer_bytes=2500000").unwrap();
        assert_eq!(q.rate_bps, 1e9);
        assert_eq!(q.buffer_bytes, 2_500_000);
    }

    #[test]
    fn rejects_unknown_key_missing_value_and_bad_loss() {
        assert!(parse_queue("num=0,delay_s=0.01,jitter=1").is_err());
        assert!(parse_queue("num=0").is_err());
        assert!(parse_queue("num=0,delay_s=0.01,loss=2").is_err());
        assert!(parse_args(&argv(&["--seed"])).is_err());
        assert!(parse_args(&argv(&[])).is_err());
        assert!(parse_args(&argv(&["--queue", "num=0,delay_s=0", "--queue", "num=0,delay_s=0"])).is_err());
    }

    #[test]
    fn group_loss_gives_each_flow_groups_port_its_own_stream_and_probability() {
        let q = parse_queue("num=0,delay_s=0.01,group_loss=5201:0:1e-3/5202:1:0.25").unwrap();
        assert_eq!(
            q.group_loss,
            vec![GroupLoss { port: 5201, group: 0, p: 1e-3 }, GroupLoss { port: 5202, group: 1, p: 0.25 }]
        );
        assert_eq!(q.loss, 0.0, "the other packets pass unless loss= says otherwise");
        assert!(parse_queue("num=0,delay_s=0.01").unwrap().group_loss.is_empty());
        for bad in ["5201:0", "5201:0:2", "5201:0:x", "70000:0:0.1", "5201:0:0.1/5201:1:0.1", "5201:0:0.1/5202:0:0.1"] {
            let e = parse_queue(&format!("num=0,delay_s=0.01,group_loss={bad}")).unwrap_err();
            assert!(e.0.contains("group_loss"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_ce_threshold_is_read_in_the_simulators_units_and_needs_a_bottleneck() {
        let q = parse_queue("num=0,delay_s=0.01,rate_bps=1e8,buffer_bytes=500000,ce_k_packets=20").unwrap();
        assert_eq!(q.aqm, Aqm::CeThreshold(CeThreshold::Packets(20)));
        assert!(q.marks());
        let q = parse_queue("num=0,delay_s=0.01,rate_bps=1e8,ce_k_bytes=30000").unwrap();
        assert_eq!(q.aqm, Aqm::CeThreshold(CeThreshold::Bytes(30_000)));
        let q = parse_queue("num=0,delay_s=0.01,rate_bps=1e8,ce_k_s=0.0001").unwrap();
        assert_eq!(q.aqm, Aqm::CeThreshold(CeThreshold::Delay(Time::from_micros(100))));
        let q = parse_queue("num=0,delay_s=0.01,rate_bps=1e8").unwrap();
        assert_eq!(q.aqm, Aqm::DropTail);
        assert!(!q.marks());
        assert!(parse_queue("num=0,delay_s=0.01,ce_k_packets=20").is_err()); // no bottleneck
        assert!(parse_queue("num=0,delay_s=0.01,rate_bps=1e8,ce_k_packets=2,ce_k_bytes=3").is_err());
        assert!(parse_queue("num=0,delay_s=0.01,rate_bps=1e8,ce_k_s=-1").is_err());
    }

    #[test]
    fn unit_mode_names_a_distinct_split_queue_and_the_flows_segment_sizes() {
        let q = parse_queue("num=0,delay_s=0.01,units_split=9,mss=5201:1448/5202:8948,default_mss=1448").unwrap();
        assert_eq!(q.split_queue, Some(9));
        assert_eq!(q.mss.by_port, vec![(5201, 1448), (5202, 8948)]);
        assert_eq!(q.mss.default_mss, 1448);
        assert_eq!(parse_queue("num=0,delay_s=0.01").unwrap().split_queue, None);
        assert!(parse_queue("num=0,delay_s=0.01,units_split=0,default_mss=1448").is_err(), "itself");
        assert!(parse_queue("num=0,delay_s=0.01,units_split=9").is_err(), "no default_mss");
        assert!(parse_queue("num=0,delay_s=0.01,units_split=9,default_mss=1448,mss=5201").is_err());
        assert!(parse_queue("num=0,delay_s=0.01,units_split=9,default_mss=1448,mss=5201:0").is_err());
        let clash = ["--queue", "num=0,delay_s=0.01,units_split=1,default_mss=1448", "--queue", "num=1,delay_s=0.01"];
        assert!(parse_args(&argv(&clash)).is_err(), "the split queue is another queue's number");
    }

    #[test]
    fn a_moving_queue_names_its_direction_and_needs_the_dynamics_and_the_origin() {
        assert_eq!(parse_queue("num=0,delay_s=0.01,moves=data").unwrap().moves, Some(Moves::Data));
        assert_eq!(parse_queue("num=1,delay_s=0.01,moves=ack:2").unwrap().moves, Some(Moves::Ack(2)));
        assert_eq!(parse_queue("num=1,delay_s=0.01").unwrap().moves, None);
        for bad in ["up", "ack", "ack:x", "data:1"] {
            let e = parse_queue(&format!("num=0,delay_s=0.01,moves={bad}")).unwrap_err();
            assert!(e.0.contains("moves"), "{bad}: {e}");
        }
        let e = parse_args(&argv(&["--queue", "num=0,delay_s=0.01,moves=data"])).unwrap_err();
        assert!(e.0.contains("--dynamics"), "{e}");
    }

    #[test]
    fn release_quantum_is_one_percent_of_the_shortest_delay_within_bounds() {
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.01", "--queue", "num=1,delay_s=0.002"])).unwrap();
        assert_eq!(a.batch_ns(), 20_000);
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.05"])).unwrap();
        assert_eq!(a.batch_ns(), 200_000);
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.0001"])).unwrap();
        assert_eq!(a.batch_ns(), 10_000);
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.05", "--batch-us", "30"])).unwrap();
        assert_eq!(a.batch_ns(), 30_000);
    }

    #[test]
    fn parent_pid_is_optional_and_must_name_a_real_parent() {
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.01"])).unwrap();
        assert_eq!(a.parent_pid, None);
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.01", "--parent-pid", "4242"])).unwrap();
        assert_eq!(a.parent_pid, Some(4242));
        for bad in ["0", "1", "-5", "x"] {
            assert!(parse_args(&argv(&["--queue", "num=0,delay_s=0.01", "--parent-pid", bad])).is_err(), "{bad}");
        }
    }

    #[test]
    fn split_queues_have_their_own_threads_unless_asked_otherwise() {
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.01"])).unwrap();
        assert_eq!(a.threads, Threads::SplitApart);
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.01", "--threads", "per-queue"])).unwrap();
        assert_eq!(a.threads, Threads::PerQueue);
        let a = parse_args(&argv(&["--queue", "num=0,delay_s=0.01", "--threads", "one"])).unwrap();
        assert_eq!(a.threads, Threads::One);
        let e = parse_args(&argv(&["--queue", "num=0,delay_s=0.01", "--threads", "2"])).unwrap_err();
        assert!(e.0.contains("--threads") && e.0.contains("\"2\""), "{e}");
    }
}
