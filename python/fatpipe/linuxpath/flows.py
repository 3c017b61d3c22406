"""The traffic of a run as the Linux traffic engine sees it (pure): one
FlowSpec per flow group, the engine's configs (engine.py, rpc_engine.py,
run on the end hosts), and the parsers of what it writes: TCP_INFO samples
(sampling.py, decoded by tcpinfo.py) and RPC completions, into the rows
of the run's tables.

Each flow group has its own port (group_port); the bulk receiver listens
for every bulk group, an RPC group's server listens on its sender and its
client connects from the receiver."""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..schema import RPC_COLUMNS, SERIES_COLUMNS, TRANSFER_COLUMNS
from ..transferspec import stream_shares
from ..wire import tcp_maxseg
from . import tcpinfo
from .readback import StreamReadback, streams_read_back
from .sampling import max_pacing_rate_bytes_per_s

if TYPE_CHECKING:
    from ..backends.base import RunPlan

ENGINE = Path(__file__).with_name("engine.py")
BASE_PORT = 5201


@dataclass(frozen=True)
class FlowSpec:
    """One flow group as the engine sees it."""

    group: int
    kind: str
    cc: str
    streams: int
    mss_bytes: int
    sender: str
    start_s: float = 0.0
    stream_rate_cap_bps: float | None = None
    # The sender's sockets are paced by TCP at sk_pacing_rate (its asked root
    # qdisc fq is not applied: qdisc.sender_qdisc).
    internal_pacing: bool = False
    # RPC groups only (see rpc_engine.py for the semantics).
    request_bytes: int | None = None
    response_bytes: int | None = None
    concurrency: int | None = None
    rate_per_s: float | None = None
    # Bulk groups only: the application's rates and pauses (the plan's
    # AppLimit as a dict; None: it always has data).
    app: dict | None = None
    # Transfer groups only: the plan's TransferPlan as a dict.
    transfer: dict | None = None


def group_port(group: int) -> int:
    return BASE_PORT + group


# The flow kinds whose sender connects to the engine's receiver (RPC groups
# listen on the sender side).
RECEIVED_KINDS = ("bulk", "transfer")


def receiver_config(addr: str, flows: list[FlowSpec], deadline_wall_s: float, t0_wall_s: float = 0.0,
                    transfers_path: Path | str | None = None) -> dict:
    """Bulk and transfer groups (RPC groups listen on the sender side).
    Each listener runs its group's CCA (engine.run_receiver says why); a
    transfer group's connections are recorded in `transfers_path` (times
    from `t0_wall_s`)."""
    return {"addr": addr, "deadline_wall_s": deadline_wall_s, "t0_wall_s": t0_wall_s,
            "transfers_path": None if transfers_path is None else str(transfers_path),
            "groups": [{"group": f.group, "kind": f.kind, "port": group_port(f.group), "cc": f.cc} for f in flows
                       if f.kind in RECEIVED_KINDS]}


def connections(f: FlowSpec) -> int:
    """The TCP connections a flow group opens: its streams, once per data
    set of a transfer."""
    return f.streams * (len(f.transfer["starts_s"]) if f.transfer else 1)


def parse_transfers(text: str, flows: list[FlowSpec], end_s: float = float("inf")) -> list[dict]:
    """The receiver's record of each transfer connection (JSON lines: group,
    transfer, stream, bytes, last_s) → rows of TRANSFER_COLUMNS, one per
    data set whose bytes all arrived by the run's end `end_s` (s from its
    start; bytes still in flight when the senders stop arrive later, and
    the simulator, which stops at the end, would not count them): its
    completion is the last byte's arrival on any of its streams, from its
    planned start (pure)."""
    plans = {f.group: f.transfer for f in flows if f.transfer is not None}
    sets: dict[tuple[int, int], list[dict]] = {}
    # Only whole lines: the receiver may be writing a connection's record
    # that ended as the run did.
    for line in text[: text.rfind("\n") + 1].splitlines():
        if line.strip():
            rec = json.loads(line)
            sets.setdefault((int(rec["group"]), int(rec["transfer"])), []).append(rec)
    rows = []
    for (group, k), recs in sorted(sets.items()):
        plan = plans.get(group)
        if plan is None or k >= len(plan["starts_s"]):
            raise ValueError(f"the receiver recorded data set {k} of flow group {group}, which the plan does not have")
        got = sum(int(r["bytes"]) for r in recs)
        if got != plan["size_bytes"]:
            continue  # still moving at the end (or cut short): no completion
        start = float(plan["starts_s"][k])
        end = max(float(r["last_s"]) for r in recs if r["last_s"] is not None)
        if end > end_s:
            continue
        rows.append({"flow_group": group, "transfer": k, "start_s": start, "duration_s": end - start,
                     "size_bytes": got})
    return rows


def server_config(f: FlowSpec, addr: str, t0_wall_s: float, duration_s: float, sample_interval_s: float,
                  samples_path: Path) -> dict:
    """Config of an RPC group's server (sender namespace, listens on `addr`)."""
    return {"group": f.group, "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes,
            "maxseg_bytes": tcp_maxseg(f.mss_bytes), "stream_rate_cap_bps": f.stream_rate_cap_bps,
            "internal_pacing": f.internal_pacing, "addr": addr, "port": group_port(f.group),
            "request_bytes": f.request_bytes, "response_bytes": f.response_bytes,
            "t0_wall_s": t0_wall_s, "start_s": f.start_s, "duration_s": duration_s,
            "sample_interval_s": sample_interval_s, "samples_path": str(samples_path)}


def client_config(f: FlowSpec, dst: str, seed: int, t0_wall_s: float, duration_s: float, rpcs_path: Path) -> dict:
    """Config of an RPC group's client (receiver namespace, connects to `dst`)."""
    return {"group": f.group, "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes,
            "maxseg_bytes": tcp_maxseg(f.mss_bytes), "dst": dst,
            "port": group_port(f.group), "seed": seed, "request_bytes": f.request_bytes,
            "response_bytes": f.response_bytes, "concurrency": f.concurrency, "rate_per_s": f.rate_per_s,
            "t0_wall_s": t0_wall_s, "start_s": f.start_s, "duration_s": duration_s, "rpcs_path": str(rpcs_path)}


def parse_rpcs(text: str, group: int, response_bytes: int) -> list[dict]:
    """JSON lines of the RPC client → rows of base.RPC_COLUMNS (pure)."""
    rows = []
    for line in text.splitlines():
        if line.strip():
            rec = json.loads(line)
            rows.append({"flow_group": group, "stream": int(rec["stream"]), "start_s": float(rec["start_s"]),
                         "duration_s": float(rec["duration_s"]), "response_bytes": response_bytes})
    return rows


# Beside a bulk sender's samples file: when each stream's first send() began.
FIRST_SEND_SUFFIX = ".first-send.json"


def first_send_path(samples_path: Path | str) -> str:
    """Where a bulk sender writes its streams' first-send times."""
    return str(samples_path) + FIRST_SEND_SUFFIX


def sender_config(f: FlowSpec, dst: str, t0_wall_s: float, duration_s: float, sample_interval_s: float,
                  samples_path: Path) -> dict:
    return {"kind": f.kind, "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes,
            "maxseg_bytes": tcp_maxseg(f.mss_bytes), "stream_rate_cap_bps": f.stream_rate_cap_bps,
            "internal_pacing": f.internal_pacing, "dst": dst, "port": group_port(f.group),
            "t0_wall_s": t0_wall_s, "start_s": f.start_s, "duration_s": duration_s,
            "sample_interval_s": sample_interval_s, "samples_path": str(samples_path),
            "first_send_path": first_send_path(samples_path), "app": f.app,
            # A transfer's plan and each stream's share under split = "equal".
            "transfer": None if f.transfer is None else
            {**f.transfer, "shares": stream_shares(f.transfer["size_bytes"], f.streams)}}


def parse_first_send(text: str, start_s: float) -> list[float | None]:
    """A bulk sender's first-send file → each stream's first send() in
    seconds after its group's planned start (None: it never sent) (pure)."""
    return [None if t is None else t - start_s for t in json.loads(text)["first_send_s"]]


def parse_samples(text: str, group: int, cc: str = "") -> list[dict]:
    """JSON lines of the engine (sampling.py) → rows of SERIES_COLUMNS (pure);
    `cc` names the flow's CCA, which decodes its TCP_CC_INFO record."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        info = tcpinfo.parse(base64.b64decode(rec["tcp_info"]))
        row = {"flow_group": group, "stream": rec["stream"], "t_s": rec["t_s"]}
        row.update(tcpinfo.series_row(info))
        cc_info = base64.b64decode(rec.get("cc_info", ""))
        row["cc_mode"] = tcpinfo.cc_mode(cc, cc_info)
        row.update(tcpinfo.cc_vars(cc, cc_info))
        rows.append(row)
    return rows


def ecn_counts(text: str) -> dict[str, int]:
    """ECN as one group's TCP_INFO samples (JSON lines) tell it (pure):
    ``streams`` that negotiated ECN (TCPI_OPT_ECN) and ``delivered_ce``,
    the senders' tcpi_delivered_ce summed over streams (segments acked with
    ECE, tcp_count_delivered), from each stream's last sample."""
    negotiated: set[int] = set()
    delivered_ce: dict[int, int] = {}
    for line in text.splitlines():
        if line.strip():
            rec = json.loads(line)
            info = tcpinfo.parse(base64.b64decode(rec["tcp_info"]))
            if info["options"] & tcpinfo.TCPI_OPT_ECN:
                negotiated.add(rec["stream"])
            delivered_ce[rec["stream"]] = info.get("delivered_ce", 0)  # Linux >= 4.18
    return {"streams": len(negotiated), "delivered_ce": sum(delivered_ce.values())}


def ccas_in_samples(text: str) -> list[str]:
    """The CCA names the kernel reported for the sampled sockets (the
    samples' "cc", TCP_CONGESTION), sorted (pure)."""
    names = set()
    for line in text.splitlines():
        if line.strip():
            cc = json.loads(line).get("cc")
            if cc:
                names.add(cc)
    return sorted(names)


@dataclass
class TrafficResult:
    rows: list[dict]
    t0_wall_s: float
    errors: list[str]
    rpcs: list[dict] = field(default_factory=list)  # rows of base.RPC_COLUMNS
    transfers: list[dict] = field(default_factory=list)  # rows of base.TRANSFER_COLUMNS
    ecn: dict[int, dict[str, int]] = field(default_factory=dict)  # flow group -> ecn_counts()
    ccas_seen: dict[int, list[str]] = field(default_factory=dict)  # flow group -> TCP_CONGESTION names
    # bulk flow group -> each stream's first send(), seconds after the group's start
    first_send_s: dict[int, list[float | None]] = field(default_factory=dict)
    streams: list[StreamReadback] = field(default_factory=list)  # what each sampled socket read back


def traffic_result(t0_wall_s: float, errors: list[str], samples: list[tuple[FlowSpec, str, str | None]],
                   rpcs: list[tuple[FlowSpec, str]], transfers: str = "", end_s: float = float("inf")) -> TrafficResult:
    """The engines' output files → a TrafficResult (pure): per flow group
    its samples text and, for a bulk or transfer group, its first-send text;
    per RPC group the client's text; the receiver's transfers record (data
    sets complete by `end_s`, the run's end)."""
    result = TrafficResult(rows=[], t0_wall_s=t0_wall_s, errors=errors)
    result.transfers = parse_transfers(transfers, [f for f, _, _ in samples], end_s)
    for f, text, first_send in samples:
        result.rows += parse_samples(text, f.group, f.cc)
        result.ecn[f.group] = ecn_counts(text)
        result.ccas_seen[f.group] = ccas_in_samples(text)
        result.streams += streams_read_back(text, f.group)
        if first_send is not None:
            result.first_send_s[f.group] = parse_first_send(first_send, f.start_s)
    for f, text in rpcs:
        result.rpcs += parse_rpcs(text, f.group, int(f.response_bytes or 0))
    return result


def flow_specs(plan: RunPlan, paced_senders: frozenset[str] = frozenset()) -> list[FlowSpec]:
    """The plan's TCP flow groups (cross traffic has no process: the delay
    line offers its packets to its bottleneck); the flows of
    `paced_senders` are paced internally (qdisc.sender_qdisc decided which)."""
    return [FlowSpec(group=f.group, kind=f.kind, cc=f.cc, streams=f.streams, mss_bytes=f.mss_bytes,
                     sender=f.sender, start_s=f.start_s,
                     stream_rate_cap_bps=plan.stream_pacing_cap_bps(f),
                     internal_pacing=f.sender in paced_senders,
                     request_bytes=f.request_bytes, response_bytes=f.response_bytes,
                     concurrency=f.concurrency, rate_per_s=f.rate_per_s,
                     app=dataclasses.asdict(f.app) if f.app is not None else None,
                     transfer=dataclasses.asdict(f.transfer) if f.transfer is not None else None)
            for f in plan.flows if f.kind != "cross"]


def _columns(rows: list[dict], columns, time_key: str) -> dict[str, list]:
    """Engine rows → table columns, in (group, stream, `time_key`) order."""
    table: dict[str, list] = {k: [] for k in columns}
    for r in sorted(rows, key=lambda r: (r["flow_group"], r["stream"], r[time_key])):
        for k in columns:
            table[k].append(r[k])
    return table


def rows_to_rpcs(rows: list[dict]) -> dict[str, list]:
    """RPC rows → RunOutcome.rpcs columns, in (group, stream, start) order."""
    return _columns(rows, RPC_COLUMNS, "start_s")


def rows_to_transfers(rows: list[dict]) -> dict[str, list]:
    """Transfer rows → RunOutcome.transfers columns, in (group, data set) order."""
    table: dict[str, list] = {k: [] for k in TRANSFER_COLUMNS}
    for r in sorted(rows, key=lambda r: (r["flow_group"], r["transfer"])):
        for k in TRANSFER_COLUMNS:
            table[k].append(r[k])
    return table


def rows_to_series(rows: list[dict]) -> dict[str, list]:
    """Sample rows → RunOutcome.series columns, in (group, stream, time) order."""
    return _columns(rows, SERIES_COLUMNS, "t_s")


def asked_max_pacing(specs: list[FlowSpec]) -> dict[int, int | None]:
    """Per flow group, the SO_MAX_PACING_RATE its engine sets on each socket
    (sampling.max_pacing_rate_bytes_per_s, the one definition), for the
    read-back check (readback.pacing_mismatches)."""
    return {f.group: max_pacing_rate_bytes_per_s({"stream_rate_cap_bps": f.stream_rate_cap_bps,
                                                  "internal_pacing": f.internal_pacing})
            for f in specs}
