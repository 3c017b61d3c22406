"""Golden study: the whole sim path (spec -> plans -> simulator -> summary ->
store) for every CCA on a lossless and a lossy path, locked by a snapshot.

The simulator is deterministic, so the runs table must match
tests/golden/summary.json. A deliberate behaviour change rewrites it in the
same commit, saying why:  FATPIPE_UPDATE_GOLDEN=1 pytest tests/test_golden_summary.py
"""

import json
import math
import os
from pathlib import Path

import pandas as pd

from fatpipe import spec as spec_mod
from fatpipe.results import StudyStore
from fatpipe.study import plan_runs, run_plans

GOLDEN = Path(__file__).parent / "golden" / "summary.json"

SPEC = """
version = 1
[study]
name = "golden"
backends = ["sim"]
duration = "3s"
warmup = "1s"
seed = 7
[path]
rate = "100Mbit"
rtt = "30ms"
buffer = "1bdp"
[[flows]]
cc = "cubic"
streams = 2
[[flows]]
cc = "reno"
sender = "s2"
kind = "rpc"
request = "100B"
response = "20kB"
concurrency = 1
[sweep]
"flows.0.cc" = ["reno", "cubic", "htcp", "bbr"]
"path.loss" = [0.0, 3e-4]
"""

# Summary columns locked by the snapshot (numbers compared to 1e-9 relative).
COLUMNS = [
    "run_id", "flow_group", "cc", "streams", "goodput_bps", "retrans_rate", "srtt_p50_s",
    "srtt_p99_s", "rpc_p50_s", "rpc_p99_s", "rpc_count", "path_packets", "path_random_drops",
    "path_queue_drops", "path_min_rtt_s", "path_bottleneck_bps",
]


def _rows(tmp_path: Path) -> list[dict]:
    spec_file = tmp_path / "golden.toml"
    spec_file.write_text(SPEC)
    spec, raw = spec_mod.load(spec_file)
    store = StudyStore(tmp_path / "out")
    store.prepare(SPEC)
    run_plans(plan_runs(spec, raw), store, jobs=2, emit=lambda _: None)
    store.consolidate()
    runs = store.runs_table().sort_values(["run_id", "flow_group"])
    cols = [c for c in COLUMNS if c in runs.columns]
    out = []
    for rec in runs[cols].to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()})
    return json.loads(pd.Series(out).to_json(orient="values", double_precision=15))


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def test_golden_study_summary_is_unchanged(tmp_path):
    got = _rows(tmp_path)
    if os.environ.get("FATPIPE_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert len(got) == len(want), f"{len(got)} rows, snapshot has {len(want)}"
    diffs = []
    for g, w in zip(got, want, strict=True):
        for k in set(g) | set(w):
            if not _close(g.get(k), w.get(k)):
                diffs.append(f"{w.get('run_id')} group {w.get('flow_group')} {k}: "
                             f"snapshot {w.get(k)!r}, now {g.get(k)!r}")
    assert not diffs, "golden summary changed:\n" + "\n".join(diffs)
