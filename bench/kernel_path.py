"""Kernel path benchmark (prints figures, not a test). Needs root.

    sudo PYTHONPATH=python:bench python3 bench/kernel_path.py [--quick]

1. Highest goodput the emulated path sustains at 20 ms RTT, MTU 1500 and
   9000 (bbr, 4 streams, rate stepped up), with the delay line's lateness
   and the min RTT seen (goal: >= 5 Gbit/s at 9000, RTT within 1 ms).
2. Achieved vs configured loss at 1e-5 .. 1e-2 (bbr, 4 streams, 1 Gbit/s).
3. Idle RTT error: TCP_INFO min_rtt of a thin flow vs the configured RTT.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from fatpipe.backends.kernel import KernelBackend
from kernel_common import goodput_bps, plan

RTT = 0.020


def main() -> int:
    quick = "--quick" in sys.argv
    dur = 5.0 if quick else 8.0
    be = KernelBackend()
    work = Path(tempfile.mkdtemp(prefix="fp-bench-"))
    print("== highest sustained goodput (bbr, 4 streams, 20 ms, buffer 1 BDP)")
    for mtu, rates in ((1500, (1e9, 2e9, 3e9)), (9000, (3e9, 5e9, 7e9, 10e9))):
        for rate in rates:
            p = plan(rate, RTT, 0.0, "bbr", 4, mtu=mtu, duration_s=dur, warmup_s=2.0)
            out = be.run(p, work / f"max-{mtu}-{rate:g}")
            gp = goodput_bps(out, 2.0)
            r = out.path
            print(f"mtu={mtu:5d} rate={rate / 1e9:4.1f} Gbit/s goodput={gp / 1e9:5.2f} Gbit/s "
                  f"min_rtt={r.min_rtt_s * 1e3:.3f} ms late_p50={out.facts['late_p50_s'] * 1e6:.0f} us "
                  f"late_p99={r.late_p99_s * 1e3:.2f} ms late_max={r.late_max_s * 1e3:.1f} ms "
                  f"{'LATE' if out.facts['emulator_late'] else 'ok'}", flush=True)
    print("== achieved vs configured loss (bbr, 4 streams, 1 Gbit/s, MTU 1500)")
    for loss in (1e-5, 1e-4, 1e-3, 1e-2):
        p = plan(1e9, RTT, loss, "bbr", 4, duration_s=dur, warmup_s=1.0)
        out = be.run(p, work / f"loss-{loss:g}")
        r = out.path
        sigma = (loss / r.packets) ** 0.5 if r.packets else float("nan")
        print(f"loss={loss:g} packets={r.packets} drops={r.random_drops} achieved={r.loss_rate:.3e} "
              f"error={(r.loss_rate / loss - 1) * 100:+.1f} % (1 sigma = {sigma / loss * 100:.1f} %)", flush=True)
    print("== idle RTT error (1 stream capped at 1 Mbit/s)")
    from dataclasses import replace

    from fatpipe.backends.base import HostLimits
    for rtt in (0.002, 0.020, 0.100):
        p = plan(1e9, rtt, 0.0, "cubic", 1, duration_s=3.0, warmup_s=0.0)
        capped = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20, stream_rate_cap_bps=1e6)
        p = replace(p, senders={"s1": capped})
        out = be.run(p, work / f"idle-{rtt:g}")
        err = out.path.min_rtt_s - rtt
        print(f"rtt={rtt * 1e3:6.1f} ms min_rtt={out.path.min_rtt_s * 1e3:.3f} ms error={err * 1e6:+.0f} us",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
