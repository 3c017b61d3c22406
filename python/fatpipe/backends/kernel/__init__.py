"""The kernel backend: real Linux TCP in network namespaces over an emulated
path (see path.py for where delay, loss and the bottleneck sit).

Module functions for the CLI:

The backend's ``doctor()`` and ``clean()`` (what `fatpipe doctor` and
`fatpipe clean` call through the registry) are also module functions:

* ``doctor() -> DoctorReport`` — a ``list`` of ``Check(name, ok, detail,
  required)`` with ``.usable``, ``.verdict`` and ``.render()``.
* ``clean() -> list[str]`` — one line per item removed or deliberately
  left alone (``"removed namespace fp-123-0-r"``, ``"stopped process 456
  in fp-123-0-r"``, ``"left alone namespace fp-lab: no fatpipe ownership
  record …"``); only what an ownership record of a fatpipe process that is
  gone names is removed (ownership.py).
* ``clean_stale() -> list[str]`` — the same removal, silent about what is
  left alone: a study calls it before its first run.

Signals are the CLI's business (fatpipe.cli.install_signal_handlers): this
package only registers undo actions (cleanup.REGISTRY), run by the
``finally`` blocks a KeyboardInterrupt unwinds through and at exit.
"""

from __future__ import annotations

import platform
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ... import bpfcc, ccas
from ...linuxpath import linkem as delay_line
from ...linuxpath.config import (
    dynamics_refusal,
    gro_refusal,
    group_losses,
    one_loss_refusal,
    path_config,
    state_trigger_refusal,
)
from ...linuxpath.ecn import marks, negotiates_ecn, path_refusal, qdisc_refusal
from ...linuxpath.flows import asked_max_pacing, flow_specs, rows_to_rpcs, rows_to_series, rows_to_transfers
from ...linuxpath.netem_map import missing_netem
from ...linuxpath.procstat import cpu_measurement
from ...linuxpath.readback import check_ccas
from ...schema import emulator_late
from ..base import Backend, BackendUnavailable, RunOutcome, RunPlan
from . import bpfcca, bpfcca_clean, capture, cleanup, privilege
from .cleanup import clean, clean_stale
from .cpuwindow import CpuWindow
from .doctor import LINKEM, DoctorReport, available_ccas, doctor
from .path import RECEIVER_ADDR, EmulatedPath, rate_above_ceiling
from .traffic import run_traffic

__all__ = ["KernelBackend", "doctor", "clean", "clean_stale"]

# Sender i is 198.18.(i+1).1/24 and its own reverse NFQUEUE is 2 + i.
MAX_SENDERS = 200
# The label of this machine in a run's CPU facts: every namespace runs on it.
MACHINE = "local"


class KernelBackend(Backend):
    name = "kernel"

    # On a cluster (fatpipe.cluster) a kernel run needs this Dask resource
    # token, offered once per machine: one kernel run at a time per machine.
    cluster_resource = "kernel"

    def max_parallel_runs(self, jobs: int) -> int:  # noqa: ARG002 - one path per machine
        # Runs share the host's CPUs and its view of the path: one at a time.
        return 1

    def doctor(self) -> DoctorReport:
        return doctor()

    def clean(self) -> list[str]:
        return clean() + bpfcca_clean.struct_ops_left()

    def clean_stale(self) -> list[str]:
        return clean_stale()

    def check(self, plans: list[RunPlan]) -> None:
        for plan in plans:
            try:
                cfg = path_config(plan)  # flows of one sender agree on cwnd_clamp and ecn
            except ValueError as e:
                raise BackendUnavailable(f"run {plan.run_id}: {e}") from None
            # The discipline and the GRO receiver the path can have (pure).
            refused = state_trigger_refusal(plan.dynamics, plan.flows) \
                or path_refusal(cfg.aqm, cfg.emulator, cfg.bottleneck) \
                or gro_refusal(cfg, cfg.emulator, cfg.bottleneck) \
                or (one_loss_refusal(cfg.group_loss, "netem") if cfg.emulator == "netem" else None) \
                or dynamics_refusal(cfg, cfg.emulator, cfg.bottleneck)
            if refused:
                raise BackendUnavailable(f"run {plan.run_id}: {refused}")
        if not privilege.is_root():
            raise BackendUnavailable("the kernel backend needs root (network namespaces); try `sudo fatpipe …` "
                                     "or the sim backend")
        ccas = set(available_ccas())
        bpf_objects(plans, ccas)
        ports = self._ports_for({f.cc for plan in plans for f in plan.flows
                                 if f.kind != "cross" and not bpfcc.is_bpf(f.cc)} - ccas)
        for plan in plans:
            for f in plan.flows:
                if f.kind == "cross" or bpfcc.is_bpf(f.cc):
                    continue  # cross: no process, linkem offers its packets; bpf: checked above
                if f.kind not in ("bulk", "rpc", "transfer"):
                    raise BackendUnavailable(f"run {plan.run_id}: flow group {f.group}: kind={f.kind!r} is not "
                                             "supported by the kernel backend (bulk, rpc, transfer, cross)")
                if f.cc not in ccas and f.cc not in ports:
                    raise BackendUnavailable(f"run {plan.run_id}: CCA {f.cc!r} is neither in the running kernel "
                                             f"(have: {' '.join(sorted(ccas))}) nor one of fatpipe's BPF ports "
                                             f"(bpf/cca: {' '.join(sorted(ports)) or 'none built'})")
            too_fast = rate_above_ceiling(plan.rate_bps)
            if too_fast:
                raise BackendUnavailable(f"run {plan.run_id}: {too_fast}")
            if len(plan.senders) > MAX_SENDERS:
                raise BackendUnavailable(f"run {plan.run_id}: {len(plan.senders)} senders; the kernel backend "
                                         f"builds at most {MAX_SENDERS} sender namespaces")
        report = doctor()
        if not report.usable:
            raise BackendUnavailable(report.verdict)
        # The qdiscs the running kernel has, as doctor's probe found them.
        qdiscs = {c.name for c in report if c.ok}
        for plan in plans:
            refused = qdisc_refusal(plan.aqm, qdiscs) \
                or (missing_netem("the running kernel") if plan.emulator == "netem" and "netem" not in qdiscs else None)
            if refused:
                raise BackendUnavailable(f"run {plan.run_id}: {refused}")
        # linkem is the delay line without netem, and the bottleneck of every
        # marking path (a CE threshold marks in linkem, linuxpath/ecn.py).
        # So is it of a path whose flow groups meet different loss (netem
        # applies one to all).
        # And of a path whose senders ask for a root qdisc (netem would
        # take that root; path.EmulatedPath).
        needs_linkem = not any(c.name == "netem" and c.ok for c in report) or any(marks(p.aqm) for p in plans) \
            or any(one_loss_refusal(group_losses(p), "netem") for p in plans) \
            or any(h.qdisc for p in plans for h in p.senders.values()) \
            or any(p.moves() and p.emulator != "netem" for p in plans) or any(p.emulator == "linkem" for p in plans)
        linkem = next(c for c in report if c.name == LINKEM)
        why = ("no netem, path.aqm marks CE, flow groups meet different loss, a sender asks for a root qdisc, "
               "the path moves or carries cross traffic, or path.emulator = \"linkem\"")
        if needs_linkem and not linkem.ok:
            raise BackendUnavailable(f"{LINKEM} is needed ({why}): {linkem.detail}")
        if needs_linkem and delay_line.find_linkem() is None:
            try:
                delay_line.build_linkem()
            except Exception as e:
                raise BackendUnavailable(f"{LINKEM} is needed ({why}) and cannot be built: {e}") from e

    @staticmethod
    def _ports_for(missing: set[str]) -> dict[str, bpfcca.Port]:
        """fatpipe's BPF ports, when the plans name CCAs the kernel lacks
        (building the loader if needed); {} when they name none."""
        if not missing:
            return {}
        try:
            return bpfcca.loader()[1]
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            raise BackendUnavailable(f"CCA {' '.join(sorted(missing))} not in the running kernel, and fatpipe's BPF "
                                     f"ports are unavailable: {e}") from e

    def facts(self) -> dict[str, Any]:
        try:
            ports = bpfcca.loader(build=False)[1]
        except (OSError, RuntimeError):
            ports = {}
        return {"kernel": platform.release(), "ccas": available_ccas(),
                # Per CCA: the kernel's own or fatpipe's BPF port (file, source hash).
                "cca_sources": bpfcca.describe(sorted(set(available_ccas()) | set(ports)), ports),
                "checks": {c.name: {"ok": c.ok, "detail": c.detail} for c in doctor()}}

    def run(self, plan: RunPlan, workdir: Path) -> RunOutcome:
        cleanup.release_at_exit()
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        cfg = path_config(plan)
        # CCAs the kernel lacks are registered from fatpipe's BPF ports for
        # this run only (bpfcca.py); the kernel's own always win. A flow
        # naming a BPF object (bpf:…) runs it, registered under its name.
        objects = bpf_objects([plan], set(available_ccas()))
        kplan = replace(plan, flows=[replace(f, cc=objects[f.cc].name) if f.cc in objects else f
                                     for f in plan.flows])
        used = sorted({f.cc for f in plan.flows if f.kind != "cross" and f.cc not in objects})
        kernel_ccas = available_ccas()
        binary, ports = bpfcca.loader() if set(used) - set(kernel_ccas) or objects else (None, {})
        cca_facts = {**bpfcca.describe(used, ports), **{o.name: o.facts() for o in objects.values()}}
        registrations = bpfcca.ports_to_load(used, kernel_ccas, ports) + bpfcca.object_files(objects.values(), workdir)
        cpu_window = CpuWindow()
        with bpfcca.Registration(binary, registrations), EmulatedPath(cfg, workdir) as path:
            # Senders whose asked fq the kernel lacks pace every socket themselves.
            specs = flow_specs(kplan, frozenset(n for n, q in path.sender_qdiscs.items() if q.internal_pacing))
            qdisc_facts = {name: q.facts() for name, q in path.sender_qdiscs.items()}
            # Lateness and CPU count after the warm-up (slow-start bursts
            # excluded, as they are from the summary statistics).
            warmup_timer: list[threading.Timer] = []

            dumps = capture.captures(plan, path.senders, path.receiver, workdir)
            for d in dumps:
                d.start()

            def on_start(t0_wall_s: float) -> None:
                if plan.capture is not None and plan.capture.duration_s is not None:
                    t = threading.Timer(max(0.0, t0_wall_s + plan.capture.duration_s - time.time()),
                                        lambda: [d.stop() for d in dumps])
                    t.daemon = True
                    t.start()
                    warmup_timer.append(t)
                path.set_origin(t0_wall_s)
                path.mark_start()
                t = threading.Timer(max(0.0, t0_wall_s + plan.warmup_s - time.time()), path.end_warmup)
                t.daemon = True
                t.start()
                warmup_timer.append(t)
                cpu_window.schedule(t0_wall_s + plan.warmup_s, t0_wall_s + plan.duration_s)

            try:
                traffic = run_traffic(path.receiver, RECEIVER_ADDR, path.senders, specs,
                                      plan.duration_s, plan.sample_interval_s, workdir, on_start=on_start,
                                      sender_addrs=path.sender_addrs, seed=plan.seed)
                cpu_texts = cpu_window.readings()
            finally:
                for t in warmup_timer:
                    t.cancel()
                cpu_window.cancel()
                for d in dumps:
                    d.stop()
            offloads = path.offloads()
            stats = path.finish()
        # The name each group's engine was given (a BPF port registers under
        # it too): a socket reporting another fails the run, naming it.
        # So does one whose MSS or window scale contradicts the plan (the
        # receiver namespace's tcp_rmem[2] is the plan's: path.py).
        check_ccas(traffic.streams, {f.group: f.cc for f in specs}, asked_max_pacing(specs),
                   mss={f.group: f.mss_bytes for f in specs}, window_bytes=plan.receiver.rmem_max_bytes // 2,
                   ecn=expected_ecn(plan, cfg, specs))
        # The namespaces share this machine's cores: one reading for all.
        roles = ["router", "receiver", *(f"sender {name}" for name in plan.senders)]
        cpu_facts, cpu = cpu_measurement({MACHINE: cpu_texts}, {MACHINE: roles}, [MACHINE])
        report = stats.report(traffic.rows, plan.duration_s)
        facts = {"emulator": stats.emulator, "bottleneck": stats.details.get("bottleneck"),
                 "ccas": cca_facts, "ccas_seen": {str(g): n for g, n in traffic.ccas_seen.items()},
                 # Per bulk flow group: each stream's first send(), seconds
                 # after the group's planned start (the engine's start spread).
                 "stream_first_send_s": {str(g): v for g, v in traffic.first_send_s.items()},
                 # Per sampled stream: TCP_CONGESTION, tcpi_snd_mss, ECN.
                 "streams_read_back": [s.facts() for s in traffic.streams],
                 "offloads": offloads, "cpu": cpu_facts,
                 # Per sender that asked for a root qdisc: what it got.
                 "qdisc": qdisc_facts,
                 "configured_loss": {str(g.group): g.loss for g in cfg.group_loss},
                 # The same rule as the runs table's flag (schema.emulator_late).
                 "emulator_late": emulator_late(stats.late_p99_s, plan.rtt_s),
                 "late_p50_s": stats.late_p50_s, "engine_errors": traffic.errors,
                 # Per flow group, from TCP_INFO: streams that negotiated ECN
                 # (TCPI_OPT_ECN) and segments acked with ECE (tcpi_delivered_ce).
                 "ecn": traffic.ecn,
                 # The pcap files (capture.py), their pcap times on this machine's clock from t0.
                 **({"captures": [d.facts() for d in dumps], "capture_t0_wall_s": traffic.t0_wall_s} if dumps else {}),
                 "linkem": stats.details.get("linkem_summary"),
                 "ack_napi": stats.details.get("ack_napi")}
        # Cross groups' rows: what linkem's bottleneck sent of them, sampled.
        series = rows_to_series(traffic.rows + delay_line.cross_rows(stats.details.get("linkem", {})))
        return RunOutcome(series=series, rpcs=rows_to_rpcs(traffic.rpcs),
                          transfers=rows_to_transfers(traffic.transfers), path=report, cpu=cpu, facts=facts)


def bpf_objects(plans: list[RunPlan], kernel_ccas: set[str]) -> dict[str, bpfcc.BpfObject]:
    """The BPF objects the plans' flows name (bpf:…), by that name; raises
    BackendUnavailable naming the flow when one cannot be built or loaded,
    or registers under a name the running kernel already has."""
    out: dict[str, bpfcc.BpfObject] = {}
    for plan in plans:
        for f in plan.flows:
            if f.kind == "cross" or not bpfcc.is_bpf(f.cc) or f.cc in out:
                continue
            try:
                obj = bpfcc.resolve(f.cc)
            except bpfcc.BpfCcaError as e:
                raise BackendUnavailable(f"run {plan.run_id}: flows.{f.group}.cc: {e}") from None
            if obj.name in kernel_ccas:
                raise BackendUnavailable(
                    f"run {plan.run_id}: flows.{f.group}.cc: {f.cc} registers as {obj.name!r}, which the running "
                    f"kernel already lists (its own CCA or another program's): a second cannot be registered")
            out[f.cc] = obj
    return out


def expected_ecn(plan: RunPlan, cfg, specs) -> dict[int, bool | None]:
    """Per flow group, whether its sockets should report ECN: the
    namespaces' tcp_ecn (path.py sets them from the plan) and whether the
    group's CCA needs ECN (ccas.py; unknown for a user's BPF object, not
    checked)."""
    out = {}
    for f in specs:
        traits = None if bpfcc.is_bpf(plan.flows[f.group].cc) else ccas.traits(f.cc)
        out[f.group] = negotiates_ecn(f.kind, traits.needs_ecn if traits else None,
                                      cfg.senders[f.sender].tcp_ecn, cfg.receiver.tcp_ecn)
    return out
