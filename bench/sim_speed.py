#!/usr/bin/env python3
"""Simulator speed: instructions (callgrind) and wall time per benchmark run,
for the working tree and optionally a git revision to compare against.

    python3 bench/sim_speed.py [--base REV] [--runs reno:8,cubic:1,bbr:1]
        [--paths 10:20:1e-5,100:70:1e-3] [--gro] [--cap-gbit 14] [--cpu-cores 8]
        [--seconds 5] [--reps 5] [--aqm droptail|fq_codel] [--no-callgrind]

Each run is `crates/sim/examples/bench.rs` for one CCA and stream count on
each path of --paths (RATE_GBIT:RTT_MS:LOSS; MTU 1500, 1 BDP buffer;
--seconds simulated); the default paths are 10 Gbit/s 20 ms 1e-5 and study
B's 100 Gbit/s 70 ms 1e-3. --gro gives the receiver GRO (a tree that does
not know the key ignores it), --cap-gbit a per-stream rate cap (study B's
14 Gbit/s), --cpu-cores a host CPU model of that many cores on both hosts
(examples/bench.rs `cpu_model`: the cost of the model; head tree only,
a base without the host model refuses the key). `pkt/s/core` is packets over the minimum wall time: the
simulator is single-threaded, so that is its speed per core.
Instructions are callgrind's total for the whole process (deterministic:
the same binary and run give the same count, so small differences are
real); wall time is the bench process's (the simulation plus a few ms of
start-up), the minimum and median of --reps runs, the trees' runs
interleaved (noisy on a shared machine: trust instructions for
differences of a few per cent). --base REV exports that revision with
`git archive` into target/bench-base/REV and builds its bench there, so
the working tree is never touched. Prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_BIN = Path("target/release/examples/bench")


@dataclass(frozen=True)
class Run:
    cca: str
    streams: int

    @property
    def label(self) -> str:
        return f"{self.cca} x{self.streams}"


@dataclass(frozen=True)
class Figures:
    instructions: int | None
    wall_min_s: float
    wall_median_s: float
    packets: int


def parse_runs(text: str) -> list[Run]:
    runs = []
    for item in text.split(","):
        cca, sep, streams = item.strip().partition(":")
        if not sep or not cca or not streams.isdigit() or int(streams) < 1:
            raise SystemExit(f"--runs item {item!r}: expected CCA:STREAMS, e.g. reno:8")
        runs.append(Run(cca, int(streams)))
    return runs


def build(tree: Path) -> Path:
    """Builds the bench example in `tree` (nice'd) and returns its binary."""
    subprocess.run(["nice", "cargo", "build", "-q", "--release", "-p", "fatpipe-sim", "--example", "bench"],
                   cwd=tree, check=True)
    return tree / BENCH_BIN


def export_revision(rev: str) -> Path:
    """The tree of `rev` under target/bench-base/<commit>, exported once."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    dest = ROOT / "target" / "bench-base" / commit
    if not (dest / "Cargo.toml").exists():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


@dataclass(frozen=True)
class PathArg:
    rate_gbit: float
    rtt_ms: float
    loss: float

    @property
    def label(self) -> str:
        return f"{self.rate_gbit:g}G/{self.rtt_ms:g}ms/{self.loss:g}"


def parse_paths(text: str) -> list[PathArg]:
    paths = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            rate, rtt, loss = (float(x) for x in parts)
        except ValueError:
            raise SystemExit(f"--paths item {item!r}: expected RATE_GBIT:RTT_MS:LOSS, e.g. 100:70:1e-3") from None
        paths.append(PathArg(rate, rtt, loss))
    return paths


# Set by main(): the path, GRO and rate cap of the runs being measured.
BENCH_EXTRA: dict[str, str] = {}


def bench_env(run: Run, aqm: str) -> dict[str, str]:
    return {**os.environ, "FATPIPE_BENCH_STREAMS": str(run.streams), "FATPIPE_BENCH_AQM": aqm, **BENCH_EXTRA}


def packets_sent(output: str, run: Run) -> int:
    """Packets transmitted, from the bench's table row for `run`."""
    for line in output.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0] == run.cca and cols[1] == str(run.streams):
            return int(cols[3])
    raise RuntimeError(f"no row for {run.label} in the bench output:\n{output}")


def instructions(binary: Path, run: Run, seconds: float, aqm: str) -> int:
    out = subprocess.run(["nice", "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          str(binary), str(seconds), run.cca],
                         env=bench_env(run, aqm), check=True, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise RuntimeError(f"callgrind printed no total:\n{out.stderr[-2000:]}")
    return int(m.group(1))


def wall_times(binaries: dict[str, Path], run: Run, seconds: float, reps: int, aqm: str
               ) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Wall times of `reps` runs of each binary, interleaved (base, head,
    base, head, ...) so that a change in the machine's load hits both
    alike; and each binary's packet count."""
    walls: dict[str, list[float]] = {name: [] for name in binaries}
    packets: dict[str, int] = {}
    for _ in range(reps):
        for name, binary in binaries.items():
            t0 = time.perf_counter()
            out = subprocess.run(["nice", str(binary), str(seconds), run.cca], env=bench_env(run, aqm),
                                 check=True, capture_output=True, text=True).stdout
            walls[name].append(time.perf_counter() - t0)
            packets[name] = packets_sent(out, run)
    return walls, packets


def measure(binaries: dict[str, Path], run: Run, seconds: float, reps: int, aqm: str, callgrind: bool
            ) -> dict[str, Figures]:
    walls, packets = wall_times(binaries, run, seconds, reps, aqm)
    return {
        name: Figures(instructions(binary, run, seconds, aqm) if callgrind else None,
                      min(walls[name]), statistics.median(walls[name]), packets[name])
        for name, binary in binaries.items()
    }


def change(new: float, old: float) -> str:
    return f"{100.0 * (new / old - 1.0):+.2f} %" if old else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="git revision to compare against (built in target/bench-base)")
    ap.add_argument("--runs", default="reno:8,cubic:1,bbr:1", help="CCA:STREAMS items, comma-separated")
    ap.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per run")
    ap.add_argument("--reps", type=int, default=5, help="wall-clock repetitions per run")
    ap.add_argument("--aqm", choices=["droptail", "fq_codel"], default="droptail")
    ap.add_argument("--paths", default="10:20:1e-5,100:70:1e-3", help="RATE_GBIT:RTT_MS:LOSS items, comma-separated")
    ap.add_argument("--gro", action="store_true", help="the receiver coalesces with GRO")
    ap.add_argument("--cap-gbit", type=float, help="per-stream rate cap (Gbit/s)")
    ap.add_argument("--cpu-cores", type=int, help="a host CPU model of this many cores on both hosts")
    ap.add_argument("--no-callgrind", action="store_true", help="wall time only")
    args = ap.parse_args(argv)
    runs = parse_runs(args.runs)
    callgrind = not args.no_callgrind
    if callgrind and shutil.which("valgrind") is None:
        raise SystemExit("valgrind not found: install it or pass --no-callgrind")
    trees = {"base": export_revision(args.base)} if args.base else {}
    trees["head"] = ROOT
    binaries = {name: build(tree) for name, tree in trees.items()}
    for path in parse_paths(args.paths):
        BENCH_EXTRA.clear()
        BENCH_EXTRA.update({"FATPIPE_BENCH_RATE": str(path.rate_gbit * 1e9),
                            "FATPIPE_BENCH_RTT": str(path.rtt_ms / 1e3),
                            "FATPIPE_BENCH_LOSS": str(path.loss), "FATPIPE_BENCH_GRO": "1" if args.gro else "0"})
        if args.cap_gbit:
            BENCH_EXTRA["FATPIPE_BENCH_CAP"] = str(args.cap_gbit * 1e9)
        if args.cpu_cores:
            BENCH_EXTRA["FATPIPE_BENCH_CPU"] = str(args.cpu_cores)
        print(f"{path.rate_gbit:g} Gbit/s, {path.rtt_ms:g} ms, MTU 1500, loss {path.loss:g}, 1 BDP, {args.aqm}, "
              f"GRO {'on' if args.gro else 'off'}, cap {args.cap_gbit or '-'} Gbit/s, {args.seconds:g} s simulated; "
              f"wall: min and median of {args.reps}" + (f"; base {args.base}" if args.base else ""))
        header = (f"{'run':<10} {'tree':<5} {'packets':>10} {'instr_G':>8} {'wall_min_s':>10} {'wall_med_s':>10} "
                  f"{'Mpkt/s/core':>11}")
        print(header + ("   instr vs base   wall(min) vs base" if args.base else ""))
        for run in runs:
            figs = measure(binaries, run, args.seconds, args.reps, args.aqm, callgrind)
            for name, f in figs.items():
                ir = f"{f.instructions / 1e9:8.3f}" if f.instructions is not None else f"{'-':>8}"
                line = (f"{run.label:<10} {name:<5} {f.packets:>10} {ir} {f.wall_min_s:>10.3f} "
                        f"{f.wall_median_s:>10.3f} {f.packets / f.wall_min_s / 1e6:>11.2f}")
                if name == "head" and "base" in figs:
                    b = figs["base"]
                    ir_change = change(f.instructions, b.instructions) if callgrind else "-"
                    line += f"   {ir_change:>13}   {change(f.wall_min_s, b.wall_min_s):>17}"
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
