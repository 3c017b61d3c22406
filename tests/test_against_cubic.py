"""The table "fairness against CUBIC" (analysis.fairness.against_cubic) and
its report section, on constructed runs tables."""

import json
import math
import re

import pandas as pd
import pytest

from fatpipe.analysis import against_cubic, against_cubic_runs, jain_index
from fatpipe.report import write_report
from synthetic_study import sharing_study


def _run(run_id, flows, status="ok", **swept):
    """flows: (cc, goodput_bps) or (cc, goodput_bps, kind) per flow group."""
    rows = []
    for group, f in enumerate(flows):
        cc, g, kind = (*f, "bulk")[:3]
        rows.append({"run_id": run_id, "backend": "sim", "status": status, "flags": "",
                     "flow_group": group, "kind": kind, "cc": cc, "streams": 1,
                     "mss_bytes": 1448, "goodput_bps": g, **swept})
    return rows


def _runs(*runs):
    return pd.DataFrame([r for run in runs for r in run])


def test_one_cubic_against_one_x_gives_both_shares_the_fair_share_and_jain():
    t = against_cubic(_runs(_run("r0", [("cubic", 2.0), ("bbr", 6.0)])))
    assert len(t) == 1
    r = t.iloc[0]
    assert (r["cc"], r["cc_flows"], r["n"]) == ("bbr", 1, 1)
    assert r["cubic_share"] == pytest.approx(0.25)
    assert r["cc_share"] == pytest.approx(0.75)
    assert r["fair_share"] == pytest.approx(0.5)
    assert r["jain"] == pytest.approx(jain_index([2, 6]))
    assert (r["cubic_bps"], r["cc_bps"]) == (2.0, 6.0)


def test_cubic_as_flow_0_or_as_flow_1_pools_into_one_row_without_the_cca_keys():
    runs = _runs(_run("r0", [("cubic", 2.0), ("bic", 6.0)], **{"flows.0.cc": "cubic", "flows.1.cc": "bic"}),
                 _run("r1", [("bic", 5.0), ("cubic", 3.0)], **{"flows.0.cc": "bic", "flows.1.cc": "cubic"}))
    t = against_cubic(runs)
    assert len(t) == 1
    assert not any(c.endswith(".cc") for c in t.columns)
    r = t.iloc[0]
    assert r["n"] == 2
    assert r["cubic_share"] == pytest.approx((2 / 8 + 3 / 8) / 2)
    assert r["cubic_share_ci_low"] < r["cubic_share"] < r["cubic_share_ci_high"]
    assert r["jain"] == pytest.approx((jain_index([2, 6]) + jain_index([5, 3])) / 2)


def test_one_cubic_against_two_x_counts_the_x_groups_together():
    r = against_cubic(_runs(_run("r0", [("cubic", 1.0), ("yeah", 2.0), ("yeah", 3.0)]))).iloc[0]
    assert (r["cc"], r["cc_flows"]) == ("yeah", 2)
    assert r["cubic_share"] == pytest.approx(1 / 6)
    assert r["cc_share"] == pytest.approx(5 / 6)
    assert r["fair_share"] == pytest.approx(1 / 3)
    assert r["jain"] == pytest.approx(jain_index([1, 2, 3]))


def test_runs_without_exactly_one_cubic_against_one_other_cca_are_left_out():
    runs = _runs(_run("same", [("cubic", 1.0), ("cubic", 1.0)]),
                 _run("none", [("bbr", 1.0), ("reno", 1.0)]),
                 _run("two-others", [("cubic", 1.0), ("bbr", 1.0), ("reno", 1.0)]),
                 _run("alone", [("cubic", 1.0)]),
                 _run("failed", [("cubic", 1.0), ("bbr", 1.0)], status="error"),
                 _run("zero", [("cubic", 0.0), ("bbr", 0.0)]))
    assert against_cubic_runs(runs).empty
    assert against_cubic(runs).empty
    assert "cubic_share" in against_cubic(runs).columns


def test_rpc_groups_are_left_out_of_the_shares():
    runs = _runs(_run("r0", [("cubic", 3.0), ("htcp", 5.0), ("cubic", 2.0, "rpc")]))
    r = against_cubic_runs(runs).iloc[0]
    assert (r["cc"], r["flows"]) == ("htcp", 2)
    assert r["cubic_share"] == pytest.approx(3 / 8)


def test_rows_are_ordered_by_cca_then_by_the_numeric_buffer_not_its_text():
    runs = _runs(*(_run(f"{cc}-{b}", [("cubic", 1.0), (cc, 1.0)], **{"path.buffer": b, "buffer_bytes": n})
                   for cc in ("reno", "bbr") for b, n in (("16bdp", 16e6), ("2bdp", 2e6), ("0.5bdp", 5e5))))
    t = against_cubic(runs)
    assert list(zip(t["cc"], t["path.buffer"], strict=True)) == [
        ("bbr", "0.5bdp"), ("bbr", "2bdp"), ("bbr", "16bdp"),
        ("reno", "0.5bdp"), ("reno", "2bdp"), ("reno", "16bdp")]


def test_report_has_the_table_against_cubic_and_its_csv(tmp_path):
    # sharing_study: flow 0 (cubic, bbr or reno) vs flow 1 (cubic), plus a cubic RPC flow
    path = write_report(sharing_study(tmp_path / "sharing"))
    html = path.read_text()
    assert '<h2 id="against-cubic">Fairness against CUBIC</h2>' in html
    table = html[html.index('<h2 id="against-cubic">'):]
    table = table[: table.index("</table>")]
    assert re.findall(r"<th[^>]*>([^<]+)</th>", table)[:2] == ["X", "X flows"]  # rows read by X
    assert ">CUBIC share (%)</th>" in table and ">Jain</th>" in table
    t = pd.read_csv(path.parent / "fairness_vs_cubic.csv")
    assert set(t["cc"]) == {"bbr", "reno"}  # cubic vs cubic is no pair against CUBIC
    bbr = t[t["cc"] == "bbr"].iloc[0]
    assert bbr["cubic_share"] == pytest.approx(0.3, abs=0.05)  # the study gives bbr 70 %
    assert math.isclose(bbr["cubic_share"] + bbr["cc_share"], 1.0)
    findings = json.loads((path.parent / "findings.json").read_text())
    line = next(f for f in findings if f.startswith("Against CUBIC"))
    assert line.index("bbr") < line.index("reno")  # lowest CUBIC share first
