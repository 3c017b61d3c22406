"""Packet captures on the testbed's hosts (capturespec.py,
docs/captures.md): tcpdump started through each host's agent on its test
interface, as the kernel backend runs it in a namespace (headers only, at
most the file budget, the flow groups' ports), before the engines connect;
stopped after the run and fetched into the run's work directory. The
run's facts keep what tcpdump counted and the run's start on each host's
clock, so its timestamps read from the run's start."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from ...capturespec import file_name
from ...linuxpath.tcpdump import READY_TIMEOUT_S, capture_facts, tcpdump_args
from .agent_client import AgentError

READY_POLL_S = 0.05


@dataclass
class RemoteDump:
    """One tcpdump on a host of the run."""

    host: object  # remote_traffic.RemoteHost
    iface: str
    name: str  # the pcap file's name (in the host's run directory and ours)
    capture: object  # the plan's CapturePlan
    pgid: int | None = None

    @property
    def err(self) -> str:
        return self.name + ".err"

    async def start(self) -> None:
        """Start it and wait for tcpdump's "listening on" (read back
        through the agent until it appears or READY_TIMEOUT_S passes)."""
        agent = self.host.agent
        self.pgid = await agent.start(["tcpdump", *tcpdump_args(self.iface, self.name, self.capture)],
                                      stdout=self.name + ".out", stderr=self.err)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            with_err = await self._stderr()
            if "listening on" in with_err:
                return
            await asyncio.sleep(READY_POLL_S)
        raise RuntimeError(f"capture: tcpdump on host {self.host.name} ({self.iface}) did not start: "
                           f"{(await self._stderr())[-300:]}")

    async def _stderr(self) -> str:
        try:
            return (await self.host.agent.get(self.err)).decode(errors="replace")
        except AgentError:
            return ""

    async def stop(self) -> None:
        """SIGTERM: tcpdump writes what it holds and its counts."""
        if self.pgid is not None:
            await self.host.agent.stop(self.pgid)
            self.pgid = None

    async def fetch(self, workdir: Path) -> dict:
        """The file into `workdir`; its facts (tcpdump's counts)."""
        size = await self.host.agent.fetch(self.name, Path(workdir) / self.name)
        return {"file": self.name, "host": self.host.name, "bytes": size,
                **capture_facts(await self._stderr(), self.capture)}


def dumps(plan, receiver, senders: dict, interfaces: dict[str, str]) -> list[RemoteDump]:
    """The tcpdumps a plan's capture asks for, per sender role and/or the
    receiver (`interfaces`: host name -> its test interface)."""
    c = plan.capture
    if c is None:
        return []
    out = []
    if c.side in ("sender", "both"):
        out += [RemoteDump(h, interfaces[h.name], file_name("sender", role), c) for role, h in senders.items()]
    if c.side in ("receiver", "both"):
        out.append(RemoteDump(receiver, interfaces[receiver.name], file_name("receiver"), c))
    return out
