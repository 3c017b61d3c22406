"""fatpipe's own helper binaries (fatpipe-linkem, fatpipe-ccaload): found
where a user or the install script put them, else built with cargo from the
source tree this package sits in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from . import cmd

REPO_ROOT = Path(__file__).resolve().parents[4]


def find_binary(name: str, env_var: str, profiles: tuple[str, ...] = ("release",)) -> Path | None:
    """$`env_var`, then PATH, then the workspace's target/<profile>/ directories."""
    env = os.environ.get(env_var)
    if env and Path(env).is_file():
        return Path(env)
    found = shutil.which(name)
    if found:
        return Path(found)
    for profile in profiles:
        p = REPO_ROOT / "target" / profile / name
        if p.is_file():
            return p
    return None


def build_binary(name: str, crate_dir: str, timeout_s: float) -> Path:
    """`cargo build --release -p name` when the source tree (crates/`crate_dir`) is present."""
    if not (REPO_ROOT / "crates" / crate_dir / "Cargo.toml").is_file() or not cmd.which("cargo"):
        raise FileNotFoundError(f"{name} not found and cannot be built (no cargo or no source tree)")
    cmd.run(["cargo", "build", "--release", "-p", name, "--manifest-path", str(REPO_ROOT / "Cargo.toml")],
            timeout_s=timeout_s)
    return REPO_ROOT / "target" / "release" / name
