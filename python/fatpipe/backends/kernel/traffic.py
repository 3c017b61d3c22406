"""Host side of the traffic engine: starts engine.py in the namespaces,
waits for the common start, collects and parses the TCP_INFO samples."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import tcpinfo
from .cleanup import REGISTRY, stop_process
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


def group_port(group: int) -> int:
    return BASE_PORT + group


def receiver_config(addr: str, flows: list[FlowSpec], deadline_wall_s: float) -> dict:
    return {"addr": addr, "deadline_wall_s": deadline_wall_s,
            "groups": [{"group": f.group, "kind": f.kind, "port": group_port(f.group)} for f in flows]}


def sender_config(f: FlowSpec, dst: str, t0_wall_s: float, duration_s: float, sample_interval_s: float,
                  samples_path: Path) -> dict:
    return {"kind": f.kind, "cc": f.cc, "streams": f.streams, "mss_bytes": f.mss_bytes,
            "stream_rate_cap_bps": f.stream_rate_cap_bps, "dst": dst, "port": group_port(f.group),
            "t0_wall_s": t0_wall_s, "start_s": f.start_s, "duration_s": duration_s,
            "sample_interval_s": sample_interval_s, "samples_path": str(samples_path)}


def _engine_args(role: str, cfg: dict) -> list[str]:
    return [sys.executable, str(ENGINE), role, json.dumps(cfg)]


def _expect_line(proc: subprocess.Popen, word: str, what: str, timeout_s: float = 20.0) -> None:
    line = proc.stdout.readline()  # the engine prints one line when ready
    if line.strip() != word:
        stop_process(proc)
        err = proc.stderr.read() if proc.stderr else ""
        raise RuntimeError(f"{what} failed to start: {line.strip()} {err.strip()[-800:]}")


def parse_samples(text: str, group: int) -> list[dict]:
    """JSON lines of the engine → rows of base.SERIES_COLUMNS (pure)."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        info = tcpinfo.parse(base64.b64decode(rec["tcp_info"]))
        row = {"flow_group": group, "stream": rec["stream"], "t_s": rec["t_s"]}
        row.update(tcpinfo.series_row(info))
        rows.append(row)
    return rows


@dataclass
class TrafficResult:
    rows: list[dict]
    t0_wall_s: float
    errors: list[str]


def run_traffic(receiver_ns: Namespace, receiver_addr: str, sender_ns: dict[str, Namespace],
                flows: list[FlowSpec], duration_s: float, sample_interval_s: float, workdir: Path,
                on_start=None) -> TrafficResult:
    """Run every flow group for `duration_s` and return the samples.
    `on_start()` is called just before the common start time."""
    for f in flows:
        if f.kind != "bulk":
            raise NotImplementedError(f"flow group {f.group}: kind={f.kind!r} is not supported by the kernel "
                                      "backend yet (RPC flows are a later issue)")
    procs: list[tuple[str, subprocess.Popen]] = []

    def start(ns: Namespace, role: str, cfg: dict) -> subprocess.Popen:
        p = ns.popen(_engine_args(role, cfg), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        REGISTRY.add(f"engine {p.pid}", lambda: stop_process(p))
        procs.append((role, p))
        return p

    try:
        setup_s = 2.0 + 0.05 * sum(f.streams for f in flows)
        deadline = time.time() + setup_s + duration_s + 5.0
        rx = start(receiver_ns, "receiver", receiver_config(receiver_addr, flows, deadline))
        _expect_line(rx, "ready", "engine receiver")
        t0 = time.time() + setup_s
        files = []
        senders = []
        for f in flows:
            path = Path(workdir) / f"samples-g{f.group}.jsonl"
            files.append((f.group, path))
            senders.append(start(sender_ns[f.sender], "sender",
                                 sender_config(f, receiver_addr, t0, duration_s, sample_interval_s, path)))
        for p, f in zip(senders, flows):
            _expect_line(p, "connected", f"engine sender of group {f.group}")
        if time.time() > t0:
            raise RuntimeError("connection setup took longer than the start margin")
        if on_start:
            on_start()
        errors = []
        for p, f in zip(senders, flows):
            try:
                _, err = p.communicate(timeout=t0 - time.time() + duration_s + 15.0)
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"engine sender of group {f.group} did not finish") from None
            if p.returncode != 0:
                raise RuntimeError(f"engine sender of group {f.group} exited {p.returncode}: {err.strip()[-800:]}")
            if err.strip():
                errors.append(err.strip())
        rows = []
        for group, path in files:
            rows += parse_samples(path.read_text(), group)
        return TrafficResult(rows=rows, t0_wall_s=t0, errors=errors)
    finally:
        for _, p in reversed(procs):
            stop_process(p)
            REGISTRY.discard(f"engine {p.pid}")
