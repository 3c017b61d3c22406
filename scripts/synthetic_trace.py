"""Write a synthetic delivery trace in Mahimahi's format (docs/path-dynamics.md,
"Traces"): one line per 1504-byte delivery opportunity, its millisecond.

The link's rate changes every `--step` by a seeded multiplicative random
walk (a log-normal step of `--volatility`), held between `--low` and
`--high` times the mean and rescaled so the whole trace averages `--rate`:
a link whose capacity wanders as a cellular one's does. Within each
millisecond the opportunities are what the rate has accumulated so far, so
the trace carries the rate to within one opportunity.

    python3 scripts/synthetic_trace.py --rate 24Mbit --seconds 10 --seed 1 \\
        --out studies/traces/synthetic-wandering-24mbit.trace
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from fatpipe.pathtrace import OPPORTUNITY_BYTES, read_trace
from fatpipe.units import parse_rate_bps, parse_time_s


def rates(mean_bps: float, steps: int, volatility: float, low: float, high: float, seed: int) -> list[float]:
    """`steps` rates of a bounded multiplicative random walk averaging `mean_bps`."""
    rng = random.Random(seed)
    level, out = 1.0, []
    for _ in range(steps):
        out.append(level)
        level = min(high, max(low, level * math.exp(rng.gauss(0.0, volatility))))
    scale = mean_bps / (sum(out) / len(out))
    return [r * scale for r in out]


def opportunities(step_rates: list[float], step_ms: int) -> list[int]:
    """The millisecond of each opportunity, one per line."""
    lines, owed = [], 0.0
    for i, rate in enumerate(step_rates):
        per_ms = rate / 8 / OPPORTUNITY_BYTES / 1000
        for ms in range(i * step_ms + 1, (i + 1) * step_ms + 1):
            owed += per_ms
            n = int(owed)
            owed -= n
            lines += [ms] * n
    last = len(step_rates) * step_ms
    if not lines or lines[-1] != last:
        lines.append(last)  # the period is the last timestamp: end the trace on it
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", required=True, help="mean rate, e.g. 24Mbit")
    ap.add_argument("--seconds", type=float, default=10.0, help="the trace's period")
    ap.add_argument("--step", default="100ms", help="how often the rate changes")
    ap.add_argument("--volatility", type=float, default=0.3, help="sd of the log-rate's step")
    ap.add_argument("--low", type=float, default=0.1, help="lowest rate, times the mean before rescaling")
    ap.add_argument("--high", type=float, default=3.0, help="highest rate, times the mean before rescaling")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    step_ms = max(1, round(parse_time_s(a.step) * 1000))
    steps = max(1, round(a.seconds * 1000 / step_ms))
    lines = opportunities(rates(parse_rate_bps(a.rate), steps, a.volatility, a.low, a.high, a.seed), step_ms)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(f"{ms}\n" for ms in lines))
    trace = read_trace(str(a.out))  # as a study reads it
    period_s = sum(trace.ms_gaps) / 1000
    print(f"{a.out}: {len(lines)} opportunities over {period_s:g} s, "
          f"{sum(trace.counts) * OPPORTUNITY_BYTES * 8 / period_s / 1e6:.2f} Mbit/s of IP packets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
