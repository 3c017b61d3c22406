"""hosts.<name>.qdisc = "fq" on the kernel backend (root): the sender gets
sch_fq where the kernel has it, else Linux's internal pacing on every
socket (SO_MAX_PACING_RATE); the run's facts say which, the sockets read
back their max pacing rate, and the sender's packets reach the router at
their pacing rate, where an unpaced CUBIC sender's arrive in bursts
(docs/host-model.md, "qdisc")."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from arrivals import bytes_ahead_share
from plans import bulk_plan

import fatpipe.backends.kernel as kernel_backend
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.kernel.cleanup import stop_process
from fatpipe.backends.kernel.path import EmulatedPath, sender_addr
from fatpipe.linuxpath.cmd import expect_line

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

# CUBIC over 500 Mbit/s, 30 ms with a buffer of 0.1 BDP: slow start and
# loss recovery send ACK-clocked bursts unless the sender is paced.
RATE_BPS, RTT_S, BUFFER_BDP = 500e6, 0.030, 0.1
ARRIVALS = Path(__file__).with_name("arrivals.py")
INTERNAL_PACING = "internal pacing (no sch_fq in this kernel)"


class CapturingPath(EmulatedPath):
    """The emulated path, recording the first sender's data packets as they
    reach the router (arrivals.py in the router namespace)."""

    recorded: list[list[tuple[int, int]]] = []

    def build(self) -> None:
        super().build()
        self._arrivals = self.workdir / "arrivals.json"
        self._capture = self.router.popen([sys.executable, str(ARRIVALS), "s0", sender_addr(0), str(self._arrivals)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        expect_line(self._capture, "ready", "arrivals.py", stop=stop_process)

    def finish(self):
        self._capture.send_signal(signal.SIGTERM)
        _, err = self._capture.communicate(timeout=30)
        assert self._capture.returncode == 0, f"arrivals.py exited {self._capture.returncode}: {err[-500:]}"
        CapturingPath.recorded.append([tuple(r) for r in json.loads(self._arrivals.read_text())])
        return super().finish()

    def teardown(self) -> None:
        if getattr(self, "_capture", None) is not None and self._capture.poll() is None:
            stop_process(self._capture)
        super().teardown()


def run(qdisc: str | None, workdir: Path, monkeypatch):
    plan = bulk_plan(f"qdisc-{qdisc}", cc="cubic", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, duration_s=2.0,
                     warmup_s=0.0)
    plan = dataclasses.replace(plan, senders={"s1": dataclasses.replace(plan.senders["s1"], qdisc=qdisc)},
                               buffer_bytes=int(RATE_BPS * RTT_S / 8 * BUFFER_BDP), sample_interval_s=0.05)
    monkeypatch.setattr(kernel_backend, "EmulatedPath", CapturingPath)
    backend = KernelBackend()
    backend.check([plan])
    out = backend.run(plan, workdir)
    arrivals = CapturingPath.recorded.pop()
    assert len(arrivals) > 100, f"only {len(arrivals)} data packets reached the router"
    # The run's clock: the first data packet left at the stream's first send().
    t0_ns = arrivals[0][0] - int(out.facts["stream_first_send_s"]["0"][0] * 1e9)
    share, compared = bytes_ahead_share(arrivals, out.series["t_s"], out.series["pacing_rate_bps"], t0_ns)
    return out, share, compared


def test_fq_paces_a_cubic_sender_at_its_pacing_rate(tmp_path, monkeypatch):
    fq_in_kernel = any(c.name == "fq" and c.ok for c in kernel_backend.doctor())
    paced, paced_share, n_paced = run("fq", tmp_path / "fq", monkeypatch)
    unpaced, unpaced_share, n_unpaced = run(None, tmp_path / "none", monkeypatch)

    assert paced.facts["qdisc"] == {"s1": {"asked": "fq", "applied": "fq" if fq_in_kernel else INTERNAL_PACING}}
    assert unpaced.facts["qdisc"] == {}
    # SO_MAX_PACING_RATE read back (tcpi_max_pacing_rate): set far above the
    # path rate on the internally paced sockets (so it paces, never caps),
    # unset on the unpaced ones and under sch_fq.
    for s in paced.facts["streams_read_back"]:
        if fq_in_kernel:
            assert s["max_pacing_rate_bps"] is None, s
        else:
            assert s["max_pacing_rate_bps"] is not None and s["max_pacing_rate_bps"] > 1e3 * RATE_BPS, s
    assert all(s["max_pacing_rate_bps"] is None for s in unpaced.facts["streams_read_back"]), \
        unpaced.facts["streams_read_back"]
    # Paced packets leave no earlier than half their pacing time after the
    # one before (tcp_update_skb_after_send); unpaced ones in bursts.
    seen = (f"bytes arriving ahead of half their pacing time: paced {paced_share:.3f} ({n_paced} packets), "
            f"unpaced {unpaced_share:.3f} ({n_unpaced} packets)")
    assert paced_share < 0.25, seen
    assert unpaced_share > 2 * paced_share, seen
