"""Linked sweep axes ([[sweep.linked]]): keys that vary together, a zip next
to the cartesian product, validated as strictly as the cartesian axes."""

from __future__ import annotations

import itertools
import textwrap
import time

import pytest

from fatpipe import spec as spec_mod
from fatpipe.study import derive_seed, identity_columns, plan_runs

BASE = """\
version = 1
[study]
name = "linked"
duration = "10s"
repetitions = 2
seed = 5
[path]
rate = "1Gbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
sender = "s1"
[[flows]]
cc = "cubic"
sender = "s2"
[[flows]]
cc = "cubic"
sender = "s3"
"""

ONE_CUBIC_VS_TWO_X = BASE + textwrap.dedent("""\
    [sweep]
    "path.loss" = [0.0, 1e-3]

    [[sweep.linked]]
    "flows.1.cc" = ["reno", "bbr", "htcp"]
    "flows.2.cc" = ["reno", "bbr", "htcp"]
    """)


def load(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return spec_mod.load(p)


def problems(tmp_path, text) -> dict[str, str]:
    with pytest.raises(spec_mod.SpecError) as e:
        load(tmp_path, text)
    return dict(e.value.problems)


def test_linked_keys_expand_as_a_zip_times_the_cartesian_axes(tmp_path):
    spec, raw = load(tmp_path, ONE_CUBIC_VS_TWO_X)
    assert spec_mod.run_count(spec) == 2 * 3 * 2
    plans = plan_runs(spec, raw)
    assert len(plans) == 12 and len({p.run_id for p in plans}) == 12
    points = [(p.swept["path.loss"], p.swept["flows.1.cc"], p.swept["flows.2.cc"])
              for p in plans if p.rep == 0]
    # Cartesian axes first, then the linked group (fastest); never a mixed pair.
    assert points == [(0.0, "reno", "reno"), (0.0, "bbr", "bbr"), (0.0, "htcp", "htcp"),
                      (1e-3, "reno", "reno"), (1e-3, "bbr", "bbr"), (1e-3, "htcp", "htcp")]
    for p in plans:
        assert [f.cc for f in p.flows] == ["cubic", p.swept["flows.1.cc"], p.swept["flows.1.cc"]]


def test_each_linked_key_is_its_own_column_of_the_runs_table(tmp_path):
    spec, raw = load(tmp_path, ONE_CUBIC_VS_TWO_X)
    cols = identity_columns(plan_runs(spec, raw)[0])
    assert cols["flows.1.cc"] == cols["flows.2.cc"] == "reno" and cols["path.loss"] == 0.0


def test_two_linked_groups_multiply(tmp_path):
    spec, raw = load(tmp_path, ONE_CUBIC_VS_TWO_X + textwrap.dedent("""\
        [[sweep.linked]]
        "path.mtu" = [1500, 9000]
        "flows.0.mss" = [1460, 8960]
        """))
    plans = plan_runs(spec, raw)
    assert len(plans) == 2 * 3 * 2 * 2
    assert {(p.mtu_bytes, p.flows[0].mss_bytes) for p in plans} == {(1500, 1448), (9000, 8948)}


def test_a_linked_point_is_validated_with_its_keys_together(tmp_path):
    # mss 8960 alone does not fit mtu 1500; linked with mtu 9000 it does.
    text = BASE + '[[sweep.linked]]\n"path.mtu" = [1500, 9000]\n"flows.0.mss" = [1460, 8960]\n'
    spec, raw = load(tmp_path, text)
    assert len(plan_runs(spec, raw)) == 4
    p = problems(tmp_path, BASE + '[[sweep.linked]]\n"path.mtu" = [1500, 9000]\n"flows.0.mss" = [8960, 1460]\n')
    assert any(k.startswith("sweep.linked[0][0] (flows.0") and "does not fit" in m for k, m in p.items()), p


def test_a_bad_linked_value_names_the_group_point_and_key(tmp_path):
    p = problems(tmp_path, BASE + '[[sweep.linked]]\n"flows.0.cc" = ["reno", "Bad CC"]\n'
                 '"flows.1.cc" = ["reno", "bbr"]\n')
    assert any(k.startswith("sweep.linked[0][1] (flows.0.cc") for k in p), p
    p = problems(tmp_path, BASE + '[[sweep.linked]]\n"flows.0.streams" = [1, true]\n"flows.1.cc" = ["reno", "bbr"]\n')
    assert "string or a number" in p['sweep.linked[0]."flows.0.streams"[1]'], p


def test_linked_lists_of_different_lengths_name_the_keys(tmp_path):
    p = problems(tmp_path, BASE + '[[sweep.linked]]\n"flows.1.cc" = ["reno", "bbr", "htcp"]\n'
                 '"flows.2.cc" = ["reno", "bbr"]\n')
    msg = p["sweep.linked[0]"]
    assert "differ in length" in msg and '"flows.1.cc" has 3' in msg and '"flows.2.cc" has 2' in msg


def test_a_key_swept_both_linked_and_cartesian_is_refused(tmp_path):
    p = problems(tmp_path, ONE_CUBIC_VS_TWO_X.replace('"path.loss" = [0.0, 1e-3]',
                                                      '"flows.2.cc" = ["reno", "bbr"]'))
    assert 'already swept at sweep."flows.2.cc"' in p['sweep.linked[0]."flows.2.cc"'], p


def test_a_key_in_two_linked_groups_is_refused(tmp_path):
    p = problems(tmp_path, ONE_CUBIC_VS_TWO_X + '[[sweep.linked]]\n"flows.1.cc" = ["reno"]\n"path.mtu" = [1500]\n')
    assert "already swept at sweep.linked[0]" in p['sweep.linked[1]."flows.1.cc"'], p


@pytest.mark.parametrize("key", ["study.seed", "study.repetitions", "flows.0.kind", "flows", "path"])
def test_linked_keys_obey_the_sweepable_allow_list(tmp_path, key):
    p = problems(tmp_path, BASE + f'[[sweep.linked]]\n"{key}" = [1, 2]\n"flows.1.cc" = ["reno", "bbr"]\n')
    assert "cannot be swept" in p[f'sweep.linked[0]."{key}"'], p


def test_a_linked_key_naming_a_missing_flow_is_refused(tmp_path):
    p = problems(tmp_path, BASE + '[[sweep.linked]]\n"flows.7.cc" = ["reno"]\n"flows.1.cc" = ["reno"]\n')
    assert "no such flow" in p['sweep.linked[0]."flows.7.cc"'], p


def test_a_linked_group_needs_two_keys_and_double_brackets(tmp_path):
    p = problems(tmp_path, BASE + '[[sweep.linked]]\n"flows.1.cc" = ["reno", "bbr"]\n')
    assert "two or more keys" in p["sweep.linked[0]"]
    p = problems(tmp_path, BASE + '[sweep.linked]\n"flows.1.cc" = ["reno"]\n"flows.2.cc" = ["reno"]\n')
    assert "[[sweep.linked]]" in p["sweep.linked"]
    p = problems(tmp_path, BASE + '[[sweep.linked]]\n"flows.1.cc" = []\n"flows.2.cc" = []\n')
    assert any(k.startswith('sweep.linked[0]."flows.1.cc"') for k in p), p


def test_a_bomb_through_linked_groups_is_refused_by_count_before_expansion(tmp_path):
    ten = ", ".join(str(v + 1) for v in range(10))
    groups = "".join(f'[[sweep.linked]]\n"flows.{i}.streams" = [{ten}]\n"hosts.s{i + 1}.rmem_max" = [{ten}]\n'
                     for i in range(3))
    axes = '[sweep]\n"path.loss" = [' + ", ".join(f"{v}e-6" for v in range(10)) + "]\n"
    axes += '"path.mtu" = [' + ", ".join(str(1500 + v) for v in range(10)) + "]\n"
    long_zip = "[" + ", ".join(str(v) for v in range(60_000)) + "]"  # x 2 repetitions
    zipped = f'[[sweep.linked]]\n"flows.0.streams" = {long_zip}\n"flows.1.streams" = {long_zip}\n'
    for text, sizes in ((BASE + axes + groups, "10 x 10 x 10 (linked) x 10 (linked) x 10 (linked) sweep points"),
                        (BASE + zipped, "60000 (linked) sweep points")):
        t0 = time.monotonic()
        p = problems(tmp_path, text)
        assert "runs" in p["sweep"] and f"{spec_mod.MAX_RUNS:,}" in p["sweep"] and sizes in p["sweep"], p
        assert time.monotonic() - t0 < 5


def test_without_linked_groups_run_ids_and_seeds_are_the_cartesian_product(tmp_path):
    text = BASE + '[sweep]\n"path.loss" = [0.0, 1e-3, 1e-2]\n"flows.0.cc" = ["reno", "bbr"]\n'
    spec, raw = load(tmp_path, text)
    plans = plan_runs(spec, raw)
    want = []
    for point, (loss, cc) in enumerate(itertools.product([0.0, 1e-3, 1e-2], ["reno", "bbr"])):
        for rep in range(2):
            want.append((f"sim-p{point:03d}-r{rep:02d}", derive_seed(5, point, rep), loss, cc))
    assert [(p.run_id, p.seed, p.loss, p.flows[0].cc) for p in plans] == want


def test_tables_and_labels_show_keys_swept_together_once():
    import pandas as pd

    from fatpipe.analysis.stats import display_columns
    runs = pd.DataFrame({"backend": ["sim"] * 4, "path.loss": [0.0, 0.0, 1e-3, 1e-3],
                         "flows.1.cc": ["reno", "bbr"] * 2, "flows.2.cc": ["reno", "bbr"] * 2,
                         "flows.3.cc": ["reno", "reno", "bbr", "reno"], "flow_group": [0] * 4, "cc": ["cubic"] * 4})
    assert display_columns(runs, ["path.loss", "flows.1.cc", "flows.2.cc", "flows.3.cc"]) == \
        ["path.loss", "flows.1.cc", "flows.3.cc"]
