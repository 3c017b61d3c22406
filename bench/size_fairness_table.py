"""The size-fairness table (docs/talks.md, section C): per CCA and buffer, the latency
percentiles of the 10 KB and 1 MB RPCs (pooled over the three senders and
the repetitions, RPCs issued after warm-up) beside the idle-path latency of
a 10 KB RPC, plus streaming goodput and queue drops. Prints; asserts nothing.

    python3 bench/size_fairness_table.py IDLE_DIR STUDY_DIR [STUDY_DIR ...]

IDLE_DIR is a finished netesto-size-fairness-kernel-idle run (10 KB RPCs
alone); each STUDY_DIR a finished netesto-size-fairness study (the plain,
-kernel or -10g one), whose linked group sweeps every flow's CCA together:
rows are grouped by that linked value (the `flows.N.cc` columns, which agree
within a run), then by buffer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

QUANTILES = ((50, "p50"), (90, "p90"), (99, "p99"), (99.9, "p99.9"))


def pooled_percentiles_s(rpcs: pd.DataFrame, runs: pd.DataFrame, run_ids, response_bytes: int) -> dict:
    """Percentiles of every RPC of this size in these runs, issued after warm-up."""
    run_ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    warmup_s = runs.drop_duplicates("run_id").set_index("run_id").warmup_s
    d = rpcs[rpcs.run_id.isin(run_ids) & (rpcs.response_bytes == response_bytes)]
    d = d[d.start_s >= d.run_id.map(warmup_s)]
    out = {"n": len(d)}
    for q, name in QUANTILES:
        out[name] = float(np.percentile(d.duration_s, q)) if len(d) else float("nan")
    return out


def idle_latency(idle_dir: Path) -> dict:
    runs, rpcs = pd.read_parquet(idle_dir / "runs.parquet"), pd.read_parquet(idle_dir / "rpcs.parquet")
    return pooled_percentiles_s(rpcs, runs, runs.run_id.unique(), 10_000)


def linked_cc(runs: pd.DataFrame) -> pd.Series:
    """Per row, the CCA the linked group set: the swept `flows.N.cc` columns
    (equal within a run); without them, the run's bulk flows' CCA."""
    swept = [c for c in runs.columns if c.startswith("flows.") and c.endswith(".cc")]
    if swept:
        return runs[swept].astype(str).apply(lambda row: "+".join(dict.fromkeys(row)), axis=1)
    bulk_cc = runs[runs.kind == "bulk"].groupby("run_id").cc.agg(lambda c: "+".join(dict.fromkeys(c)))
    return runs.run_id.map(bulk_cc)


def study_rows(study_dir: Path) -> list[dict]:
    runs, rpcs = pd.read_parquet(study_dir / "runs.parquet"), pd.read_parquet(study_dir / "rpcs.parquet")
    runs = runs.assign(linked_cc=linked_cc(runs))
    rows = []
    for (backend, cc, buffer_bytes), r in runs.groupby(["backend", "linked_cc", "buffer_bytes"]):
        bdp_bytes = r.rate_bps.iloc[0] * r.rtt_s.iloc[0] / 8
        n_runs = r.run_id.nunique()
        per_run = r.drop_duplicates("run_id")
        row = {"backend": backend, "cc": cc, "buffer_bdp": buffer_bytes / bdp_bytes, "runs": n_runs,
               "stream_Mbps": r[r.kind == "bulk"].goodput_bps.sum() / n_runs / 1e6,
               "rpc_Mbps": r[r.kind == "rpc"].rpc_goodput_bps.sum() / n_runs / 1e6,
               "queue_drops": (int(per_run.path_queue_drops.mean()) if per_run.path_queue_drops.notna().all()
                               else -1)}
        for size, tag in ((10_000, "10KB"), (1_000_000, "1MB")):
            for k, v in pooled_percentiles_s(rpcs, runs, r.run_id.unique(), size).items():
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
