"""scripts/studies_vs_talks.py writes the report's reference comparison of
stored results into the doc's generated blocks, leaves a block whose study
has no results alone, refuses a study whose results lack planned runs, and
--check tells whether the doc is current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from synthetic_study import streams_study

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "studies_vs_talks.py"

STUDY = """
version = 1
[study]
name = "{name}"
duration = "8s"
[path]
rate = "10Gbit"
rtt = "20ms"
[[flows]]
cc = "bbr"
[sweep]
"flows.0.cc" = ["bbr", "cubic"]
"flows.0.streams" = [1, 4]
[[references]]
title = "Improvement factor, the talk's average"
source = "the talk's table"
metric = "improvement_factor"
stat = "avg"
values = [{{ where = {{ cc = "bbr" }}, value = 3.77 }}]
"""

DOC = """# vs the talks

Hand-written analysis stays.

<!-- generated: synthetic-a -->
old numbers
<!-- end generated: synthetic-a -->

<!-- generated: never-run -->
kept as it is
<!-- end generated: never-run -->

More analysis.
"""


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def _setup(tmp_path):
    studies, results = tmp_path / "studies", tmp_path / "results"
    studies.mkdir()
    for name in ("synthetic-a", "never-run"):
        (studies / f"{name}.toml").write_text(STUDY.format(name=name))
    (studies / "plain.toml").write_text(STUDY.format(name="plain").split("[[references]]")[0])
    streams_study(results / "synthetic-a", ccs=("bbr", "cubic"), streams=(1, 4), mtus=(1500,),
                  losses=(1e-5,), reps=2, duration_s=6.0)
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    return studies, results, doc


def test_generated_blocks_are_written_from_stored_results(tmp_path):
    studies, results, doc = _setup(tmp_path)
    common = ["--studies", studies, "--results", results, "--doc", doc]
    assert _run(*common, "--check").returncode == 1
    r = _run(*common)
    assert r.returncode == 0, r.stderr
    assert "kept: never-run" in r.stdout
    text = doc.read_text()
    assert "old numbers" not in text and "kept as it is" in text
    assert "Hand-written analysis stays." in text and "More analysis." in text
    block = text[text.index("<!-- generated: synthetic-a -->"):text.index("<!-- end generated: synthetic-a -->")]
    assert "from `results/synthetic-a`" in block and "Source: the talk's table." in block
    row = next(line for line in block.splitlines() if line.startswith("| cc=bbr"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "3.77" and float(cells[5]) == round(float(cells[2]) / 3.77, 2)
    assert _run(*common, "--check").returncode == 0  # current now
    assert _run(*common).stdout.strip().splitlines() == ["kept: never-run (no "
                                                         f"{results / 'never-run' / 'runs.parquet'})"]


def test_a_study_with_references_but_no_block_is_an_error(tmp_path):
    studies, results, doc = _setup(tmp_path)
    doc.write_text(DOC.replace("<!-- generated: never-run -->", "").replace("<!-- end generated: never-run -->", ""))
    r = _run("--studies", studies, "--results", results, "--doc", doc)
    assert r.returncode == 2 and "no generated block for never-run" in r.stderr
    assert doc.read_text().count("old numbers") == 1  # nothing written


def test_results_of_another_study_are_refused(tmp_path):
    studies, results, doc = _setup(tmp_path)
    (results / "synthetic-a" / "study.toml").write_text(STUDY.format(name="other-study"))
    r = _run("--studies", studies, "--results", results, "--doc", doc)
    assert r.returncode != 0 and "holds study 'other-study'" in r.stderr


def _drop_runs(results: Path, name: str, keep: int) -> int:
    """Keep only the first `keep` planned runs in the stored runs table (as an
    interrupted study leaves it); return how many planned runs there are."""
    root = results / name
    planned = json.loads((root / "manifest.json").read_text())["runs"]
    runs = pd.read_parquet(root / "runs.parquet")
    kept = {r["run_id"] for r in planned[:keep]}
    runs[runs["run_id"].isin(kept)].to_parquet(root / "runs.parquet")
    return len(planned)


def test_an_incomplete_study_is_refused_and_its_block_kept(tmp_path):
    studies, results, doc = _setup(tmp_path)
    planned = _drop_runs(results, "synthetic-a", keep=3)
    common = ["--studies", studies, "--results", results, "--doc", doc]
    r = _run(*common)
    assert r.returncode == 3, r.stderr
    assert (f"synthetic-a: {planned - 3} of {planned} planned runs missing or not ok in "
            f"{results / 'synthetic-a'}") in r.stderr
    assert "old numbers" in doc.read_text()  # the block is kept as it is
    assert _run(*common, "--check").returncode == 3


def test_a_failed_run_makes_the_study_incomplete(tmp_path):
    studies, results, doc = _setup(tmp_path)
    path = results / "synthetic-a" / "runs.parquet"
    runs = pd.read_parquet(path)
    failed = runs["run_id"].iloc[0]
    runs.loc[runs["run_id"] == failed, "status"] = "failed"
    runs.to_parquet(path)
    r = _run("--studies", studies, "--results", results, "--doc", doc)
    assert r.returncode == 3 and "1 of " in r.stderr and f"({failed})" in r.stderr
    assert "old numbers" in doc.read_text()


def test_a_manifest_without_a_plan_is_refused(tmp_path):
    studies, results, doc = _setup(tmp_path)
    manifest = results / "synthetic-a" / "manifest.json"
    manifest.write_text(json.dumps({"schema_version": 1, "study": "synthetic-a"}))
    r = _run("--studies", studies, "--results", results, "--doc", doc)
    assert r.returncode == 3 and "records no planned runs" in r.stderr
    assert "old numbers" in doc.read_text()
