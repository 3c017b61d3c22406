"""Every bundled study validates, and a shrunk copy of each runs on the sim
backend and produces a report.

Shrunk: 2 s (0.5 s warm-up), 1 repetition, every sweep axis and linked
group cut to its first two values, and, for the 100 Gbit/s studies, the path rate divided until it
is at most 10 Gbit/s (with stream caps scaled alike) so the test stays fast.
The kernel variants are shrunk and run on the sim backend too: the question
is whether the spec is runnable and reportable, not what the kernel does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fatpipe import pathtrace
from fatpipe import spec as spec_mod
from fatpipe.report import write_report
from fatpipe.results import StudyStore
from fatpipe.study import plan_runs, run_plans
from fatpipe.units import parse_rate_bps

ROOT = Path(__file__).resolve().parents[1]
STUDIES = sorted((ROOT / "studies").glob("*.toml"))
MAX_TEST_RATE_BPS = 10e9


def test_there_are_bundled_studies_for_every_seed_study():
    names = {p.stem for p in STUDIES}
    for expected in ("crichigno-mss-streams", "hpwan-long-fat", "netesto-fairness"):
        assert expected in names
        assert f"{expected}-kernel" in names


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_bundled_study_validates_with_fatpipe_check(path):
    proc = subprocess.run(
        [sys.executable, "-m", "fatpipe", "check", str(path)],
        capture_output=True, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"}, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "valid" in proc.stdout


def shrink(raw: dict) -> dict:
    """The study cut down to a smoke test (see the module docstring)."""
    sweep = {k: list(v)[:2] for k, v in raw.get("sweep", {}).items() if k != "linked"}
    linked = [{k: list(v)[:2] for k, v in group.items()} for group in raw.get("sweep", {}).get("linked", [])]
    out = spec_mod.apply_overrides(raw, {
        "study.duration": "2s",
        "study.warmup": "0.5s",
        "study.repetitions": 1,
        "study.backends": ["sim"],
    })
    rates = [parse_rate_bps(out["path"]["rate"])] + [parse_rate_bps(r) for r in sweep.get("path.rate", [])]
    scale = max(1.0, max(rates) / MAX_TEST_RATE_BPS)
    if scale > 1:
        out["path"]["rate"] = parse_rate_bps(out["path"]["rate"]) / scale
        if "path.rate" in sweep:
            sweep["path.rate"] = [parse_rate_bps(r) / scale for r in sweep["path.rate"]]
        for host in out.get("hosts", {}).values():
            if host.get("stream_rate_cap") is not None:
                host["stream_rate_cap"] = parse_rate_bps(host["stream_rate_cap"]) / scale
    for flow in out["flows"]:
        if flow.get("start", 0):
            flow["start"] = "0.2s"
    out["sweep"] = {**sweep, "linked": linked} if linked else sweep
    kept = {k: v for g in [sweep, *linked] for k, v in g.items()}
    tables = [{**t, "values": [v for v in t["values"] if all(k not in kept or val in kept[k]
                                                             for k, val in v["where"].items())]}
              for t in out.get("references", [])]
    out["references"] = [t for t in tables if t["values"]]  # those the cut sweep still reaches
    return out


# Studies whose CCAs exist only on the kernel backend, with the reason.
KERNEL_ONLY = {"bpf-port-validation": "fp_reno/fp_cubic are BPF ports, registered only on the kernel backend",
               "bpf-port-validation-cubic": "fp_cubic is a BPF port, registered only on the kernel backend"}


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_shrunk_bundled_study_runs_on_sim_and_reports(path, tmp_path):
    if path.stem in KERNEL_ONLY:
        pytest.skip(KERNEL_ONLY[path.stem])
    # Files the study names (path.trace) are taken from its directory, as spec.load() does.
    raw = shrink(pathtrace.relative_to(spec_mod.load_raw(path), path.parent))
    spec = spec_mod.validate(raw, str(path))
    plans = plan_runs(spec, raw)
    assert plans and all(p.backend == "sim" for p in plans)
    axes = len(raw["sweep"]) - ("linked" in raw["sweep"]) + len(raw["sweep"].get("linked", []))
    assert len(plans) <= 2 ** axes

    out = tmp_path / "out"
    store = StudyStore(out)
    store.prepare(f"# shrunk copy of {path.name}\n")
    progress = run_plans(plans, store, jobs=2, emit=lambda _line: None)
    store.consolidate()
    assert progress.failed == 0
    runs = pd.read_parquet(out / "runs.parquet")
    assert set(runs["status"]) == {"ok"}
    assert (runs["goodput_bps"] > 0).all()
    report = write_report(out, references=path if spec_mod.load(path)[0].references else None)
    html = report.read_text()
    assert "All grid points" in html
