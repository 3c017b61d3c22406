"""Running external tools: argument lists only, never shell strings."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence


class CommandFailed(RuntimeError):
    """An external tool exited non-zero; the message has the command and stderr."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        self.args_list = list(args)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"`{' '.join(args)}` exited {returncode}: {stderr.strip()[:500]}")


def run(args: Sequence[str], *, check: bool = True, timeout_s: float = 30.0, input_text: str | None = None) -> str:
    """Run `args` (a list, no shell) and return stdout. Raises CommandFailed."""
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout_s, input=input_text)
    if check and proc.returncode != 0:
        raise CommandFailed(args, proc.returncode, proc.stderr)
    return proc.stdout


def ok(args: Sequence[str], timeout_s: float = 30.0) -> bool:
    """True if the command exits 0 (used by probes)."""
    try:
        subprocess.run(list(args), capture_output=True, timeout=timeout_s, check=True)
        return True
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return False


def which(tool: str) -> str | None:
    return shutil.which(tool)
