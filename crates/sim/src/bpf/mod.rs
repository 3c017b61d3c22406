//! BPF congestion controls in the simulator: the same struct_ops object
//! (`tcp_congestion_ops` compiled with `clang -target bpf`) that the
//! kernel backend registers runs here, on the simulator's TCP.
//!
//! * [`object`] loads the ELF object as libbpf would: code, global data,
//!   relocations, the struct_ops map; [`core`] relocates field accesses
//!   (CO-RE) against [`sock_layout`], the simulator's `struct tcp_sock`;
//!   [`verify`] checks the code before it runs.
//! * [`vm`] interprets it over [`memory`] (bounded regions, Linux's write
//!   permissions on the socket), calling [`helpers`] (helpers, kfuncs,
//!   kconfig).
//! * [`cca`] makes a loaded program one of the simulator's algorithms;
//!   [`sock_image`] moves the connection's state in and out.
//! * [`Catalog`] holds the programs a run names, by the name its flows use
//!   (`bpf:…`).

pub mod btf;
pub mod cca;
pub mod core;
pub mod helpers;
pub mod insn;
pub mod lockstep;
pub mod memory;
pub mod object;
pub mod sock_image;
pub mod sock_layout;
pub mod verify;
pub mod vm;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Why an object cannot be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub message: String,
}

impl LoadError {
    pub fn new(message: impl Into<String>) -> LoadError {
        LoadError { message: message.into() }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoadError {}

/// The prefix of a congestion control name that names a BPF object.
pub const PREFIX: &str = "bpf:";

/// The BPF programs of one run, by the name the run's flows give them.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    programs: BTreeMap<String, (Arc<object::Program>, &'static str)>,
    /// Programs to run in lockstep with a native algorithm (lockstep.rs),
    /// by key: the native algorithm's name.
    lockstep: BTreeMap<String, String>,
}

impl Catalog {
    /// Loads `elf` under `key` (a name starting with `bpf:`).
    pub fn add(&mut self, key: &str, elf: &[u8]) -> Result<(), LoadError> {
        if !key.starts_with(PREFIX) {
            return Err(LoadError::new(format!("{key:?}: a BPF congestion control's name starts with {PREFIX:?}")));
        }
        let program = object::Program::load(elf).map_err(|e| LoadError::new(format!("{key}: {e}")))?;
        // One leaked name per distinct registered name, so `name()` can
        // answer a &'static str as the native algorithms do.
        let name = intern(&program.name);
        self.programs.insert(key.to_string(), (Arc::new(program), name));
        Ok(())
    }

    /// A connection's instance of the program named `key`.
    pub fn build(&self, key: &str, seed: u64) -> Option<cca::BpfCca> {
        self.programs.get(key).map(|(p, name)| cca::BpfCca::new(Arc::clone(p), name, seed))
    }

    /// Runs the program named `key` in lockstep with the native algorithm
    /// `native` (lockstep.rs): a validation tool.
    pub fn lockstep_with(&mut self, key: &str, native: &str) {
        self.lockstep.insert(key.to_string(), native.to_string());
    }

    /// A connection's algorithm for `key`: the program, or the program in
    /// lockstep with its native twin.
    pub fn build_algorithm(&self, key: &str, seed: u64) -> Option<Box<dyn crate::cc::CongestionControl>> {
        let bpf = self.build(key, seed)?;
        Some(match self.lockstep.get(key).and_then(|n| crate::cc::by_name_seeded(n, seed)) {
            Some(native) => Box::new(lockstep::Lockstep { bpf, native }),
            None => Box::new(bpf),
        })
    }

    /// The names the catalog holds.
    pub fn keys(&self) -> Vec<String> {
        self.programs.keys().cloned().collect()
    }

    /// The loaded program named `key`.
    pub fn program(&self, key: &str) -> Option<&object::Program> {
        self.programs.get(key).map(|(p, _)| p.as_ref())
    }
}

/// A `'static` copy of `name`, leaked once per distinct name.
fn intern(name: &str) -> &'static str {
    use std::sync::Mutex;
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}
