"""A host's clock offset from the controller's, measured over SSH.

One channel stays open to a tiny remote loop that answers every line it
reads with its wall clock in nanoseconds. Each round trip gives a sample
(t_send, t_remote, t_recv) on the controller's clock; the fastest round trip
bounds the offset best (Cristian's algorithm, as NTP's clock filter keeps
the sample of least delay, RFC 5905 §10):

    offset = t_remote - (t_send + t_recv) / 2,   uncertainty = rtt / 2

because the remote read happened somewhere inside [t_send, t_recv]. A
positive offset means the host's clock is ahead of the controller's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

# The remote side: one line in, the wall clock out (standard library only).
ECHO_SCRIPT = "import sys,time\nfor _ in sys.stdin:\n    print(time.time_ns(), flush=True)\n"
ECHO_COMMAND = ("python3", "-u", "-c", ECHO_SCRIPT)
DEFAULT_ROUNDS = 9
# Exchanges before counting: the first pays for the interpreter's start.
WARMUP_ROUNDS = 1
ECHO_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ClockSample:
    t_send_ns: int  # controller clock, just before the request left
    t_remote_ns: int  # host clock, when it answered
    t_recv_ns: int  # controller clock, just after the answer arrived

    @property
    def rtt_ns(self) -> int:
        return self.t_recv_ns - self.t_send_ns


@dataclass(frozen=True)
class ClockOffset:
    offset_s: float  # host clock minus controller clock
    uncertainty_s: float  # |true offset - offset_s| is at most this
    rtt_s: float  # the fastest round trip
    samples: int

    def render(self) -> str:
        return f"{self.offset_s * 1e3:+.3f} ms ± {self.uncertainty_s * 1e3:.3f} ms ({self.samples} round trips)"


def estimate_offset(samples: Sequence[ClockSample]) -> ClockOffset:
    """The offset from the fastest round trip (pure)."""
    valid = [s for s in samples if s.rtt_ns >= 0]
    if not valid:
        raise ValueError("no clock sample with a non-negative round trip")
    best = min(valid, key=lambda s: s.rtt_ns)
    # Differences of integer ns first: a float holds a 1.7e18 ns wall-clock
    # reading only to ~256 ns.
    offset_ns = (best.t_remote_ns - best.t_send_ns) - best.rtt_ns / 2
    return ClockOffset(offset_s=offset_ns / 1e9, uncertainty_s=best.rtt_ns / 2e9, rtt_s=best.rtt_ns / 1e9,
                       samples=len(valid))


async def measure_offset(exchange: Callable[[], Awaitable[int]], rounds: int = DEFAULT_ROUNDS,
                         now_ns: Callable[[], int] = time.time_ns) -> ClockOffset:
    """Sample `rounds` round trips of `exchange` (one request, returns the
    host's clock in ns) after WARMUP_ROUNDS, and estimate the offset."""
    if rounds < 1:
        raise ValueError(f"rounds = {rounds}: at least 1")
    samples = []
    for i in range(WARMUP_ROUNDS + rounds):
        t_send = now_ns()
        t_remote = await exchange()
        t_recv = now_ns()
        if i >= WARMUP_ROUNDS:
            samples.append(ClockSample(t_send, t_remote, t_recv))
    return estimate_offset(samples)


def parse_remote_ns(line: str) -> int:
    """One answer of the echo loop (pure)."""
    text = line.strip()
    if not text.isdigit():
        raise ValueError(f"the clock echo answered {text[:80]!r}, not a time in ns")
    return int(text)


async def measure_host(conn, rounds: int = DEFAULT_ROUNDS) -> ClockOffset:
    """The clock offset of the host behind `conn` (a transport.HostConnection),
    over one channel to the echo loop."""
    async with conn.process(ECHO_COMMAND) as proc:
        async def exchange() -> int:
            proc.stdin.write("\n")
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), ECHO_TIMEOUT_S)
            except TimeoutError:
                raise ValueError(f"the clock echo did not answer within {ECHO_TIMEOUT_S:g} s") from None
            if not line:
                err = (await proc.stderr.read()).strip()
                raise ValueError(f"the clock echo (python3) exited: {err[-300:] or 'no output'}")
            return parse_remote_ns(line)

        return await measure_offset(exchange, rounds)
