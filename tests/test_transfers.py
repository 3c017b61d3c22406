"""Transfers of a given size (kind = "transfer", docs/transfers.md): the
spec refuses what does not fit naming the key, the arrivals come from the
run's seed, the simulator's completion times agree with its own series,
the runs table and the report summarise them over repetitions, and the
Linux engine's record parses into the same table (the real kernel run:
tests/kernel/test_transfer_kernel.py)."""

import json

import numpy as np
import pytest

from fatpipe import spec as spec_mod
from fatpipe import transferspec
from fatpipe.analysis.transfers import transfer_summary
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.flows import flow_specs, parse_transfers, sender_config
from fatpipe.study import run_study
from fatpipe.summary import summarize
from spec_text import plans_for

STUDY = """
version = 1
[study]
name = "transfers"
duration = "{duration}"
repetitions = {reps}
seeds = "per-repetition"
[path]
rate = "50Mbit"
rtt = "20ms"
buffer = "1bdp"
[[flows]]
kind = "transfer"
cc = "cubic"
streams = {streams}
size = "{size}"
{extra}
"""


def study(duration="6s", reps=1, streams=2, size="5MB", extra="") -> str:
    return STUDY.format(duration=duration, reps=reps, streams=streams, size=size, extra=extra)


@pytest.mark.parametrize("extra, expected", [
    ('split = "chunks"', 'split = "chunks" needs chunk'),
    ('chunk = "1MB"', 'chunk applies to split = "chunks"'),
    ("count = 3", "count = 3 needs rate"),
    ('rate = "1/s"', "with count = 1 there is one"),
    ("response = 1000", "response does not apply to kind = \"transfer\""),
    ("count = 600", "count x streams = 600 x 2 connections; at most 1000"),
])
def test_transfer_keys_that_do_not_fit_are_refused_naming_them(tmp_path, extra, expected):
    with pytest.raises(spec_mod.SpecError, match="flows.0") as e:
        plans_for(study(extra=extra), tmp_path)
    assert expected in str(e.value)


def test_transfer_keys_on_another_kind_and_a_missing_size_are_refused(tmp_path):
    with pytest.raises(spec_mod.SpecError, match='size only apply to kind = "transfer"'):
        plans_for(study().replace('kind = "transfer"', 'kind = "bulk"'), tmp_path)
    with pytest.raises(spec_mod.SpecError, match='needs size'):
        plans_for(study().replace('size = "5MB"', ""), tmp_path)


def test_arrivals_are_a_seeded_poisson_process_shared_by_the_backends(tmp_path):
    text = study(duration="600s", reps=2, extra='count = 400\nrate = "1/s"').replace(
        "[study]", '[study]\nbackends = ["sim", "kernel"]')
    plans = plans_for(text, tmp_path)
    by_rep = {}
    for p in plans:
        by_rep.setdefault(p.rep, set()).add(p.flows[0].transfer.starts_s)
    assert all(len(v) == 1 for v in by_rep.values()), "a repetition's backends draw the same arrivals"
    (a,), (b,) = by_rep.values()
    assert a != b, "repetitions draw their own"
    assert a[0] == 0.0 and len(a) == 400
    gaps = np.diff(a)
    # Exponential gaps of mean 1 s: over 399 gaps the mean is within 4
    # standard errors (1/sqrt(399) = 0.05) of 1, and the CV near 1.
    assert abs(gaps.mean() - 1.0) < 0.2 and 0.8 < gaps.std() / gaps.mean() < 1.2


def test_arrivals_after_the_run_are_not_started(tmp_path):
    (plan,) = plans_for(study(duration="2s", extra='count = 1000\nrate = "10/s"', streams=1), tmp_path)
    starts = plan.flows[0].transfer.starts_s
    assert 5 < len(starts) < 1000 and max(starts) < 2.0


@pytest.mark.parametrize("split", ["", 'split = "chunks"\nchunk = "256KB"'])
def test_a_simulated_data_set_completes_when_its_series_has_delivered_it(tmp_path, split):
    (plan,) = plans_for(study(extra=split), tmp_path)
    out = SimBackend().run(plan, tmp_path)
    (row,) = summarize(plan, out)
    assert (row["transfer_count"], row["transfer_done"], row["transfer_size_bytes"]) == (1, 1, 5_000_000)
    fct = out.transfers["duration_s"][0]
    # At least the bytes' serialization at 50 Mbit/s plus a one-way delay;
    # slow start adds a few RTTs, not seconds.
    assert 5e6 * 8 / 50e6 + 0.010 < fct < 5e6 * 8 / 50e6 + 0.5
    assert row["fct_mean_s"] == fct and row["transfer_goodput_bps"] == pytest.approx(5e6 * 8 / fct)
    # The series' acked bytes (both streams) reach the size between the
    # samples around the completion (+ one RTT for the last ACK).
    t = np.asarray(out.series["t_s"])
    acked = {}
    for ts, b in zip(t, out.series["delivered_bytes"], strict=True):
        acked[ts] = acked.get(ts, 0) + b
    times = sorted(acked)
    before = [ts for ts in times if ts < fct]
    after = [ts for ts in times if ts >= fct + 0.020 + 0.1]
    assert acked[before[-1]] < 5e6 <= acked[after[0]], (before[-1], after[0], fct)


def test_a_data_set_too_big_for_its_run_is_flagged_incomplete(tmp_path):
    (plan,) = plans_for(study(duration="1s", size="50MB"), tmp_path)
    out = SimBackend().run(plan, tmp_path)
    (row,) = summarize(plan, out)
    assert (row["transfer_count"], row["transfer_done"], row["fct_mean_s"]) == (1, 0, None)
    assert "transfer_incomplete" in row["flags"]


def test_the_study_summarises_completion_times_over_repetitions(tmp_path):
    spec_path = tmp_path / "s.toml"
    spec_path.write_text(study(reps=3, duration="8s", extra='count = 3\nrate = "1/s"'))
    loaded = run_study(spec_path, out=tmp_path / "out", emit=lambda _: None).store.load()
    assert len(loaded.transfers) == int(loaded.runs["transfer_count"].sum()) > 3
    (t,) = transfer_summary(loaded.runs, loaded.transfers, ["backend"]).to_dict("records")
    fct = loaded.transfers["duration_s"].to_numpy()
    assert t["completed"] == len(fct) and t["incomplete"] == 0
    assert t["fct_mean_s"] == pytest.approx(fct.mean()) and t["fct_p95_s"] == pytest.approx(np.percentile(fct, 95))
    assert t["fct_cv"] == pytest.approx(fct.std(ddof=1) / fct.mean())
    from fatpipe.report import write_report

    html = write_report(tmp_path / "out")
    assert "Transfer completion times" in html.read_text()


def test_the_linux_engine_record_becomes_the_transfers_table(tmp_path):
    (plan,) = plans_for(study(extra='count = 2\nrate = "1/s"\nsplit = "chunks"\nchunk = "1MB"'), tmp_path)
    (spec,) = flow_specs(plan)
    starts = plan.flows[0].transfer.starts_s
    cfg = sender_config(spec, "10.0.0.1", 0.0, 6.0, 0.1, "x")
    assert cfg["transfer"]["starts_s"] == list(starts) or tuple(cfg["transfer"]["starts_s"]) == starts
    assert cfg["transfer"]["shares"] == transferspec.stream_shares(5_000_000, 2) == [2_500_000, 2_500_000]
    lines = [{"group": 0, "transfer": 0, "stream": 0, "bytes": 3_000_000, "last_s": starts[0] + 1.5},
             {"group": 0, "transfer": 0, "stream": 1, "bytes": 2_000_000, "last_s": starts[0] + 1.25},
             # data set 1 was still moving at the end: 4 MB of 5
             {"group": 0, "transfer": 1, "stream": 0, "bytes": 4_000_000, "last_s": starts[1] + 2.0}]
    text = "".join(json.dumps(r) + "\n" for r in lines) + '{"group": 0, "tra'  # a record being written
    (row,) = parse_transfers(text, [spec])
    assert row == {"flow_group": 0, "transfer": 0, "start_s": starts[0], "duration_s": pytest.approx(1.5),
                   "size_bytes": 5_000_000}
    with pytest.raises(ValueError, match="data set 7 of flow group 0"):
        parse_transfers(json.dumps({**lines[0], "transfer": 7}) + "\n", [spec])
