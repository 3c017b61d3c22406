//! fatpipe-ccaload: registers fatpipe's BPF struct_ops congestion controls
//! through BPF links and holds them while fatpipe runs.
//!
//! ```text
//! fatpipe-ccaload --list
//! fatpipe-ccaload --tags NAME...
//! fatpipe-ccaload [--parent-pid PID] NAME|NAME=PATH...
//! fatpipe-ccaload --object NAME
//! fatpipe-ccaload --compile SRC OUT
//! ```
//!
//! `--object` and `--compile` serve the simulator (compile.rs): a port's
//! object on standard output, or a user's `.bpf.c` compiled as the ports are.
//!
//! `--list` prints one line per built-in port: name, source file, source
//! SHA-256 (tab-separated). `--tags` loads each named port into the kernel
//! without registering it (a `.struct_ops.link` map is registered only when
//! its link is made) and prints one line per program: port name, program
//! name, the kernel's program tag (a hash of the verified instructions with
//! map references zeroed, kernel/bpf/core.c bpf_prog_calc_tag()). `fatpipe
//! clean` compares them with a registration another tool left behind to
//! prove it is one of these ports. Otherwise each NAME (a port, or
//! NAME=PATH: the object file PATH, whose tcp_congestion_ops registers as
//! NAME, a user's CCA) is loaded and registered
//! with `bpf_map__attach_struct_ops` (a BPF link), `ready` is
//! printed once all are listed in tcp_available_congestion_control, and the
//! process waits until its standard input closes or its parent dies. A link
//! lives as long as its file descriptor: when this process exits for any
//! reason, SIGKILL included, the kernel unregisters the CCAs. With
//! `--parent-pid`, PR_SET_PDEATHSIG makes the kernel SIGKILL this process
//! when the thread that started it exits (as fatpipe-linkem does).

mod compile;

use fatpipe_bpfports as ports;

use libbpf_rs::{Link, MapCore, MapType, Object, ObjectBuilder};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::io::Write;
use std::time::{Duration, Instant};

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

struct Args {
    list: bool,
    tags: bool,
    parent_pid: Option<i32>,
    names: Vec<String>,
    /// Objects from files (`NAME=PATH`): the name the object registers
    /// (its tcp_congestion_ops.name, which the caller read) and its bytes.
    files: Vec<Source>,
}

/// An object to register: one of the built-in ports, or a file.
struct Source {
    name: String,
    file: String,
    object: Vec<u8>,
    /// A built-in port's struct_ops map carries its name; a user's need not.
    map_named_as_cca: bool,
}

impl Source {
    fn port(p: &ports::Port) -> Source {
        Source { name: p.name.to_string(), file: p.file.to_string(), object: p.object.to_vec(), map_named_as_cca: true }
    }
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut args = Args { list: false, tags: false, parent_pid: None, names: Vec::new(), files: Vec::new() };
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--list" => args.list = true,
            "--tags" => args.tags = true,
            "--parent-pid" => {
                let v = it.next().ok_or("--parent-pid needs a process id")?;
                let pid: i32 = v.parse().map_err(|_| format!("--parent-pid: not a process id: {v:?}"))?;
                if pid <= 1 {
                    return Err(format!("--parent-pid must be a process id > 1, got {pid}"));
                }
                args.parent_pid = Some(pid);
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s:?}")),
            s if s.contains('=') => {
                let (name, path) = s.split_once('=').expect("contains =");
                if name.is_empty() || name.len() >= 16 {
                    return Err(format!("{s:?}: NAME=PATH needs the CCA's name (1 to 15 bytes, TCP_CA_NAME_MAX)"));
                }
                let object = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
                if !args.names.iter().any(|n| n == name) {
                    args.names.push(name.to_string());
                    args.files.push(Source { name: name.to_string(), file: path.to_string(), object, map_named_as_cca: false });
                }
            }
            s => {
                if ports::find(s).is_none() {
                    let have: Vec<&str> = ports::PORTS.iter().map(|p| p.name).collect();
                    return Err(format!("no BPF port named {s:?} (built: {})", have.join(" ")));
                }
                if !args.names.iter().any(|n| n == s) {
                    args.names.push(s.to_string());
                }
            }
        }
    }
    if !args.list && args.names.is_empty() {
        return Err("usage: fatpipe-ccaload --list | --tags NAME... | [--parent-pid PID] NAME|NAME=PATH...".into());
    }
    Ok(args)
}

fn available() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE).unwrap_or_default().split_whitespace().map(str::to_string).collect()
}

/// Loads one port into the kernel (programs verified, struct_ops map
/// created, nothing registered yet).
fn load(port: &Source) -> Result<Object, String> {
    let open = ObjectBuilder::default()
        .open_memory(&port.object)
        .map_err(|e| format!("{}: cannot open the BPF object: {e}", port.file))?;
    open.load().map_err(|e| format!("{}: the kernel refused the BPF object: {e}", port.file))
}

/// `--tags`: each program of the loaded port with its kernel tag.
fn print_tags(port: &Source) -> Result<(), String> {
    let obj = load(port)?;
    for prog in obj.progs() {
        let tag: String = program_tag(prog.as_fd().as_raw_fd())
            .map_err(|e| format!("{}: cannot read program info: {e}", port.file))?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        println!("{}\t{}\t{tag}", port.name, prog.name().to_string_lossy());
    }
    Ok(())
}

/// The kernel's tag of a loaded program (bpf(BPF_OBJ_GET_INFO_BY_FD)).
fn program_tag(fd: RawFd) -> Result<[u8; 8], std::io::Error> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: info is a bpf_prog_info of the stated length.
    let rc = unsafe { libbpf_sys::bpf_obj_get_info_by_fd(fd, (&mut info as *mut libbpf_sys::bpf_prog_info).cast(), &mut len) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(-rc));
    }
    Ok(info.tag)
}

/// Loads one port and registers its struct_ops map through a link.
fn register(port: &Source) -> Result<(Object, Vec<Link>), String> {
    let mut obj = load(port)?;
    let mut links = Vec::new();
    for mut map in obj.maps_mut() {
        if map.map_type() != MapType::StructOps {
            continue;
        }
        if port.map_named_as_cca && map.name() != port.name.as_str() {
            return Err(format!("{}: struct_ops {:?} must be named {:?} like its file", port.file, map.name(), port.name));
        }
        let link = map.attach_struct_ops().map_err(|e| format!("{}: cannot register {:?}: {e}", port.file, port.name))?;
        links.push(link);
    }
    if links.is_empty() {
        return Err(format!("{}: no .struct_ops.link map", port.file));
    }
    Ok((obj, links))
}

fn parent_alive(parent_pid: i32) -> bool {
    // SAFETY: getppid has no preconditions.
    unsafe { libc::getppid() == parent_pid }
}

/// Die with the thread that started us (prctl(2) PR_SET_PDEATHSIG); if the
/// parent is already gone we were reparented, and getppid() says so.
fn die_with_parent(parent_pid: i32) -> Result<(), String> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(format!("prctl(PR_SET_PDEATHSIG): {}", std::io::Error::last_os_error()));
    }
    if !parent_alive(parent_pid) {
        return Err(format!("parent {parent_pid} is gone"));
    }
    Ok(())
}

/// Waits until stdin reaches end of file (or errors), or the parent dies.
fn hold(parent_pid: Option<i32>) {
    let mut buf = [0u8; 256];
    loop {
        let mut pfd = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, 1000) };
        if let Some(pid) = parent_pid {
            if !parent_alive(pid) {
                return;
            }
        }
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if n > 0 {
            if pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 && pfd.revents & libc::POLLIN == 0 {
                return;
            }
            // SAFETY: reading into a local buffer of its stated length.
            let r = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if r <= 0 {
                return;
            }
        }
    }
}

fn run(argv: &[String]) -> Result<(), String> {
    match argv {
        [flag, name] if flag == "--object" => return compile::object(name),
        [flag, src, out] if flag == "--compile" => return compile::compile(src.as_ref(), out.as_ref()),
        [flag, ..] if flag == "--object" || flag == "--compile" => {
            return Err("usage: fatpipe-ccaload --object NAME | --compile SRC OUT".into())
        }
        _ => {}
    }
    let args = parse_args(argv)?;
    if args.list {
        for p in ports::PORTS {
            println!("{}\t{}\t{}", p.name, p.file, p.source_sha256);
        }
        if !ports::NOT_BUILT.is_empty() {
            eprintln!("fatpipe-ccaload: not built: {}", ports::NOT_BUILT);
        }
        return Ok(());
    }
    if args.tags {
        for name in &args.names {
            print_tags(&Source::port(ports::find(name).expect("checked by parse_args")))?;
        }
        return Ok(());
    }
    if let Some(pid) = args.parent_pid {
        die_with_parent(pid)?;
    }
    let before = available();
    if let Some(taken) = args.names.iter().find(|n| before.contains(n)) {
        return Err(format!("a CCA named {taken:?} is already registered (the kernel's own, or another program's); \
                            fatpipe registers its port only where the kernel lacks the CCA"));
    }
    let mut held = Vec::new();
    for name in &args.names {
        let source = match args.files.iter().find(|f| &f.name == name) {
            Some(f) => Source { name: f.name.clone(), file: f.file.clone(), object: f.object.clone(), map_named_as_cca: false },
            None => Source::port(ports::find(name).expect("checked by parse_args")),
        };
        held.push(register(&source)?);
    }
    // tcp_register_congestion_control() has listed them once the link exists;
    // check rather than assume.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = available();
        if args.names.iter().all(|n| now.contains(n)) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("registered {} but {AVAILABLE} does not list them: {}", args.names.join(" "), now.join(" ")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    hold(args.parent_pid);
    drop(held); // closing the links unregisters the CCAs
    Ok(())
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&argv) {
        eprintln!("fatpipe-ccaload: {e}");
        std::process::exit(1);
    }
}
