"""Does a host profile predict the kernel backend's CPU-bound goodput?
(prints figures, not a test; docs/host-model.md, "The kernel-vm profile").

    PYTHONPATH=python:bench python3 bench/host_cpu_predict.py KERNEL.json
        [--profile kernel-vm] [--gro-profile kernel-vm-gro]

KERNEL.json is what bench/host_cpu.py wrote (`--out`): the kernel
backend's runs on this machine. For each of its CPU-bound points (path
rate far above what the machine carries: 1, 2 and 4 CUBIC streams, MTU
1500 and 9000, receiver GRO off and on) this runs the simulator with the
same plan and every host on `--profile` (`--gro-profile` for the points
with a GRO receiver, where the delay line carries TSO units and costs
less per byte; the senders and the receiver on one machine, as the kernel
backend's namespaces are), and prints the
kernel's goodput per repetition, the simulator's, their ratio, and
whether it is within ±20 %. Points marked `calibration` are the ones the
profile's costs were fitted to (docs/host-model.md); the others are
predictions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from fatpipe import spec as spec_mod
from fatpipe.backends.sim import SimBackend
from fatpipe.hostprofiles import profile_keys
from fatpipe.study import host_cpu_plan
from kernel_common import goodput_bps, plan

AGREE = 0.20
# The points the profiles' costs were fitted to (2 streams, MTU 1500 and
# 9000, per GRO mode: docs/host-model.md); every other point predicts.
CALIBRATION = {(2, 1500, False), (2, 9000, False), (2, 1500, True), (2, 9000, True)}


def sim_goodput(run: dict, profile: str, seed: int) -> tuple[float, float | None]:
    """The simulator's goodput for a kernel run's point, and its busiest core."""
    p = plan(run["rate_bps"], 0.010, 0.0, "cubic", run["streams"], mtu=run["mtu"], duration_s=run["seconds"],
             warmup_s=run["warmup_s"], seed=seed, gro=run["gro"])
    cpu = host_cpu_plan(spec_mod.HostSection.model_validate(profile_keys(profile)))
    senders = {name: replace(h, cpu=cpu) for name, h in p.senders.items()}
    p = replace(p, backend="sim", senders=senders, receiver=replace(p.receiver, cpu=cpu))
    with tempfile.TemporaryDirectory() as work:
        out = SimBackend().run(p, Path(work))
    return goodput_bps(out, run["warmup_s"]), out.cpu.busy_max_core_frac


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel_json", type=Path)
    ap.add_argument("--profile", default="kernel-vm")
    ap.add_argument("--gro-profile", default="kernel-vm-gro")
    args = ap.parse_args()
    data = json.loads(args.kernel_json.read_text())
    groups: dict[tuple, list[dict]] = {}
    for r in data["runs"]:
        if r["kind"] == "predict":
            groups.setdefault((r["streams"], r["mtu"], r["gro"]), []).append(r)
    print(f"profiles {args.profile} (GRO off), {args.gro_profile} (GRO on); kernel runs: {data['machine']}, "
          f"{data['seconds']:g} s after {data['warmup_s']:g} s")
    print("| streams | MTU | GRO | role | kernel Gbit/s (reps) | sim Gbit/s | sim busiest core | sim / kernel "
          "| ±20 % |")
    print("|---:|---:|---|---|---|---:|---:|---:|---|")
    within = 0
    for key in sorted(groups):
        runs = groups[key]
        streams, mtu, gro = key
        kernel = [r["goodput_bps"] for r in runs]
        sim, busiest = sim_goodput(runs[0], args.gro_profile if gro else args.profile, seed=1)
        ratio = sim / statistics.mean(kernel)
        ok = abs(ratio - 1) <= AGREE
        within += ok
        role = "calibration" if key in CALIBRATION else "prediction"
        reps = ", ".join(f"{k / 1e9:.2f}" for k in kernel)
        print(f"| {streams} | {mtu} | {'on' if gro else 'off'} | {role} | {reps} | {sim / 1e9:.2f} | "
              f"{busiest if busiest is None else f'{busiest:.2f}'} | {ratio:.2f} | {'yes' if ok else 'NO'} |")
    print(f"\n{within} of {len(groups)} points within ±{AGREE:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
