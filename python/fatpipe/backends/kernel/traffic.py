"""Host side of the traffic engine: starts engine.py in the namespaces,
waits for the common start, collects and parses the TCP_INFO samples and
the RPC completions.

Start order: the bulk receiver (listens), then per flow group either a bulk
sender (connects) or, for an RPC group, its server in the sender namespace
(listens) and then its client in the receiver namespace (connects).
Everything is connected before the common start t0; flows begin at
t0 + start_s."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...wire import tcp_maxseg
from . import tcpinfo
from .cleanup import REGISTRY, stop_process
from .cmd import expect_line
from .netns import Namespace

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
    # RPC groups only (see rpc_engine.py for the semantics).
    request_bytes: int | None = None
    response_bytes: int | None = None
    concurrency: int | None = None
    rate_per_s: float | None = None


def group_port(group: int) -> int:
    return BASE_PORT + group


def receiver_config(addr: str, flows: list[FlowSpec], deadline_wall_s: float) -> dict:
    """Bulk groups only: RPC groups listen on the sender side. Each listener
    runs its group's CCA (engine.run_receiver says why)."""
    return {"addr": addr, "deadline_wall_s": deadline_wall_s,
            "groups": [{"group": f.group, "kind": f.kind, "port": group_port(f.group), "cc": f.cc} for f in flows
                       if f.kind == "bulk"]}


def server_config(f: FlowSpec, addr: str, t0_wall_s: float, duration_s: float, sample_interval_s: float,
                  samples_path: Path) -> dict:
    """Config of an RPC group's server (sender namespace, listens on `addr`)."""
    return {"group": f.group, "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes,
            "maxseg_bytes": tcp_maxseg(f.mss_bytes), "stream_rate_cap_bps": f.stream_rate_cap_bps,
            "addr": addr, "port": group_port(f.group),
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


def sender_config(f: FlowSpec, dst: str, t0_wall_s: float, duration_s: float, sample_interval_s: float,
                  samples_path: Path) -> dict:
    return {"kind": f.kind, "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes,
            "maxseg_bytes": tcp_maxseg(f.mss_bytes), "stream_rate_cap_bps": f.stream_rate_cap_bps,
            "dst": dst, "port": group_port(f.group),
            "t0_wall_s": t0_wall_s, "start_s": f.start_s, "duration_s": duration_s,
            "sample_interval_s": sample_interval_s, "samples_path": str(samples_path)}


def _engine_args(role: str, cfg: dict) -> list[str]:
    return [sys.executable, str(ENGINE), role, json.dumps(cfg)]


def _expect_line(proc: subprocess.Popen, word: str, what: str) -> None:
    """The engine prints one line when ready; a hung one is stopped (cmd.expect_line)."""
    expect_line(proc, word, what, stop=stop_process)


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
        row["cc_mode"] = tcpinfo.cc_mode(cc, base64.b64decode(rec.get("cc_info", "")))
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
    ecn: dict[int, dict[str, int]] = field(default_factory=dict)  # flow group -> ecn_counts()
    ccas_seen: dict[int, list[str]] = field(default_factory=dict)  # flow group -> TCP_CONGESTION names


def run_traffic(receiver_ns: Namespace, receiver_addr: str, sender_ns: dict[str, Namespace],
                flows: list[FlowSpec], duration_s: float, sample_interval_s: float, workdir: Path,
                on_start=None, sender_addrs: dict[str, str] | None = None, seed: int = 1) -> TrafficResult:
    """Run every flow group for `duration_s` and return the samples and RPC
    completions. `on_start()` is called just before the common start time.
    RPC groups need `sender_addrs` (where their servers listen)."""
    procs: list[tuple[str, subprocess.Popen]] = []

    def start(ns: Namespace, role: str, cfg: dict) -> subprocess.Popen:
        p = ns.popen(_engine_args(role, cfg), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        REGISTRY.add(f"engine {p.pid}", lambda: stop_process(p))
        procs.append((role, p))
        return p

    try:
        setup_s = 2.0 + 0.05 * sum(f.streams for f in flows)
        deadline = time.time() + setup_s + duration_s + 5.0
        if any(f.kind == "bulk" for f in flows):
            rx = start(receiver_ns, "receiver", receiver_config(receiver_addr, flows, deadline))
            _expect_line(rx, "ready", "engine receiver")
        t0 = time.time() + setup_s
        samples: list[tuple[FlowSpec, Path]] = []
        rpc_files: list[tuple[FlowSpec, Path]] = []
        waited: list[tuple[str, subprocess.Popen]] = []  # processes that must finish cleanly
        for f in flows:
            path = Path(workdir) / f"samples-g{f.group}.jsonl"
            samples.append((f, path))
            if f.kind == "bulk":
                p = start(sender_ns[f.sender], "sender",
                          sender_config(f, receiver_addr, t0, duration_s, sample_interval_s, path))
                _expect_line(p, "connected", f"engine sender of group {f.group}")
                waited.append((f"engine sender of group {f.group}", p))
            else:
                if not sender_addrs or f.sender not in sender_addrs:
                    raise ValueError(f"flow group {f.group}: no address for sender {f.sender!r}")
                srv = start(sender_ns[f.sender], "server",
                            server_config(f, sender_addrs[f.sender], t0, duration_s, sample_interval_s, path))
                _expect_line(srv, "ready", f"RPC server of group {f.group}")
                rpcs_path = Path(workdir) / f"rpcs-g{f.group}.jsonl"
                cli = start(receiver_ns, "client",
                            client_config(f, sender_addrs[f.sender], seed, t0, duration_s, rpcs_path))
                _expect_line(cli, "connected", f"RPC client of group {f.group}")
                rpc_files.append((f, rpcs_path))
                waited += [(f"RPC server of group {f.group}", srv), (f"RPC client of group {f.group}", cli)]
        if time.time() > t0:
            raise RuntimeError("connection setup took longer than the start margin")
        if on_start:
            on_start()
        errors = []
        for what, p in waited:
            try:
                _, err = p.communicate(timeout=max(0.0, t0 - time.time()) + duration_s + 15.0)
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"{what} did not finish") from None
            if p.returncode != 0:
                raise RuntimeError(f"{what} exited {p.returncode}: {err.strip()[-800:]}")
            if err.strip():
                errors.append(err.strip())
        rows = []
        ecn, ccas_seen = {}, {}
        for f, path in samples:
            text = path.read_text()
            rows += parse_samples(text, f.group, f.cc)
            ecn[f.group] = ecn_counts(text)
            ccas_seen[f.group] = ccas_in_samples(text)
        rpcs = []
        for f, path in rpc_files:
            rpcs += parse_rpcs(path.read_text(), f.group, int(f.response_bytes or 0))
        return TrafficResult(rows=rows, t0_wall_s=t0, errors=errors, rpcs=rpcs, ecn=ecn, ccas_seen=ccas_seen)
    finally:
        for _, p in reversed(procs):
            stop_process(p)
            REGISTRY.discard(f"engine {p.pid}")
