"""The lead's acceptance figures on the kernel backend (prints, not a test):
1 Gbit/s, 20 ms RTT, 1 BDP buffer, MTU 1500, 10 s runs, 2 s warm-up.

    sudo PYTHONPATH=python:bench python3 bench/kernel_acceptance.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from fatpipe.backends.kernel import KernelBackend
from kernel_common import goodput_bps, mathis_bps, plan

RATE, RTT = 1e9, 0.020


def main() -> int:
    be = KernelBackend()
    work = Path(tempfile.mkdtemp(prefix="fp-accept-"))
    results = {}
    cases = [(cc, 0.0) for cc in ("reno", "cubic", "bbr")] + [(cc, 1e-3) for cc in ("cubic", "reno", "bbr")]
    if len(sys.argv) > 1:
        cases = [c for c in cases if c[0] in sys.argv[1:]]
    for cc, loss in cases:
        p = plan(RATE, RTT, loss, cc, 1)
        out = be.run(p, work / f"{cc}-{loss}")
        gp = goodput_bps(out, p.warmup_s)
        r = out.path
        results[(cc, loss)] = gp
        line = (f"{cc:5s} loss={loss:<6g} goodput={gp / 1e6:8.1f} Mbit/s ({gp / RATE * 100:5.1f} % of rate) "
                f"min_rtt={r.min_rtt_s * 1e3:.3f} ms late_p99={r.late_p99_s * 1e6:.0f} us "
                f"late_max={r.late_max_s * 1e3:.2f} ms queue_drops={r.queue_drops}")
        if loss:
            achieved = r.loss_rate or 0.0
            line += f" loss achieved={achieved:.3e} ({(achieved / loss - 1) * 100:+.1f} %)"
            if cc != "bbr":
                m = mathis_bps(p.flows[0].mss_bytes - 12, RTT, loss)  # payload per segment (timestamps)
                line += f" mathis={m / 1e6:.1f} Mbit/s ratio={gp / m:.2f}"
        print(line, flush=True)
    if ("bbr", 1e-3) in results and ("cubic", 1e-3) in results:
        print(f"bbr/cubic at 1e-3: {results[('bbr', 1e-3)] / results[('cubic', 1e-3)]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
