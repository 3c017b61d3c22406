"""fatpipe's PEP 517 build backend: maturin, plus fatpipe's own helper
binaries inside the wheel.

maturin builds one Rust crate per wheel (crates/py, the extension). The
kernel backend also needs the delay line `fatpipe-linkem` (crates/linkem)
and, for CCAs the kernel lacks, the BPF loader `fatpipe-ccaload`
(crates/ccaload). `build_wheel` builds them with cargo first (same
workspace, same release profile, so the simulator crate they share with the
extension is compiled once), copies them into python/fatpipe/_bin/ for
maturin to pack, and removes the copies afterwards (the source tree is left
as it was). linkem is pure Rust and must build; the loader needs clang,
libelf and zlib headers (libbpf) and is left out, with a warning, where it
cannot be built: `fatpipe doctor` then says so.

Everything else is maturin's: the module re-exports its hooks. Editable
installs (`pip install -e`, scripts/install.sh) find the binaries in the
workspace's target/ directory instead, so they are not staged.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import maturin
from maturin import (  # noqa: F401 - the hooks this backend does not change
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parents[1]
BIN_DIR = ROOT / "python" / "fatpipe" / "_bin"
REQUIRED = ("fatpipe-linkem",)
OPTIONAL = ("fatpipe-ccaload",)  # needs clang, libelf-dev, zlib1g-dev


def _cargo_build(name: str) -> Path:
    subprocess.run(["cargo", "build", "--release", "-p", name, "--manifest-path", str(ROOT / "Cargo.toml")],
                   check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    return (target if target.is_absolute() else ROOT / target) / "release" / name


@contextlib.contextmanager
def _staged_binaries():
    BIN_DIR.mkdir(exist_ok=True)
    staged = []
    try:
        for name in REQUIRED + OPTIONAL:
            try:
                built = _cargo_build(name)
            except (OSError, subprocess.CalledProcessError) as e:
                if name in REQUIRED:
                    raise
                print(f"fatpipe build: {name} left out of the wheel ({e}); fatpipe's BPF CCAs "
                      f"need clang, libelf-dev, zlib1g-dev and pkg-config to build", file=sys.stderr)
                continue
            dest = BIN_DIR / name
            shutil.copy2(built, dest)
            dest.chmod(0o755)
            staged.append(dest)
        yield
    finally:
        for dest in staged:
            dest.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            BIN_DIR.rmdir()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _staged_binaries():
        return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)
