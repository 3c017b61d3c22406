//! Compiles fatpipe's BPF congestion controls (`bpf/cca/*.bpf.c`) with clang
//! and embeds the objects in this crate (for the loader and the simulator), each with the SHA-256 of its source
//! (the port file, then the shared headers in name order) so the manifest
//! can say exactly which code ran.
//!
//! Without clang the loader still builds, with no ports, and says why
//! (`fatpipe-ccaload --list` prints the reason on stderr): the rest of the
//! workspace must build on machines without a BPF toolchain.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

include!("src/clang_args.rs");

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let src_dir = manifest.join("../../bpf/cca");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed={}", src_dir.display());
    println!("cargo:rerun-if-env-changed=CLANG");

    let mut ports: Vec<PathBuf> = Vec::new();
    let mut headers: Vec<PathBuf> = Vec::new();
    if let Ok(entries) = fs::read_dir(&src_dir) {
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
            println!("cargo:rerun-if-changed={}", p.display());
            if name.ends_with(".bpf.c") {
                ports.push(p);
            } else if name.ends_with(".h") {
                headers.push(p);
            }
        }
    }
    ports.sort();
    headers.sort();

    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let include = env::var("DEP_BPF_INCLUDE").unwrap_or_default();
    let mut table = String::from("pub const PORTS: &[Port] = &[\n");
    let mut missing = String::new();
    for port in &ports {
        let file = port.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let name = file.trim_end_matches(".bpf.c").to_string();
        let object = out_dir.join(format!("{name}.bpf.o"));
        match compile(&clang, &include, &src_dir, port, &object) {
            Ok(()) => {
                let hash = source_hash(port, &headers);
                let _ = writeln!(
                    table,
                    "    Port {{ name: {name:?}, file: {file:?}, source_sha256: {hash:?}, object: include_bytes!({:?}) }},",
                    object.display().to_string()
                );
            }
            Err(why) => {
                println!("cargo:warning=BPF congestion control {file} not built: {why}");
                let _ = write!(missing, "{file}: {why}; ");
            }
        }
    }
    table.push_str("];\n");
    // The headers a user's CCA is compiled with (fatpipe-ccaload --compile):
    // libbpf's BPF-side headers and fatpipe's own.
    table.push_str("pub const HEADERS: &[(&str, &[u8])] = &[\n");
    for h in ["bpf_helpers.h", "bpf_helper_defs.h", "bpf_tracing.h", "bpf_core_read.h", "bpf_endian.h"] {
        let p = Path::new(&include).join("bpf").join(h);
        if p.exists() {
            let _ = writeln!(table, "    (\"bpf/{h}\", include_bytes!({:?})),", p.display().to_string());
        }
    }
    for h in &headers {
        let name = h.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let _ = writeln!(table, "    ({name:?}, include_bytes!({:?})),", h.display().to_string());
    }
    table.push_str("];\n");
    let _ = writeln!(table, "pub const NOT_BUILT: &str = {:?};", missing.trim_end_matches("; "));
    fs::write(out_dir.join("ports.rs"), table).expect("write ports.rs");
}

fn compile(clang: &str, include: &str, src_dir: &Path, src: &Path, out: &Path) -> Result<(), String> {
    let mut cmd = Command::new(clang);
    cmd.args(CLANG_ARGS).arg("-Werror");
    if !include.is_empty() {
        cmd.arg(format!("-I{include}"));
    }
    cmd.arg(format!("-I{}", src_dir.display())).arg("-c").arg(src).arg("-o").arg(out);
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("{clang} failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("cannot run {clang} ({e}); install clang (scripts/install.sh)")),
    }
}

/// SHA-256 of the port's source followed by every shared header (sorted by
/// name): python/fatpipe/backends/kernel/bpfcca.py computes the same.
fn source_hash(port: &Path, headers: &[PathBuf]) -> String {
    let mut h = Sha256::new();
    h.update(fs::read(port).unwrap_or_default());
    for header in headers {
        h.update(fs::read(header).unwrap_or_default());
    }
    h.finalize().iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
