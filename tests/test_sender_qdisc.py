"""hosts.<name>.qdisc on the Linux backends (pure): what a sender gets for
each asked qdisc and probe answer, the tc arguments, SO_MAX_PACING_RATE of
the engine's sockets (with and without a per-stream cap), the engine
configs, and the read-back of tcpi_max_pacing_rate."""

from __future__ import annotations

import dataclasses
import struct
import typing

import pytest

from fatpipe import spec
from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.linuxpath import readback, sampling
from fatpipe.linuxpath.flows import flow_specs, sender_config, server_config
from fatpipe.linuxpath.qdisc import HOST_QDISC_PACES, probe_args, root_qdisc_args, sender_qdisc


@pytest.mark.parametrize(("asked", "in_kernel", "tc_kind", "internal_pacing", "applied"), [
    ("fq", True, "fq", False, "fq"),
    ("fq", False, None, True, "internal pacing (no sch_fq in this kernel)"),
    ("fq", None, None, True, "internal pacing (the host's root qdisc is left as it is)"),
    ("fq_codel", True, "fq_codel", False, "fq_codel"),
    ("fq_codel", False, None, False,
     "none (no sch_fq_codel in this kernel; fq_codel paces no flow, nor does the default)"),
    ("fq_codel", None, None, False,
     "none (the host's root qdisc is left as it is; fq_codel paces no flow, nor does the default)"),
    ("pfifo_fast", True, "pfifo_fast", False, "pfifo_fast"),
    ("pfifo_fast", False, None, False,
     "none (no sch_pfifo_fast in this kernel; pfifo_fast paces no flow, nor does the default)"),
])
def test_what_a_sender_gets_for_each_asked_qdisc_and_probe(asked, in_kernel, tc_kind, internal_pacing, applied):
    got = sender_qdisc(asked, in_kernel)
    assert (got.tc_kind, got.internal_pacing, got.applied) == (tc_kind, internal_pacing, applied)
    assert got.facts() == {"asked": asked, "applied": applied}


def test_the_qdiscs_are_the_specs_and_an_unknown_one_is_refused():
    assert set(HOST_QDISC_PACES) == set(typing.get_args(spec.HostSection.model_fields["qdisc"].annotation)[0].__args__)
    with pytest.raises(ValueError, match="qdisc 'cake': allowed are fq, fq_codel, pfifo_fast"):
        sender_qdisc("cake", True)


def test_tc_arguments_of_a_sender_root_qdisc_and_its_probe():
    assert root_qdisc_args("eth0", "fq") == ["tc", "qdisc", "replace", "dev", "eth0", "root", "fq"]
    assert probe_args("pfifo_fast", "eth0") == ["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "9:",
                                                "pfifo_fast"]


def test_max_pacing_rate_paces_uncapped_and_keeps_a_cap():
    assert sampling.max_pacing_rate_bytes_per_s({}) is None
    assert sampling.max_pacing_rate_bytes_per_s({"internal_pacing": False, "stream_rate_cap_bps": None}) is None
    # Paced, not capped: far above any path rate, and neither 32-bit half ~0U.
    uncapped = sampling.max_pacing_rate_bytes_per_s({"internal_pacing": True})
    assert uncapped == sampling.UNCAPPED_PACING_BYTES_PER_S and uncapped * 8 > 1e18
    assert 0xFFFFFFFF not in struct.unpack("=II", struct.pack("=Q", uncapped))
    # A cap paces the socket too (any value but ~0): the cap is the max rate.
    assert sampling.max_pacing_rate_bytes_per_s({"stream_rate_cap_bps": 8e9}) == 10**9
    assert sampling.max_pacing_rate_bytes_per_s({"stream_rate_cap_bps": 8e9, "internal_pacing": True}) == 10**9


class _Socket:
    def __init__(self):
        self.options = []

    def setsockopt(self, level, name, value):
        self.options.append((level, name, value))


def test_apply_pacing_sets_so_max_pacing_rate_as_an_int_or_64_bits():
    import socket
    s = _Socket()
    sampling.apply_pacing(s, {})
    assert s.options == []
    sampling.apply_pacing(s, {"stream_rate_cap_bps": 8e9})
    sampling.apply_pacing(s, {"internal_pacing": True})
    assert s.options == [(socket.SOL_SOCKET, sampling.SO_MAX_PACING_RATE, 10**9),
                         (socket.SOL_SOCKET, sampling.SO_MAX_PACING_RATE,
                          struct.pack("=Q", sampling.UNCAPPED_PACING_BYTES_PER_S))]


def _plan(qdisc: str | None) -> RunPlan:
    host = HostLimits(rmem_max_bytes=1 << 20, wmem_max_bytes=1 << 20, qdisc=qdisc)
    flows = (FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="a"),
             FlowPlan(group=1, kind="rpc", cc="cubic", streams=1, mss_bytes=1448, sender="b", request_bytes=100,
                      response_bytes=1000, concurrency=1))
    return RunPlan(run_id="r", backend="kernel", rep=0, seed=1, duration_s=1.0, warmup_s=0.0, sample_interval_s=0.1,
                   rate_bps=1e9, rtt_s=0.02, loss=0.0, corruption=0.0, buffer_bytes=1 << 20, mtu_bytes=1500,
                   senders={"a": host, "b": dataclasses.replace(host, qdisc=None)}, receiver=host, flows=flows)


def test_the_engine_configs_carry_internal_pacing_for_the_paced_senders_only():
    bulk, rpc = flow_specs(_plan("fq"), frozenset({"a"}))
    assert (bulk.internal_pacing, rpc.internal_pacing) == (True, False)
    assert sender_config(bulk, "10.0.0.1", 0.0, 1.0, 0.1, "x")["internal_pacing"] is True
    assert server_config(rpc, "10.0.0.2", 0.0, 1.0, 0.1, "y")["internal_pacing"] is False
    assert not any(f.internal_pacing for f in flow_specs(_plan("fq")))


def test_read_back_max_pacing_rate_is_none_when_unset():
    assert readback.max_pacing_rate_bps({"max_pacing_rate_Bps": readback.UNSET_MAX_PACING_RATE}) is None
    assert readback.max_pacing_rate_bps({"max_pacing_rate_Bps": 125_000_000}) == 1e9
    assert readback.max_pacing_rate_bps({}) is None  # a kernel whose tcp_info ends before it
