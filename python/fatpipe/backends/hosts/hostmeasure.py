"""What a hosts run measures on its machines besides the traffic: each
host's /proc/stat at the two ends of the measured interval (the end of the
warm-up and the end of the run; linuxpath/procstat.py turns them into
per-core figures, with no clock needed) and its test interface's offloads
(``ethtool -k``; linuxpath/readback.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from ...linuxpath.procstat import MISSING_READING
from ...linuxpath.readback import parse_offloads
from . import transport

READ_TIMEOUT_S = 10.0


class RemoteCpuWindow:
    """/proc/stat of every host, read twice through its SSH connection."""

    def __init__(self, conns: dict[str, transport.HostConnection]):
        self.conns = conns
        self._texts: dict[str, dict[str, str]] = {name: {} for name in conns}
        self._errors: dict[str, str] = {}

    async def _read_one(self, name: str, which: str) -> None:
        try:
            result = await self.conns[name].run(["cat", "/proc/stat"], timeout_s=READ_TIMEOUT_S)
            self._texts[name][which] = result.stdout
        except transport.HostError as e:
            self._errors.setdefault(name, f"reading /proc/stat at the {which}: {e}")

    async def read(self, which: str) -> None:
        """Read every host's /proc/stat now (concurrently), as `which` end."""
        await asyncio.gather(*(self._read_one(name, which) for name in self.conns))

    def readings(self) -> dict[str, tuple[str, str] | str]:
        """Per host (start text, end text), or why it has none."""
        out: dict[str, tuple[str, str] | str] = {}
        for name, texts in self._texts.items():
            if name in self._errors:
                out[name] = self._errors[name]
            elif set(texts) != {"start", "end"}:
                out[name] = MISSING_READING
            else:
                out[name] = (texts["start"], texts["end"])
        return out


async def offloads(conns: dict[str, transport.HostConnection], interfaces: dict[str, str]) -> dict[str, Any]:
    """host -> {interface: {tso, gso, gro, lro}} of each host's test
    interface, or {"error": why} where ethtool could not read it."""
    async def one(name: str) -> dict[str, Any]:
        ifname = interfaces[name]
        try:
            result = await conns[name].run(["ethtool", "-k", ifname], timeout_s=READ_TIMEOUT_S)
        except transport.HostError as e:
            return {"error": str(e)}
        return {ifname: parse_offloads(result.stdout)}

    names = list(conns)
    return dict(zip(names, await asyncio.gather(*(one(n) for n in names)), strict=True))
