//! The two commands that hand BPF objects to the simulator:
//! `--object NAME` writes a built-in port's object to standard output, and
//! `--compile SRC OUT` compiles a user's congestion control with the same
//! clang arguments and headers as the ports (libbpf's BPF-side headers
//! and bpf/cca's fp_kernel.h, fp_tcp_cong.h, …), so the object the kernel
//! backend registers and the one the simulator runs are one file.

use fatpipe_bpfports as ports;
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// Writes port `name`'s object to standard output.
pub fn object(name: &str) -> Result<(), String> {
    let port = ports::find(name).ok_or_else(|| {
        let have: Vec<&str> = ports::PORTS.iter().map(|p| p.name).collect();
        format!("no built-in port named {name:?}; built: {}", have.join(" "))
    })?;
    let mut out = std::io::stdout().lock();
    out.write_all(port.object).and_then(|_| out.flush()).map_err(|e| format!("writing the object: {e}"))
}

/// Compiles `src` into `out`.
pub fn compile(src: &Path, out: &Path) -> Result<(), String> {
    if !src.is_file() {
        return Err(format!("{}: no such source file", src.display()));
    }
    let headers = tempdir()?;
    let result = compile_with(src, out, &headers);
    let _ = std::fs::remove_dir_all(&headers);
    result
}

fn compile_with(src: &Path, out: &Path, headers: &Path) -> Result<(), String> {
    for (name, bytes) in ports::HEADERS {
        let p = headers.join(name);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let src_dir = src.parent().map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf);
    let output = Command::new(&clang)
        .args(ports::CLANG_ARGS)
        .arg(format!("-I{}", src_dir.display()))
        .arg(format!("-I{}", headers.display()))
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(out)
        .output()
        .map_err(|e| format!("cannot run {clang} ({e}); install clang (scripts/install.sh)"))?;
    if !output.status.success() {
        return Err(format!("{clang} failed on {}:\n{}", src.display(), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(())
}

/// A fresh private directory for the headers.
fn tempdir() -> Result<std::path::PathBuf, String> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let p = base.join(format!("fatpipe-bpf-headers-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Err("cannot create a temporary directory for the headers".into())
}
