"""`fatpipe clean` and BPF congestion controls another tool left registered
(root; docs/bpf-ccas.md): a port registered without a link (as Debian's
bpftool 7.1 does) is fatpipe's when its programs carry the port's kernel
tags, and clean unregisters it; a registration under a port's name with
other programs is reported and left alone."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bpf_skip import bpf_ports_missing

from fatpipe.backends.kernel import bpfcca, bpfcca_clean

PORTS_DIR = Path(__file__).resolve().parents[2] / "bpf" / "cca"
PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
REPO = Path(__file__).resolve().parents[2]
PORT = "fp_reno"  # validation-only port: never a kernel module's name


def _missing() -> str | None:
    for tool in ("bpftool", "clang"):
        if shutil.which(tool) is None:
            return f"needs {tool} (scripts/install.sh installs it)"
    return bpf_ports_missing()


def libbpf_include() -> Path:
    """The BPF-side libbpf headers the loader's objects were built with
    (libbpf-sys's, crates/bpfports/build.rs): the same headers give the same
    instructions, so the same kernel tags."""
    found = sorted((REPO / "target" / "release" / "build").glob("libbpf-sys-*/out/include/bpf/bpf_helpers.h"),
                   key=lambda p: p.stat().st_mtime)
    assert found, "no libbpf-sys build in target/release (bpfcca.loader() builds it)"
    return found[-1].parents[1]


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def legacy_object(tmp_path: Path, opt: str = "-O2") -> Path:
    """fp_reno.bpf.c as the loader builds it, but with its struct_ops map in
    ".struct_ops", which a tool without links (`bpftool struct_ops
    register`) registers for good."""
    src = tmp_path / f"{PORT}.bpf.c"
    src.write_text((PORTS_DIR / f"{PORT}.bpf.c").read_text().replace('SEC(".struct_ops.link")', 'SEC(".struct_ops")'))
    obj = tmp_path / f"{PORT}{opt}.bpf.o"
    subprocess.run(["clang", opt, "-g", "-target", "bpf", "-Wall", "-D__TARGET_ARCH_x86",
                    f"-I{libbpf_include()}", f"-I{PORTS_DIR}",
                    "-c", str(src), "-o", str(obj)], check=True, capture_output=True, timeout=120)
    return obj


def register_for_good(obj: Path) -> int:
    before = bpfcca.kernel_ccas()
    assert PORT not in before, f"{PORT} already registered: {before}"
    out = subprocess.run(["bpftool", "struct_ops", "register", str(obj)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"bpftool struct_ops register failed: {out.stderr}"
    assert PORT in bpfcca.kernel_ccas(), f"registered but not listed: {bpfcca.kernel_ccas()}"
    return struct_ops_id()


def struct_ops_id() -> int:
    import json
    shown = json.loads(subprocess.run(["bpftool", "-j", "struct_ops", "show"], capture_output=True, text=True,
                                      check=True, timeout=30).stdout or "[]")
    ids = [m["id"] for m in shown if m.get("name") == PORT]
    assert len(ids) == 1, f"struct_ops named {PORT}: {shown}"
    return ids[0]


def unregister(sid: int) -> None:
    subprocess.run(["bpftool", "struct_ops", "unregister", "id", str(sid)], capture_output=True, timeout=30)


def fatpipe_clean() -> str:
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    out = subprocess.run([sys.executable, "-m", "fatpipe", "clean"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, f"fatpipe clean exited {out.returncode}: {out.stdout}{out.stderr}"
    return out.stdout + out.stderr


def test_clean_unregisters_a_port_another_tool_left_registered(tmp_path):
    bpfcca.loader()  # built, with its ports
    before = bpfcca.kernel_ccas()
    sid = register_for_good(legacy_object(tmp_path))
    try:
        said = fatpipe_clean()
        assert f"unregistered BPF congestion control '{PORT}' (struct_ops id {sid})" in said, said
        assert bpfcca.kernel_ccas() == before, f"after clean: {bpfcca.kernel_ccas()}, before: {before}"
    finally:
        unregister(sid)


def test_clean_leaves_alone_other_programs_under_a_port_name(tmp_path):
    bpfcca.loader()
    # -O1 gives other instructions, hence other tags: not provably fatpipe's port.
    sid = register_for_good(legacy_object(tmp_path, opt="-O1"))
    try:
        said = fatpipe_clean()
        assert f"left alone BPF congestion control '{PORT}' (struct_ops id {sid}): its programs differ" in said, said
        assert PORT in bpfcca.kernel_ccas(), "clean unregistered a registration it could not prove was fatpipe's"
    finally:
        unregister(sid)
    assert PORT not in bpfcca.kernel_ccas()


def test_struct_ops_dump_program_references_parse():
    dump = ('"ssthresh": "u32 (struct sock *) fp_reno_ssthresh/prog_id:2227",\n'
            '"set_state": "void (struct sock *, u8) 0",\n'
            '"undo_cwnd": "u32 (struct sock *) fp_reno_undo_cwnd/prog_id:2229",')
    assert bpfcca_clean.parse_struct_ops_programs(dump) == {"fp_reno_ssthresh": 2227, "fp_reno_undo_cwnd": 2229}
    assert bpfcca_clean.parse_port_tags("fp_reno\tfp_reno_ssthresh\t91ab3c6659d06dce\nbad line\n") == {
        "fp_reno": frozenset({("fp_reno_ssthresh", "91ab3c6659d06dce")})}
