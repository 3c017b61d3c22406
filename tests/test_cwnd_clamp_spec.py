"""A flow's `cwnd_clamp` (segments, tp->snd_cwnd_clamp as
TCP_BPF_SNDCWND_CLAMP sets it): validation naming key and range, sweeps,
the run plan, the simulator honouring it, and the kernel backend's
per-sender route metric (pure parts; the real runs are in tests/kernel)."""

import textwrap
from types import SimpleNamespace

import pytest

from fatpipe import spec as spec_mod
from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.kernel.clamp import cached_metrics, route_metric_args
from fatpipe.backends.sim import SimBackend
from fatpipe.linuxpath.config import path_config, sender_cwnd_clamps
from fatpipe.study import plan_runs

BASE = """
version = 1
[study]
name = "clamp"
duration = "3s"
interval = "50ms"
[path]
rate = "100Mbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
{flow}
[[flows]]
cc = "cubic"
sender = "{second_sender}"
{sweep}
"""


def _write(tmp_path, flow="", sweep="", second_sender="s2"):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE.format(flow=flow, sweep=sweep, second_sender=second_sender)))
    return p


def plans(tmp_path, **parts):
    spec, raw = spec_mod.load(_write(tmp_path, **parts))
    return plan_runs(spec, raw)


def problems(tmp_path, **parts):
    with pytest.raises(spec_mod.SpecError) as e:
        spec_mod.load(_write(tmp_path, **parts))
    return "\n".join(f"{k}: {m}" for k, m in e.value.problems)


def test_cwnd_clamp_reaches_the_run_plan_of_its_flow_only(tmp_path):
    (plan,) = plans(tmp_path, flow="cwnd_clamp = 40")
    assert [f.cwnd_clamp for f in plan.flows] == [40, None]


@pytest.mark.parametrize("value, shown", [("0", "got 0"), ("-3", "got -3"), ("2147483648", "got 2147483648"),
                                          ("1.5", "got 1.5"), ('"40"', "got '40'"), ("true", "got the boolean true")])
def test_bad_cwnd_clamp_names_the_key_and_the_allowed_range(tmp_path, value, shown):
    text = problems(tmp_path, flow=f"cwnd_clamp = {value}")
    assert text.startswith("flows.0.cwnd_clamp: "), text
    assert shown in text and "from 1 to 2147483647" in text, text


def test_cwnd_clamp_is_sweepable_and_swept_values_are_validated(tmp_path):
    swept = plans(tmp_path, sweep='[sweep]\n"flows.0.cwnd_clamp" = [20, 40]')
    assert [p.flows[0].cwnd_clamp for p in swept] == [20, 40]
    text = problems(tmp_path, sweep='[sweep]\n"flows.0.cwnd_clamp" = [20, 0]')
    assert "cwnd_clamp" in text and "from 1 to 2147483647" in text, text


def test_the_simulator_holds_each_flow_at_its_clamp(tmp_path):
    (plan,) = plans(tmp_path, flow="cwnd_clamp = 25")
    out = SimBackend().run(plan, tmp_path)
    cwnd = {g: max(c for f, c in zip(out.series["flow_group"], out.series["cwnd_segments"], strict=True) if f == g)
            for g in (0, 1)}
    assert cwnd[0] == 25
    assert cwnd[1] > 25


def test_the_kernel_clamps_per_sender_and_names_flows_that_disagree(tmp_path):
    (ok,) = plans(tmp_path, flow="cwnd_clamp = 40")
    assert path_config(ok).senders["s1"].cwnd_clamp_segments == 40
    assert path_config(ok).senders["s2"].cwnd_clamp_segments is None
    (shared,) = plans(tmp_path, flow="cwnd_clamp = 40", second_sender="s1")
    with pytest.raises(BackendUnavailable) as e:
        KernelBackend().check([shared])
    assert "flows.0.cwnd_clamp = 40, flows.1.cwnd_clamp = none" in str(e.value)
    assert "share one clamp" in str(e.value)


def test_sender_cwnd_clamps_accepts_equal_clamps_on_one_sender():
    flows = [SimpleNamespace(group=0, sender="a", cwnd_clamp=10), SimpleNamespace(group=1, sender="a", cwnd_clamp=10),
             SimpleNamespace(group=2, sender="b", cwnd_clamp=None)]
    assert sender_cwnd_clamps(flows) == {"a": 10}


def test_route_metric_locks_cwnd_and_ssthresh_to_the_clamp():
    assert route_metric_args(40) == ["cwnd", "lock", "40", "ssthresh", "lock", "40"]


def test_cached_metrics_reads_ip_tcp_metrics_show():
    line = "198.19.0.1 age 0.016sec ssthresh 20 cwnd 20 rtt 69us rttvar 69us source 198.18.1.1\n"
    assert cached_metrics(line) == {"ssthresh": 20, "cwnd": 20}
    assert cached_metrics("") == {}


def test_the_runs_table_and_the_report_group_flows_by_their_clamp(tmp_path):
    from fatpipe.report import write_report
    from fatpipe.results import StudyStore
    from fatpipe.study import run_plans

    spec, raw = spec_mod.load(_write(tmp_path, flow="cwnd_clamp = 25"))
    store = StudyStore(tmp_path / "out")
    store.prepare("# clamp\n")
    run_plans(plan_runs(spec, raw), store, jobs=1, emit=lambda _line: None)
    store.consolidate()
    runs = store.runs_table().sort_values("flow_group")
    assert runs["cwnd_clamp"].iloc[0] == 25 and runs["cwnd_clamp"].isna().iloc[1]
    html = write_report(tmp_path / "out").read_text()
    assert "cwnd clamp (segments)" in html


def test_studies_without_a_clamp_have_no_clamp_column(tmp_path):
    from fatpipe.backends.base import RunOutcome
    from fatpipe.summary import summarize

    (plan,) = plans(tmp_path)
    assert all("cwnd_clamp" not in row for row in summarize(plan, RunOutcome()))
