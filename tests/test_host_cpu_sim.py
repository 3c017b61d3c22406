"""The simulator's host CPU model through the sim backend (docs/host-model.md):
a run whose hosts have a cost model reports its cores' busy fractions in the
same facts and runs-table columns as the kernel and hosts backends, and is
flagged cpu_bound when a core saturates; ideal hosts report nothing."""

import pytest

from fatpipe.backends.sim import SimBackend
from fatpipe.schema import cpu_saturated
from spec_text import plans_for

STUDY = """
version = 1
[study]
name = "cpu"
backends = ["sim"]
duration = "2s"
warmup = "1s"
[path]
rate = "10Gbit/s"
rtt = "10ms"
[hosts.default]
{hosts}
[[flows]]
cc = "cubic"
streams = 4
"""


def run(tmp_path, hosts: str):
    (plan,) = plans_for(STUDY.format(hosts=hosts), tmp_path)
    return SimBackend().run(plan, tmp_path)


def goodput_bps(outcome) -> float:
    s = outcome.series
    end = max(s["t_s"])
    start = 1.0
    at = lambda t: sum(b for b, ts in zip(s["delivered_bytes"], s["t_s"], strict=True) if abs(ts - t) < 1e-9)  # noqa: E731
    return (at(end) - at(start)) * 8 / (end - start)


def test_one_saturated_core_is_reported_and_caps_the_streams(tmp_path):
    # One application thread for 4 streams; 4 ns per byte sent: the core
    # copies 2 Gbit/s of payload, the path carries 10.
    out = run(tmp_path, 'cpu_cores = 4\napp_threads = 1\ncost_send_byte = "4ns"')
    machines = out.facts["cpu"]["machines"]
    # hosts.default gives the receiver the same model, on a machine of its own.
    assert set(machines) == {"s1", "receiver"}, machines
    busy = machines["s1"]["cores"]
    assert busy["cpu0"]["busy_frac"] > 0.95 and all(busy[c]["busy_frac"] == 0 for c in ("cpu1", "cpu2", "cpu3")), busy
    assert cpu_saturated(out.cpu.busy_max_core_frac) and out.facts["cpu"]["cpu_bound"]
    assert out.cpu.softirq_max_core_frac is None
    assert goodput_bps(out) <= 2e9 * 1.01, goodput_bps(out)


def test_hosts_on_one_machine_share_its_cores(tmp_path):
    out = run(tmp_path, 'cpu_cores = 2\nmachine = "vm"\ncost_receive_unit = "5us"\ncost_send_packet = "5us"')
    machines = out.facts["cpu"]["machines"]
    assert list(machines) == ["vm"] and machines["vm"]["roles"] == ["s1", "receiver"], machines


def test_ideal_hosts_report_no_cpu(tmp_path):
    out = run(tmp_path, 'processing_jitter = "0us"')
    assert "cpu" not in out.facts and out.cpu.busy_max_core_frac is None


@pytest.mark.parametrize("nic", ["3Gbit/s"])
def test_the_nic_caps_the_hosts_streams(tmp_path, nic):
    # hosts.default's nic_rate caps the sender; a receiver's own is refused.
    out = run(tmp_path, f'nic_rate = "{nic}"')
    assert 2.7e9 <= goodput_bps(out) <= 3.0e9, goodput_bps(out)
    with pytest.raises(ValueError, match="receiver.nic_rate_bps: a receiving host's NIC ceiling is not modelled"):
        run(tmp_path, f'nic_rate = "{nic}"\n[hosts.receiver]\nnic_rate = "{nic}"')


def test_interrupt_coalescing_reaches_the_simulator_and_a_lone_frame_count_is_refused(tmp_path):
    hosts = 'interrupt_coalescing = "100us"\ninterrupt_coalescing_frames = 32'
    (plan,) = plans_for(STUDY.format(hosts=hosts), tmp_path)
    receiver = plan.receiver
    assert receiver.interrupt_coalescing_s == pytest.approx(1e-4) and receiver.interrupt_coalescing_frames == 32
    assert plan.senders["s1"].interrupt_coalescing_s == pytest.approx(1e-4)
    assert SimBackend().run(plan, tmp_path).series["delivered_bytes"]
    with pytest.raises(Exception, match=r"hosts\.default\.interrupt_coalescing_frames: host .* needs the delay"):
        plans_for(STUDY.format(hosts="interrupt_coalescing_frames = 32"), tmp_path)
    with pytest.raises(Exception, match=r"interrupt_coalescing"):
        plans_for(STUDY.format(hosts='interrupt_coalescing = "20ms"'), tmp_path)
