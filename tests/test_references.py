"""A study's [[references]]: validated in the spec with errors naming the
key and value, compared with fatpipe's numbers by the rules of
analysis/references.py, and shown in the report beside the measured value."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from fatpipe import spec as spec_mod
from fatpipe.analysis import references as an_refs
from fatpipe.analysis import run_collapses
from fatpipe.references import ReferenceTable
from fatpipe.report import write_report
from synthetic_study import sharing_study, streams_study

ROOT = Path(__file__).resolve().parents[1]

BASE = """
version = 1
[study]
name = "refs"
duration = "3s"
[path]
rate = "100Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
[sweep]
"flows.0.cc" = ["cubic", "bbr"]
"path.loss" = [1e-3, 1e-2]
"path.buffer" = ["0.5bdp", "1bdp"]
"""


def _problems(tmp_path, references: str) -> dict[str, str]:
    p = tmp_path / "s.toml"
    p.write_text(BASE + references)
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(p)
    return dict(e.value.problems)


def _load(tmp_path, references: str):
    p = tmp_path / "s.toml"
    p.write_text(BASE + references)
    return spec_mod.load(p)[0]


def test_a_spec_without_references_has_none():
    spec, _ = spec_mod.load(ROOT / "studies" / "quickstart.toml")
    assert spec.references == []


def test_references_parse_units_as_written(tmp_path):
    spec = _load(tmp_path, """
[[references]]
title = "goodput"
source = "a talk"
metric = "goodput"
values = [{ where = { "flows.0.cc" = "bbr", "path.loss" = 1e-3, "path.buffer" = "1bdp" }, value = "14Gbit" },
          { where = { "flows.0.cc" = "cubic", "path.loss" = 0.01 }, value = "0bit", note = "~0" }]
[[references]]
title = "share"
source = "a talk"
metric = "share"
values = [{ where = { cc = "cubic", flow_group = 0 }, value = "50%" }, { where = { cc = "bbr" }, value = 0.25 }]
[[references]]
title = "factor"
source = "a paper"
metric = "improvement_factor"
stat = "max"
values = [{ where = { cc = "bbr" }, value = 5.31 }]
""")
    assert [t.si_values() for t in spec.references] == [[14e9, 0.0], [0.5, 0.25], [5.31]]
    assert spec.references[0].values[1].note == "~0"


@pytest.mark.parametrize("table, key, words", [
    ('metric = "throughput"\nvalues = [{ where = { cc = "bbr" }, value = "1Gbit" }]',
     "references.0.metric", ["'throughput'", "goodput", "improvement_factor"]),
    ('metric = "goodput"\nvalues = [{ where = { cc = "bbr" }, value = 14 }]',
     "references.0.values.0.value", ["14", "'14Gbit'"]),
    ('metric = "goodput"\nvalues = [{ where = { cc = "bbr" }, value = "14 apples" }]',
     "references.0.values.0.value", ["'14 apples'"]),
    ('metric = "share"\nvalues = [{ where = { cc = "bbr" }, value = "150%" }]',
     "references.0.values.0.value", ["'150%'", "0 to 1"]),
    ('metric = "improvement_factor"\nvalues = [{ where = { cc = "bbr" }, value = 3.77 }]',
     "references.0.stat", ["avg, max or min"]),
    ('metric = "goodput"\nstat = "avg"\nvalues = [{ where = { cc = "bbr" }, value = "1Gbit" }]',
     "references.0.stat", ["only", "'goodput'"]),
    ('metric = "goodput"\nvalues = [{ where = { "flows.0.cc" = "reno" }, value = "1Gbit" }]',
     'references.0.values.0.where."flows.0.cc"', ["'reno'", "'cubic', 'bbr'"]),
    ('metric = "goodput"\nvalues = [{ where = { "path.loss" = 2e-3 }, value = "1Gbit" }]',
     'references.0.values.0.where."path.loss"', ["0.002", "0.001, 0.01"]),
    ('metric = "goodput"\nvalues = [{ where = { colour = "red" }, value = "1Gbit" }]',
     "references.0.values.0.where.colour", ["unknown column", "flows.0.cc", "streams"]),
])
def test_a_bad_reference_is_refused_naming_its_key_and_value(tmp_path, table, key, words):
    problems = _problems(tmp_path, f'[[references]]\ntitle = "t"\nsource = "s"\n{table}\n')
    assert key in problems, problems
    for w in words:
        assert w in problems[key]


def test_reference_tables_have_different_titles(tmp_path):
    table = '[[references]]\ntitle = "Goodput"\nsource = "s"\nmetric = "goodput"\n' \
            'values = [{ where = { cc = "bbr" }, value = "1Gbit" }]\n'
    problems = _problems(tmp_path, table + table)
    assert "'Goodput' is also the title of references.0" in problems["references.1.title"]


def test_a_reference_needs_a_title_a_source_and_values(tmp_path):
    problems = _problems(tmp_path, '[[references]]\nmetric = "goodput"\nvalues = []\n')
    assert {"references.0.title", "references.0.source", "references.0.values"} <= set(problems)
    problems = _problems(tmp_path, '[[references]]\ntitle = "t"\nsource = "s"\nmetric = "goodput"\n'
                                   'values = [{ where = {}, value = "1Gbit" }]\n')
    assert "references.0.values.0.where" in problems


# ---- the comparison's rules --------------------------------------------------------


@pytest.fixture(scope="module")
def streams_dir(tmp_path_factory):
    return streams_study(tmp_path_factory.mktemp("refs") / "a", ccs=("bbr", "cubic"), streams=(1, 4),
                         mtus=(1500,), losses=(1e-5, 1e-2), reps=3, duration_s=12.0)


def _table(metric, values, stat=None):
    return ReferenceTable.model_validate({"title": metric, "source": "test", "metric": metric, "stat": stat,
                                          "values": values})


def test_goodput_reference_is_the_one_grid_points_mean_with_its_ci(streams_dir):
    runs = pd.read_parquet(streams_dir / "runs.parquet")
    where = {"flows.0.cc": "bbr", "flows.0.streams": 1, "path.loss": 1e-5}
    got = an_refs.compare(runs, [_table("goodput", [{"where": where, "value": "2Gbit"}])]).iloc[0]
    sel = runs[(runs["cc"] == "bbr") & (runs["streams"] == 1) & (runs["path.loss"] == 1e-5)]
    assert got["fatpipe"] == pytest.approx(sel["goodput_bps"].mean())
    assert got["n"] == 3 and got["ci_low"] < got["fatpipe"] < got["ci_high"]
    assert got["ratio"] == pytest.approx(sel["goodput_bps"].mean() / 2e9)
    assert got["problem"] == ""


def test_a_reference_of_several_grid_points_names_the_keys_that_differ(streams_dir):
    runs = pd.read_parquet(streams_dir / "runs.parquet")
    got = an_refs.compare(runs, [_table("goodput", [{"where": {"cc": "bbr", "streams": 1}, "value": "2Gbit"}])])
    row = got.iloc[0]
    assert math.isnan(row["fatpipe"]) and "selects 2 grid points" in row["problem"]
    assert "path.loss" in row["problem"]


def test_a_reference_of_zero_has_no_ratio_and_one_of_nothing_says_so(streams_dir):
    runs = pd.read_parquet(streams_dir / "runs.parquet")
    got = an_refs.compare(runs, [_table("goodput", [
        {"where": {"cc": "cubic", "streams": 1, "path.loss": 1e-2}, "value": "0bit", "note": "~0"},
        {"where": {"cc": "reno", "streams": 1, "path.loss": 1e-2}, "value": "1Mbit"},
        {"where": {"path.mtu": 9000}, "value": "1Mbit"}])])
    assert got.iloc[0]["fatpipe"] > 0 and math.isnan(got.iloc[0]["ratio"])
    assert got.iloc[1]["problem"] == "selects no run"
    assert got.iloc[2]["problem"] == "selects no run"


def test_improvement_factor_reference_takes_its_stat_over_the_selected_conditions(streams_dir):
    runs = pd.read_parquet(streams_dir / "runs.parquet")
    tables = [_table("improvement_factor", [{"where": {"cc": "bbr"}, "value": 3.77}], stat)
              for stat in ("avg", "max", "min")]
    got = an_refs.compare(runs, tables)
    avg, hi, lo = got["fatpipe"]
    assert lo <= avg <= hi and got["n"].tolist() == [2, 2, 2]  # two loss rates
    assert got.iloc[0]["ratio"] == pytest.approx(avg / 3.77)
    one = an_refs.compare(runs, [_table("improvement_factor", [{"where": {"cc": "bbr", "path.loss": 1e-5},
                                                                "value": 1}], "avg")])
    assert one.iloc[0]["n"] == 1
    both = an_refs.compare(runs, [_table("improvement_factor", [{"where": {"streams": 4}, "value": 1}], "avg")])
    assert "no improvement factor" in both.iloc[0]["problem"]
    two = an_refs.compare(runs, [_table("improvement_factor", [{"where": {"path.loss": 1e-5}, "value": 1}],
                                        "avg")])
    assert "gives 2 improvement factors" in two.iloc[0]["problem"]


def test_share_reference_is_the_flow_groups_mean_share(tmp_path):
    root = sharing_study(tmp_path / "sharing")
    runs = pd.read_parquet(root / "runs.parquet")
    got = an_refs.compare(runs, [_table("share", [
        {"where": {"flows.0.cc": "bbr", "flow_group": 0}, "value": "70%"},
        {"where": {"flows.0.cc": "bbr"}, "value": "70%"}])])
    sel = runs[runs["flows.0.cc"] == "bbr"]
    share = (sel[sel["flow_group"] == 0].set_index("run_id")["goodput_bps"]
             / sel.groupby("run_id")["goodput_bps"].sum())
    assert got.iloc[0]["fatpipe"] == pytest.approx(share.mean())
    assert "grid points" in got.iloc[1]["problem"] and "flow_group" in got.iloc[1]["problem"]


def test_collapse_fraction_counts_runs_with_a_collapse(streams_dir):
    runs = pd.read_parquet(streams_dir / "runs.parquet")
    series = pd.read_parquet(streams_dir / "series.parquet")
    collapses = run_collapses(series, 2.0)
    where = {"cc": "cubic", "streams": 1, "path.loss": 1e-5}  # the synthetic study collapses rep 0 only
    got = an_refs.compare(runs, [_table("collapse_fraction", [{"where": where, "value": "10%"}])], collapses)
    assert got.iloc[0]["fatpipe"] == pytest.approx(1 / 3) and got.iloc[0]["n"] == 3
    assert got.iloc[0]["ratio"] == pytest.approx(10 / 3)
    none = an_refs.compare(runs, [_table("collapse_fraction", [{"where": where, "value": "10%"}])])
    assert "no time series" in none.iloc[0]["problem"]


# ---- the report -----------------------------------------------------------------------

REFERENCES = """
[[references]]
title = "Improvement factor, talk"
source = "Crichigno et al., TSP 2018"
metric = "improvement_factor"
stat = "avg"
values = [{ where = { cc = "bbr" }, value = 3.77 }, { where = { cc = "cubic" }, value = 1.48 }]
[[references]]
title = "Goodput, talk"
source = "somewhere"
metric = "goodput"
values = [{ where = { cc = "cubic", streams = 1, "path.loss" = 1e-2 }, value = "0bit", note = "~0" }]
"""


def _reference_file(tmp_path) -> Path:
    p = tmp_path / "refs.toml"
    p.write_text("""
version = 1
[study]
name = "synthetic"
duration = "8s"
[path]
rate = "10Gbit"
rtt = "20ms"
[[flows]]
cc = "bbr"
[sweep]
"flows.0.cc" = ["bbr", "cubic"]
"flows.0.streams" = [1, 4]
"path.loss" = [1e-5, 1e-2]
""" + REFERENCES)
    return p


def test_report_shows_each_reference_next_to_fatpipes_value_with_the_ratio(streams_dir, tmp_path):
    report = write_report(streams_dir, references=_reference_file(tmp_path))
    html = report.read_text()
    assert '<h2 id="references">Beside the references</h2>' in html
    factors = pd.read_csv(report.parent / "improvement_factors.csv").set_index("cc")
    bbr = factors.loc["bbr", "avg"]
    row = re.search(r"<tr[^>]*><td[^>]*>cc=bbr</td>(.*?)</tr>", html).group(1)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    assert cells[:2] == ["3.77", f"{bbr:.2f}"]  # the talk's value, then fatpipe's, same row
    assert cells[4] == f"{bbr / 3.77:.2f}"
    assert "Source: Crichigno et al., TSP 2018" in html
    assert ">0 (~0)</td>" in html  # a reference of ~0: shown with its note, no ratio
    assert (report.parent / "references.png").exists() and (report.parent / "references.svg").exists()
    csv = pd.read_csv(report.parent / "references.csv")
    assert {"reference", "fatpipe", "ci_low", "ci_high", "ratio", "source"} <= set(csv.columns)
    findings = json.loads((report.parent / "findings.json").read_text())
    assert findings[0].startswith("Improvement factor, talk: fatpipe / reference from")


def test_report_reads_references_from_the_study_as_run(tmp_path, monkeypatch):
    from test_report import FAKE_SPEC, _run_fake_study
    spec = FAKE_SPEC.replace(', "broken"', "") + """
[[references]]
title = "Goodput of cubic"
source = "a made-up paper"
metric = "goodput"
values = [{ where = { "flows.0.cc" = "cubic" }, value = "50Mbit" }]
"""
    root = _run_fake_study(tmp_path, monkeypatch, spec)
    html = write_report(root).read_text()
    assert "Beside the references" in html and "a made-up paper" in html
    assert "Reference numbers (its study.toml)" in html
    plain = write_report(_run_without_refs(tmp_path)).read_text()
    assert "Beside the references" not in plain


def _run_without_refs(tmp_path):
    return streams_study(tmp_path / "plain", ccs=("bbr",), streams=(1,), mtus=(1500,), losses=(1e-5,),
                         reps=1, duration_s=3.0)


def test_bundled_studies_carry_their_talks_numbers():
    def refs(name):
        return spec_mod.load(ROOT / "studies" / f"{name}.toml")[0].references
    a = {t.stat: {v.where["cc"]: v.value for v in t.values} for t in refs("crichigno-mss-streams")}
    assert a == {"avg": {"bbr": 3.77, "htcp": 1.27, "cubic": 1.48, "reno": 1.85},
                 "max": {"bbr": 5.31, "htcp": 1.56, "cubic": 2.21, "reno": 2.81},
                 "min": {"bbr": 2.96, "htcp": 1, "cubic": 0.83, "reno": 1}}
    (b,) = refs("hpwan-long-fat")
    assert len(b.values) == 16 and b.metric == "goodput"
    bbr1 = [v for v in b.values if v.where == {"flows.0.cc": "bbr", "path.loss": 1e-3, "flows.0.streams": 1}]
    assert [v.value for v in bbr1] == ["14Gbit"]
    c = refs("netesto-fairness")
    assert c[0].metric == "collapse_fraction" and c[0].si_values() == [0.1]
    assert refs("netesto-fairness-3flows")[0].si_values() == [0.2]


def test_cli_report_takes_another_studys_references_and_refuses_a_bad_file(streams_dir, tmp_path, capsys):
    from fatpipe import cli
    assert cli.main(["report", str(streams_dir), "--references", str(_reference_file(tmp_path))]) == 0
    assert "Beside the references" in (streams_dir / "report" / "report.html").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(_reference_file(tmp_path).read_text().replace("value = 3.77", 'value = "lots"'))
    assert cli.main(["report", str(streams_dir), "--references", str(bad)]) == 2
    assert "references.0.values.0.value" in capsys.readouterr().err
