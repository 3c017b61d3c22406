"""A clock offset injected on one host (libfaketime in its sshd's sessions)
is measured, within the uncertainty the estimator states."""

from __future__ import annotations

import asyncio

import pytest

from fatpipe.backends.hosts import clock, transport
from fatpipe.testbed import parse_ssh_target

INJECTED_S = 100.0  # sshlab: FAKETIME=+100 on lab-rx-skew


def _offset(lab, alias: str) -> clock.ClockOffset:
    ep = transport.Endpoint(alias, parse_ssh_target(alias), str(lab.ssh_config), 8, 5.0, 15.0)

    async def measure():
        conn = await transport.connect(ep)
        try:
            return await clock.measure_host(conn)
        finally:
            await conn.close()

    return asyncio.run(measure())


def test_injected_clock_offset_is_measured_within_its_uncertainty(lab):
    if "lab-rx-skew" not in lab.daemons:
        pytest.skip(f"libfaketime is not installed ({__import__('sshlab').FAKETIME_LIB}); apt-get install faketime")
    skewed = _offset(lab, "lab-rx-skew")
    assert skewed.samples == clock.DEFAULT_ROUNDS
    # libfaketime shifts the clock by exactly +100 s; the machine's clock is
    # shared, so the truth is known: the estimate is within its bound of it
    # (plus 1 ms for libfaketime's own reading of the clock).
    assert abs(skewed.offset_s - INJECTED_S) <= skewed.uncertainty_s + 1e-3
    same = _offset(lab, "lab-rx")
    assert abs(same.offset_s) <= same.uncertainty_s + 1e-3
