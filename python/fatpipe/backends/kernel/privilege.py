"""Whether this process may create network namespaces: the one test of
privilege that `fatpipe doctor`, the kernel backend's check and `fatpipe run
--backend auto` share (tests replace it to play a user without root)."""

from __future__ import annotations

import os


def is_root() -> bool:
    return os.geteuid() == 0
