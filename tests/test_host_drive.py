"""What one core of a host drives for one bulk stream (hostcpu.core_drive)
and what the host drives in total (hostcpu.host_drive_bps), against
figures computed by hand (docs/host-model.md, "What one core drives")."""

import math

import pytest

from fatpipe import hostcpu

# Costs chosen so that each term is 0.1 ns per payload byte at MSS 1448
# (MTU 1500): a 64 KiB TSO packet holds 45 segments (65160 bytes), an ACK
# without GRO covers 2 segments (2896 bytes), a GRO unit 45 segments.
HOST = {
    "cpu_cores": 4,
    "cost_send_byte": 0.1e-9,
    "cost_send_packet": 6.516e-6,     # / 65160 bytes = 0.1 ns a byte
    "cost_ack": 0.2896e-6,            # / 2896 bytes = 0.1 ns a byte
    "cost_sack_block": 0.2896e-6,     # one block per ACK: 0.1 ns a byte more
    "cost_receive_byte": 0.1e-9,
    "cost_receive_packet": 0.1448e-6,  # / 1448 bytes = 0.1 ns a byte
    "cost_receive_unit": 0.1448e-6,   # one packet a unit without GRO: 0.1 ns a byte
}


def test_packet_sizes_follow_tso_autosize_and_gro_limits():
    assert hostcpu.tso_packet_bytes(1448) == 45 * 1448
    assert hostcpu.tso_packet_bytes(1448, tso=False) == 1448
    assert hostcpu.tso_packet_bytes(8948) == 7 * 8948
    # The simulator's gro_max_segs (crates/sim/src/tcp/receiver/gro.rs): 45 at MTU 1500, 7 at 9000.
    assert hostcpu.gro_unit_segments(1448, 1500) == 45
    assert hostcpu.gro_unit_segments(8948, 9000) == 7
    assert hostcpu.gro_unit_segments(100, 152) == hostcpu.NAPI_POLL_WEIGHT


def test_one_core_sends_and_receives_at_eight_bits_over_its_time_per_byte():
    d = hostcpu.core_drive(HOST, 1448, 1500)
    # Sending: 0.1 (copy) + 0.1 (TSO packet) + 0.1 (ACK every 2 segments) = 0.3 ns a byte.
    assert d.send_bps == pytest.approx(8 / 0.3e-9)
    # Receiving: 0.1 (copy) + 0.1 (per packet) + 0.1 (per unit = per packet) = 0.3 ns a byte.
    assert d.receive_bps == pytest.approx(8 / 0.3e-9)
    assert d.bps == pytest.approx(26.667e9, rel=1e-4)


def test_sack_work_under_loss_slows_the_sender():
    d = hostcpu.core_drive(HOST, 1448, 1500, sack_blocks=1.0)
    assert d.send_bps == pytest.approx(8 / 0.4e-9)  # 20 Gbit/s
    assert d.bps == d.send_bps
    # Holes a round trip opens, at most 3 blocks an ACK.
    assert hostcpu.sack_blocks_per_ack(1e-4, 5000) == pytest.approx(0.5)
    assert hostcpu.sack_blocks_per_ack(1e-4, 600_000) == hostcpu.MAX_SACK_BLOCKS
    assert hostcpu.sack_blocks_per_ack(0.0, 600_000) == 0.0


def test_gro_at_the_receiver_spreads_the_ack_and_unit_costs_over_a_super_packet():
    d = hostcpu.core_drive(HOST, 1448, 1500, gro=True)
    unit = 45 * 1448
    assert d.send_bps == pytest.approx(8 / (0.2e-9 + 0.2896e-6 / unit))
    assert d.receive_bps == pytest.approx(8 / (0.2e-9 + 0.1448e-6 / unit))
    # The host's own gro key is the default.
    assert hostcpu.core_drive({**HOST, "gro": True}, 1448, 1500) == d
    # Without TSO every segment is a packet: 6.516 µs / 1448 = 4.5 ns a byte.
    assert hostcpu.core_drive(HOST, 1448, 1500, tso=False).send_bps == pytest.approx(8 / 4.7e-9)


def test_a_host_without_a_cost_model_is_unlimited():
    assert hostcpu.core_drive({}, 1448, 1500) == hostcpu.CoreDrive(None, None)
    assert hostcpu.core_drive({}, 1448, 1500).bps is None
    assert hostcpu.host_drive_bps({}, None, 1448, 1500) is None
    # A cost model that charges nothing on one side: that side is unlimited.
    d = hostcpu.core_drive({"cpu_cores": 2, "cost_receive_byte": 1e-9}, 1448, 1500)
    assert math.isinf(d.send_bps) and d.bps == pytest.approx(8e9)


def test_the_host_drives_its_cores_times_one_core_below_its_nic():
    per_core = hostcpu.core_drive(HOST, 1448, 1500).bps
    assert hostcpu.host_drive_bps(HOST, per_core, 1448, 1500) == pytest.approx(4 * per_core)
    assert hostcpu.host_drive_bps(HOST, per_core, 1448, 1500, streams=2) == pytest.approx(2 * per_core)
    assert hostcpu.host_drive_bps(HOST, per_core, 1448, 1500, streams=16) == pytest.approx(4 * per_core)
    # One application thread: one core for every stream (iperf3 before 3.16).
    one = {**HOST, "app_threads": 1}
    assert hostcpu.host_drive_bps(one, per_core, 1448, 1500, streams=16) == pytest.approx(per_core)
    # The NIC's 100 Gbit/s of frames carry 1448/1514 of it as payload.
    nic = {**HOST, "nic_rate": 100e9}
    assert hostcpu.host_drive_bps(nic, per_core, 1448, 1500) == pytest.approx(100e9 * 1448 / 1514)
    assert hostcpu.host_drive_bps({"nic_rate": 10e9}, None, 1448, 1500) == pytest.approx(10e9 * 1448 / 1514)
    assert hostcpu.cores_for(HOST, 3) == 3 and hostcpu.cores_for({}, 3) is None
