"""Packet captures from the simulator (docs/captures.md): pcap files a pcap
reader opens, with the handshake's options, sequence and ACK continuity,
and exactly the run's retransmissions; the [capture] keys refused naming
them, and --capture writing them with the defaults (the kernel's tcpdump
and the comparison of both: tests/kernel/test_capture_kernel.py)."""

import subprocess
import sys

import dpkt
import pytest

import fatpipe
from fatpipe import spec as spec_mod
from pcap_reading import data_flows, retransmissions, segments
from spec_text import plans_for

STUDY = """
version = 1
[study]
name = "captured"
duration = "3s"
seed = 4
[path]
rate = "20Mbit"
rtt = "20ms"
loss = 1e-3
buffer = "4bdp"
[hosts.receiver]
rmem_max = "200KB"
[[flows]]
cc = "cubic"
{capture}
"""


def run(tmp_path, capture='[capture]\nside = "both"', extra_args=()):
    spec = tmp_path / "s.toml"
    spec.write_text(STUDY.format(capture=capture))
    return fatpipe.run(spec, out=tmp_path / "out", progress=None, **dict(extra_args))


def test_both_capture_points_open_in_a_pcap_reader_and_agree_with_the_run(tmp_path):
    study = run(tmp_path)
    run_id = study.runs["run_id"].iloc[0]
    files = {p.name: p for p in study.captures(run_id)}
    assert set(files) == {"capture-sender-s1.pcap", "capture-receiver.pcap"}
    retrans = int(study.runs["retrans_segments"].iloc[0])
    assert retrans > 0, "a seeded loss rate of 1e-3 over ~5000 packets drops a few"
    for name, path in files.items():
        segs = segments(path)
        syn = next(s for s in segs if s.flags & dpkt.tcp.TH_SYN)
        opts = dict(syn.options)
        assert int.from_bytes(opts[dpkt.tcp.TCP_OPT_MSS], "big") == 1460  # TCP_MAXSEG: 1448 + timestamps
        assert dpkt.tcp.TCP_OPT_WSCALE in opts and dpkt.tcp.TCP_OPT_SACKOK in opts
        (flow,) = data_flows(segs).values()
        # Sequence continuity: every byte up to the highest is covered.
        covered, high = 0, flow[0].seq
        for s in sorted(flow, key=lambda s: s.seq):
            assert s.seq <= high, (name, "a gap in the sequence", s.seq, high)
            high = max(high, s.seq + s.payload_bytes)
            covered += s.payload_bytes
        assert retransmissions(flow) == retrans, name
        # ACKs never go back, and the last one covers what arrived.
        acks = [s.ack for s in segs if s.src == flow[0].dst and not s.flags & dpkt.tcp.TH_SYN]
        assert acks == sorted(acks) and acks[-1] <= high
        assert all(t2 >= t1 for t1, t2 in zip([s.t_s for s in segs], [s.t_s for s in segs][1:], strict=False))


def test_capture_with_the_cli_flag_and_its_defaults(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(STUDY.format(capture=""))
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "fatpipe", "run", str(spec), "--out", str(out), "--capture",
                        "--no-report"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-1500:]
    study = fatpipe.load(out)
    (path,) = study.captures(study.runs["run_id"].iloc[0])
    assert path.name == "capture-sender-s1.pcap"
    with open(path, "rb") as fh:
        reader = dpkt.pcap.Reader(fh)
        assert (reader.snaplen, reader.datalink()) == (96, 101)  # headers; LINKTYPE_RAW
        assert all(len(buf) <= 96 for _, buf in reader)


@pytest.mark.parametrize("capture, key, text", [
    ("[capture]\nflows = [3]", "capture.flows.0", "flow 3 is not a TCP flow"),
    ('[capture]\nmax_size = "100KB"', "capture.max_size", "would capture about"),
    ('[capture]\nside = "middle"', "capture.side", "sender"),
    ("[capture]\nsnaplen = 20", "capture.snaplen", "40"),
])
def test_capture_keys_that_do_not_fit_are_refused_naming_them(tmp_path, capture, key, text):
    with pytest.raises(spec_mod.SpecError) as e:
        plans_for(STUDY.format(capture=capture), tmp_path)
    assert key in str(e.value) and text in str(e.value)


def test_a_shorter_capture_stops_at_its_duration(tmp_path):
    study = run(tmp_path, '[capture]\nduration = "0.5s"')
    (path,) = study.captures(study.runs["run_id"].iloc[0])
    assert max(s.t_s for s in segments(path)) <= 0.5


def test_fatpipes_reader_and_the_report_draw_the_time_sequence_graph(tmp_path):
    from fatpipe.analysis.sequence import time_sequence
    from fatpipe.pcapread import packets
    from fatpipe.report import write_report

    study = run(tmp_path)
    run_id = study.runs["run_id"].iloc[0]
    sender = next(p for p in study.captures(run_id) if p.name.startswith("capture-sender"))
    ours = list(packets(sender))
    assert len(ours) == len(segments(sender))  # the same packets as dpkt reads
    ts = time_sequence(ours)
    assert int(ts["data"]["retrans"].sum()) == int(study.runs["retrans_segments"].iloc[0])
    assert ts["data"]["start"].min() == 0 and ts["acks"]["ack"].is_monotonic_increasing
    html = write_report(tmp_path / "out").read_text()
    assert "Time-sequence graph from the capture" in html and 'id="fp-seq"' in html
    assert (tmp_path / "out" / "report" / "time_sequence.png").exists()


def test_a_capture_does_not_change_the_run(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with_capture = run(tmp_path / "a", '[capture]\nside = "both"')
    without = run(tmp_path / "b", "")
    a, b = with_capture.series, without.series
    cols = ["t_s", "delivered_bytes", "cwnd_segments", "retrans_segments", "srtt_s"]
    assert a[cols].values.tolist() == b[cols].values.tolist()
