"""CPU time per core from two readings of Linux's /proc/stat (pure).

/proc/stat's ``cpuN`` lines count, per core since boot, the time spent in
each state in USER_HZ ticks (proc(5); fs/proc/stat.c show_stat()): user,
nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice. Kernels
before 2.6.11 print fewer fields (missing ones count 0). guest and
guest_nice are already included in user and nice (account_guest_time()
adds guest time to both), so they are not counted again.

A core's fractions over an interval are the deltas of its counters divided
by the delta of their sum, so no clock is needed: the readings may be taken
through SSH on a host whose clock is off the controller's.

**busy** is every state but idle and iowait: user + nice + system + irq +
softirq + steal. nice counts because fatpipe's own processes run niced when
fatpipe itself does (the engine raises its priority by 10 from whatever it
started with); steal counts because a hypervisor steals time only from a
vCPU that had work to run, so for saturation it is time the core was needed
and not available. On a machine shared with other work that work counts as
well: the figure says how busy the core was, not who kept it busy.
"""

from __future__ import annotations

from typing import Any

from ..schema import CPU_SATURATED_FRAC, CpuReport, cpu_saturated

# The counted states, in /proc/stat's order (guest, guest_nice left out: see above).
STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY_STATES = ("user", "nice", "system", "irq", "softirq", "steal")
# Why a machine has no figures when a reading at one end is missing.
MISSING_READING = "the run ended before /proc/stat was read at both ends of its measured interval"


def parse_proc_stat(text: str) -> dict[str, tuple[int, ...]]:
    """Per core (``cpu0``, ``cpu1``, …; the all-core ``cpu`` line left out)
    its STATES counters in ticks. Raises ValueError on a ``cpuN`` line that
    is not numbers, or on text with no core line."""
    cores: dict[str, tuple[int, ...]] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
            continue
        name = fields[0]
        if not name[3:].isdigit():
            continue
        try:
            values = [int(v) for v in fields[1:1 + len(STATES)]]
        except ValueError:
            raise ValueError(f"/proc/stat: line {line.strip()!r} does not hold tick counts") from None
        if len(values) < 4:  # user nice system idle: every Linux prints these
            raise ValueError(f"/proc/stat: line {line.strip()!r} has {len(values)} counters, need at least 4")
        cores[name] = tuple(values + [0] * (len(STATES) - len(values)))
    if not cores:
        raise ValueError("/proc/stat: no per-core (cpuN) line")
    return cores


def _core_order(name: str) -> int:
    return int(name[3:])


def core_fractions(before: str, after: str) -> dict[str, dict[str, float]]:
    """Per core, each state's share of the interval between two /proc/stat
    texts, and ``busy_frac`` (BUSY_STATES summed). Cores that accounted no
    time in between (offline) are left out; a core in only one reading, or a
    counter that went back, is a ValueError naming it."""
    a, b = parse_proc_stat(before), parse_proc_stat(after)
    if set(a) != set(b):
        raise ValueError(f"/proc/stat: the cores differ between the readings ({sorted(a)} then {sorted(b)}); "
                         "a core went on or offline during the interval")
    out: dict[str, dict[str, float]] = {}
    for core in sorted(a, key=_core_order):
        delta = [y - x for x, y in zip(a[core], b[core], strict=True)]
        back = [s for s, d in zip(STATES, delta, strict=True) if d < 0]
        if back:
            raise ValueError(f"/proc/stat: {core}'s {', '.join(back)} time went back between the readings")
        total = sum(delta)
        if total == 0:
            continue
        shares = {f"{s}_frac": d / total for s, d in zip(STATES, delta, strict=True)}
        shares["busy_frac"] = sum(shares[f"{s}_frac"] for s in BUSY_STATES)
        out[core] = shares
    return out


def host_cpu(before: str, after: str) -> dict[str, Any]:
    """One machine's CPU over an interval: ``cores`` (core_fractions,
    rounded to 1e-4) and the busiest core's busy and softirq fractions, and
    the cores at or above the saturation threshold (schema.cpu_saturated)."""
    cores = core_fractions(before, after)
    if not cores:
        raise ValueError("/proc/stat: no core accounted any time between the readings")
    return {"cores": {c: {k: round(v, 4) for k, v in f.items()} for c, f in cores.items()},
            "busy_max_core_frac": max(f["busy_frac"] for f in cores.values()),
            "softirq_max_core_frac": max(f["softirq_frac"] for f in cores.values()),
            "saturated_cores": [c for c, f in cores.items() if cpu_saturated(f["busy_frac"])]}


def cpu_report(hosts: dict[str, dict[str, Any]], end_hosts: list[str]) -> CpuReport:
    """The runs table's CPU figures from host_cpu() of each measured machine
    by label: the busiest core of the machines that run end hosts
    (`end_hosts`, the labels of senders and receiver). A machine that only
    emulates the path is recorded in the facts but not here: its falling
    behind shows as emulator lateness."""
    measured = [hosts[h] for h in end_hosts if h in hosts]
    if not measured:
        return CpuReport()
    return CpuReport(busy_max_core_frac=max(h["busy_max_core_frac"] for h in measured),
                     softirq_max_core_frac=max(h["softirq_max_core_frac"] for h in measured))


def cpu_measurement(readings: dict[str, tuple[str, str] | str], roles: dict[str, list[str]],
                    end_hosts: list[str]) -> tuple[dict[str, Any], CpuReport]:
    """A run's CPU facts and its runs-table figures from two /proc/stat
    readings (after the warm-up, at the end) of each machine by label, or
    why it has none; `roles` says what each machine ran, `end_hosts` which
    labels ran a sender or the receiver (cpu_report). A machine without
    readings, or whose readings cannot be compared, is recorded with the
    error and left out of the figures."""
    machines: dict[str, dict[str, Any]] = {}
    for label, texts in readings.items():
        try:
            if isinstance(texts, str):
                raise ValueError(texts)
            measured = host_cpu(*texts)
        except ValueError as e:
            measured = {"error": str(e)}
        machines[label] = {"roles": roles.get(label, []), **measured}
    report = cpu_report({k: m for k, m in machines.items() if "error" not in m}, end_hosts)
    facts = {"saturated_frac": CPU_SATURATED_FRAC, "machines": machines,
             "cpu_bound": cpu_saturated(report.busy_max_core_frac)}
    return facts, report
