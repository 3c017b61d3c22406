"""Pure parsers and argument builders, on captured output."""

import base64
import json
import struct
from pathlib import Path

import pytest

from fatpipe.backends.kernel.path import nfqueue_rules
from fatpipe.goodput import rows_as_columns, total_goodput_bps
from fatpipe.linuxpath import flows as traffic
from fatpipe.linuxpath import parse, tcpinfo
from fatpipe.linuxpath.linkem import QueueConfig, linkem_args, summarize
from fatpipe.linuxpath.qdisc import tbf_args, tbf_burst_bytes
from fatpipe.schema import SERIES_COLUMNS

# `tc -s qdisc show dev rcv`, captured on Linux 6.18 after a run.
TC_S = ("qdisc tbf 1: root refcnt 2 rate 1Gbit burst 125000b lat 0us \n"  # tc ends lines with a space
        " Sent 1256640396 bytes 830102 pkt (dropped 3386, overlimits 412071 requeues 0) \n"
        " backlog 0b 0p requeues 0\n")


def test_tc_qdisc_stats_reads_sent_and_dropped():
    (q,) = parse.tc_qdisc_stats(TC_S)
    assert (q.kind, q.handle) == ("tbf", "1:")
    assert q.sent_bytes == 1256640396 and q.sent_packets == 830102
    assert q.dropped == 3386 and q.overlimits == 412071
    assert q.ecn_marks == 0


# tbf with fq_codel in its child slot, in the layout of iproute2's
# fq_codel_print_opt / fq_codel_print_xstats (the xstats lines follow Sent).
TC_S_FQ_CODEL = TC_S + (
    "qdisc fq_codel 20: parent 1:1 limit 1000p flows 1024 quantum 300 target 2ms ce_threshold 1ms interval 50ms "
    "memory_limit 32Mb noecn drop_batch 64 \n"
    " Sent 5000 bytes 4 pkt (dropped 2, overlimits 0 requeues 0) \n"
    " backlog 0b 0p requeues 0\n"
    "  maxpacket 1514 drop_overlimit 0 new_flow_count 3 ecn_mark 17\n"
    "  new_flows_len 0 old_flows_len 1\n")


def test_tc_qdisc_stats_reads_fq_codels_ce_marks_into_its_own_entry():
    tbf, fq_codel = parse.tc_qdisc_stats(TC_S_FQ_CODEL)
    assert (tbf.kind, tbf.ecn_marks) == ("tbf", 0)
    assert (fq_codel.kind, fq_codel.handle, fq_codel.dropped, fq_codel.ecn_marks) == ("fq_codel", "20:", 2, 17)


def test_ip_netns_list_and_pids():
    assert parse.ip_netns_list("fp-12-0-r (id: 3)\nfp-12-0-rx\nother\n") == ["fp-12-0-r", "fp-12-0-rx", "other"]
    assert parse.ip_netns_pids("123\n456\n") == [123, 456]


def test_nfnetlink_queue_proc():
    text = "    0  40977     2 2   128     5     7   830102  1\n    1  40978     0 2   128     0     0   99712  1\n"
    q0, q1 = parse.nfnetlink_queue(text)
    assert (q0.queue, q0.queue_total, q0.queue_dropped, q0.user_dropped) == (0, 2, 5, 7)
    assert q1.queue == 1


IPERF3 = {
    "start": {},
    "intervals": [{"sum": {"bits_per_second": 9.4e8}}, {"sum": {"bits_per_second": 9.5e8}}],
    "end": {"streams": [{}, {}], "sum_sent": {"bits_per_second": 9.6e8, "retransmits": 12},
            "sum_received": {"bits_per_second": 9.5e8}, "sender_tcp_congestion": "cubic"},
}


def test_iperf3_json():
    r = parse.iperf3_json(json.dumps(IPERF3))
    assert r.goodput_bps == 9.5e8 and r.retransmits == 12 and r.streams == 2 and r.congestion == "cubic"
    assert parse.iperf3_intervals_bps(json.dumps(IPERF3)) == [9.4e8, 9.5e8]


def test_iperf3_error_is_reported():
    import pytest
    with pytest.raises(ValueError, match="unable to connect"):
        parse.iperf3_json(json.dumps({"error": "unable to connect to server"}))


def test_ping_and_ccas():
    got = parse.ping_rtt_s("rtt min/avg/max/mdev = 20.011/20.050/20.101/0.030 ms")
    assert [round(x, 9) for x in got] == [0.020011, 0.02005, 0.020101]
    assert parse.available_ccas("reno bbr cubic\n") == ["reno", "bbr", "cubic"]


# struct tcp_info captured with getsockopt(TCP_INFO) on kernel 6.18 after
# 100000 bytes over loopback (280 bytes: newer fields beyond snd_wnd too).
CAPTURED_TCP_INFO = base64.b64decode(
    "AQAAAAAHqgDgHAMAAAAAAAC6AAAYAgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA//8AANf/AAAXAAAA"
    "CAAAAP///38NAAAAy/8AAAMAAAAAAAAA1/8AAAAAAABLGs8TCQAAAP//////////oYYBAAAAAAAAAAAAAAAAAAUAAAADAAAA"
    "AAAAAAsAAAAAAAAAAwAAAABA0BsBAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAAAAAAACghgEAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAGwBAAAAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
)


def test_tcpinfo_parses_captured_bytes():
    d = tcpinfo.parse(CAPTURED_TCP_INFO)
    assert d["state"] == 1  # TCP_ESTABLISHED
    assert d["bytes_acked"] == 100001  # payload + SYN
    assert d["snd_cwnd"] == 13
    assert d["min_rtt_us"] == 11
    assert d["data_segs_out"] == 3
    row = tcpinfo.series_row(d)
    assert row["delivered_bytes"] == 100001 and row["ca_state"] == "open"
    assert row["min_rtt_s"] == 11e-6


def test_inflight_is_unacked_minus_sacked_lost_plus_retrans():
    assert tcpinfo.inflight_segments({"unacked": 100, "sacked": 10, "lost": 5, "retrans": 3}) == 88


def test_tcpinfo_rejects_short_buffer():
    import pytest
    with pytest.raises(ValueError):
        tcpinfo.parse(b"\0" * 100)


def test_linkem_args_are_a_list_with_queue_specs():
    args = linkem_args(Path("/bin/linkem"), [QueueConfig(0, "data", 0.01, 1e-3, 1e9, 2500000),
                                               QueueConfig(1, "ack", 0.01, 0.0)], 7, Path("/tmp/s.json"))
    assert args[0] == "/bin/linkem"
    assert "num=0,delay_s=0.010000000,loss=0.001,name=data,rate_bps=1000000000,buffer_bytes=2500000" in args
    assert "num=1,delay_s=0.010000000,loss=0,name=ack" in args
    assert args[args.index("--seed") + 1] == "7"


def test_linkem_summary_totals():
    q = {"data_packets": 1000, "dropped": 1, "packets": 1200, "late_p50_s": 1e-6, "late_p99_s": 2e-4,
         "late_max_s": 1e-3, "max_packet_bytes": 1488, "gso_packets": 0, "queue_drops": 3, "bottleneck_bytes": 10}
    s = summarize({"queues": [q, dict(q, data_packets=0, dropped=0, late_p99_s=5e-4)]})
    assert s["data_packets"] == 1000 and s["dropped"] == 1 and s["late_p99_s"] == 5e-4 and s["queue_drops"] == 6
    assert s["ce_marks"] == 0, "statistics of a linkem without marking read as no marks"
    s = summarize({"queues": [dict(q, ce_marks=7, ce_unmarkable=0), dict(q, ce_marks=0, ce_unmarkable=1)]})
    assert (s["ce_marks"], s["ce_unmarkable"]) == (7, 1)
    assert s["cpu_cores"] is None, "statistics of a linkem that does not time itself read as unknown CPU"
    assert summarize({"queues": [q], "wall_s": 8.0, "cpu_s": 2.0})["cpu_cores"] == 0.25


def test_tbf_and_nfqueue_commands():
    assert tbf_burst_bytes(1e9, 1500) == 125000
    assert tbf_burst_bytes(1e6, 1500) == 4 * 1514
    assert tbf_args("rcv", 1e9, 125000, 2500000)[-6:] == ["rate", "1000000000bit", "burst", "125000",
                                                         "limit", "2500000"]
    rules = nfqueue_rules("iptables-legacy")
    assert rules[0][-4:] == ["-j", "NFQUEUE", "--queue-num", "0"] and "--queue-bypass" not in rules[0]


def test_goodput_of_kernel_rows_skips_warmup():
    rows = [{"flow_group": 0, "stream": 0, "t_s": t, "delivered_bytes": int(t * 1e6)} for t in (0, 1, 2, 3)]
    assert abs(total_goodput_bps(rows_as_columns(rows), 1.0) - 8e6) < 1


def _bbr_info(pacing_gain: int, cwnd_gain: int) -> bytes:
    # struct tcp_bbr_info: bw_lo, bw_hi, min_rtt (us), pacing_gain, cwnd_gain (units of 1/256)
    return struct.pack("<5I", 125_000, 0, 20_000, pacing_gain, cwnd_gain)


@pytest.mark.parametrize("pacing, cwnd, mode", [
    (739, 739, "startup"), (88, 739, "drain"), (320, 512, "probe_bw"), (192, 512, "probe_bw"),
    (256, 512, "probe_bw"), (256, 256, "probe_rtt"),
    (709, 512, ""),  # not a BBR v1 pair (BBRv3's startup): no guess
])
def test_bbr_mode_follows_the_gains_bbr_update_gains_sets(pacing, cwnd, mode):
    assert tcpinfo.cc_mode("bbr", _bbr_info(pacing, cwnd)) == mode


def test_cc_mode_is_empty_without_a_mode_bearing_cc_info():
    assert tcpinfo.cc_mode("cubic", b"") == ""
    assert tcpinfo.cc_mode("bbr", b"") == ""  # info unavailable
    assert tcpinfo.cc_mode("dctcp", _bbr_info(739, 739)) == ""  # another CCA's record


def test_parse_samples_reads_ca_state_from_tcp_info_and_cc_mode_from_cc_info():
    line = json.dumps({"t_s": 0.5, "stream": 1, "tcp_info": base64.b64encode(CAPTURED_TCP_INFO).decode(),
                       "cc_info": base64.b64encode(_bbr_info(88, 739)).decode()})
    (row,) = traffic.parse_samples(line + "\n", group=2, cc="bbr")
    assert set(row) == set(SERIES_COLUMNS)
    assert (row["flow_group"], row["stream"], row["ca_state"], row["cc_mode"]) == (2, 1, "open", "drain")


def _tcp_info_with(options: int, delivered_ce: int) -> bytes:
    """CAPTURED_TCP_INFO with tcpi_options and tcpi_delivered_ce replaced."""
    raw = bytearray(CAPTURED_TCP_INFO)
    raw[5] = options  # tcpi_options: the sixth byte
    names = [n for n, _ in tcpinfo._FIELDS]
    at = struct.calcsize("<" + "".join(c for _, c in tcpinfo._FIELDS[: names.index("delivered_ce")]))
    struct.pack_into("<I", raw, at, delivered_ce)
    return bytes(raw)


def test_ecn_counts_take_tcpi_opt_ecn_per_stream_and_the_last_delivered_ce_of_each():
    def line(stream: int, options: int, delivered_ce: int) -> str:
        info = base64.b64encode(_tcp_info_with(options, delivered_ce)).decode()
        return json.dumps({"t_s": 0.1, "stream": stream, "tcp_info": info})

    text = "\n".join([line(0, tcpinfo.TCPI_OPT_ECN | 7, 5), line(0, tcpinfo.TCPI_OPT_ECN | 7, 40),
                      line(1, 7, 0), line(1, 7, 0)]) + "\n"
    assert tcpinfo.parse(_tcp_info_with(7, 40))["delivered_ce"] == 40
    assert traffic.ecn_counts(text) == {"streams": 1, "delivered_ce": 40}
    assert traffic.ecn_counts("") == {"streams": 0, "delivered_ce": 0}


def test_first_send_times_are_taken_relative_to_the_groups_planned_start(tmp_path):
    samples = tmp_path / "samples-g1.jsonl"
    assert traffic.first_send_path(samples) == str(samples) + ".first-send.json"
    text = json.dumps({"first_send_s": [2.0012, 2.0, None]})
    assert traffic.parse_first_send(text, 2.0) == pytest.approx([0.0012, 0.0, None])
    cfg = traffic.sender_config(traffic.FlowSpec(group=1, kind="bulk", cc="cubic", streams=3, mss_bytes=1448,
                                                 sender="default", start_s=2.0),
                                "10.0.0.2", 100.0, 10.0, 0.5, samples)
    assert cfg["first_send_path"] == traffic.first_send_path(samples)
