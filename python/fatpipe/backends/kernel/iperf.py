"""iperf3 cross-check: the same path driven by iperf3 instead of fatpipe's
engine; goodputs should agree (goal: within 5 %)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from ...goodput import rows_as_columns, total_goodput_bps
from ...linuxpath import parse
from ...wire import mss_with_timestamps, tcp_maxseg
from .cleanup import REGISTRY, stop_process
from .path import RECEIVER_ADDR, EmulatedPath

IPERF_PORT = 5301


def iperf3_client_args(dst: str, duration_s: float, streams: int, cc: str, mss_bytes: int, omit_s: int) -> list[str]:
    return ["iperf3", "-c", dst, "-p", str(IPERF_PORT), "-t", str(int(duration_s)), "-P", str(streams),
            "-C", cc, "-M", str(tcp_maxseg(mss_bytes)), "-O", str(omit_s), "-J"]


def run_iperf3(path: EmulatedPath, sender: str, duration_s: float, streams: int, cc: str, mss_bytes: int,
               omit_s: int = 2) -> parse.Iperf3Result:
    """Run iperf3 from sender namespace `sender` to the receiver; returns the
    parsed result (goodput after the `omit_s` warm-up)."""
    return parse.iperf3_json(iperf3_json_output(path, sender, duration_s, streams, cc, mss_bytes, omit_s))


def iperf3_json_output(path: EmulatedPath, sender: str, duration_s: float, streams: int, cc: str,
                       mss_bytes: int, omit_s: int = 2) -> str:
    """The `iperf3 -J` client output of one test from namespace `sender` to
    the receiver (what `fatpipe import iperf3` reads)."""
    server = path.receiver.popen(["iperf3", "-s", "-1", "-p", str(IPERF_PORT), "-B", RECEIVER_ADDR],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    REGISTRY.add(f"iperf3 {server.pid}", lambda: stop_process(server))
    try:
        time.sleep(0.5)
        out = path.senders[sender].run(*iperf3_client_args(RECEIVER_ADDR, duration_s, streams, cc, mss_bytes, omit_s),
                                       timeout_s=duration_s + omit_s + 30, check=False)
        return out
    finally:
        stop_process(server)
        REGISTRY.discard(f"iperf3 {server.pid}")


def compare(workdir: Path, cfg, cc: str = "cubic", streams: int = 1, duration_s: float = 10.0,
            warmup_s: float = 2.0, mss_bytes: int | None = None) -> dict:
    """Engine vs iperf3 on two fresh paths built from the same PathConfig."""
    from ...linuxpath.flows import FlowSpec
    from .traffic import run_traffic

    mss = mss_bytes or mss_with_timestamps(cfg.mtu_bytes)
    sender = next(iter(cfg.senders))
    with EmulatedPath(cfg, workdir) as p:
        res = run_traffic(p.receiver, RECEIVER_ADDR, p.senders, [FlowSpec(0, "bulk", cc, streams, mss, sender)],
                          duration_s, 0.1, workdir)
        engine_stats = p.finish()
    engine_bps = total_goodput_bps(rows_as_columns(res.rows), warmup_s) or 0.0
    with EmulatedPath(cfg, workdir) as p:
        ip = run_iperf3(p, sender, duration_s - int(warmup_s), streams, cc, mss, omit_s=int(warmup_s))
        p.finish()
    return {"engine_bps": engine_bps, "iperf3_bps": ip.goodput_bps,
            "ratio": engine_bps / ip.goodput_bps if ip.goodput_bps else None,
            "engine_late_p99_s": engine_stats.late_p99_s}
