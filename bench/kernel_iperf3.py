"""iperf3 cross-check (prints figures): engine vs iperf3 goodput on the same
emulated path. sudo PYTHONPATH=python python3 bench/kernel_iperf3.py"""

import sys
import tempfile
from pathlib import Path

from fatpipe.backends.kernel.iperf import compare
from fatpipe.linuxpath.config import HostConfig, PathConfig

for rate, cc, streams in ((500e6, "bbr", 1), (1e9, "cubic", 2)):
    host = HostConfig(256 << 20, 256 << 20)
    cfg = PathConfig(rate_bps=rate, rtt_s=0.02, group_loss=(), buffer_bytes=int(rate * 0.02 / 8), mtu_bytes=1500,
                     senders={"s1": host}, receiver=host)
    r = compare(Path(tempfile.mkdtemp(prefix="fp-iperf-")), cfg, cc=cc, streams=streams, duration_s=8.0, warmup_s=2.0)
    print(f"rate={rate / 1e6:.0f} Mbit/s {cc} x{streams}: engine={r['engine_bps'] / 1e6:.1f} Mbit/s "
          f"iperf3={r['iperf3_bps'] / 1e6:.1f} Mbit/s ratio={r['ratio']:.3f}", flush=True)
sys.exit(0)
