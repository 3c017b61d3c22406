"""Prototype measurements for issue P2.3 item 2 (prints figures, not a test).
Needs root.

    sudo PYTHONPATH=python:bench python3 bench/delayline_options.py
        [--variants nfqueue,forward,forward-tso,nfqueue-gso] [--rates 1500:2,3,5/9000:5,10]

Runs the kernel backend's path (bbr, 4 streams, 20 ms, buffer 1 BDP) with
the delay line as it is and with alternatives patched in for the length of
one run, to see what bounds the rate at which the path stays on time before
committing to a new design:

* `nfqueue`: the delay line as fatpipe runs it (linkem, every segment
  through NFQUEUE: the kernel segments TSO packets before queueing).
* `forward`: no delay line at all (the router forwards; RTT ~0): the
  ceiling of the topology itself on this machine.
* `forward-segments`: no delay line, and the senders' TSO/GSO off, so
  every MSS segment crosses the router and reaches the receiver on its own
  (which ACKs every second one): the ceiling of any delay line that
  handles each segment, whatever its mechanism (NFQUEUE, AF_XDP, ...).
* `nfqueue-gso`: linkem's queues in GSO mode (NFQA_CFG_F_GSO: a TSO packet
  is queued and released as one unit, up to 64 KB). This is what a delay
  line that treats a burst as one unit unless something happens inside it
  (the simulator's P2.3 design) would cost at most on the kernel side; it
  loses per-segment loss, drops and marks, so it is a measurement, not a
  mode fatpipe offers.

* `units`: what fatpipe does for a GRO receiver (`hosts.receiver.gro`):
  linkem's unit mode, GSO packets whole unless a segment inside is lost,
  dropped or marked (crates/linkem/src/units.rs). Not a patch.

Per run: goodput, lateness p50/p99/max, host_drops and overflows, the delay
line's CPU and the machine's busy/softirq CPU (kernel_path.py's table).
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import kernel_path
from fatpipe.backends.kernel import KernelBackend, delayline
from fatpipe.backends.kernel import path as kpath

VARIANTS = ("nfqueue", "forward", "forward-segments", "nfqueue-gso", "units")


@contextmanager
def variant(name: str):
    """Patch the kernel path into `name` for the duration of the block."""
    saved_add, saved_args = kpath.EmulatedPath._add_linkem, delayline.linkem_args
    if name == "forward":
        kpath.EmulatedPath._add_linkem = lambda _self: None
    elif name == "forward-segments":
        def segments_only(self):
            for ns in self.senders.values():
                kpath.set_offloads(ns, "eth0", False, ("tso", "gso"))
        kpath.EmulatedPath._add_linkem = segments_only
    elif name == "nfqueue-gso":
        delayline.linkem_args = lambda *a, **k: [*saved_args(*a, **k), "--gso"]
    elif name not in ("nfqueue", "units"):
        raise SystemExit(f"--variants: unknown variant {name!r}; allowed: {', '.join(VARIANTS)}")
    try:
        yield
    finally:
        kpath.EmulatedPath._add_linkem, delayline.linkem_args = saved_add, saved_args


def main() -> int:
    names = kernel_path.option("--variants", ",".join(VARIANTS)).split(",")
    if "--rates" not in sys.argv:
        sys.argv += ["--rates", "1500:2,3,5/9000:5,10"]
    be = KernelBackend()
    work = Path(tempfile.mkdtemp(prefix="fp-dl-"))
    for name in names:
        print(f"#### variant {name}")
        with variant(name):
            kernel_path.rate_table(be, work / name, 6.0, gro=name == "units")
    return 0


if __name__ == "__main__":
    sys.exit(main())
