"""Same scenario in ns-3 and in fatpipe's simulator: wall time and goodput.

Scenario (both sides): one sender, one receiver, bottleneck 1 Gbit/s, RTT
20 ms of propagation, 2.5 MB (1 BDP) drop-tail bottleneck buffer, MTU 1500
(MSS 1448), random loss 1e-5 per data packet, one unlimited bulk TCP flow,
10 s simulated, goodput = bytes delivered after the 2 s warm-up / 8 s; CCA
bbr and cubic.

ns-3 runs as a subprocess with the python of a separate virtualenv (see
bench/requirements-ns3.txt and bench/README.md), bounded by --timeout per
CCA; fatpipe's simulator runs in this process through fatpipe._native.

    python bench/ns3_compare.py                       # bbr and cubic
    python bench/ns3_compare.py --cc bbr --timeout 300
    python bench/ns3_compare.py --skip-ns3            # fatpipe side only

Goals (from the issue): fatpipe >= 1000x faster than ns-3, goodput within
10 %. They are reported, never tuned for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NS3_SCENARIO = HERE / "ns3_scenario.py"
DEFAULT_NS3_PYTHON = os.environ.get("FATPIPE_NS3_PYTHON", "/work/ns3-venv/bin/python")

SPEEDUP_GOAL = 1000.0
PROGRESS_S = 0.5  # ns3_scenario.py's default --progress-s
GOODPUT_GOAL_PCT = 10.0


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
        from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan

        t_import = time.perf_counter() - t0
        native.simulate  # noqa: B018 - present only once the simulator landed
    except (ImportError, AttributeError) as e:
        return {"error": f"fatpipe simulator not built ({e}); build it with `pip install -e .`"}

    limits = HostLimits(rmem_max_bytes=sc.sock_buf_bytes, wmem_max_bytes=sc.sock_buf_bytes)
    plan = RunPlan(
        run_id=f"ns3-compare-{cc}",
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
    t0 = time.perf_counter()
    plan_json = json.dumps(dataclasses.asdict(plan))
    t1 = time.perf_counter()
    try:
        result = native.simulate(plan_json)
    except Exception as e:  # a configuration error or a simulator bug
        return {"error": f"fatpipe simulate() failed: {type(e).__name__}: {e}"}
    t2 = time.perf_counter()

    series = result["series"]
    goodput = goodput_from_series(series, sc.warmup_s)
    path = result.get("path", {})
    return {
        "run_wall_s": t2 - t1,
        "total_wall_s": t_import + (t2 - t0),
        "goodput_bps": goodput,
        "bottleneck_drops": path.get("queue_drops"),
        "random_drops": path.get("random_drops"),
        "stats": result.get("stats", {}),
    }


def goodput_from_series(series: dict[str, list], warmup_s: float) -> float | None:
    """(delivered at the last sample - at t = warm-up) * 8 / (t_last - warm-up), all streams."""
    rows: dict[tuple[int, int], list[tuple[float, int]]] = {}
    for g, s, t, d in zip(
        series["flow_group"], series["stream"], series["t_s"], series["delivered_bytes"]
    ):
        rows.setdefault((g, s), []).append((float(t), int(d)))
    total_bits = 0.0
    span = None
    for samples in rows.values():
        samples.sort()
        t_warm, d_warm = min(samples, key=lambda x: abs(x[0] - warmup_s))
        t_last, d_last = samples[-1]
        if t_last <= t_warm:
            return None
        total_bits += (d_last - d_warm) * 8
        span = t_last - t_warm
    return total_bits / span if span else None


# ------------------------------------------------------------------ ns-3 -----


def run_ns3(sc: Scenario, cc: str, python: str, timeout_s: float, extra: list[str]) -> dict[str, Any]:
    """ns3_scenario.py in the ns-3 venv, killed after timeout_s wall seconds."""
    if not Path(python).exists():
        return {
            "error": f"no ns-3 python at {python}: python3 -m venv /work/ns3-venv && "
            "/work/ns3-venv/bin/pip install -r bench/requirements-ns3.txt (or --ns3-python)"
        }
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
    print(f"[ns-3 {cc}] {' '.join(cmd)}", file=sys.stderr, flush=True)

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
                print(f"[ns-3 {cc}] {line}", file=sys.stderr, flush=True)

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
        out = {"error": f"timed out after {timeout_s:g} s", "timed_out": True}
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


def report(sc: Scenario, cc: str, ns3: dict[str, Any], fp: dict[str, Any]) -> dict[str, Any]:
    ns3_ok = "error" not in ns3
    fp_ok = "error" not in fp
    ns3_label = f"ns-3 {ns3.get('ns3_version', '')}".strip()

    ns3_run = ns3.get("run_wall_s") if ns3_ok else None
    fp_run = fp.get("run_wall_s") if fp_ok else None
    ns3_gp = ns3.get("goodput_bps") if ns3_ok else None
    fp_gp = fp.get("goodput_bps") if fp_ok else None

    speedup = speedup_lb = None
    if fp_run and ns3_run:
        speedup = ns3_run / fp_run
    elif fp_run and ns3.get("run_wall_lower_bound_s"):
        speedup_lb = ns3["run_wall_lower_bound_s"] / fp_run
    diff_pct = (fp_gp - ns3_gp) / ns3_gp * 100 if (fp_gp is not None and ns3_gp) else None

    w = 26
    print()
    print(f"== {cc}: {sc.describe()}")
    print(f"{'':{w}} {ns3_label:>16} {'fatpipe sim':>16}")
    rows = [
        ("wall s (Run only)", fmt(ns3_run, ".3f"), fmt(fp_run, ".4f")),
        (
            "wall s (total)",
            fmt(ns3.get("total_wall_s") if ns3_ok else None, ".3f"),
            fmt(fp.get("total_wall_s") if fp_ok else None, ".4f"),
        ),
        ("goodput Mbit/s", fmt(ns3_gp and ns3_gp / 1e6, ".1f"), fmt(fp_gp and fp_gp / 1e6, ".1f")),
        ("bottleneck drops", str(ns3.get("bottleneck_drops", "n/a")), str(fp.get("bottleneck_drops", "n/a"))),
        ("random drops", str(ns3.get("random_drops", "n/a")), str(fp.get("random_drops", "n/a"))),
    ]
    for name, a, b in rows:
        print(f"{name:{w}} {a:>16} {b:>16}")
    if speedup is not None:
        sp = f"{speedup:.0f}x"
    elif speedup_lb is not None:
        sp = f">= {speedup_lb:.0f}x (ns-3 did not finish)"
    else:
        sp = "n/a"
    print(f"{'speed-up (Run only)':{w}} {sp:>16}")
    print(f"{'goodput difference %':{w}} {fmt(diff_pct, '+.1f'):>16}   (fatpipe vs ns-3)")

    if not ns3_ok:
        msg = ns3["error"]
        if ns3.get("progress_sim_s") is not None:
            msg += (
                f"; reached {ns3['progress_sim_s']:g} s of {sc.duration_s:g} s simulated "
                f"({ns3['progress_run_wall_s']:.0f} s in Simulator::Run)"
            )
        elif ns3.get("timed_out"):
            msg += f"; did not reach its first progress mark ({PROGRESS_S:g} s simulated)"
        print(f"ns-3: {msg}")
    if not fp_ok:
        print(f"fatpipe: {fp['error']}")

    if speedup is not None:
        g1 = "MET" if speedup >= SPEEDUP_GOAL else "NOT MET"
    elif speedup_lb is not None and speedup_lb >= SPEEDUP_GOAL:
        g1 = "MET (lower bound: ns-3 timed out)"
    else:
        g1 = "unknown"
    if diff_pct is not None:
        g2 = "MET" if abs(diff_pct) <= GOODPUT_GOAL_PCT else "NOT MET"
    else:
        g2 = "unknown"
    print(f"goal speed-up >= {SPEEDUP_GOAL:.0f}x: {g1}")
    print(f"goal goodput within {GOODPUT_GOAL_PCT:.0f} %: {g2}")
    return {
        "cc": cc,
        "ns3": ns3,
        "fatpipe": fp,
        "speedup": speedup,
        "speedup_lower_bound": speedup_lb,
        "goodput_diff_pct": diff_pct,
        "goal_speedup": g1,
        "goal_goodput": g2,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cc", nargs="+", default=["bbr", "cubic"], choices=["bbr", "cubic"])
    p.add_argument("--ns3-python", default=DEFAULT_NS3_PYTHON, help="python of the ns-3 venv")
    p.add_argument("--timeout", type=float, default=900.0, help="wall seconds per ns-3 run")
    p.add_argument("--duration-s", type=float, default=Scenario.duration_s)
    p.add_argument("--warmup-s", type=float, default=Scenario.warmup_s)
    p.add_argument("--seed", type=int, default=Scenario.seed)
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

    sc = Scenario(duration_s=args.duration_s, warmup_s=args.warmup_s, seed=args.seed)
    if args.ns3_set:
        print(f"NOTE: ns-3 overrides change the scenario: {args.ns3_set}", flush=True)
    results = []
    for cc in args.cc:
        fp = {"error": "skipped"} if args.skip_fatpipe else run_fatpipe(sc, cc)
        ns3 = (
            {"error": "skipped"}
            if args.skip_ns3
            else run_ns3(sc, cc, args.ns3_python, args.timeout, args.ns3_set)
        )
        results.append(report(sc, cc, ns3, fp))
    if args.json:
        args.json.write_text(json.dumps({"scenario": dataclasses.asdict(sc), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
