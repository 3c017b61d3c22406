"""The host CPU and NIC keys of [hosts.<name>] (cpu_cores, app_threads,
machine, rx_ring, nic_rate, the cost_* keys and profile; docs/host-model.md,
"Keys"): validation naming key and range, the checks across hosts, profile
resolution (profile < hosts.default < the host's own), the profiles file,
sweeps, and the run plan's JSON the simulator reads. The simulator's side
of the model is tested in crates/sim."""

import json

import pytest

from fatpipe import hostcpu, hostprofiles
from fatpipe import spec as spec_mod
from fatpipe.backends.sim import plan_json
from spec_text import plans_for

STUDY = """
version = 1
[study]
name = "host-cpu"
backends = ["sim"]
duration = "2s"
[path]
rate = "1Gbit"
rtt = "10ms"
{hosts}
[[flows]]
cc = "cubic"
streams = 2
sender = "s1"
[[flows]]
cc = "reno"
sender = "s2"
{sweep}
"""

COST_KEYS = list(hostcpu.COST_FIELDS)
PER_BYTE = [k for k in COST_KEYS if k.endswith("_byte")]
PER_UNIT = [k for k in COST_KEYS if k not in PER_BYTE and k != "cost_rtx_walk"]
CPU_JSON_KEYS = {"cores", "app_threads", "machine", "rx_ring_packets", "send_packet_s", "send_byte_s",
                 "receive_packet_s", "receive_unit_s", "receive_byte_s", "ack_s", "sack_block_s", "timer_s",
                 "rtx_queue", "rtx_walk_s"}


def plans(tmp_path, hosts="", sweep=""):
    return plans_for(STUDY.format(hosts=hosts, sweep=sweep), tmp_path)


def problems(tmp_path, hosts="", sweep=""):
    with pytest.raises(spec_mod.SpecError) as e:
        plans(tmp_path, hosts, sweep)
    return "\n".join(f"{k}: {m}" for k, m in e.value.problems)


def plan_hosts(plan) -> dict:
    """The hosts of the plan's JSON, as the simulator reads them."""
    data = json.loads(plan_json(plan))
    return {**data["senders"], "receiver": data["receiver"]}


# ---- the run plan ---------------------------------------------------------------


def test_without_the_keys_every_host_is_ideal_in_the_plan(tmp_path):
    (plan,) = plans(tmp_path)
    for host in plan_hosts(plan).values():
        assert host["cpu"] is None and host["nic_rate_bps"] is None


def test_the_plan_json_carries_exactly_the_cpu_object(tmp_path):
    hosts = """
    [hosts.default]
    cpu_cores = 4
    cost_send_packet = "1.5us"
    cost_send_byte = "0.05ns"
    cost_receive_packet = "2us"
    cost_receive_unit = "0.8us"
    cost_receive_byte = "0.1ns"
    cost_ack = "1.2us"
    cost_sack_block = "300ns"
    cost_timer = "5us"
    [hosts.s1]
    app_threads = 1
    machine = "box-1"
    rx_ring = 512
    nic_rate = "40Gbit/s"
    """
    (plan,) = plans(tmp_path, hosts)
    json_hosts = plan_hosts(plan)
    s1 = json_hosts["s1"]
    assert set(s1["cpu"]) == CPU_JSON_KEYS
    assert s1["cpu"] == pytest.approx({
        "cores": 4, "app_threads": 1, "machine": "box-1", "rx_ring_packets": 512,
        "send_packet_s": 1.5e-6, "send_byte_s": 0.05e-9, "receive_packet_s": 2e-6, "receive_unit_s": 0.8e-6,
        "receive_byte_s": 0.1e-9, "ack_s": 1.2e-6, "sack_block_s": 300e-9, "timer_s": 5e-6,
        "rtx_queue": None, "rtx_walk_s": 0.0})
    assert s1["nic_rate_bps"] == pytest.approx(40e9)
    # hosts.default reaches every host; s1's own keys only s1. Unset: one
    # thread per stream, a machine of its own, the default ring.
    for name in ("s2", "receiver"):
        cpu = json_hosts[name]["cpu"]
        assert (cpu["cores"], cpu["app_threads"], cpu["machine"]) == (4, None, None)
        assert cpu["rx_ring_packets"] == hostcpu.DEFAULT_RX_RING_PACKETS
        assert cpu["ack_s"] == pytest.approx(1.2e-6) and json_hosts[name]["nic_rate_bps"] is None


def test_unset_costs_under_the_cost_model_are_zero(tmp_path):
    (plan,) = plans(tmp_path, "[hosts.s2]\ncpu_cores = 1\n")
    cpu = plan_hosts(plan)["s2"]["cpu"]
    assert {k: cpu[k] for k in CPU_JSON_KEYS if k.endswith("_s")} == dict.fromkeys(hostcpu.COST_FIELDS.values(), 0.0)
    assert plan.senders["s1"].cpu is None and plan.receiver.cpu is None


def test_nic_rate_needs_no_cost_model(tmp_path):
    (plan,) = plans(tmp_path, '[hosts.receiver]\nnic_rate = "400Mbit"\n')
    assert plan.receiver.nic_rate_bps == pytest.approx(400e6) and plan.receiver.cpu is None


# ---- each key's range -------------------------------------------------------------

UNIT_RANGE = "a cost per packet, unit, ACK, SACK block or timer is from 0 to 10 ms"
BYTE_RANGE = "a cost per byte is from 0 to 1 µs"
RANGE_ERRORS = [
    ("cpu_cores", "0", "got 0; cpu_cores is a whole number of cores from 1 to 1024"),
    ("cpu_cores", "1025", "got 1025; cpu_cores is a whole number of cores from 1 to 1024"),
    ("cpu_cores", "2.5", "got 2.5; cpu_cores is a whole number of cores from 1 to 1024"),
    ("cpu_cores", "true", "cpu_cores is a whole number of cores from 1 to 1024"),
    ("app_threads", "0", "got 0; app_threads is a whole number of threads from 1 to 10000"),
    ("app_threads", "10001", "got 10001; app_threads is a whole number of threads from 1 to 10000"),
    ("rx_ring", "15", "got 15; rx_ring is a whole number of packets from 16 to 65536"),
    ("rx_ring", "65537", "got 65537; rx_ring is a whole number of packets from 16 to 65536"),
    ("machine", '"two words"', "got 'two words'; machine is a name of 1 to 32 letters, digits, '_' or '-'"),
    ("machine", f'"{"m" * 33}"', "machine is a name of 1 to 32 letters, digits, '_' or '-'"),
    ("machine", "3", "got a number; machine is a name of 1 to 32 letters"),
    ("nic_rate", '"20Tbit"', "is above the maximum of 1e+13 bit/s; nic_rate is a rate from 1 kbit/s to 10 Tbit/s"),
    ("nic_rate", '"10bit"', "is below the minimum of 1000 bit/s; nic_rate is a rate from 1 kbit/s to 10 Tbit/s"),
    ("nic_rate", '"fast"', "cannot read 'fast' as a rate"),
    *[(key, '"11ms"', f"0.011 s is above the maximum of 0.01 s; {UNIT_RANGE}") for key in PER_UNIT],
    *[(key, '-1e-6', f"-1e-06 s is below the minimum of 0 s; {UNIT_RANGE}") for key in PER_UNIT],
    *[(key, '"2us"', f"2e-06 s is above the maximum of 1e-06 s; {BYTE_RANGE}") for key in PER_BYTE],
    *[(key, '-1e-10', f"-1e-10 s is below the minimum of 0 s; {BYTE_RANGE}") for key in PER_BYTE],
    ("cost_ack", '"slow"', "cannot read 'slow' as a time"),
    ("cost_rtx_walk", '"2us"', "2e-06 s is above the maximum of 1e-06 s; a cost per segment walked is from 0 to 1 µs"),
    ("rtx_queue", '"skiplist"', "rtx_queue"),
]


@pytest.mark.parametrize("key, value, message", RANGE_ERRORS, ids=lambda x: str(x)[:30])
def test_a_value_out_of_range_is_refused_naming_the_key_and_the_range(tmp_path, key, value, message):
    cores = "" if key == "cpu_cores" else "cpu_cores = 2\n"
    found = problems(tmp_path, f"[hosts.s1]\n{cores}{key} = {value}\n")
    assert f"hosts.s1.{key}: " in found and message in found, found


@pytest.mark.parametrize("key, value", [("cpu_cores", 1024), ("app_threads", 10000), ("rx_ring", 16),
                                        ("rx_ring", 65536), ("cost_timer", '"10ms"'), ("cost_send_byte", '"1us"'),
                                        ("cost_ack", 0), ("cost_receive_byte", '"0.05ns"')])
def test_the_edges_of_each_range_are_allowed(tmp_path, key, value):
    cores = "" if key == "cpu_cores" else "cpu_cores = 2\n"
    plans(tmp_path, f"[hosts.s1]\n{cores}{key} = {value}\n")


# ---- keys that need the cost model ----------------------------------------------------


@pytest.mark.parametrize("key, value", [*[(k, '"1us"') for k in COST_KEYS], ("app_threads", "1"),
                                        ("machine", '"box"'), ("rx_ring", "256")])
def test_a_cost_model_key_without_cpu_cores_is_refused_naming_it(tmp_path, key, value):
    found = problems(tmp_path, f"[hosts.s2]\n{key} = {value}\n")
    assert found.startswith(f"hosts.s2.{key}: ") and "needs hosts.s2.cpu_cores" in found
    assert "or a profile that gives it" in found


def test_a_cost_key_in_hosts_default_names_every_host_without_cores(tmp_path):
    found = problems(tmp_path, '[hosts.default]\ncost_ack = "1us"\n[hosts.s1]\ncpu_cores = 2\n')
    assert found.startswith("hosts.default.cost_ack: ")
    assert "needs hosts.s2.cpu_cores and hosts.receiver.cpu_cores (or hosts.default.cpu_cores)" in found
    assert "hosts.s1.cpu_cores" not in found


def test_cpu_cores_in_hosts_default_turns_the_model_on_for_a_hosts_own_cost_key(tmp_path):
    (plan,) = plans(tmp_path, '[hosts.default]\ncpu_cores = 8\n[hosts.s2]\ncost_ack = "1us"\n')
    assert plan.senders["s2"].cpu.ack_s == pytest.approx(1e-6) and plan.senders["s1"].cpu.ack_s == 0.0


def test_hosts_sharing_a_machine_must_agree_on_cpu_cores(tmp_path):
    hosts = '[hosts.s1]\ncpu_cores = 2\nmachine = "box"\n[hosts.s2]\ncpu_cores = 4\nmachine = "box"\n'
    found = problems(tmp_path, hosts)
    assert found == ("hosts.s2.cpu_cores: hosts s1 and s2 share machine 'box' but have cpu_cores 2 and 4; "
                     "hosts of one machine share its cores: give them the same cpu_cores")


def test_hosts_sharing_a_machine_with_the_same_cores_are_accepted(tmp_path):
    (plan,) = plans(tmp_path, '[hosts.default]\ncpu_cores = 2\nmachine = "vm"\n')
    assert {h.cpu.machine for h in (plan.receiver, *plan.senders.values())} == {"vm"}


# ---- profiles ------------------------------------------------------------------------

BOX = """
[box]
description = "A test host"
kernel = "6.1"
cpu_cores = 8
app_threads = 4
cost_ack = "2us"
nic_rate = "10Gbit"
[box.sources]
cpu_cores = "a test"
app_threads = "a test"
cost_ack = "a test"
nic_rate = "a test"
"""


@pytest.fixture
def box_profile(monkeypatch):
    """The bundled profiles plus `box` (BOX)."""
    profiles = {**{n: hostprofiles.profile(n) for n in hostprofiles.PROFILES}, **hostprofiles.load(BOX, "test")}
    monkeypatch.setattr(hostprofiles, "_PROFILES", profiles)
    monkeypatch.setattr(hostprofiles, "PROFILES", tuple(profiles))
    return profiles["box"]


def test_a_profile_gives_its_keys_with_description_kernel_and_sources(box_profile):
    assert box_profile.description == "A test host" and box_profile.kernel == "6.1"
    assert hostprofiles.profile_keys("box") == {"cpu_cores": 8, "app_threads": 4, "cost_ack": pytest.approx(2e-6),
                                                "nic_rate": pytest.approx(10e9)}
    assert set(box_profile.sources) == set(box_profile.keys)


@pytest.mark.usefixtures("box_profile")
def test_a_hosts_profile_applies_to_that_host_only(tmp_path):
    (plan,) = plans(tmp_path, '[hosts.s1]\nprofile = "box"\n')
    s1 = plan.senders["s1"]
    assert (s1.cpu.cores, s1.cpu.app_threads, s1.cpu.ack_s, s1.nic_rate_bps) == (8, 4, pytest.approx(2e-6), 10e9)
    assert plan.senders["s2"].cpu is None and plan.receiver.cpu is None


@pytest.mark.usefixtures("box_profile")
def test_profile_keys_are_under_hosts_default_keys_under_the_hosts_own(tmp_path):
    hosts = ('[hosts.default]\nprofile = "box"\ncpu_cores = 4\n'
             '[hosts.s1]\ncpu_cores = 6\ncost_ack = "3us"\n')
    (plan,) = plans(tmp_path, hosts)
    s1, s2, receiver = plan.senders["s1"], plan.senders["s2"], plan.receiver
    assert (s1.cpu.cores, s1.cpu.ack_s, s1.cpu.app_threads) == (6, pytest.approx(3e-6), 4)
    assert (s2.cpu.cores, s2.cpu.ack_s, s2.cpu.app_threads) == (4, pytest.approx(2e-6), 4)
    assert (receiver.cpu.cores, s1.nic_rate_bps, s2.nic_rate_bps) == (4, 10e9, 10e9)
    # A NIC ceiling is a sending host's: hosts.default's profile gives the
    # receiver none (only hosts.receiver.nic_rate would).
    assert receiver.nic_rate_bps is None


@pytest.mark.usefixtures("box_profile")
def test_a_hosts_own_profile_wins_over_hosts_defaults(tmp_path):
    (plan,) = plans(tmp_path, '[hosts.default]\nprofile = "box"\n[hosts.s2]\nprofile = "ideal"\n')
    assert plan.senders["s2"].cpu is None and plan.senders["s2"].nic_rate_bps is None
    assert plan.senders["s1"].cpu.cores == plan.receiver.cpu.cores == 8


@pytest.mark.usefixtures("box_profile")
def test_a_profile_with_cpu_cores_turns_the_model_on_for_a_cost_key(tmp_path):
    (plan,) = plans(tmp_path, '[hosts.s2]\nprofile = "box"\ncost_timer = "4us"\n')
    assert plan.senders["s2"].cpu.timer_s == pytest.approx(4e-6)


def test_the_ideal_profile_is_todays_ideal_host(tmp_path):
    assert hostprofiles.PROFILES[0] == "ideal" and hostprofiles.profile_keys("ideal") == {}
    assert "ideal host" in hostprofiles.profile("ideal").description
    (plain,) = plans(tmp_path)
    (ideal,) = plans(tmp_path, '[hosts.default]\nprofile = "ideal"\n')
    assert plan_hosts(ideal) == plan_hosts(plain)


@pytest.mark.usefixtures("box_profile")
def test_an_unknown_profile_is_refused_listing_the_known_ones(tmp_path):
    found = problems(tmp_path, '[hosts.s1]\nprofile = "fast"\n')
    known = ", ".join(hostprofiles.PROFILES)
    assert known.startswith("ideal, ") and known.endswith(", box")
    assert found == f"hosts.s1.profile: got 'fast'; the host profiles are {known} (docs/host-model.md)"


def write_profiles(tmp_path, text):
    p = tmp_path / "profiles.toml"
    p.write_text(text)
    return p


def profile_problems(tmp_path, text) -> str:
    p = write_profiles(tmp_path, text)
    with pytest.raises(hostprofiles.ProfileError) as e:
        hostprofiles.load(p.read_text(), str(p))
    assert str(e.value).startswith(f"invalid host profiles {p}:")
    return "\n".join(f"{k}: {m}" for k, m in e.value.problems)


def test_a_profile_key_without_a_source_is_refused(tmp_path):
    found = profile_problems(tmp_path, BOX.replace('cost_ack = "a test"\n', ""))
    assert found == "box.cost_ack: has no source: add box.sources.cost_ack (a measurement, a paper, a vendor note)"


@pytest.mark.parametrize("change, message", [
    (lambda t: t.replace('[box.sources]\n', '[box.sources]\nrx_ring = "a test"\n'),
     "box.sources.rx_ring: names no key this profile sets"),
    (lambda t: t.replace("cpu_cores = 8\n", "").replace('cpu_cores = "a test"\n', ""),
     "box.app_threads: app_threads applies to the CPU cost model, which is on only with cpu_cores: a profile "
     "that sets it sets cpu_cores too"),
    (lambda t: t.replace("cpu_cores = 8", "cpu_cores = 0"), "box.cpu_cores: got 0; cpu_cores is a whole number"),
    (lambda t: t.replace('description = "A test host"\n', ""), "box.description: Field required"),
    (lambda t: t.replace("cpu_cores = 8", 'profile = "ideal"'), "box.profile: a profile cannot name another profile"),
    (lambda t: t.replace("cpu_cores = 8", "colour = 8"), "box.colour: unknown key"),
])
def test_a_bad_profile_is_refused_naming_profile_and_key(tmp_path, change, message):
    assert message in profile_problems(tmp_path, change(BOX))


def test_the_bundled_profiles_load_and_every_key_has_a_source():
    for name in hostprofiles.PROFILES:
        p = hostprofiles.profile(name)
        assert p.description and set(p.sources) == set(p.keys)


# ---- sweeps ---------------------------------------------------------------------


def test_sweeping_cpu_cores_gives_different_plans(tmp_path):
    swept = plans(tmp_path, sweep='[sweep]\n"hosts.default.cpu_cores" = [1, 4]\n')
    assert [p.receiver.cpu.cores for p in swept] == [1, 4]
    assert plan_json(swept[0]) != plan_json(swept[1])


@pytest.mark.parametrize("key, values, read", [
    ("hosts.s1.cost_send_byte", '["0.1ns", "0.2ns"]', lambda p: p.senders["s1"].cpu.send_byte_s),
    ("hosts.s1.app_threads", "[1, 2]", lambda p: p.senders["s1"].cpu.app_threads),
    ("hosts.s1.rx_ring", "[64, 4096]", lambda p: p.senders["s1"].cpu.rx_ring_packets),
    ("hosts.receiver.nic_rate", '["1Gbit", "2Gbit"]', lambda p: p.receiver.nic_rate_bps),
])
def test_the_cpu_keys_can_be_swept(tmp_path, key, values, read):
    hosts = "[hosts.default]\ncpu_cores = 2\n"
    a, b = plans(tmp_path, hosts, f'[sweep]\n"{key}" = {values}\n')
    assert read(a) != read(b)


@pytest.mark.usefixtures("box_profile")
def test_sweeping_the_profile_applies_each(tmp_path):
    ideal, box = plans(tmp_path, sweep='[sweep]\n"hosts.s1.profile" = ["ideal", "box"]\n')
    assert ideal.senders["s1"].cpu is None and box.senders["s1"].cpu.cores == 8


def test_a_swept_value_out_of_range_is_refused_naming_the_point(tmp_path):
    found = problems(tmp_path, "[hosts.default]\ncpu_cores = 2\n", '[sweep]\n"hosts.s1.rx_ring" = [64, 8]\n')
    assert 'sweep."hosts.s1.rx_ring"[1] (hosts.s1.rx_ring): got 8; rx_ring is a whole number of packets' in found


def test_a_swept_cost_key_without_cpu_cores_is_refused(tmp_path):
    found = problems(tmp_path, sweep='[sweep]\n"hosts.s1.cost_ack" = ["1us"]\n')
    assert "hosts.s1.cost_ack" in found and "needs hosts.s1.cpu_cores" in found


def test_machine_is_not_sweepable(tmp_path):
    found = problems(tmp_path, "[hosts.default]\ncpu_cores = 2\n", '[sweep]\n"hosts.s1.machine" = ["a", "b"]\n')
    assert "this key cannot be swept" in found
