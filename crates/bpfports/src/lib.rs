//! fatpipe's BPF congestion controls (bpf/cca/*.bpf.c), compiled by
//! build.rs with clang: one object per port, the same bytes for the
//! kernel backend's loader (fatpipe-ccaload registers them) and for the
//! simulator (which runs them, crates/sim/src/bpf).

/// One port: the CCA name it registers (its file's stem, also the name of
/// its struct_ops variable), its source file under bpf/cca/, the SHA-256 of
/// that source and the shared headers, and the compiled object.
pub struct Port {
    pub name: &'static str,
    pub file: &'static str,
    pub source_sha256: &'static str,
    pub object: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/ports.rs"));
include!("clang_args.rs");

pub fn find(name: &str) -> Option<&'static Port> {
    PORTS.iter().find(|p| p.name == name)
}
