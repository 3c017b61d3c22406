"""End-host processing delay on the kernel backend (prints figures, not a
test): the measurement behind hosts.<name>.processing_jitter
(docs/host-model.md). Needs root and the kernel's tcp:tcp_probe tracepoint.

    sudo PYTHONPATH=python:bench python3 bench/host_processing.py [--seconds 20] [--rtt-ms 2]

One CUBIC stream whose cwnd is clamped to 2 segments crosses a lossless
1 Gbit/s path: each round trip carries one pair of back-to-back segments
and one ACK, so nothing queues and every RTT sample of the ideal host is
the same (the base RTT plus two segments' serialization). The simulator
gives that sample; the kernel's per-ACK samples are read from tcp_probe,
which reports srtt (tp->srtt_us >> 3, µs) before each incoming packet: an
ACK k that advanced snd_una updated srtt by tcp_rtt_estimator's
srtt_us += m - srtt_us / 8, so its sample is
m = 8 (srtt_{k+1} - srtt_k) + srtt_k, within ±7 µs (the three bits the
tracepoint drops). The excess of m over the simulator's sample is what the
end hosts' processing (the receiver's data path and ACK, the sender's ACK
path) and the emulated path's own forwarding (veth, NFQUEUE, the delay
line's lateness) add to the round trip.
"""

from __future__ import annotations

import dataclasses
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.sim import SimBackend
from kernel_common import plan

TRACEFS = Path("/sys/kernel/tracing")
PROBE = TRACEFS / "events/tcp/tcp_probe"
PORT = 5201  # the kernel backend's port of flow group 0
LINE = re.compile(r"\s(\d+\.\d+): tcp_probe:.*?snd_una=(0x[0-9a-f]+).*?srtt=(\d+).*?sock_cookie=([0-9a-f]+)")


def option(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def samples_us(lines: list[str], skip_s: float) -> list[float]:
    """Per-ACK RTT samples (µs) of the ACKs that advanced snd_una, after
    the first `skip_s` seconds of each socket."""
    by_sock: dict[str, list[tuple[float, int, int]]] = {}
    for line in lines:
        m = LINE.search(line)
        if m:
            by_sock.setdefault(m.group(4), []).append((float(m.group(1)), int(m.group(2), 16), int(m.group(3))))
    out = []
    for events in by_sock.values():
        t0 = events[0][0]
        for (t, una, srtt), (_, una_next, srtt_next) in zip(events, events[1:], strict=False):
            if t - t0 >= skip_s and una_next != una and srtt > 0:
                out.append(8.0 * (srtt_next - srtt) + srtt)
    return out


QUANTILES = (("p10", 0.1), ("median", 0.5), ("p90", 0.9), ("p99", 0.99))


def model_variable_us(mean_us: float, ser_us: float, n: int = 100_000) -> list[float]:
    """The simulator's host model's excess for one ACK of this flow (see main)."""
    rng = random.Random(1)
    def draw() -> float:
        return rng.expovariate(1 / mean_us)
    return [max(draw() - ser_us, draw()) + draw() for _ in range(n)]


def trace_run(be: KernelBackend, p, work: Path) -> tuple[list[str], object]:
    """Runs `p` with tcp_probe on (filtered to the data port's sender side),
    its events copied out of trace_pipe by a `cat` of our own."""
    work.mkdir(parents=True, exist_ok=True)
    events = work / "tcp_probe.txt"
    (PROBE / "filter").write_text(f"dport == {PORT}\n")
    (PROBE / "enable").write_text("1\n")
    try:
        with open(events, "w") as sink:
            cat = subprocess.Popen(["cat", str(TRACEFS / "trace_pipe")], stdout=sink)
            try:
                out = be.run(p, work / "run")
                time.sleep(0.5)  # let cat drain what is buffered
            finally:
                cat.terminate()
                cat.wait()
    finally:
        (PROBE / "enable").write_text("0\n")
        (PROBE / "filter").write_text("0\n")
    return events.read_text().splitlines(), out


def main() -> None:
    seconds, rtt_s = float(option("--seconds", "20")), float(option("--rtt-ms", "2")) / 1e3
    mounted = not PROBE.exists()
    if mounted:
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    base = plan(1e9, rtt_s, 0.0, "cubic", 1, duration_s=seconds, warmup_s=1.0)
    p = dataclasses.replace(base, flows=(dataclasses.replace(base.flows[0], cwnd_clamp=2),))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            lines, out = trace_run(KernelBackend(), p, Path(tmp) / "kernel")
            sim = SimBackend().run(dataclasses.replace(p, backend="sim"), Path(tmp) / "sim")
    finally:
        if mounted:
            subprocess.run(["umount", str(TRACEFS)], check=False)
    # The simulator's samples are all alike here (its min_rtt is the
    # handshake's base RTT, so take the smoothed RTT, which equals them).
    steady = [s for t, s in zip(sim.series["t_s"], sim.series["srtt_s"], strict=True) if t >= 1.0]
    ideal_us = quantile(steady, 0.5) * 1e6
    ms = samples_us(lines, skip_s=1.0)
    excess = [m - ideal_us for m in ms]
    mean = sum(excess) / len(excess)
    print(f"== per-ACK RTT samples, cubic, cwnd clamp 2, 1 Gbit/s, {rtt_s * 1e3:g} ms, {seconds:g} s "
          f"({len(ms)} samples after 1 s)")
    print(f"  simulator (ideal hosts): {ideal_us:.1f} us; kernel min {min(ms):.1f} us")
    print("  excess over the simulator (us): "
          + "  ".join(f"{name} {quantile(excess, q):.1f}" for name, q in
                      (("min", 0.0), ("p10", 0.1), ("median", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)))
          + f"  mean {mean:.1f}  max {max(excess):.1f}")
    # The excess is a floor (its minimum: the fixed cost of the hops) plus
    # a variable part, which processing_jitter models. The model's variable
    # part for this flow: the receiver hands the pair's ACK to TCP's output
    # when it is done with both segments (the second arrives one
    # serialization later), the sender hands the ACK to TCP after its own
    # draw: max(j1 - ser, j2) + j3, each j exponential with the host's mean.
    floor = min(excess)
    variable = [x - floor for x in excess]
    print("  variable part (excess - its minimum), us: "
          + "  ".join(f"{name} {quantile(variable, q):.1f}" for name, q in QUANTILES))
    ser_us = 1514 * 8 / 1e9 * 1e6
    model = {m: model_variable_us(m, ser_us) for m in range(10, 101, 5)}
    best = min(model, key=lambda m: abs(quantile(model[m], 0.5) - quantile(variable, 0.5)))
    for m in (best - 5, best, best + 5):
        print(f"  processing_jitter = {m} us on both hosts gives: "
              + "  ".join(f"{name} {quantile(model[m], q):.1f}" for name, q in QUANTILES))
    r = out.path
    print(f"  load average after the run (1, 5, 15 min): {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(f"  delay line lateness: p99 {1e6 * (r.late_p99_s or 0):.1f} us, max {1e6 * (r.late_max_s or 0):.1f} us; "
          f"host drops {r.host_drops}")


if __name__ == "__main__":
    main()
