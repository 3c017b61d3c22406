"""Simulator speed with a BPF congestion control against the native one
(docs/bpf-ccas.md): bottleneck packets per second of wall time, one core,
for CUBIC as Rust (cubic) and as fatpipe's BPF port run by the simulator's
interpreter (bpf:fp_cubic), at 10 and 100 Gbit/s, 20 ms, 4 streams, no
loss. Prints the median of --reps runs of each.

    python3 bench/bpf_speed.py [--reps 3] [--duration 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

from fatpipe import _native, bpfcc


def plan(cc: str, rate_bps: float, duration_s: float) -> str:
    return json.dumps({
        "run_id": "bench", "seed": 1, "duration_s": duration_s, "sample_interval_s": 0.1,
        "rate_bps": rate_bps, "rtt_s": 0.020, "loss": 0.0, "buffer_bytes": int(rate_bps / 8 * 0.020),
        "mtu_bytes": 9000,
        "senders": {"s1": {"wmem_max_bytes": 1 << 30, "rmem_max_bytes": 1 << 30}},
        "receiver": {"rmem_max_bytes": 1 << 30, "wmem_max_bytes": 1 << 30},
        "flows": [{"group": 0, "kind": "bulk", "cc": cc, "streams": 4, "sender": "s1", "start_s": 0.0,
                   "mss_bytes": 8948}],
    })


def packets_per_s(cc: str, rate_bps: float, duration_s: float, objects: dict | None) -> float:
    t0 = time.perf_counter()
    r = _native.simulate(plan(cc, rate_bps, duration_s), objects)
    return r["path"]["packets"] / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2.0)
    a = ap.parse_args()
    port = bpfcc.resolve("bpf:fp_cubic")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         cwd=Path(__file__).parent).stdout.strip()
    print(f"rev {rev}; {a.duration:g} s runs, 4 streams, 20 ms, MTU 9000, median of {a.reps}")
    for rate in (10e9, 100e9):
        native = statistics.median(packets_per_s("cubic", rate, a.duration, None) for _ in range(a.reps))
        bpf = statistics.median(packets_per_s("bpf:fp_cubic", rate, a.duration, {"bpf:fp_cubic": port.elf})
                                for _ in range(a.reps))
        print(f"{rate / 1e9:5.0f} Gbit/s  cubic {native / 1e6:6.2f} M pkt/s  bpf:fp_cubic {bpf / 1e6:6.2f} M pkt/s"
              f"  ({bpf / native:.2f}x)")


if __name__ == "__main__":
    main()
