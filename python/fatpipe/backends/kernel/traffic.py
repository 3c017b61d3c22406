"""Host side of the traffic engine: starts engine.py in the namespaces,
waits for the common start, collects and parses the TCP_INFO samples and
the RPC completions.

Start order: the bulk receiver (listens), then per flow group either a bulk
sender (connects) or, for an RPC group, its server in the sender namespace
(listens) and then its client in the receiver namespace (connects).
Everything is connected before the common start t0; flows begin at
t0 + start_s."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ... import live
from ...linuxpath.cmd import expect_line
from ...linuxpath.flows import (
    ENGINE,
    RECEIVED_KINDS,
    FlowSpec,
    TrafficResult,
    client_config,
    connections,
    first_send_path,
    receiver_config,
    sender_config,
    server_config,
    traffic_result,
)
from ...linuxpath.tail import SampleTail
from .cleanup import REGISTRY, stop_process
from .netns import Namespace


def _engine_args(role: str, cfg: dict) -> list[str]:
    return [sys.executable, str(ENGINE), role, json.dumps(cfg)]


def _expect_line(proc: subprocess.Popen, word: str, what: str) -> None:
    """The engine prints one line when ready; a hung one is stopped (cmd.expect_line)."""
    expect_line(proc, word, what, stop=stop_process)


def run_traffic(receiver_ns: Namespace, receiver_addr: str, sender_ns: dict[str, Namespace],
                flows: list[FlowSpec], duration_s: float, sample_interval_s: float, workdir: Path,
                on_start=None, sender_addrs: dict[str, str] | None = None, seed: int = 1) -> TrafficResult:
    """Run every flow group for `duration_s` and return the samples and RPC
    completions. `on_start(t0_wall_s)` is called once everything is
    connected, before the common start time t0_wall_s (time.time()).
    RPC groups need `sender_addrs` (where their servers listen)."""
    procs: list[tuple[str, subprocess.Popen]] = []
    helpers_to_stop: list = []  # helpers to stop on the way out

    def start(ns: Namespace, role: str, cfg: dict) -> subprocess.Popen:
        p = ns.popen(_engine_args(role, cfg), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        REGISTRY.add(f"engine {p.pid}", lambda: stop_process(p))
        procs.append((role, p))
        return p

    try:
        setup_s = 2.0 + 0.05 * sum(connections(f) for f in flows)
        deadline = time.time() + setup_s + duration_s + 5.0
        t0 = time.time() + setup_s
        transfers_path = Path(workdir) / "transfers.jsonl"
        if any(f.kind in RECEIVED_KINDS for f in flows):
            record = transfers_path if any(f.kind == "transfer" for f in flows) else None
            rx = start(receiver_ns, "receiver", receiver_config(receiver_addr, flows, deadline, t0, record))
            _expect_line(rx, "ready", "engine receiver")
        samples: list[tuple[FlowSpec, Path]] = []
        rpc_files: list[tuple[FlowSpec, Path]] = []
        waited: list[tuple[str, subprocess.Popen]] = []  # processes that must finish cleanly
        for f in flows:
            path = Path(workdir) / f"samples-g{f.group}.jsonl"
            samples.append((f, path))
            if f.kind in RECEIVED_KINDS:
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
            on_start(t0)
        stream = live.current()
        if stream is not None:  # --json-stream: each interval's samples as they are written
            tail = SampleTail(stream, samples, sample_interval_s)
            tail.start()
            helpers_to_stop.append(tail.stop)
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
        texts = [(f, path.read_text(), Path(first_send_path(path)).read_text() if f.kind in RECEIVED_KINDS else None)
                 for f, path in samples]
        # The receiver records each transfer connection as it ends: the
        # data sets that completed are there once the senders are done.
        transfers = transfers_path.read_text() if transfers_path.exists() else ""
        return traffic_result(t0, errors, texts, [(f, path.read_text()) for f, path in rpc_files], transfers,
                              duration_s)
    finally:
        for stop in helpers_to_stop:
            stop()
        for _, p in reversed(procs):
            stop_process(p)
            REGISTRY.discard(f"engine {p.pid}")
