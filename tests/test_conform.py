"""`fatpipe conform`: packetdrill scripts against the simulator's TCP.

The project's own scripts (conformance/) must all pass; the interpreter
must fail a script whose expectation the simulator does not meet (naming
the line, expected and produced), and report constructs outside the
model as unsupported instead of crashing."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fatpipe.conform.commands import CommandError, read_commands
from fatpipe.conform.runner import run_script
from fatpipe.conform.script import ScriptError, parse
from fatpipe.conform.suite import find_scripts, run_all

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "conformance"

HANDSHAKE = """\
`sysctl -q net.ipv4.tcp_rmem="4096 540000 15728640"`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.1 < . 1:1(0) ack 1 win 320
   +0 accept(3, ..., ...) = 4
"""


def script(tmp_path: Path, body: str, name: str = "t.pkt") -> Path:
    p = tmp_path / name
    p.write_text(HANDSHAKE + textwrap.dedent(body))
    return p


def test_the_projects_own_scripts_all_pass():
    scripts = find_scripts([CONFORMANCE])
    assert len(scripts) >= 15, f"expected the project's conformance scripts, found {len(scripts)}"
    bad = [o for o in run_all([CONFORMANCE]) if o.status != "pass"]
    assert not bad, "\n".join(f"{o.script}:{o.line}: {o.status}: {o.reason}\n"
                              f"  expected {o.expected}\n  produced {o.produced}" for o in bad)


def test_initial_window_and_slow_start_step_pass(tmp_path):
    p = script(tmp_path, """\
       +0 write(4, ..., 20000) = 20000
       +0 > . 1:10001(10000) ack 1
       +0 %{ assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd }%
      +.1 < . 1:1(0) ack 2001 win 320
       +0 > . 10001:14001(4000) ack 1
       +0 %{ assert tcpi_snd_cwnd == 12, tcpi_snd_cwnd }%
    """)
    o = run_script(p)
    assert o.status == "pass", o


def test_a_wrong_assertion_fails_naming_its_line_and_the_values(tmp_path):
    p = script(tmp_path, """\
       +0 write(4, ..., 20000) = 20000
       +0 > . 1:10001(10000) ack 1
       +0 %{ assert tcpi_snd_cwnd == 11, tcpi_snd_cwnd }%
    """)
    o = run_script(p)
    assert (o.status, o.line) == ("fail", 12), o
    assert "tcpi_snd_cwnd=10" in o.produced


def test_a_packet_the_socket_does_not_send_fails_with_expected_and_produced(tmp_path):
    p = script(tmp_path, """\
       +0 write(4, ..., 20000) = 20000
       +0 > . 1:9001(9000) ack 1
    """)
    # The socket sends 2-segment TSO packets (tcp_tso_autosize()'s floor at
    # this low pacing rate): 8000 bytes fall short of 9000, the fifth
    # packet overshoots it, as packetdrill's aggregation would see.
    o = run_script(p)
    assert o.status == "fail" and o.line == 11, o
    assert "payload" in o.reason and "1:9001(9000)" in o.expected and "1:10001(10000)" in o.produced


def test_a_packet_sent_at_another_time_fails_on_timing(tmp_path):
    # The RTO from the handshake's 100 ms RTT is 300 ms (srtt + max(4 rttvar, 200 ms)),
    # and a tail loss probe before it; nothing goes out 50 ms after the write.
    p = script(tmp_path, """\
       +0 write(4, ..., 1000) = 1000
       +0 > . 1:1001(1000) ack 1
     +.05 > . 1:1001(1000) ack 1
    """)
    o = run_script(p)
    assert o.status == "fail" and "timing" in o.reason, o


def test_constructs_outside_the_model_are_unsupported_naming_the_line(tmp_path):
    p = script(tmp_path, """\
       +0 read(4, ..., 1000) = 1000
    """)
    o = run_script(p)
    assert (o.status, o.line) == ("unsupported", 10) and "read()" in o.reason, o
    p = script(tmp_path, "   +0 write(4, ..., 1500) = 1500\n", "partial.pkt")
    o = run_script(p)
    assert o.status == "unsupported" and "whole number of segments" in o.reason, o
    no_sack = tmp_path / "nosack.pkt"
    no_sack.write_text(HANDSHAKE.replace("<mss 1000,sackOK,nop,nop,nop,wscale 7>", "<mss 1000,nop,wscale 7>")
                       .replace("<mss 1460,nop,nop,sackOK,nop,wscale 8>", "<mss 1460,nop,wscale 8>"))
    o = run_script(no_sack)
    assert o.status == "unsupported" and "SACK" in o.reason, o


def test_parser_reads_packetdrills_timing_forms():
    events = parse(textwrap.dedent("""\
        `sysctl -q net.ipv4.tcp_sack=1`
        0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
        +.1~+.2 > . 1:1(0) ack 1 <nop,nop,TS val 100 ecr 7>
        0.5 < [ect0] E. 1:1(0) ack 1001 win 257 <sack 2001:3001,nop,nop>
        * > . 1:1(0) ack 1 <...>
        +0...0.300 connect(3, ..., ...) = 0
        +0 %{
        assert tcpi_snd_cwnd == 10
        }%
    """))
    kinds = [e.kind for e in events]
    assert kinds == ["command", "syscall", "packet", "packet", "packet", "syscall", "code"]
    rng = events[2].timing
    assert (rng.kind, rng.start_s, rng.end_s) == ("relative", 0.1, 0.2)
    assert events[2].packet.options == [("nop",), ("nop",), ("TS", 100, 7)]
    inbound = events[3].packet
    assert (inbound.codepoint, inbound.flag_string(), inbound.ack) == ("ect0", ".E", 1001)
    assert events[4].timing.kind == "any" and events[4].packet.options is None
    assert events[5].timing.blocking_end_s == 0.3
    with pytest.raises(ScriptError) as e:
        parse("0 < Q 1:1(0) ack 1\n")
    assert e.value.line == 1 and "'Q'" in e.value.message


def test_shell_commands_are_read_not_run(tmp_path):
    (tmp_path / "d.sh").write_text('sysctl -q net.ipv4.tcp_rmem="4096 $((2*1024)) 8192"\n'
                                   'ip tcp_metrics flush all > /dev/null 2>&1\n')
    got = read_commands("./d.sh\necho 3 > /sys/module/tcp_cubic/parameters/hystart_detect\n"
                        "tc qdisc replace dev tun0 root fq", tmp_path)
    assert got == [("net.ipv4.tcp_rmem", "4096 2048 8192"), ("dev.root_qdisc", "fq")]
    for bad in ("echo 1 > /sys/module/tcp_cubic/parameters/hystart_detect", "ethtool -K tun0 tso off",
                "tc qdisc replace dev tun0 root pfifo limit 0"):
        with pytest.raises(CommandError):
            read_commands(bad, tmp_path)


def test_cli_prints_a_summary_writes_json_and_fails_on_a_failing_script(tmp_path):
    good = script(tmp_path, "   +0 write(4, ..., 10000) = 10000\n   +0 > . 1:10001(10000) ack 1\n", "good.pkt")
    script(tmp_path, "   +0 write(4, ..., 10000) = 10000\n   +0 > . 1:5001(5000) ack 1\n", "bad.pkt")
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "fatpipe", "conform", str(tmp_path), "--json", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert data["total"] == {"pass": 1, "fail": 1, "unsupported": 0}
    assert "bad.pkt:11" in r.stdout
    r = subprocess.run([sys.executable, "-m", "fatpipe", "conform", str(good)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "total" in r.stdout, r.stdout + r.stderr
