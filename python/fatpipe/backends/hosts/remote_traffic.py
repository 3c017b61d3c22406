"""The traffic of one run on the testbed's hosts, through their agents.

The Linux traffic engine (fatpipe/linuxpath: engine.py, rpc_engine.py and
the TCP_INFO sampler sampling.py) runs unchanged on each host: the agent
starts it in its own process group with the same configs the kernel
backend builds (linuxpath/flows.py), and the samples are parsed by the same
functions. Only the clocks differ: every wall-clock time in a config is on
the controller's clock plus that host's measured offset (clock.py), so all
hosts start their flows at the same instant and each sample's ``t_s`` is
already relative to that common start.

Start order as on the kernel backend: the bulk receiver (listens), then
per flow group a bulk sender (connects) or an RPC server on the sender
(listens) and its client on the receiver (connects); everything is
connected before the common start t0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ... import live
from ...linuxpath import flows as engine_configs
from ...linuxpath.flows import (
    ENGINE,
    RECEIVED_KINDS,
    FlowSpec,
    TrafficResult,
    connections,
    first_send_path,
    traffic_result,
)
from .agent_client import AgentClient, AgentError

ENGINE_DIR = ENGINE.parent
# The engine's files, pushed into each run directory (they import each other).
ENGINE_FILES = ("engine.py", "rpc_engine.py", "sampling.py")
# Time from the first start to the common start t0: SSH round trips per
# process (start, then wait for its "ready" line) and the connections.
SETUP_BASE_S = 3.0
SETUP_PER_STREAM_S = 0.05
READY_TIMEOUT_S = 20.0
FINISH_MARGIN_S = 15.0
# The bulk receiver outlives the senders by this much (it is stopped anyway).
RECEIVER_GRACE_S = 5.0


@dataclass
class RemoteHost:
    """A host of the run: its role, test address, agent and clock offset."""

    name: str
    role: str
    address: str
    agent: AgentClient
    clock_offset_s: float  # host clock minus controller clock
    python: str = "python3"

    def host_time(self, controller_wall_s: float) -> float:
        """A controller wall-clock time on this host's clock."""
        return controller_wall_s + self.clock_offset_s

    def path(self, name: str) -> str:
        return f"{self.agent.run_dir}/{name}"


async def push_engine(host: RemoteHost) -> None:
    for name in ENGINE_FILES:
        await host.agent.put(name, (ENGINE_DIR / name).read_bytes(), mode=0o600)


@dataclass
class _Started:
    host: RemoteHost
    pgid: int
    what: str
    stderr: str


class RemoteTraffic:
    """Starts, waits for and collects the engine processes of one run."""

    def __init__(self, receiver: RemoteHost, senders: dict[str, RemoteHost]):
        self.receiver = receiver
        self.senders = senders
        self.started: list[_Started] = []

    async def _start(self, host: RemoteHost, role: str, cfg: dict, tag: str, ready_word: str, what: str) -> _Started:
        out, err = f"{tag}.out", f"{tag}.err"
        pgid = await host.agent.start([host.python, "engine.py", role, json.dumps(cfg)], stdout=out, stderr=err)
        started = _Started(host, pgid, what, err)
        self.started.append(started)
        await host.agent.wait_line(pgid, ready_word, out, err, READY_TIMEOUT_S)
        return started

    async def run(self, flows: list[FlowSpec], duration_s: float, sample_interval_s: float, seed: int,
                  at_start: Callable[[float], Awaitable[None]] | None = None) -> TrafficResult:
        """Run every flow group for `duration_s`; `at_start(t0)` is awaited
        (as a task) with the common start on the controller's clock."""
        rx = self.receiver
        setup_s = SETUP_BASE_S + SETUP_PER_STREAM_S * sum(connections(f) for f in flows)
        t0 = time.time() + setup_s
        deadline = t0 + duration_s + RECEIVER_GRACE_S
        transfers_name = "transfers.jsonl"
        if any(f.kind in RECEIVED_KINDS for f in flows):
            transfers = any(f.kind == "transfer" for f in flows)
            cfg = engine_configs.receiver_config(rx.address, flows, rx.host_time(deadline), rx.host_time(t0),
                                                 rx.path(transfers_name) if transfers else None)
            await self._start(rx, "receiver", cfg, "receiver", "ready", "engine receiver")
        samples: list[tuple[FlowSpec, RemoteHost, str]] = []
        rpc_files: list[tuple[FlowSpec, str]] = []
        waited: list[_Started] = []
        for f in flows:
            tx = self.senders[f.sender]
            samples_name = f"samples-g{f.group}.jsonl"
            samples.append((f, tx, samples_name))
            if f.kind in RECEIVED_KINDS:
                cfg = engine_configs.sender_config(f, rx.address, tx.host_time(t0), duration_s, sample_interval_s,
                                                   Path(tx.path(samples_name)))
                waited.append(await self._start(tx, "sender", cfg, f"sender-g{f.group}", "connected",
                                                f"engine sender of group {f.group} on host {tx.name}"))
            else:
                cfg = engine_configs.server_config(f, tx.address, tx.host_time(t0), duration_s, sample_interval_s,
                                                   Path(tx.path(samples_name)))
                waited.append(await self._start(tx, "server", cfg, f"server-g{f.group}", "ready",
                                                f"RPC server of group {f.group} on host {tx.name}"))
                rpcs_name = f"rpcs-g{f.group}.jsonl"
                cfg = engine_configs.client_config(f, tx.address, seed, rx.host_time(t0), duration_s,
                                                   Path(rx.path(rpcs_name)))
                waited.append(await self._start(rx, "client", cfg, f"client-g{f.group}", "connected",
                                                f"RPC client of group {f.group} on host {rx.name}"))
                rpc_files.append((f, rpcs_name))
        if time.time() > t0:
            raise RuntimeError(f"connection setup took longer than the start margin of {setup_s:g} s")
        start_task = asyncio.create_task(at_start(t0)) if at_start else None
        stream = live.current()
        tail = asyncio.create_task(_tail(stream, samples, sample_interval_s)) if stream is not None else None
        try:
            finish_within_s = max(0.0, t0 - time.time()) + duration_s + FINISH_MARGIN_S
            results = await asyncio.gather(*(s.host.agent.wait_exit(s.pgid, finish_within_s, s.stderr)
                                             for s in waited))
            if start_task is not None:
                await start_task
        finally:
            if tail is not None:
                tail.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await tail
            if start_task is not None and not start_task.done():
                start_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await start_task
        errors = []
        for s, (code, err) in zip(waited, results, strict=True):
            if code != 0:
                raise RuntimeError(f"{s.what} exited {code}: {err.strip()[-800:]}")
            if err.strip():
                errors.append(err.strip())
        texts = []
        for f, tx, name in samples:
            first_send = (await tx.agent.get(first_send_path(name))).decode() if f.kind in RECEIVED_KINDS else None
            texts.append((f, (await tx.agent.get(name)).decode(), first_send))
        rpc_texts = [(f, (await rx.agent.get(name)).decode()) for f, name in rpc_files]
        # The receiver records each transfer connection as it ends
        # (engine._drain_transfer): the completed data sets are there now.
        transfers = (await rx.agent.get(transfers_name)).decode() if any(f.kind == "transfer" for f in flows) else ""
        return traffic_result(t0, errors, texts, rpc_texts, transfers, duration_s)

    async def stop_all(self) -> None:
        """Stop every process group this run started (idempotent; an agent
        already gone has killed its own)."""
        for s in reversed(self.started):
            with contextlib.suppress(AgentError):
                await s.host.agent.stop(s.pgid)
        self.started.clear()


async def _tail(stream, samples: list[tuple[FlowSpec, RemoteHost, str]], period_s: float) -> None:
    """Send the engines' samples as each interval is written (live.py):
    every period, each samples file's new whole lines, read from where the
    last read ended (the agent's get from an offset), parsed as the run's
    own series is (flows.parse_samples)."""
    offsets: dict[tuple[str, str], int] = {}
    while True:
        await asyncio.sleep(period_s)
        for f, host, name in samples:
            key = (host.name, name)
            try:
                data = await host.agent.get(name, offsets.get(key, 0))
            except AgentError:
                continue  # not written yet
            end = data.rfind(b"\n") + 1
            if end:
                offsets[key] = offsets.get(key, 0) + end
                stream.samples(engine_configs.parse_samples(data[:end].decode(), f.group, f.cc))
