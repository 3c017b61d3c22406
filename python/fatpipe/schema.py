"""The result schema, defined once for Python: the series, RPC, path
series and events columns every backend returns, the path facts, the schema version, and the upgrade of
older results on read.

The Rust side of the same schema is one macro invocation per table in
crates/sim/src/trace.rs; tests/test_schema.py fails if the two (or
docs/results.md) disagree.

Schema versions (stored in manifest.json and each table's Parquet metadata
``fatpipe.schema_version``):

* 1 — ``ca_state`` held Linux's state on the kernel backend but the CCA's own
  mode (``probe_bw``, ``cong_avoid``, …) on the sim backend while the
  connection was in Open or Disorder.
* 2 — ``ca_state`` is Linux's ``tcpi_ca_state`` name on every backend; the
  new ``cc_mode`` column holds the CCA's own mode ("" when none is known).

Columns and tables are added within a version; a column added later is
filled on read (``path_ce_marks``: 0, since no bottleneck marked CE before it
existed; the series' ``cc_*`` columns: null, nothing recorded), and the path
series and the events, added later, read as empty tables from a study
written before them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 2

# The CCA's internal variables (crates/sim/src/cc/vars.rs), shared by the
# series and the events table; null ("| None") where a stream's CCA exposes
# no such variable (every CCA but bbr and bbr3 on the simulator; on the
# kernel backend bbr's TCP_CC_INFO fills the state, bandwidth, min RTT and
# gains). Added within version 2: a study written before them reads them as
# null (upgrade_series).
CC_VAR_COLUMNS: dict[str, str] = {
    "cc_state": "str | None",
    "cc_cycle_index": "int | None",
    "cc_round": "int | None",
    "cc_max_bw_bps": "float | None",
    "cc_min_rtt_s": "float | None",
    "cc_pacing_gain": "float | None",
    "cc_cwnd_gain": "float | None",
    "cc_full_bw_bps": "float | None",
    "cc_full_bw_count": "int | None",
    "cc_full_bw_reached": "bool | None",
    "cc_inflight_hi_segments": "int | None",
    "cc_inflight_lo_segments": "int | None",
    "cc_bw_hi_bps": "float | None",
    "cc_bw_lo_bps": "float | None",
    "cc_extra_acked_segments": "int | None",
    "cc_bdp_segments": "int | None",
    "cc_full_bw_now": "bool | None",
    "cc_bw_probe_up_rounds": "int | None",
    "cc_prev_probe_too_high": "bool | None",
    "cc_undo_bw_lo_bps": "float | None",
    "cc_undo_inflight_lo_segments": "int | None",
    "cc_undo_inflight_hi_segments": "int | None",
    "cc_lt_bw_bps": "float | None",
    "cc_lt_use_bw": "bool | None",
    "cc_loss_events_in_round": "int | None",
    "cc_probe_rtt_min_stamp_s": "float | None",
    "cc_idle_restart": "bool | None",
    "cc_rs_delivery_rate_bps": "float | None",
    "cc_rs_is_app_limited": "bool | None",
    "cc_rs_tx_in_flight_segments": "int | None",
    "cc_rs_lost_segments": "int | None",
}


def no_cc_vars() -> dict[str, None]:
    """The CC_VAR_COLUMNS cells of a row whose CCA exposes nothing."""
    return dict.fromkeys(CC_VAR_COLUMNS)


# Columns of RunOutcome.series, one row per stream per sampling interval,
# name -> kind. Meanings and units: docs/results.md (and trace.rs).
SERIES_COLUMNS: dict[str, str] = {
    "flow_group": "int",
    "stream": "int",
    "t_s": "float",
    "delivered_bytes": "int",
    "cwnd_segments": "int",
    "srtt_s": "float",
    "min_rtt_s": "float",
    "retrans_segments": "int",
    "segs_out": "int",
    "pacing_rate_bps": "float",
    "delivery_rate_bps": "float",
    "inflight_segments": "int",
    "ca_state": "str",
    "cc_mode": "str",
    "rwnd_limited_s": "float",
    "sndbuf_limited_s": "float",
    "busy_s": "float",
    **CC_VAR_COLUMNS,
}

# Columns of RunOutcome.rpcs, one row per completed RPC.
RPC_COLUMNS: dict[str, str] = {
    "flow_group": "int",
    "stream": "int",
    "start_s": "float",  # when the request was issued
    "duration_s": "float",  # until the last response byte arrived
    "response_bytes": "int",
}

# Columns of RunOutcome.transfers, one row per data set of a transfer flow
# that completed during the run (transferspec.py, docs/transfers.md).
TRANSFER_COLUMNS: dict[str, str] = {
    "flow_group": "int",
    "transfer": "int",  # 0 .. data sets-1 within the group, in order of start
    "start_s": "float",  # its planned start, s since the run started (first writes follow within the start spread)
    "duration_s": "float",  # completion time: until the receiver had its last byte
    "size_bytes": "int",
}


def empty_transfers() -> dict[str, list]:
    """A transfers table with no rows (no transfer flow, or none completed)."""
    return {k: [] for k in TRANSFER_COLUMNS}


# Columns of RunOutcome.path_series, one row per sampling interval: the
# bottleneck's queue at the sample instant and its counters so far. A backend
# that cannot observe its bottleneck returns it empty (docs/results.md).
PATH_SERIES_COLUMNS: dict[str, str] = {
    "t_s": "float",
    "queue_bytes": "int",  # frames queued, as the buffer counts them, incl. the one being sent
    "queue_packets": "int",
    "queue_drops": "int",  # cumulative: path fact queue_drops so far
    "ce_marks": "int",  # cumulative: path fact ce_marks so far
}


def empty_path_series() -> dict[str, list]:
    """A path series with no rows (a backend that cannot observe its queue)."""
    return {k: [] for k in PATH_SERIES_COLUMNS}


# Columns of RunOutcome.events, one row per change in a stream's CCA state
# machine or loss-recovery event of its sender, with the CCA's variables
# right after it (the sim backend, for
# CCAs that expose variables; other backends return it empty).
EVENT_COLUMNS: dict[str, str] = {
    "t_s": "float",
    "flow_group": "int",
    "stream": "int",
    "kind": "str",  # EVENT_KINDS
    "from_state": "str",
    "to_state": "str",
    "cwnd_segments": "int",
    "inflight_segments": "int",
    **CC_VAR_COLUMNS,
}
# What `kind` may be: the CCA's state changed, v1's PROBE_BW phase changed,
# full_bw_reached became true; the sender began fast recovery, entered
# TCP_CA_Loss (an RTO), undid a reduction as spurious, restarted sending
# after an app-limited idle (crates/sim's tcp/cc_log.rs).
EVENT_KINDS = ("cc_state", "cc_cycle", "full_bw_reached", "recovery_start", "loss_start", "undo",
               "restart_from_idle")


def empty_events() -> dict[str, list]:
    """An events table with no rows (a backend that records no CCA events)."""
    return {k: [] for k in EVENT_COLUMNS}


# enum tcp_ca_state (include/uapi/linux/tcp.h), the values of `ca_state`.
LINUX_CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")


@dataclass
class PathReport:
    """What the emulated (or simulated) path really did during the run."""

    emulator: str  # "netem", "linkem-nfqueue", "sim", ...
    min_rtt_s: float | None = None  # smallest RTT any stream observed
    packets: int = 0  # data packets offered to the loss stage
    random_drops: int = 0  # packets dropped by the configured loss/corruption and path.drops
    queue_drops: int = 0  # packets dropped by the bottleneck (overflow; fq_codel: CoDel and its limit)
    ce_marks: int = 0  # ECN-capable packets the bottleneck marked CE
    bottleneck_bps: float | None = None  # bytes through the bottleneck over the run (mean, all flows)
    late_p99_s: float | None = None  # delay-line lateness, 99th percentile
    late_max_s: float | None = None
    # Hosts on their own clocks: how far a host's clock may be off the
    # controller's during the run (the largest over the hosts; None: one clock).
    clock_uncertainty_s: float | None = None
    # Packets lost outside the emulated path where fatpipe can count them
    # (kernel backend: ACKs dropped by a full veth NAPI ring); 0 where
    # nothing counts them. A run with any is flagged `host_drops`.
    host_drops: int = 0
    # Data packets the path's policer dropped (path.policer), and packets
    # (data and ACKs) that arrived before one sent earlier on the same path
    # (path.jitter with reordering, path.reorder); 0 on a path without them.
    policer_drops: int = 0
    reordered: int = 0

    @property
    def loss_rate(self) -> float | None:
        return self.random_drops / self.packets if self.packets else None

    @classmethod
    def from_facts(cls, facts: Mapping[str, Any]) -> PathReport:
        """A report from a backend's fact dict; unknown keys are errors."""
        unknown = sorted(set(facts) - set(PATH_FACTS))
        if unknown:
            raise ValueError(f"unknown path facts {unknown}; known: {list(PATH_FACTS)}")
        return cls(**facts)


# Delay-line lateness (p99) above this fraction of the RTT flags the run
# `emulator_late` (the one threshold: the runs table's flag and the
# backends' manifest fact both use emulator_late(); docs/results.md).
LATENESS_FRACTION_OF_RTT = 0.05


def emulator_late(late_p99_s: float | None, rtt_s: float) -> bool:
    """Whether the delay line fell behind: its lateness p99 exceeds
    LATENESS_FRACTION_OF_RTT of the configured RTT (unknown lateness: no)."""
    return late_p99_s is not None and late_p99_s > LATENESS_FRACTION_OF_RTT * rtt_s


# A core counts as saturated when it was busy (user + nice + system + irq +
# softirq + steal: linuxpath/procstat.py) for at least this fraction of the
# measured interval; a run whose end hosts had such a core is flagged
# `cpu_bound` (the one threshold: the runs table's flag and the backends'
# facts both use cpu_saturated(); docs/results.md). Not 100 %: a core that
# holds a flow back still shows idle slivers (work handed to the other
# core's softirq or thread, waits on a timer or a lock), and the counters
# tick at USER_HZ = 100 Hz, 0.5 % of a 2 s interval; 5 % covers both. A core
# busy less than that had at least 50 ms a second free for the flow's work.
CPU_SATURATED_FRAC = 0.95


def cpu_saturated(busy_frac: float | None) -> bool:
    """Whether a core busy for `busy_frac` of the measured interval was
    saturated (>= CPU_SATURATED_FRAC; unknown: no)."""
    return busy_frac is not None and busy_frac >= CPU_SATURATED_FRAC


@dataclass
class CpuReport:
    """How busy the end hosts' CPU cores were over the measured interval
    (after the warm-up), as /proc/stat counted it (or the simulator's host
    CPU model, docs/host-model.md): the busiest core's busy and softirq
    fractions over every machine that runs a sender or the receiver. None
    where a backend does not measure it (the simulator's ideal hosts, its
    softirq share, imported runs): never a guess."""

    busy_max_core_frac: float | None = None
    softirq_max_core_frac: float | None = None


# The runs table's CPU columns, in order: cpu_<field of CpuReport>.
CPU_COLUMNS: tuple[str, ...] = tuple(f"cpu_{f.name}" for f in fields(CpuReport))


def cpu_columns(cpu: CpuReport) -> dict[str, Any]:
    """The runs-table CPU columns of one run."""
    return {c: getattr(cpu, c.removeprefix("cpu_")) for c in CPU_COLUMNS}


# The path facts, name -> kind (as PathReport declares them).
PATH_FACTS: dict[str, str] = {f.name: str(f.type) for f in fields(PathReport)}


def _path_column_names() -> tuple[str, ...]:
    names = [f"path_{n}" for n in PATH_FACTS]
    # loss_rate (random_drops / packets) is derived; it follows min_rtt_s.
    names.insert(names.index("path_min_rtt_s") + 1, "path_loss_rate")
    return tuple(names)


# The runs table's path columns, in order: path_<fact> plus path_loss_rate.
PATH_COLUMNS: tuple[str, ...] = _path_column_names()


def path_columns(path: PathReport) -> dict[str, Any]:
    """The runs-table path columns of one run."""
    return {c: getattr(path, c.removeprefix("path_")) for c in PATH_COLUMNS}


# ---- versions and upgrade on read ------------------------------------------


class SchemaVersionError(ValueError):
    """Results written by a newer schema than this fatpipe knows."""


def check_version(version: int, source: str | Path) -> None:
    """Raise SchemaVersionError naming `source` if `version` is newer than
    SCHEMA_VERSION."""
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{source}: written with result schema version {version}, but this fatpipe reads "
            f"versions up to {SCHEMA_VERSION}; upgrade fatpipe to read it"
        )


def study_version(root: str | Path) -> int:
    """The schema version of a study directory (its manifest.json), checked
    against SCHEMA_VERSION. A study without a version in its manifest is
    version 1 (the first one)."""
    manifest = Path(root) / "manifest.json"
    version = 1
    if manifest.exists():
        version = int(json.loads(manifest.read_text()).get("schema_version", 1))
    check_version(version, manifest)
    return version


def parquet_version(path: str | Path, default: int) -> int:
    """The schema version in a Parquet file's metadata (else `default`),
    checked against SCHEMA_VERSION."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(b"fatpipe.schema_version")
    version = int(raw) if raw else default
    check_version(version, path)
    return version


def upgrade_runs(df):
    """A runs DataFrame with the columns added since it was written:
    ``path_ce_marks`` = 0 after ``path_queue_drops`` (no bottleneck marked
    CE before the column existed); ``path_clock_uncertainty_s`` = None after
    ``path_late_max_s`` (every run before it ran on one clock); the CPU
    columns (CPU_COLUMNS) = None before ``flags`` (not measured)."""
    if "path_queue_drops" not in df.columns:
        return df
    if "path_ce_marks" not in df.columns:
        df = df.copy()
        df.insert(df.columns.get_loc("path_queue_drops") + 1, "path_ce_marks", 0)
    if "path_clock_uncertainty_s" not in df.columns and "path_late_max_s" in df.columns:
        df = df.copy()
        df.insert(df.columns.get_loc("path_late_max_s") + 1, "path_clock_uncertainty_s", None)
    missing = [c for c in CPU_COLUMNS if c not in df.columns]
    if missing:
        df = df.copy()
        at = df.columns.get_loc("flags") if "flags" in df.columns else len(df.columns)
        for i, c in enumerate(missing):
            df.insert(at + i, c, None)
    return df


def upgrade_series(df, version: int):
    """A series DataFrame of schema `version` as SCHEMA_VERSION has it.

    1 → 2: add ``cc_mode``. Sim rows whose ``ca_state`` is not a Linux state
    name held the CCA's mode (written only in Open or Disorder, which version
    1 did not tell apart): the mode moves to ``cc_mode`` and ``ca_state``
    becomes "open". Every other row gets cc_mode "" (the mode is unknown).
    """
    if version >= 2 or "ca_state" not in df.columns or "cc_mode" in df.columns:
        return df
    df = df.copy()
    ca = df["ca_state"].astype(str)
    moved = ~ca.isin(LINUX_CA_STATES)
    if "backend" in df.columns:
        moved &= df["backend"] == "sim"
    else:
        moved &= False
    cc_mode = ca.where(moved, "")
    df.loc[moved, "ca_state"] = "open"
    df.insert(df.columns.get_loc("ca_state") + 1, "cc_mode", cc_mode)
    return df
