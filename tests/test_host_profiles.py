"""The bundled host profiles (python/fatpipe/data/host_profiles.toml;
docs/host-model.md, "Profiles"): each loads with a source for every key,
can be named in a study, reaches the run plan's cpu object with its values,
and a short simulator run with it stays under the per-core capacity its
costs imply, which catches a unit error in a profile (a cost a thousand
times too large or too small)."""

import pytest

from fatpipe import hostcpu, hostprofiles
from fatpipe.backends.sim import SimBackend
from fatpipe.summary import summarize
from spec_text import plans_for

BUNDLED = ("ideal", "server-10g-2014", "dtn-100g", "kernel-vm", "kernel-vm-gro")
# The plan's cpu object field of each [hosts] key a profile may set.
CPU_FIELDS = {"cpu_cores": "cores", "app_threads": "app_threads", "rx_ring": "rx_ring_packets",
              **hostcpu.COST_FIELDS}

STUDY = """
version = 1
[study]
name = "host-profile"
backends = ["sim"]
duration = "{duration}"
warmup = "{warmup}"
[path]
rate = "{rate}"
rtt = "{rtt}"
mtu = {mtu}
buffer = "1bdp"
[hosts.default]
profile = "{profile}"
rmem_max = "256MiB"
wmem_max = "256MiB"
{hosts}
[[flows]]
cc = "cubic"
streams = {streams}
"""


def study(tmp_path, profile, *, rate="10Gbit", rtt="20ms", mtu=1500, streams=1, duration="2s",
          warmup="0.5s", hosts=""):
    return plans_for(STUDY.format(profile=profile, rate=rate, rtt=rtt, mtu=mtu, streams=streams,
                                  duration=duration, warmup=warmup, hosts=hosts), tmp_path)


def capacity_bps(profile: str) -> tuple[float, float]:
    """Payload bits per second one core of `profile` can send and receive
    of one bulk stream, from its per-byte costs alone (the profiles set no
    per-packet cost): 8 / cost per byte."""
    keys = hostprofiles.profile_keys(profile)
    assert not {"cost_send_packet", "cost_receive_packet", "cost_receive_unit"} & set(keys), (
        "a per-packet cost: the capacity needs the packet size too (docs/host-model.md, 'Profiles')")
    return 8 / keys["cost_send_byte"], 8 / keys["cost_receive_byte"]


def test_the_bundled_profiles_are_ideal_the_10g_server_the_100g_dtn_and_this_vm():
    assert hostprofiles.PROFILES == BUNDLED


@pytest.mark.parametrize("name", BUNDLED[1:])
def test_each_profile_has_a_source_for_every_key_a_kernel_and_the_cost_model(name):
    p = hostprofiles.profile(name)
    assert p.description and p.kernel
    assert set(p.sources) == set(p.keys)
    assert all(len(text) > 40 for text in p.sources.values()), p.sources
    assert p.keys["cpu_cores"] > 1 and p.keys["cost_send_byte"] > 0 and p.keys["cost_receive_byte"] > 0


def test_the_10g_server_is_linux_3_10_with_one_application_thread_and_ixgbes_ring():
    p = hostprofiles.profile("server-10g-2014")
    assert p.kernel == "3.10"
    assert hostprofiles.profile_keys("server-10g-2014") == {
        "cpu_cores": 12, "app_threads": 1, "nic_rate": pytest.approx(10e9), "rx_ring": 512, "gro": True,
        "cost_send_byte": pytest.approx(0.087e-9), "cost_receive_byte": pytest.approx(0.185e-9)}


def test_the_100g_dtn_runs_a_thread_per_stream_on_16_cores_with_mlx5s_ring():
    keys = hostprofiles.profile_keys("dtn-100g")
    assert "app_threads" not in keys  # one thread per stream, as iperf3 3.16 and later
    assert keys == {"cpu_cores": 16, "nic_rate": pytest.approx(90e9), "rx_ring": 1024, "gro": True,
                    "cost_send_byte": pytest.approx(0.090e-9), "cost_receive_byte": pytest.approx(0.190e-9)}


@pytest.mark.parametrize("name", BUNDLED[1:])
def test_a_study_naming_the_profile_carries_its_values_in_every_hosts_cpu_object(tmp_path, name):
    (plan,) = study(tmp_path, name)
    keys = hostprofiles.profile_keys(name)
    for host in (plan.receiver, *plan.senders.values()):
        cpu = host.cpu
        for key, value in keys.items():
            if key in CPU_FIELDS:
                assert getattr(cpu, CPU_FIELDS[key]) == pytest.approx(value), (name, key)
        assert cpu.app_threads == keys.get("app_threads")
        unset = set(hostcpu.COST_FIELDS) - set(keys)
        assert all(getattr(cpu, hostcpu.COST_FIELDS[k]) == 0.0 for k in unset)
    assert plan.receiver.gro is keys.get("gro", False)
    # The NIC ceiling is a sending host's (the receiver's is not modelled).
    assert plan.senders["s1"].nic_rate_bps == pytest.approx(keys.get("nic_rate"))
    assert plan.receiver.nic_rate_bps is None
    # A profile that names a machine puts every host on it.
    assert {h.cpu.machine for h in (plan.receiver, *plan.senders.values())} == {keys.get("machine")}


def test_the_profiles_capacities_per_core_are_those_the_docs_give():
    # docs/host-model.md, "Profiles": per-core capacity of one bulk stream.
    send, receive = capacity_bps("server-10g-2014")
    assert (round(send / 1e9, 1), round(receive / 1e9, 1)) == (92.0, 43.2)
    send, receive = capacity_bps("dtn-100g")
    assert (round(send / 1e9, 1), round(receive / 1e9, 1)) == (88.9, 42.1)


def aggregate_goodput_bps(plan, tmp_path) -> float:
    outcome = SimBackend().run(plan, tmp_path)
    return sum(r["goodput_bps"] for r in summarize(plan, outcome))


# A few % over the capacity for rounding: the costs are held in whole
# picoseconds per byte and whole nanoseconds per unit of work.
ROUNDING = 1.03


def test_eight_streams_in_one_thread_of_the_10g_server_get_one_receiving_core(tmp_path):
    # Past the NIC (its 10 Gbit/s lifted to the path's 100) the one
    # application thread at each end puts all 8 streams on one core; the
    # receiver's, at 43.2 Gbit/s, is the limit.
    (plan,) = study(tmp_path, "server-10g-2014", rate="100Gbit", rtt="2ms", mtu=9000, streams=8,
                    duration="1s", warmup="0.3s", hosts='nic_rate = "100Gbit/s"')
    assert plan.receiver.cpu.app_threads == 1
    _, receive = capacity_bps("server-10g-2014")
    got = aggregate_goodput_bps(plan, tmp_path)
    assert got <= receive * ROUNDING, f"{got / 1e9:.2f} Gbit/s above one core's {receive / 1e9:.2f}"
    assert got >= 0.8 * receive, f"{got / 1e9:.2f} Gbit/s: the core, not the path, should be the limit"


def test_one_stream_of_the_100g_dtn_gets_one_receiving_core(tmp_path):
    (plan,) = study(tmp_path, "dtn-100g", rate="100Gbit", rtt="2ms", mtu=9000, duration="1s", warmup="0.3s")
    _, receive = capacity_bps("dtn-100g")
    got = aggregate_goodput_bps(plan, tmp_path)
    assert got <= receive * ROUNDING, f"{got / 1e9:.2f} Gbit/s above one core's {receive / 1e9:.2f}"
    assert got >= 0.8 * receive, f"{got / 1e9:.2f} Gbit/s: the core, not the path, should be the limit"


def test_the_10g_servers_nic_caps_eight_streams_at_10_gbits(tmp_path):
    (plan,) = study(tmp_path, "server-10g-2014", rate="40Gbit", rtt="2ms", mtu=9000, streams=8,
                    duration="1s", warmup="0.3s")
    got = aggregate_goodput_bps(plan, tmp_path)
    assert 8e9 <= got <= 10e9, f"{got / 1e9:.2f} Gbit/s"


def test_four_streams_of_the_100g_dtn_run_on_four_cores_up_to_its_nic(tmp_path):
    # One thread per stream: four receiving cores carry 4 x 42 Gbit/s, more
    # than the host's 90 Gbit/s NIC ceiling, which is then the limit.
    (plan,) = study(tmp_path, "dtn-100g", rate="100Gbit", rtt="2ms", mtu=9000, streams=4,
                    duration="1s", warmup="0.3s")
    _, receive = capacity_bps("dtn-100g")
    got = aggregate_goodput_bps(plan, tmp_path)
    assert 1.5 * receive <= got <= 90e9, f"{got / 1e9:.2f} Gbit/s"
