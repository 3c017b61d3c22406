"""The size-fairness table (STUDIES.md C): per streaming CCA and buffer, the
latency percentiles of the 10 KB and 1 MB RPCs (pooled over the three
senders, RPCs issued after warm-up) beside the idle-path latency of a 10 KB
RPC, plus streaming goodput and queue drops. Prints; asserts nothing.

    python3 bench/size_fairness_table.py IDLE_DIR STUDY_DIR [STUDY_DIR ...]

IDLE_DIR is a finished netesto-size-fairness-kernel-idle run (10 KB RPCs
alone); each STUDY_DIR a finished netesto-size-fairness-*-<cc> study.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

QUANTILES = ((50, "p50"), (90, "p90"), (99, "p99"), (99.9, "p99.9"))


def pooled_percentiles_s(rpcs: pd.DataFrame, runs: pd.DataFrame, run_id: str, response_bytes: int) -> dict:
    """Percentiles of every RPC of this size in a run, issued after warm-up."""
    warmup_s = float(runs.loc[runs.run_id == run_id, "warmup_s"].iloc[0])
    d = rpcs[(rpcs.run_id == run_id) & (rpcs.response_bytes == response_bytes) & (rpcs.start_s >= warmup_s)]
    out = {"n": len(d)}
    for q, name in QUANTILES:
        out[name] = float(np.percentile(d.duration_s, q)) if len(d) else float("nan")
    return out


def idle_latency(idle_dir: Path) -> dict:
    runs, rpcs = pd.read_parquet(idle_dir / "runs.parquet"), pd.read_parquet(idle_dir / "rpcs.parquet")
    return pooled_percentiles_s(rpcs, runs, runs.run_id.iloc[0], 10_000)


def study_rows(study_dir: Path) -> list[dict]:
    runs, rpcs = pd.read_parquet(study_dir / "runs.parquet"), pd.read_parquet(study_dir / "rpcs.parquet")
    rows = []
    for run_id, r in runs.groupby("run_id"):
        bdp_bytes = r.rate_bps.iloc[0] * r.rtt_s.iloc[0] / 8
        bulk = r[r.kind == "bulk"]
        row = {"backend": r.backend.iloc[0], "cc": bulk.cc.iloc[0], "buffer_bdp": r.buffer_bytes.iloc[0] / bdp_bytes,
               "stream_Mbps": bulk.goodput_bps.sum() / 1e6,
               "rpc_Mbps": r[r.kind == "rpc"].rpc_goodput_bps.sum() / 1e6,
               "queue_drops": int(r.path_queue_drops.iloc[0]) if pd.notna(r.path_queue_drops.iloc[0]) else -1}
        for size, tag in ((10_000, "10KB"), (1_000_000, "1MB")):
            for k, v in pooled_percentiles_s(rpcs, runs, run_id, size).items():
                row[f"{tag}_{k}"] = v if k == "n" else v * 1e3
        rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    idle = idle_latency(Path(argv[1]))
    print(f"idle path, 10 KB RPC alone: n={idle['n']}  "
          + "  ".join(f"{name} {idle[name] * 1e3:.1f} ms" for _, name in QUANTILES))
    rows = []
    for d in argv[2:]:
        rows += study_rows(Path(d))
    t = pd.DataFrame(rows).sort_values(["backend", "cc", "buffer_bdp"])
    t["10KB_p99-idle_p50"] = t["10KB_p99"] - idle["p50"] * 1e3
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 40)
    print("latencies in ms")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
