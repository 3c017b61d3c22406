"""Same scenario in ns-3 and in fatpipe's simulator: wall time and goodput.

Scenario (both sides): one sender, one receiver, bottleneck 1 Gbit/s, RTT
20 ms of propagation, 2.5 MB (1 BDP) drop-tail bottleneck buffer, MTU 1500
(MSS 1448), random loss 1e-5 per data packet, one unlimited bulk TCP flow,
10 s simulated, goodput = bytes delivered after the 2 s warm-up / 8 s; CCA
bbr and cubic.

ns-3 runs as a subprocess with the python given by --ns3-python (default
$FATPIPE_NS3_PYTHON, else this interpreter; best a virtualenv of its own,
see bench/requirements-ns3.txt and bench/README.md), bounded by --timeout
per run; fatpipe's simulator runs in this process through fatpipe._native.

    python bench/ns3_compare.py                       # bbr and cubic, seeds 1..5
    python bench/ns3_compare.py --cc bbr --timeout 300 --seeds 3
    python bench/ns3_compare.py --skip-ns3            # fatpipe side only

Goals (from the issue): fatpipe >= 1000x faster than ns-3, goodput within
10 %. They are reported, never tuned for. At loss 1e-5 a run sees only
~5-8 random losses, so one run's goodput scatters by tens of percent: each
side runs --seeds seeds (fatpipe: --fatpipe-seeds, if given) and the means
are compared (bench/ns3_stats.py); the speed-up is the ratio of the mean
wall times.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_study import sim_study_toml
from ns3_stats import (
    GOODPUT_GOAL_PCT,
    SPEEDUP_GOAL,
    Difference,
    difference,
    goodput_verdict,
    run_walls,
    sample_of,
    speedup,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NS3_SCENARIO = HERE / "ns3_scenario.py"
# The python that has ns-3 (the `ns3` wheel of bench/requirements-ns3.txt,
# best in a virtualenv of its own): --ns3-python, else $FATPIPE_NS3_PYTHON,
# else the interpreter running this script.
DEFAULT_NS3_PYTHON = os.environ.get("FATPIPE_NS3_PYTHON") or sys.executable

PROGRESS_S = 0.5  # ns3_scenario.py's default --progress-s


@dataclasses.dataclass(frozen=True)
class Scenario:
    rate_bps: float = 1e9
    rtt_s: float = 0.02
    loss: float = 1e-5
    buffer_bytes: int = 2_500_000
    mtu_bytes: int = 1500
    mss_bytes: int = 1448
    duration_s: float = 10.0
    warmup_s: float = 2.0
    sock_buf_bytes: int = 32 << 20
    seed: int = 1

    def describe(self) -> str:
        return (
            f"{self.rate_bps / 1e9:g} Gbit/s, RTT {self.rtt_s * 1e3:g} ms, "
            f"buffer {self.buffer_bytes / 1e6:g} MB drop-tail, loss {self.loss:g}/pkt, "
            f"MSS {self.mss_bytes}, {self.duration_s:g} s simulated, "
            f"goodput over {self.warmup_s:g}-{self.duration_s:g} s"
        )


# ---------------------------------------------------------------- fatpipe ----


def run_fatpipe(sc: Scenario, cc: str) -> dict[str, Any]:
    """One run of fatpipe's simulator; {"error": ...} if it is not built."""
    sys.path.insert(0, str(REPO / "python"))
    try:
        t0 = time.perf_counter()
        import fatpipe._native as native

        t_import = time.perf_counter() - t0
        native.simulate  # noqa: B018 - present only once the simulator landed
    except (ImportError, AttributeError) as e:
        return {"error": f"fatpipe simulator not built ({e}); build it with `pip install -e .`"}

    t0 = time.perf_counter()
    plan_json = json.dumps(dataclasses.asdict(fatpipe_plan(sc, cc)))
    t1 = time.perf_counter()
    try:
        result = native.simulate(plan_json)
    except Exception as e:  # noqa: BLE001 - a configuration error or a simulator bug: reported
        return {"error": f"fatpipe simulate() failed: {type(e).__name__}: {e}"}
    t2 = time.perf_counter()

    from fatpipe.goodput import total_goodput_bps

    path = result.get("path", {})
    return {
        "seed": sc.seed,
        "run_wall_s": t2 - t1,
        "total_wall_s": t_import + (t2 - t0),
        "goodput_bps": total_goodput_bps(result["series"], sc.warmup_s),
        "bottleneck_drops": path.get("queue_drops"),
        "random_drops": path.get("random_drops"),
        "stats": result.get("stats", {}),
    }


def fatpipe_study_toml(sc: Scenario, cc: str) -> str:
    """The scenario as a study file, for the whole-CLI timing (the same
    plan as fatpipe_plan but for the seed, which the study derives)."""
    return sim_study_toml(
        f"ns3-compare-{cc}", sc.duration_s, sc.warmup_s,
        f'rate = {sc.rate_bps}\nrtt = "{sc.rtt_s * 1e3}ms"\nloss = {sc.loss}\nbuffer = {sc.buffer_bytes}\n'
        f"mtu = {sc.mtu_bytes}",
        f"rmem_max = {sc.sock_buf_bytes}\nwmem_max = {sc.sock_buf_bytes}",
        f'[[flows]]\ncc = "{cc}"\nmss = {sc.mss_bytes}\n', interval="100ms", seed=sc.seed)


def run_fatpipe_cli(sc: Scenario, cc: str) -> dict[str, Any]:
    """The scenario through the whole CLI (`python3 -m fatpipe run
    --no-report`, a process of its own: start-up, planning, the run, its
    summary and the tables written): its wall time, or {"cli_error": ...}."""
    with tempfile.TemporaryDirectory(prefix="fatpipe-ns3cmp-") as tmp:
        study = Path(tmp) / "study.toml"
        study.write_text(fatpipe_study_toml(sc, cc))
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "fatpipe", "run", str(study), "--out", str(Path(tmp) / "out"),
                               "--no-report", "--jobs", "1"], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO / "python")})
        wall = time.perf_counter() - t0
    if done.returncode != 0:
        return {"cli_error": f"fatpipe run exited {done.returncode}: {done.stderr.strip()[-300:]}"}
    return {"cli_wall_s": wall}


def fatpipe_plan(sc: Scenario, cc: str):
    """The scenario as a fatpipe RunPlan: one bulk flow, one stream."""
    from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan

    limits = HostLimits(rmem_max_bytes=sc.sock_buf_bytes, wmem_max_bytes=sc.sock_buf_bytes)
    return RunPlan(
        run_id=f"ns3-compare-{cc}-seed{sc.seed}",
        backend="sim",
        rep=0,
        seed=sc.seed,
        duration_s=sc.duration_s,
        warmup_s=sc.warmup_s,
        sample_interval_s=0.1,
        rate_bps=sc.rate_bps,
        rtt_s=sc.rtt_s,
        loss=sc.loss,
        corruption=0.0,
        buffer_bytes=sc.buffer_bytes,
        mtu_bytes=sc.mtu_bytes,
        senders={"s1": limits},
        receiver=limits,
        flows=(
            FlowPlan(group=0, kind="bulk", cc=cc, streams=1, mss_bytes=sc.mss_bytes, sender="s1"),
        ),
    )


# ------------------------------------------------------------------ ns-3 -----


def ns3_missing(python: str) -> str | None:
    """Why `python` cannot run ns3_scenario.py (None if it can): it must
    exist and find the `ns` package without importing it (cppyy is slow)."""
    hint = ("make a virtualenv, install bench/requirements-ns3.txt into it and pass its python "
            "with --ns3-python or FATPIPE_NS3_PYTHON")
    if not Path(python).exists():
        return f"no python at {python}: {hint}"
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('ns') is None)"
    try:
        r = subprocess.run([python, "-c", probe], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run {python} ({e}): {hint}"
    if r.returncode != 0:
        return f"{python} has no ns-3 (the ns3 package of bench/requirements-ns3.txt): {hint}"
    return None


def run_ns3(sc: Scenario, cc: str, python: str, timeout_s: float, extra: list[str]) -> dict[str, Any]:
    """ns3_scenario.py in the ns-3 venv, killed after timeout_s wall seconds."""
    missing = ns3_missing(python)
    if missing:
        return {"error": missing}
    cmd = [
        python,
        str(NS3_SCENARIO),
        "--cc", cc,
        "--rate-bps", repr(sc.rate_bps),
        "--rtt-s", repr(sc.rtt_s),
        "--loss", repr(sc.loss),
        "--buffer-bytes", str(sc.buffer_bytes),
        "--mtu-bytes", str(sc.mtu_bytes),
        "--mss-bytes", str(sc.mss_bytes),
        "--duration-s", repr(sc.duration_s),
        "--warmup-s", repr(sc.warmup_s),
        "--sock-buf-bytes", str(sc.sock_buf_bytes),
        "--seed", str(sc.seed),
    ]  # fmt: skip
    for item in extra:
        cmd += ["--set", item]
    print(f"[ns-3 {cc} seed {sc.seed}] {' '.join(cmd)}", file=sys.stderr, flush=True)

    lines: list[str] = []
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO)
    )

    def pump_stdout() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if line.startswith("PROGRESS"):
                print(f"[ns-3 {cc} seed {sc.seed}] {line}", file=sys.stderr, flush=True)

    err_lines: list[str] = []

    def pump_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            # cppyy's "[runStaticInitializersOnce]: Failed to materialize
            # symbols" lines are harmless noise of the ns3 wheel.
            if "materialize symbols" not in line:
                err_lines.append(line.rstrip("\n"))

    threads = [threading.Thread(target=f, daemon=True) for f in (pump_stdout, pump_stderr)]
    for th in threads:
        th.start()
    try:
        rc = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        for th in threads:
            th.join(timeout=5)
        out = {"error": f"timed out after {timeout_s:g} s", "timed_out": True, "seed": sc.seed}
        out.update(_last_progress(lines))
        ready = _ready(lines)
        if ready is not None:
            # Simulator::Run had been running for at least this long.
            out["run_wall_lower_bound_s"] = timeout_s - ready
        return out
    for th in threads:
        th.join(timeout=5)
    wall = time.perf_counter() - started
    for line in lines:
        if line.startswith("RESULT "):
            res = json.loads(line[len("RESULT "):])
            res["subprocess_wall_s"] = wall
            res["seed"] = sc.seed
            return res
    tail = "\n".join(err_lines[-15:])
    return {"error": f"ns-3 exited with code {rc} and no RESULT line\n{tail}"}


def _last_progress(lines: list[str]) -> dict[str, Any]:
    for line in reversed(lines):
        if line.startswith("PROGRESS "):
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            return {"progress_sim_s": float(kv["sim_s"]), "progress_run_wall_s": float(kv["run_wall_s"])}
    return {}


def _ready(lines: list[str]) -> float | None:
    for line in lines:
        if line.startswith("READY "):
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            return float(kv["elapsed_s"])
    return None


# --------------------------------------------------------------- report -----


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def mbit(x: float | None) -> float | None:
    return None if x is None else x / 1e6


def describe_run(sc: Scenario, run: dict[str, Any]) -> str:
    """One line per run: goodput, wall time, drops, or what went wrong."""
    if "error" in run:
        return describe_error(sc, run)
    return (
        f"goodput {fmt(mbit(run.get('goodput_bps')), '7.1f')} Mbit/s, "
        f"Run {fmt(run.get('run_wall_s'), '8.3f')} s"
        + (f", whole CLI {run['cli_wall_s']:.2f} s" if "cli_wall_s" in run else "")
        + (f", CLI failed: {run['cli_error']}" if "cli_error" in run else "")
        + f", drops {run.get('bottleneck_drops', 'n/a')} "
        f"bottleneck / {run.get('random_drops', 'n/a')} random"
    )


def describe_error(sc: Scenario, run: dict[str, Any]) -> str:
    msg = run["error"]
    if run.get("progress_sim_s") is not None:
        msg += (
            f"; reached {run['progress_sim_s']:g} s of {sc.duration_s:g} s simulated "
            f"({run['progress_run_wall_s']:.0f} s in Simulator::Run)"
        )
    elif run.get("timed_out"):
        msg += f"; did not reach its first progress mark ({PROGRESS_S:g} s simulated)"
    return msg


def print_runs(sc: Scenario, label: str, runs: list[dict[str, Any]], seed_note: str = "") -> None:
    print(f"{label} by seed{seed_note}:")
    for run in runs:
        print(f"  seed {run['seed']:3d}: {describe_run(sc, run)}")


def summary_column(runs: list[dict], run_wall_digits: int) -> list[str]:
    """One side's cells: finished runs, goodput mean / SD / SEM, mean walls.

    The Run-only wall mean counts a timed-out ns-3 run with its time up to
    the kill (shown as ">= ..."), as the speed-up does."""
    gp = sample_of(runs, "goodput_bps")
    walls, bounded = run_walls(runs)
    run_wall = fmt(sum(walls) / len(walls) if walls else None, f".{run_wall_digits}f")
    return [
        f"{gp.n}/{len(runs)}",
        fmt(mbit(gp.mean), ".1f"),
        fmt(mbit(gp.sd), ".1f"),
        fmt(mbit(gp.sem), ".1f"),
        (">= " if bounded else "") + run_wall,
        fmt(sample_of(runs, "total_wall_s").mean, f".{run_wall_digits}f"),
    ]


def print_summary(ns3_label: str, ns3_runs: list[dict], fp_runs: list[dict]) -> None:
    names = [
        "finished runs",
        "goodput mean Mbit/s",
        "goodput SD Mbit/s",
        "goodput SEM Mbit/s",
        "wall s, Run only (mean)",
        "wall s, total (mean)",
    ]
    w = 28
    print(f"{'':{w}} {ns3_label:>16} {'fatpipe sim':>16}")
    for name, a, b in zip(names, summary_column(ns3_runs, 3), summary_column(fp_runs, 4), strict=True):
        print(f"{name:{w}} {a:>16} {b:>16}")


def report(sc: Scenario, cc: str, ns3_runs: list[dict], fp_runs: list[dict]) -> dict[str, Any]:
    """Print one CCA's comparison over the seeds; return it for --json."""
    ns3_version = next((r["ns3_version"] for r in ns3_runs if "ns3_version" in r), "")
    ns3_label = f"ns-3 {ns3_version}".strip()
    ns3_gp, fp_gp = sample_of(ns3_runs, "goodput_bps"), sample_of(fp_runs, "goodput_bps")
    diff = difference(fp_gp, ns3_gp)
    speed = speedup(ns3_runs, fp_runs)
    g_speed = speed.verdict()
    g_goodput = goodput_verdict(diff, ns3_gp.n, fp_gp.n)

    print()
    print(f"== {cc}: {sc.describe()}")
    print_runs(sc, ns3_label, ns3_runs, " (ns-3 run number, RngRun)")
    print_runs(sc, "fatpipe sim", fp_runs)
    print("(the two simulators' seeds are unrelated: runs are compared as samples, never paired)")
    print_summary(ns3_label, ns3_runs, fp_runs)
    print(f"goodput difference of means: {describe_difference(diff)}  (fatpipe vs ns-3)")
    print(f"speed-up (mean Run wall ns-3 / fatpipe): {speed.label()}")
    per_sim_s = per_simulated_second(sc, ns3_runs, fp_runs)
    for line in per_sim_s["lines"]:
        print(line)
    print(f"goal speed-up >= {SPEEDUP_GOAL:.0f}x: {g_speed}")
    print(f"goal goodput within {GOODPUT_GOAL_PCT:.0f} %: {g_goodput}")
    return {
        "cc": cc,
        "ns3_runs": ns3_runs,
        "fatpipe_runs": fp_runs,
        "ns3_goodput": ns3_gp.as_dict(),
        "fatpipe_goodput": fp_gp.as_dict(),
        "goodput_diff": None if diff is None else dataclasses.asdict(diff),
        "speedup": speed.ratio,
        "per_simulated_second": per_sim_s["figures"],
        "speedup_is_lower_bound": speed.lower_bound,
        "goal_speedup": g_speed,
        "goal_goodput": g_goodput,
    }


def per_simulated_second(sc: Scenario, ns3_runs: list[dict], fp_runs: list[dict]) -> dict[str, Any]:
    """Wall seconds per simulated second: ns-3's Simulator::Run, fatpipe's
    simulator core (simulate()) and fatpipe's whole CLI, and ns-3's over
    each of fatpipe's (the ratios the issue asks for)."""
    walls, bounded = run_walls(ns3_runs)
    ns3 = sum(walls) / len(walls) / sc.duration_s if walls else None
    core = sample_of(fp_runs, "run_wall_s").mean
    cli = sample_of(fp_runs, "cli_wall_s").mean
    core = None if core is None else core / sc.duration_s
    cli = None if cli is None else cli / sc.duration_s
    bound = ">= " if bounded else ""

    def ratio(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or not b else f"{bound}{a / b:.0f}x"

    lines = [
        "wall s per simulated second: "
        f"ns-3 Run {fmt(ns3, '.4f')}, fatpipe core {fmt(core, '.6f')}, fatpipe whole CLI {fmt(cli, '.5f')}",
        f"ns-3 / fatpipe per simulated second: core {ratio(ns3, core)}, whole CLI {ratio(ns3, cli)}",
    ]
    return {"lines": lines, "figures": {"ns3_run_s": ns3, "fatpipe_core_s": core, "fatpipe_cli_s": cli,
                                        "ns3_is_lower_bound": bounded}}


def describe_difference(diff: Difference | None) -> str:
    if diff is None:
        return "n/a"
    if diff.half_width_pct is None:
        return f"{diff.pct:+.1f} % (no interval: < 2 finished runs a side)"
    return (
        f"{diff.pct:+.1f} % +- {diff.half_width_pct:.1f} % "
        f"(95 %: {diff.t:.2f} standard errors, Welch df {diff.df:.1f})"
    )


# ------------------------------------------------------------------ main -----


def run_seeds(sc: Scenario, cc: str, args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    """fatpipe over its seeds (fast), then ns-3 over its seeds, one at a time.
    Every run's dict carries its "seed"."""
    fp_runs = [run_fatpipe_seed(sc, cc, s, args) for s in seed_range(args, args.fatpipe_seeds)]
    ns3_runs: list[dict] = []
    for seed in seed_range(args, args.seeds):
        timeouts = sum(bool(r.get("timed_out")) for r in ns3_runs)
        ns3_runs.append(run_ns3_seed(sc, cc, seed, args, timeouts))
    return ns3_runs, fp_runs


def run_ns3_seed(sc: Scenario, cc: str, seed: int, args: argparse.Namespace, timeouts: int) -> dict:
    """One ns-3 run, unless skipped (--skip-ns3, or --give-up-after reached)."""
    if args.skip_ns3:
        run = {"error": "skipped"}
    elif args.give_up_after and timeouts >= args.give_up_after:
        run = {"error": f"skipped after {timeouts} timed-out run(s) (--give-up-after)"}
    else:
        run_sc = dataclasses.replace(sc, seed=seed)
        run = run_ns3(run_sc, cc, args.ns3_python, args.timeout, args.ns3_set)
    run = {**run, "seed": seed}
    log_run(sc, f"ns-3 {cc}", run)
    return run


def seed_range(args: argparse.Namespace, count: int) -> range:
    return range(args.seed, args.seed + count)


def run_fatpipe_seed(sc: Scenario, cc: str, seed: int, args: argparse.Namespace) -> dict:
    if args.skip_fatpipe:
        run = {"error": "skipped"}
    else:
        run_sc = dataclasses.replace(sc, seed=seed)
        run = run_fatpipe(run_sc, cc)
        if "error" not in run:
            run.update(run_fatpipe_cli(run_sc, cc))
    run = {**run, "seed": seed}
    log_run(sc, f"fatpipe {cc}", run)
    return run


def log_run(sc: Scenario, label: str, run: dict) -> None:
    print(f"[{label} seed {run['seed']}] {describe_run(sc, run)}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cc", nargs="+", default=["bbr", "cubic"], choices=["bbr", "cubic"])
    p.add_argument("--ns3-python", default=DEFAULT_NS3_PYTHON,
                   help="python that has ns-3 (default: $FATPIPE_NS3_PYTHON, else this interpreter)")
    p.add_argument("--timeout", type=float, default=900.0, help="wall seconds per ns-3 run")
    p.add_argument(
        "--give-up-after",
        type=int,
        default=0,
        metavar="K",
        help="skip a CCA's remaining ns-3 seeds once K of them timed out (0: never)",
    )
    p.add_argument("--duration-s", type=float, default=Scenario.duration_s)
    p.add_argument("--warmup-s", type=float, default=Scenario.warmup_s)
    p.add_argument("--seed", type=int, default=Scenario.seed, help="first seed")
    p.add_argument(
        "--seeds", type=int, default=5, help="runs per side and CCA: seeds --seed .. --seed+N-1"
    )
    p.add_argument(
        "--fatpipe-seeds",
        type=int,
        metavar="M",
        help="fatpipe runs per CCA if not --seeds (they are cheap: a bigger sample narrows the "
        "comparison)",
    )
    p.add_argument(
        "--ns3-set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="extra ns-3 Config::SetDefault for a what-if run (changes the scenario; repeatable)",
    )
    p.add_argument("--skip-ns3", action="store_true")
    p.add_argument("--skip-fatpipe", action="store_true")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    args = p.parse_args(argv)
    if args.fatpipe_seeds is None:
        args.fatpipe_seeds = args.seeds
    if args.seeds < 1 or args.fatpipe_seeds < 1:
        p.error("--seeds and --fatpipe-seeds must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sc = Scenario(duration_s=args.duration_s, warmup_s=args.warmup_s, seed=args.seed)
    if args.ns3_set:
        print(f"NOTE: ns-3 overrides change the scenario: {args.ns3_set}", flush=True)
    results = []
    for cc in args.cc:
        ns3_runs, fp_runs = run_seeds(sc, cc, args)
        results.append(report(sc, cc, ns3_runs, fp_runs))
        if args.json:  # after every CCA, so a long run leaves its results early
            write_json(args.json, sc, args.ns3_set, results)
    return 0


def write_json(path: Path, sc: Scenario, ns3_set: list[str], results: list[dict]) -> None:
    scenario = dataclasses.asdict(sc)
    del scenario["seed"]  # per run
    out = {"scenario": scenario, "ns3_overrides": ns3_set, "results": results}
    path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
