"""Cost per bottleneck packet against the number of flows (issue P2.3).

    python3 bench/flow_count.py [--flows 1,10,100,1000] [--seconds 10]
        [--ccas cubic,bbr,reno] [--wide 25,250] [--wide-seconds 2]
        [--reps 1] [--json FILE]

Each case is a study written here and run through the CLI (`python3 -m
fatpipe run --no-report`, a subprocess) and its plan through the simulator
alone (`fatpipe._native.simulate`, in this process). It prints, per case,
the bottleneck packets, the simulator's wall time, the run's wall time as
the runs table records it (`wall_s`: the simulation and its summary), the
CLI process's wall time, and each of the three per bottleneck packet. The
ratio column divides each case's per-packet run time by that of the
10-flow case of its table (the issue's criterion: at most 1.5 at 1,000
flows).

* 10 Gbit/s, 20 ms, MTU 1500, loss 1e-5, 1 BDP drop-tail, 10 s (2 s
  warm-up), 500 ms samples: 1 flow (cubic), then N flows as three bulk
  groups of about N/3 streams each (cubic from s1, bbr from s2, reno from
  s3; `--ccas cubic`: CUBIC alone, one group from s1).
* 100 Gbit/s, 70 ms, loss 1e-3, GRO receiver, 14 Gbit/s per-stream cap
  (study B's path and hosts): bbr with 25 and 250 streams.

`--reps` runs each case that many times and keeps the fastest (the
machine's speed drifts; the packets are the same every time).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from bench_study import sim_study_toml  # noqa: E402
from fatpipe import load  # noqa: E402
from fatpipe.backends.sim import plan_json  # noqa: E402
from fatpipe.study import load_study, plan_runs  # noqa: E402


@dataclass
class Case:
    """One benchmark case: a label and the study's TOML text."""

    label: str
    streams: int
    toml: str


def _groups(flows: int, ccas: list[str]) -> list[tuple[str, str, int]]:
    """(cc, sender, streams) of `flows` flows: one flow of the first CCA,
    or a group per CCA of about an equal share, each from its own sender
    (s1, s2, ...)."""
    if flows == 1:
        return [(ccas[0], "s1", 1)]
    k = len(ccas)
    shares = [flows // k + (1 if i < flows % k else 0) for i in range(k)]
    return [(cc, f"s{i + 1}", n) for i, (cc, n) in enumerate(zip(ccas, shares, strict=True)) if n]


PATH_10G = 'rate = "10Gbit"\nrtt = "20ms"\nloss = 1e-5\nbuffer = "1bdp"\nmtu = 1500'
PATH_100G = 'rate = "100Gbit"\nrtt = "70ms"\nloss = 1e-3\nbuffer = "1bdp"\nmtu = 1500'


def ten_gbit_case(flows: int, seconds: float, ccas: list[str]) -> Case:
    groups = "\n".join(
        f'[[flows]]\ncc = "{cc}"\nsender = "{sender}"\nstreams = {n}\n' for cc, sender, n in _groups(flows, ccas))
    toml = sim_study_toml(f"flows-{flows}", seconds, min(2.0, seconds / 2), PATH_10G,
                          'rmem_max = "1GiB"\nwmem_max = "1GiB"', groups)
    return Case(f"10G {flows} flows", flows, toml)


def hundred_gbit_case(streams: int, seconds: float) -> Case:
    """Study B's path and hosts (studies/hpwan-long-fat-full.toml)."""
    toml = sim_study_toml(f"wide-{streams}", seconds, seconds / 2, PATH_100G,
                          'rmem_max = 2147483647\nwmem_max = 2147483647\nstream_rate_cap = "14Gbit"\n'
                          '[hosts.receiver]\ngro = true', f'[[flows]]\ncc = "bbr"\nstreams = {streams}\n')
    return Case(f"100G bbr x{streams}", streams, toml)


@dataclass
class Measured:
    packets: int
    sim_s: float
    run_s: float
    cli_s: float


def measure(case: Case, workdir: Path) -> Measured:
    """The case through the simulator alone, then through the CLI."""
    from fatpipe import _native

    study = workdir / f"{case.label.replace(' ', '_')}.toml"
    study.write_text(case.toml)
    (plan,) = plan_runs(*load_study(study))
    t0 = time.perf_counter()
    result = _native.simulate(plan_json(plan), None)
    sim_s = time.perf_counter() - t0
    packets = int(result["path"]["packets"])
    out = workdir / f"out-{case.label.replace(' ', '_')}"
    shutil.rmtree(out, ignore_errors=True)  # a study directory that exists would be resumed, not run
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fatpipe", "run", str(study), "--out", str(out), "--no-report",
                    "--force", "--jobs", "1"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=ROOT)
    cli_s = time.perf_counter() - t0
    runs = load(out).runs
    run_s = float(runs["wall_s"].iloc[0])
    if int(runs["path_packets"].iloc[0]) != packets:
        raise SystemExit(f"{case.label}: the CLI's run carried {runs['path_packets'].iloc[0]} packets, "
                         f"the simulator alone {packets}")
    return Measured(packets, sim_s, run_s, cli_s)


def best(case: Case, reps: int, workdir: Path) -> Measured:
    runs = [measure(case, workdir) for _ in range(reps)]
    return Measured(runs[0].packets, min(r.sim_s for r in runs), min(r.run_s for r in runs),
                    min(r.cli_s for r in runs))


def table(title: str, cases: list[Case], reps: int, workdir: Path, base_streams: int) -> list[dict]:
    print(f"\n{title}")
    print(f"{'case':<18} {'packets':>12} {'sim_s':>7} {'run_s':>7} {'cli_s':>7} "
          f"{'sim ns/pkt':>10} {'run ns/pkt':>10} {'cli ns/pkt':>10} {'run ratio':>9}")
    rows = []
    for case in cases:
        m = best(case, reps, workdir)
        rows.append({"case": case.label, "streams": case.streams, **m.__dict__})
        print(f"{case.label:<18} {m.packets:>12,} {m.sim_s:>7.2f} {m.run_s:>7.2f} {m.cli_s:>7.2f} "
              f"{m.sim_s / m.packets * 1e9:>10.1f} {m.run_s / m.packets * 1e9:>10.1f} "
              f"{m.cli_s / m.packets * 1e9:>10.1f}", end="", flush=True)
        base = next((r for r in rows if r["streams"] == base_streams), None)
        ratio = (m.run_s / m.packets) / (base["run_s"] / base["packets"]) if base else float("nan")
        print(f" {ratio:>9.2f}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", default="1,10,100,1000", help="flow counts at 10 Gbit/s")
    ap.add_argument("--seconds", type=float, default=10.0, help="simulated seconds at 10 Gbit/s")
    ap.add_argument("--ccas", default="cubic,bbr,reno",
                    help="the 10 Gbit/s flows' CCAs, a group (and sender) each; 'cubic' for CUBIC alone")
    ap.add_argument("--wide", default="25,250", help="bbr stream counts at 100 Gbit/s ('' for none)")
    ap.add_argument("--wide-seconds", type=float, default=2.0, help="simulated seconds at 100 Gbit/s")
    ap.add_argument("--reps", type=int, default=1, help="runs per case, the fastest kept")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    flows = [int(x) for x in args.flows.split(",") if x]
    wide = [int(x) for x in args.wide.split(",") if x]
    with tempfile.TemporaryDirectory(prefix="fatpipe-flowcount-") as tmp:
        work = Path(tmp)
        ccas = [c for c in args.ccas.split(",") if c]
        rows = table(f"10 Gbit/s, 20 ms, loss 1e-5, {args.seconds:g} s, {'/'.join(ccas)} (ratio: to 10 flows)",
                     [ten_gbit_case(n, args.seconds, ccas) for n in flows], args.reps, work, 10)
        if wide:
            rows += table(f"100 Gbit/s, 70 ms, loss 1e-3, GRO, cap 14 Gbit/s, {args.wide_seconds:g} s "
                          f"(ratio: to {wide[0]} streams)",
                          [hundred_gbit_case(n, args.wide_seconds) for n in wide], args.reps, work, wide[0])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
