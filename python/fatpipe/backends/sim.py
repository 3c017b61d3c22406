"""The sim backend: the Rust simulator through the PyO3 module fatpipe._native.

The plan is handed over as JSON (the dataclass fields of RunPlan, each of
them declared by crates/sim/src/plan.rs, which refuses any other); the
simulator releases the GIL while it runs, so runs spread over threads.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .. import bpfcc
from ..schema import CPU_SATURATED_FRAC, CpuReport, cpu_saturated
from .base import Backend, BackendUnavailable, PathReport, RunOutcome, RunPlan

# Bottleneck packets the simulator gets through per second of wall time, for
# the wall-time guess of fatpipe.estimate: 8-14 million measured on a 2-core
# VM (1-10 Gbit/s, 1-8 streams, cubic/bbr/reno, 5 s runs, including the
# conversion of the tables to Python), rounded down; the 208 runs of
# studies/fidelity.toml averaged 4.9 million.
SIM_PACKETS_PER_S = 5e6
# The same with a GRO receiver (`hosts.receiver.gro`), which ACKs once per
# super-packet: studies/hpwan-long-fat-full.toml (160 runs, 100 Gbit/s)
# averaged 34 million, quickstart-gro.toml (54 runs, 1 Gbit/s) 28 million;
# rounded down.
SIM_PACKETS_PER_S_GRO = 25e6
# A host processing jitter (hosts.<name>.processing_jitter) gives every data
# unit and ACK one more event: callgrind counts 1.8x the instructions per
# packet (the bench example's 8-stream reno, 20 us on both hosts).
SIM_HOST_DELAY_COST = 1.8


def _native():
    try:
        from .. import _native
    except ImportError as e:  # the extension was not built
        raise BackendUnavailable(
            "the simulator extension fatpipe._native is not built; "
            "run scripts/install.sh (or `pip install -e .`)"
        ) from e
    return _native


@dataclass(frozen=True)
class SimDoctorReport:
    """`fatpipe doctor` for the simulator: is the extension built, and what it offers."""

    usable: bool
    detail: str

    def render(self) -> str:
        return f"  [{'ok' if self.usable else 'MISSING'}] simulator extension: {self.detail}"


def plan_json(plan: RunPlan) -> str:
    """The plan as the simulator reads it (crates/sim/src/plan.rs): the
    JSON of its dataclass fields. A study's testbed goes to every backend's
    plans, but the simulator builds its own path and ignores it, and a
    Testbed is no JSON: it is sent as null."""
    return json.dumps(asdict(replace(plan, testbed=None)))


class SimBackend(Backend):
    name = "sim"

    def max_parallel_runs(self, jobs: int) -> int:
        # Runs share nothing and the simulator releases the GIL: one per job.
        return max(1, jobs)

    def doctor(self) -> SimDoctorReport:
        try:
            native = _native()
        except BackendUnavailable as e:
            return SimDoctorReport(False, str(e))
        return SimDoctorReport(True, f"fatpipe._native {native.__version__}; CCAs "
                                     f"{' '.join(sorted(native.available_ccas()))}")

    def clean(self) -> list[str]:
        return []  # a simulation leaves nothing outside its result directory

    def clean_stale(self) -> list[str]:
        return []  # a simulation leaves nothing on the machine

    def check(self, plans: list[RunPlan]) -> None:
        native = _native()
        available = set(native.available_ccas())
        for plan in plans:
            for flow in plan.flows:
                if flow.kind != "cross" and bpfcc.is_bpf(flow.cc):
                    try:
                        bpfcc.resolve(flow.cc)
                    except bpfcc.BpfCcaError as e:
                        raise BackendUnavailable(f"flows.{flow.group}.cc: {e}") from None
                elif flow.kind != "cross" and flow.cc not in available:
                    raise BackendUnavailable(
                        f"flows.{flow.group}.cc = {flow.cc!r} is not implemented by the sim "
                        f"backend; available: {', '.join(sorted(available))}"
                    )

    def facts(self) -> dict[str, Any]:
        native = _native()
        return {
            "sim_version": native.__version__,
            "sim_ccas": list(native.available_ccas()),
            "machine": platform.machine(),
            "python": platform.python_version(),
        }

    def estimated_wall_s(self, plan: RunPlan, packets: float) -> float:
        """Wall time of a run that carries `packets` bottleneck packets."""
        per_s = SIM_PACKETS_PER_S_GRO if plan.receiver.gro else SIM_PACKETS_PER_S
        hosts = [plan.receiver, *plan.senders.values()]
        return packets / per_s * (SIM_HOST_DELAY_COST if any(h.processing_jitter_s for h in hosts) else 1.0)

    def run(self, plan: RunPlan, workdir: Path) -> RunOutcome:
        bpf = {f.cc: bpfcc.resolve(f.cc) for f in plan.flows if f.kind != "cross" and bpfcc.is_bpf(f.cc)}
        result = _native().simulate(plan_json(plan), {cc: o.elf for cc, o in bpf.items()} or None)
        facts: dict[str, Any] = {"stats": result.get("stats", {})}
        if bpf:
            # Which object ran, as the kernel backend records a port's source.
            facts["ccas"] = {cc: o.facts() for cc, o in bpf.items()}
        if result.get("captures"):
            facts["captures"] = write_captures(result["captures"], sorted(plan.senders), Path(workdir))
        cpu = CpuReport()
        if result.get("host_cpu"):
            facts["cpu"], cpu = host_cpu_measurement(result["host_cpu"])
        return RunOutcome(
            series=result["series"],
            rpcs=result["rpcs"],
            transfers=result["transfers"],
            path_series=result["path_series"],
            events=result["events"],
            path=PathReport.from_facts(result["path"]),
            cpu=cpu,
            facts=facts,
        )


def write_captures(captures: list[dict[str, Any]], hosts: list[str], workdir: Path) -> list[dict[str, Any]]:
    """The simulator's pcap files into the run's work directory, named as
    every backend names them (capturespec.file_name); their facts."""
    from ..capturespec import file_name

    workdir.mkdir(parents=True, exist_ok=True)
    out = []
    for c in captures:
        host = hosts[c["host"]] if c["side"] == "sender" else None
        name = file_name(c["side"], host)
        (workdir / name).write_bytes(c["pcap"])
        out.append({"file": name, "side": c["side"], "host": host, "bytes": len(c["pcap"]),
                    "truncated": c["truncated"]})
    return out


def host_cpu_measurement(machines: list[dict[str, Any]]) -> tuple[dict[str, Any], CpuReport]:
    """The run's CPU facts and runs-table figures from the simulator's
    machines (hosts with a CPU model, docs/host-model.md): per machine its
    hosts and each core's busy fraction over the measured interval, in the
    shape the real backends record from /proc/stat (the model has no
    softirq/process split: softirq is left unknown)."""
    out: dict[str, Any] = {}
    for m in machines:
        cores = {f"cpu{c}": {"busy_frac": round(f, 4)} for c, f in enumerate(m["busy_frac"])}
        busiest = max(m["busy_frac"], default=0.0)
        out[m["label"]] = {"roles": list(m["hosts"]), "cores": cores, "busy_max_core_frac": round(busiest, 4),
                           "saturated_cores": [c for c, f in cores.items() if cpu_saturated(f["busy_frac"])]}
    report = CpuReport(busy_max_core_frac=max(m["busy_max_core_frac"] for m in out.values()))
    facts = {"saturated_frac": CPU_SATURATED_FRAC, "machines": out,
             "cpu_bound": cpu_saturated(report.busy_max_core_frac)}
    return facts, report
