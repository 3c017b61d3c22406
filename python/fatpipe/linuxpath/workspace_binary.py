"""fatpipe's own helper binaries (fatpipe-linkem, fatpipe-ccaload): found
where a user put them, in the installed package (a wheel carries them in
fatpipe/_bin/, build_support/fatpipe_build.py), on PATH or in the source
tree's target/ directory, else built with cargo from the source tree this
package sits in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from . import cmd

REPO_ROOT = Path(__file__).resolve().parents[3]
# Binaries a wheel carries, next to the package's modules.
PACKAGED_DIR = Path(__file__).resolve().parents[1] / "_bin"


def find_binary(name: str, env_var: str, profiles: tuple[str, ...] = ("release",)) -> Path | None:
    """$`env_var`, then the installed package's _bin/, then PATH, then the
    workspace's target/<profile>/ directories."""
    env = os.environ.get(env_var)
    if env and Path(env).is_file():
        return Path(env)
    packaged = PACKAGED_DIR / name
    if packaged.is_file() and os.access(packaged, os.X_OK):
        return packaged
    found = shutil.which(name)
    if found:
        return Path(found)
    for profile in profiles:
        p = REPO_ROOT / "target" / profile / name
        if p.is_file():
            return p
    return None


def unbuildable(crate_dir: str) -> str | None:
    """Why `crates/crate_dir` cannot be built here (no source tree, no
    cargo), or None when `build_binary` can build it."""
    if not (REPO_ROOT / "crates" / crate_dir / "Cargo.toml").is_file():
        return "no source tree to build it from (fatpipe installed without its binaries)"
    if not cmd.which("cargo"):
        return "no cargo to build it from the source tree"
    return None


def build_binary(name: str, crate_dir: str, timeout_s: float) -> Path:
    """`cargo build --release -p name` when the source tree (crates/`crate_dir`) is present."""
    why = unbuildable(crate_dir)
    if why:
        raise FileNotFoundError(f"{name} not found and cannot be built: {why}")
    cmd.run(["cargo", "build", "--release", "-p", name, "--manifest-path", str(REPO_ROOT / "Cargo.toml")],
            timeout_s=timeout_s)
    return REPO_ROOT / "target" / "release" / name
