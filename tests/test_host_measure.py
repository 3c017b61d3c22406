"""What the Linux backends measure on their hosts, on canned text (no root):
per-core CPU from /proc/stat deltas and the `cpu_bound` rule; per stream the
CCA, MSS and ECN read back from the engine's samples, the check that fails a
run whose socket runs another CCA; interfaces' offloads from ethtool -k."""

import base64
import dataclasses
import json
import struct

import pandas as pd
import pytest

from fake_backend import FakeBackend
from fatpipe import schema
from fatpipe.backends.base import FlowPlan, HostLimits, RunPlan
from fatpipe.linuxpath import procstat, readback, sampling, tcpinfo
from fatpipe.runcompute import outcome_result
from fatpipe.summary import summarize

# Two readings of a 2-core machine, 10 fields as Linux >= 2.6.33 prints
# them (user nice system idle iowait irq softirq steal guest guest_nice).
BEFORE = """cpu  704639 334085 149836 1026476 2609 0 42420 653 0 0
cpu0 334464 154407 73027 545899 634 0 20893 318 0 0
cpu1 370174 179677 76808 480576 1974 0 21527 334 0 0
intr 40859974 0 0 0
ctxt 84308228
"""
# Over the interval cpu0 accounts 1000 ticks: user 500, nice 100, system
# 150, idle 20, iowait 10, irq 10, softirq 200, steal 10 -> busy 970;
# cpu1 accounts 1000: user 100, idle 800, softirq 100 -> busy 200. guest
# (+50 on cpu0) is inside user already and must not count twice.
AFTER = """cpu  705239 334185 149986 1027296 2619 10 42720 663 50 0
cpu0 334964 154507 73177 545919 644 10 21093 328 50 0
cpu1 370274 179677 76808 481376 1974 0 21627 334 0 0
intr 40869974 0 0 0
"""


def test_per_core_fractions_are_each_states_share_of_the_ticks_the_core_accounted():
    cores = procstat.core_fractions(BEFORE, AFTER)
    assert list(cores) == ["cpu0", "cpu1"]  # the all-core "cpu" line is not a core
    assert cores["cpu0"]["busy_frac"] == pytest.approx(0.97)
    assert cores["cpu0"]["softirq_frac"] == pytest.approx(0.2)
    assert cores["cpu0"]["idle_frac"] + cores["cpu0"]["iowait_frac"] == pytest.approx(0.03)
    assert cores["cpu1"]["busy_frac"] == pytest.approx(0.2)
    assert cores["cpu1"]["softirq_frac"] == pytest.approx(0.1)
    for f in cores.values():
        assert sum(f[f"{s}_frac"] for s in procstat.STATES) == pytest.approx(1.0)


def test_a_machine_reports_its_busiest_core_and_the_saturated_ones():
    host = procstat.host_cpu(BEFORE, AFTER)
    assert host["busy_max_core_frac"] == pytest.approx(0.97)
    assert host["softirq_max_core_frac"] == pytest.approx(0.2)
    assert host["saturated_cores"] == ["cpu0"]
    assert host["cores"]["cpu1"]["busy_frac"] == 0.2


def test_an_old_kernels_four_counters_read_as_user_nice_system_idle():
    before = "cpu0 10 0 10 80\n"
    after = "cpu0 60 0 60 80\n"
    assert procstat.core_fractions(before, after)["cpu0"]["busy_frac"] == 1.0


@pytest.mark.parametrize("before, after, message", [
    ("cpu0 10 0 10 80\n", "cpu0 5 0 10 80\n", "cpu0's user time went back"),
    ("cpu0 10 0 10 80\ncpu1 1 1 1 1\n", "cpu0 10 0 10 90\n", "cores differ"),
    ("cpu0 10 x 10 80\n", "cpu0 10 0 10 80\n", "does not hold tick counts"),
    ("intr 1 2 3\n", "intr 1 2 3\n", "no per-core"),
    ("cpu0 10 0 10 80\n", "cpu0 10 0 10 80\n", "no core accounted any time"),
])
def test_readings_that_cannot_be_compared_are_refused_saying_why(before, after, message):
    with pytest.raises(ValueError, match=message):
        procstat.host_cpu(before, after)


def test_a_core_is_saturated_from_the_threshold_up_and_unknown_is_not():
    assert schema.cpu_saturated(schema.CPU_SATURATED_FRAC)
    assert not schema.cpu_saturated(schema.CPU_SATURATED_FRAC - 1e-6)
    assert not schema.cpu_saturated(None)


def test_the_runs_figures_come_from_the_end_hosts_machines_only():
    hosts = {"tx": procstat.host_cpu(BEFORE, AFTER),
             "rx": procstat.host_cpu("cpu0 0 0 0 100\n", "cpu0 30 0 10 160\n")}
    assert procstat.cpu_report(hosts, ["rx"]) == schema.CpuReport(0.4, 0.0)
    assert procstat.cpu_report(hosts, ["rx", "tx"]).busy_max_core_frac == pytest.approx(0.97)
    assert procstat.cpu_report(hosts, ["emulator-only"]) == schema.CpuReport()


def _plan() -> RunPlan:
    host = HostLimits(rmem_max_bytes=16 << 20, wmem_max_bytes=16 << 20)
    flow = FlowPlan(group=0, kind="bulk", cc="cubic", streams=1, mss_bytes=1448, sender="s1")
    return RunPlan(run_id="r", backend="fake", rep=0, seed=1, duration_s=4.0, warmup_s=1.0, sample_interval_s=0.5,
                   rate_bps=10e6, rtt_s=0.02, loss=0.0, corruption=0.0, buffer_bytes=250000, mtu_bytes=1500,
                   senders={"s1": host}, receiver=host, flows=(flow,))


@pytest.mark.parametrize("busy, flagged", [(0.97, True), (0.95, True), (0.94, False), (None, False)])
def test_a_run_whose_end_host_core_was_saturated_is_flagged_cpu_bound(busy, flagged):
    plan = _plan()
    outcome = dataclasses.replace(FakeBackend().run(plan, None), cpu=schema.CpuReport(busy, 0.1))
    [row] = summarize(plan, outcome)
    assert ("cpu_bound" in row["flags"].split(",")) == flagged, f"busiest core {busy}: flags {row['flags']!r}"


def test_runs_rows_carry_the_cpu_columns_and_none_where_nothing_measured_them():
    plan = _plan()
    unmeasured = outcome_result(plan, FakeBackend().run(plan, None), 1.0)
    assert {c: unmeasured.rows[0][c] for c in schema.CPU_COLUMNS} == dict.fromkeys(schema.CPU_COLUMNS)
    measured = dataclasses.replace(FakeBackend().run(plan, None), cpu=schema.CpuReport(0.5, 0.25))
    row = outcome_result(plan, measured, 1.0).rows[0]
    assert (row["cpu_busy_max_core_frac"], row["cpu_softirq_max_core_frac"]) == (0.5, 0.25)


def test_a_runs_table_written_before_the_cpu_columns_reads_them_as_unknown_before_flags():
    old = pd.DataFrame({"run_id": ["r"], "path_queue_drops": [0], "path_host_drops": [0], "flags": [""],
                        "wall_s": [1.0]})
    got = schema.upgrade_runs(old)
    assert list(got.columns) == ["run_id", "path_queue_drops", "path_ce_marks", "path_host_drops",
                                 *schema.CPU_COLUMNS, "flags", "wall_s"]
    assert got[list(schema.CPU_COLUMNS)].isna().all().all()


# ---- read-back per stream -------------------------------------------------------------


def _tcp_info(snd_mss: int, options: int = 0, max_pacing_rate_Bps: int = readback.UNSET_MAX_PACING_RATE,
              wscale: int = 0) -> bytes:
    """A struct tcp_info of tcpinfo.MIN_BYTES with these fields set (the max
    pacing rate unset unless given, as Linux reports it), the rest 0."""
    values = {"snd_mss": snd_mss, "options": options, "max_pacing_rate_Bps": max_pacing_rate_Bps, "wscale": wscale}
    return _packed_tcp_info(values, tcpinfo.MIN_BYTES)


def _packed_tcp_info(values: dict[str, int], limit_bytes: int | None = None) -> bytes:
    """The fields of the layout the parser reads (tcpinfo._FIELDS) that fit
    in `limit_bytes` (all without), `values` set, the rest 0."""
    fmt = "<"
    args = []
    for name, code in tcpinfo._FIELDS:
        if limit_bytes is not None and struct.calcsize(fmt + code) > limit_bytes:
            break
        fmt += code
        args.append(values.get(name, 0))
    return struct.pack(fmt, *args)


def _sample(stream: int, cc: str, snd_mss: int = 1448, options: int = 0, t_s: float = 0.1,
            max_pacing_rate_Bps: int = readback.UNSET_MAX_PACING_RATE, wscale: int = 0) -> str:
    info = _tcp_info(snd_mss, options, max_pacing_rate_Bps, wscale)
    return json.dumps({"t_s": t_s, "stream": stream, "cc": cc, "cc_info": "",
                       "tcp_info": base64.b64encode(info).decode()})


def test_each_stream_reads_back_its_ccas_mss_and_ecn_from_its_samples():
    text = "\n".join([_sample(1, "cubic", 1448), _sample(0, "cubic", 1436),
                      _sample(0, "cubic", 1448, tcpinfo.TCPI_OPT_ECN, 0.2),
                      _sample(1, "reno", 1448, t_s=0.2, max_pacing_rate_Bps=125_000_000), ""])
    got = readback.streams_read_back(text, 3)
    assert got == [readback.StreamReadback(3, 0, ("cubic",), 1448, True, None),
                   readback.StreamReadback(3, 1, ("cubic", "reno"), 1448, False, 1e9)]
    assert got[1].facts() == {"flow_group": 3, "stream": 1, "ccas": ["cubic", "reno"], "snd_mss_bytes": 1448,
                              "ecn": False, "max_pacing_rate_bps": 1e9, "sack": False, "timestamps": False,
                              "snd_wscale": 0, "total_retrans": 0, "dsack_dups": None}


def test_a_stream_reads_back_its_retransmissions_and_the_dsacked_ones_where_the_kernel_reports_them():
    # A whole struct tcp_info (Linux >= 5.4's layout): tcpi_dsack_dups is
    # there; the MIN_BYTES prefix of an older kernel has none (None).
    info = _packed_tcp_info({"snd_mss": 1448, "total_retrans": 7, "dsack_dups": 2})
    rec = {"t_s": 0.1, "stream": 0, "cc": "cubic", "cc_info": "", "tcp_info": base64.b64encode(info).decode()}
    (full,) = readback.streams_read_back(json.dumps(rec), 0)
    assert (full.total_retrans, full.dsack_dups) == (7, 2)
    (short,) = readback.streams_read_back(_sample(0, "cubic"), 0)
    assert (short.total_retrans, short.dsack_dups) == (0, None)


def test_the_handshakes_options_are_read_back():
    opts = tcpinfo.TCPI_OPT_TIMESTAMPS | tcpinfo.TCPI_OPT_SACK | tcpinfo.TCPI_OPT_WSCALE
    [s] = readback.streams_read_back(_sample(0, "cubic", options=opts, wscale=(7 << 4) | 9) + "\n", 0)
    assert (s.sack, s.timestamps, s.snd_wscale, s.ecn) == (True, True, 9, False)  # snd_wscale: low nibble


def test_a_pacing_rate_the_socket_did_not_take_fails_the_run_naming_the_stream():
    paced = readback.StreamReadback(0, 0, ("cubic",), 1448, False, 20e6)  # 2.5 MB/s read back
    readback.check_ccas([paced], {0: "cubic"}, {0: 2_500_000})
    # Faked failures to apply: a socket left unpaced, one paced at another rate.
    unpaced = readback.StreamReadback(0, 1, ("cubic",), 1448, False, None)
    other = readback.StreamReadback(0, 2, ("cubic",), 1448, False, 40e6)
    with pytest.raises(readback.CcaMismatch) as e:
        readback.check_ccas([paced, unpaced, other], {0: "cubic"}, {0: 2_500_000})
    assert str(e.value) == (
        "the pacing read back differs from the one asked for: "
        "flow group 0, stream 1: SO_MAX_PACING_RATE asked 20.000 Mbit/s (2500000 B/s), its socket reports not set "
        "(tcpi_max_pacing_rate); flow group 0, stream 2: SO_MAX_PACING_RATE asked 20.000 Mbit/s (2500000 B/s), "
        "its socket reports 40.000 Mbit/s (5000000 B/s) (tcpi_max_pacing_rate)")
    # Unpaced as asked; internally paced, uncapped: any rate read back will do
    # (a kernel reading 32 bits of the 64-bit value keeps the low half).
    assert readback.pacing_mismatches([unpaced], {0: None}) == []
    assert readback.pacing_mismatches([paced], {0: None})
    assert readback.pacing_mismatches([other], {0: sampling.UNCAPPED_PACING_BYTES_PER_S}) == []
    assert readback.pacing_mismatches([unpaced], {0: sampling.UNCAPPED_PACING_BYTES_PER_S})


def test_a_stream_running_another_cca_fails_the_run_naming_group_stream_and_both_names():
    streams = [readback.StreamReadback(0, 0, ("cubic",), 1448, False),
               readback.StreamReadback(1, 2, ("bbr", "reno"), 1448, False)]
    readback.check_ccas(streams[:1], {0: "cubic"})
    with pytest.raises(readback.CcaMismatch) as e:
        readback.check_ccas(streams, {0: "cubic", 1: "bbr"})
    assert str(e.value) == ("the CCA read back differs from the one asked for: flow group 1, stream 2: asked for "
                            "CCA 'bbr', its socket reports 'reno' (TCP_CONGESTION)")


def test_an_mss_or_window_scale_that_contradicts_the_plan_fails_the_run_naming_the_stream():
    ok = readback.StreamReadback(0, 0, ("cubic",), 1448, False, snd_wscale=7)
    small = readback.StreamReadback(0, 1, ("cubic",), 1388, False, snd_wscale=7)  # a 1440-byte path MTU
    readback.check_ccas([ok], {0: "cubic"}, mss={0: 1448}, window_bytes=3 << 20)
    with pytest.raises(readback.CcaMismatch) as e:
        readback.check_ccas([ok, small], {0: "cubic"}, mss={0: 1448})
    assert str(e.value) == ("the MSS read back differs from the one asked for: flow group 0, stream 1: MSS asked "
                            "1448 payload bytes, its socket sends 1388 (tcpi_snd_mss)")
    # A 3 MiB window needs scale 6 (65535 << 6 = 4 MiB); scale 2 gives 256 KiB.
    unscaled = readback.StreamReadback(0, 2, ("cubic",), 1448, False, snd_wscale=2)
    with pytest.raises(readback.CcaMismatch, match="flow group 0, stream 2: the receiver's window scale is 2 "
                       r"\(tcpi_snd_wscale\), at most 262140 bytes of window; its buffer asks 3145728 bytes "
                       r"\(scale 6\)"):
        readback.check_ccas([ok, unscaled], {0: "cubic"}, window_bytes=3 << 20)


def test_dctcps_reno_fallback_is_accepted_only_when_ecn_was_not_negotiated():
    for name in ("dctcp-reno", "reno"):  # the kernel's, fatpipe's BPF port's
        assert readback.cca_mismatches([readback.StreamReadback(0, 0, (name,), 1448, False)], {0: "dctcp"}) == []
        [problem] = readback.cca_mismatches([readback.StreamReadback(0, 0, (name,), 1448, True)], {0: "dctcp"})
        assert problem.endswith("although ECN was negotiated")
    assert readback.cca_mismatches([readback.StreamReadback(0, 0, ("reno",), 1448, False)], {0: "cubic"})


# ethtool -k of a veth end with TSO off and GRO on, as ethtool 6.1 prints it (abridged).
ETHTOOL_K = """Features for eth0:
rx-checksumming: on
tx-checksumming: on
\ttx-checksum-ip-generic: on
scatter-gather: on
tcp-segmentation-offload: off
\ttx-tcp-segmentation: off
\ttx-tcp6-segmentation: off
generic-segmentation-offload: on
generic-receive-offload: on
large-receive-offload: off [fixed]
rx-gro-hw: off [fixed]
"""


def test_offloads_are_read_from_ethtool_k_by_their_short_names():
    assert readback.parse_offloads(ETHTOOL_K) == {"tso": False, "gso": True, "gro": True, "lro": False}
    assert readback.parse_offloads("Features for x:\ngeneric-receive-offload: on\n") == {"gro": True}


def test_a_runs_cpu_facts_keep_every_machine_and_its_error_and_flag_from_the_end_hosts():
    facts, report = procstat.cpu_measurement(
        {"tx": (BEFORE, AFTER), "rx": "the run ended before /proc/stat was read", "emu": ("cpu0 1 0 0 9\n", "x\n")},
        {"tx": ["sender s1"], "rx": ["receiver"], "emu": ["emulator"]}, ["tx", "rx"])
    assert report.busy_max_core_frac == pytest.approx(0.97)
    assert facts["cpu_bound"] is True and facts["saturated_frac"] == schema.CPU_SATURATED_FRAC
    assert facts["machines"]["rx"] == {"roles": ["receiver"], "error": "the run ended before /proc/stat was read"}
    assert facts["machines"]["emu"]["error"] == "/proc/stat: no per-core (cpuN) line"
    assert facts["machines"]["tx"]["saturated_cores"] == ["cpu0"]
    json.dumps(facts)  # kept in runs/<run_id>.json


def test_the_docs_list_every_cpu_column_and_the_cpu_bound_flag():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "results.md").read_text()
    for col in schema.CPU_COLUMNS:
        assert f"`{col}`" in text, col
    assert "`cpu_bound`" in text


# ---- the readers of /proc/stat ----------------------------------------------------------


def test_the_kernel_backends_cpu_window_reads_proc_stat_at_both_ends_or_says_why_not(tmp_path):
    import time

    from fatpipe.backends.kernel.cpuwindow import CpuWindow

    stat = tmp_path / "stat"
    stat.write_text(BEFORE)
    window = CpuWindow(stat)
    now = time.time()
    window.schedule(now, now + 0.01)
    assert window.readings() == (BEFORE, BEFORE)  # joins the timers' threads: no sleep
    late = CpuWindow(stat)
    late.schedule(now + 1, now)
    assert "warm-up lasts the whole run" in late.readings()
    assert "ended before" in CpuWindow(stat).readings()
    missing = CpuWindow(tmp_path / "absent")
    missing.schedule(now, now + 0.01)
    assert f"reading {tmp_path / 'absent'} at the start" in missing.readings()


class _FakeConnection:
    """A host connection whose `cat /proc/stat` returns the next of `texts`."""

    def __init__(self, name, texts):
        self.name, self.texts = name, list(texts)

    async def run(self, args, timeout_s=None):  # noqa: ARG002 - transport.HostConnection.run's signature
        from fatpipe.backends.hosts import transport

        assert args == ["cat", "/proc/stat"]
        if not self.texts:
            raise transport.HostError(self.name, "lab", "connection lost")
        return transport.CommandResult(self.name, tuple(args), 0, self.texts.pop(0), "")


def test_the_hosts_backends_cpu_window_reads_every_host_twice_and_keeps_a_hosts_failure():
    import asyncio

    from fatpipe.backends.hosts.hostmeasure import RemoteCpuWindow

    window = RemoteCpuWindow({"tx": _FakeConnection("tx", [BEFORE, AFTER]), "rx": _FakeConnection("rx", [BEFORE])})

    async def both_ends():
        await window.read("start")
        await window.read("end")

    asyncio.run(both_ends())
    got = window.readings()
    assert got["tx"] == (BEFORE, AFTER)
    assert got["rx"].startswith("reading /proc/stat at the end: ") and "connection lost" in got["rx"]


@pytest.mark.parametrize("kind, needs_ecn, sender, receiver, settled", [
    ("bulk", False, 2, 2, False),  # Linux's default: accept, never ask
    ("bulk", False, 1, 2, True),
    ("bulk", False, 1, 0, False),  # the listener refuses
    ("bulk", True, 0, 0, True),  # DCTCP asks and its listener accepts whatever tcp_ecn says
    ("rpc", False, 1, 2, False),  # the RPC client (receiver) connects: it asks, not the sender
    ("rpc", False, 2, 1, True),
    ("bulk", None, 1, 2, None),  # a CCA fatpipe does not know: not checked
])
def test_ecn_settles_as_linux_negotiates_it(kind, needs_ecn, sender, receiver, settled):
    from fatpipe.linuxpath.ecn import negotiates_ecn
    assert negotiates_ecn(kind, needs_ecn, sender, receiver) is settled


def test_ecn_that_contradicts_the_hosts_fails_the_run_naming_the_stream():
    on = readback.StreamReadback(0, 0, ("cubic",), 1448, True)
    off = readback.StreamReadback(1, 3, ("cubic",), 1448, False)
    readback.check_ccas([on, off], {0: "cubic", 1: "cubic"}, ecn={0: True, 1: None})
    with pytest.raises(readback.CcaMismatch) as e:
        readback.check_ccas([on, off], {0: "cubic", 1: "cubic"}, ecn={0: True, 1: True})
    assert str(e.value) == ("the ECN read back differs from the one asked for: flow group 1, stream 3: ECN should "
                            "have been negotiated (net.ipv4.tcp_ecn of both ends, the CCA), its socket reports it "
                            "off (TCPI_OPT_ECN)")
