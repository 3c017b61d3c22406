"""Runs one conformance script against the simulator's socket
(`fatpipe._native.ConformSocket`) the way packetdrill runs one against
Linux: events in script order at their times, the script's packets
injected, the socket's packets matched against the expected ones, and
`%{ }%` assertions evaluated on its tcp_info.

Matching follows packetdrill's rules (run_packet.c, run.c): consecutive
outbound packets are aggregated until they carry the expected payload
(headers of the last, sequence number and CWR of the first); a relative
time counts from when the previous event happened, except between two
inbound packets, which anchor on each other's script times; timing
tolerance is max(4 ms, 12.5 % of the time since the previous event);
outbound options are compared kind by kind, TS val only mapped (its
value is the sender's clock), TS ecr compared. Not compared: the PSH
flag, which follows sendmsg()'s skb boundaries the simulator does not
model (the sender counts segments, not the application's writes).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import textwrap
from pathlib import Path

from .. import _native
from .commands import CommandError, read_commands
from .outcome import Mismatch, Outcome, Unsupported
from .script import FLAG_BITS, Event, ScriptError, TcpPacket, flag_string, parse
from .syscalls import SyscallRunner

TOLERANCE_US = 4000
TOLERANCE_PERCENT = 12.5
PSH = FLAG_BITS["P"]
# How far past a missed deadline the socket is run to say when (or
# whether) the expected packet came.
LATE_SEARCH_S = 10.0

CODE_CONSTANTS = {
    "TCP_ESTABLISHED": 1, "TCP_SYN_SENT": 2, "TCP_SYN_RECV": 3, "TCP_FIN_WAIT1": 4,
    "TCP_FIN_WAIT2": 5, "TCP_TIME_WAIT": 6, "TCP_CLOSE": 7, "TCP_CLOSE_WAIT": 8,
    "TCP_LAST_ACK": 9, "TCP_LISTEN": 10, "TCP_CLOSING": 11,
    "TCP_CA_Open": 0, "TCP_CA_Disorder": 1, "TCP_CA_CWR": 2, "TCP_CA_Recovery": 3, "TCP_CA_Loss": 4,
    "TCPI_OPT_TIMESTAMPS": 1, "TCPI_OPT_SACK": 2, "TCPI_OPT_WSCALE": 4, "TCPI_OPT_ECN": 8,
}
CODE_BUILTINS = {n: getattr(builtins, n)
                 for n in ("abs", "min", "max", "int", "float", "round", "len", "range", "print", "str",
                           "AssertionError", "NameError", "bool", "sum", "hex")}


def format_options(opts: list) -> str:
    parts = []
    for o in opts:
        if o[0] == "TS":
            parts.append(f"TS val {o[1]} ecr {o[2]}")
        elif o[0] == "sack":
            parts.append("sack " + " ".join(f"{a}:{b}" for a, b in o[1]))
        else:
            parts.append(" ".join(str(x) for x in o))
    return "<" + ",".join(parts) + ">"


def format_packet(t: float, flags: int, seq: int, length: int, ack: int | None, win: int | None,
                  options: list | None, codepoint: str | None) -> str:
    """A packet as packetdrill prints it; None leaves a field out."""
    text = f"{t:.6f} {flag_string(flags)} {seq}:{seq + length}({length})"
    if ack is not None:
        text += f" ack {ack}"
    if win is not None:
        text += f" win {win}"
    if options:
        text += " " + format_options(options)
    if codepoint and codepoint != "noecn":
        text = f"[{codepoint}] " + text
    return text


def format_produced(p: dict) -> str:
    ack = p["ack"] if p["flags"] & FLAG_BITS["."] else None
    return format_packet(p["time_ns"] / 1e9, p["flags"], p["seq"], p["len"], ack, p["win"], p["options"], p["ecn"])


def format_expected(pkt: TcpPacket, t: float) -> str:
    return format_packet(t, pkt.flags, pkt.seq, pkt.length, pkt.ack, pkt.win, pkt.options, pkt.codepoint)


def code_text(body: str) -> str:
    """A %{ }% block as Python: dedented, without the trailing line
    continuation scripts leave before the closing }%."""
    code = textwrap.dedent(body).strip()
    while code.endswith("\\"):
        code = code[:-1].rstrip()
    return code


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


class ScriptRun:
    """The state of one script's run."""

    def __init__(self, path: Path, events: list[Event]):
        self.path = path
        self.events = events
        self.sysctls: list[tuple[str, str]] = []
        self.sock = None
        self.now = 0.0
        self.pending: list[dict] = []
        self.ts_map: dict[int, int] = {}
        self.ts_first: tuple[int, int] | None = None
        self.tolerance_us = TOLERANCE_US
        self.tolerance_percent = TOLERANCE_PERCENT
        self.code_ns: dict = dict(CODE_CONSTANTS)
        self.calls = SyscallRunner(self)

    # -- time --------------------------------------------------------------

    def run_to(self, t: float) -> None:
        """Fires the socket's timers due by `t`; what they send waits in
        `pending` for the next outbound expectation."""
        if self.sock is None:
            return
        limit = _ns(t)
        while (nt := self.sock.next_timer()) is not None and nt <= limit:
            self.sock.advance(nt)
            self.pending += self.sock.take_output()

    def collect(self) -> None:
        if self.sock is not None:
            self.pending += self.sock.take_output()

    # -- events ------------------------------------------------------------

    def execute(self) -> None:
        prev_t: float | None = None
        prev_inbound = False
        for ev in self.events:
            if ev.kind == "option":
                self.option(ev)
                continue
            if ev.kind == "command":
                self.command(ev)
                continue
            inbound = ev.kind == "packet" and ev.packet.direction == "<"
            timing = ev.timing
            if timing.kind == "absolute":
                t, t_end = timing.start_s, timing.end_s if timing.end_s is not None else timing.start_s
            elif timing.kind == "relative":
                base = prev_t if (prev_inbound and inbound and prev_t is not None) else self.now
                t = base + timing.start_s
                t_end = base + (timing.end_s if timing.end_s is not None else timing.start_s)
            else:
                t = t_end = self.now
            if ev.kind == "packet" and ev.packet.direction == ">":
                self.outbound(ev, t, t_end, prev_t, timing.kind == "any")
            else:
                self.run_to(t)
                self.now = max(self.now, t)
                if ev.kind == "packet":
                    self.inbound(ev)
                elif ev.kind == "syscall":
                    self.calls.run(ev)
                    self.collect()
                elif ev.kind == "code":
                    self.code(ev)
            prev_t, prev_inbound = t, inbound

    def option(self, ev: Event) -> None:
        key, _, value = ev.body.lstrip("-").partition("=")
        if key == "tolerance_usecs":
            self.tolerance_us = int(value)
        elif key == "tolerance_percent":
            self.tolerance_percent = float(value)
        elif key in ("ip_version", "mtu", "bind_port", "connect_port"):
            if key == "mtu" and value != "1500":
                raise Unsupported(ev.line, f"--mtu={value}: the scripted interface has MTU 1500")
        else:
            raise Unsupported(ev.line, f"packetdrill option --{key}: not read")

    def command(self, ev: Event) -> None:
        try:
            settings = read_commands(ev.body, self.path.parent)
        except CommandError as exc:
            raise Unsupported(ev.line, str(exc)) from None
        if self.sock is not None and settings:
            raise Unsupported(ev.line, "a setting changed after the socket exists: only settings before it are read")
        for key, value in settings:
            try:
                _native.ConformSocket.check_sysctl(key, value)
            except ValueError as exc:
                raise Unsupported(ev.line, str(exc)) from None
        self.sysctls += settings

    def map_inbound_ecr(self, ecr: int) -> int:
        """packetdrill's rule: an echo names one of our TS vals in script
        space; map it to the socket's value (exactly, or by the first
        mapping's offset)."""
        if ecr in self.ts_map:
            return self.ts_map[ecr]
        if self.ts_first is not None and ecr:
            return (ecr - self.ts_first[0] + self.ts_first[1]) & 0xFFFFFFFF
        return ecr

    def inbound(self, ev: Event) -> None:
        pkt = ev.packet
        if self.sock is None:
            raise Unsupported(ev.line, "a packet before any socket exists")
        options = []
        for o in pkt.options or []:
            if o[0] == "TS":
                o = ("TS", o[1], self.map_inbound_ecr(o[2]))
            options.append(o)
        try:
            self.sock.inbound(_ns(self.now), pkt.flags, pkt.seq, pkt.length, pkt.ack or 0,
                              pkt.win if pkt.win is not None else 0, options)
        except ValueError as exc:
            raise Unsupported(ev.line, str(exc)) from None
        self.collect()

    def outbound(self, ev: Event, t: float, t_end: float, prev_t: float | None, any_time: bool) -> None:
        pkt = ev.packet
        if self.sock is None:
            raise Unsupported(ev.line, "an outbound packet before any socket exists")
        delta = t - (prev_t if prev_t is not None else 0.0)
        tol = max(self.tolerance_us * 1e-6, self.tolerance_percent / 100.0 * max(delta, 0.0))
        deadline = t_end + tol
        got = self.take_packets(pkt.length, deadline if not any_time else t + LATE_SEARCH_S)
        expected = format_expected(pkt, t)
        if not got:
            raise Mismatch(ev.line, f"expected an outbound packet by {deadline:.6f} s; "
                                    f"the socket sent none within {LATE_SEARCH_S:.0f} s more", expected, None)
        first, last = got[0], got[-1]
        total = sum(p["len"] for p in got)
        actual = dict(last)
        actual.update(seq=first["seq"], len=total,
                      flags=(last["flags"] & ~FLAG_BITS["W"]) | (first["flags"] & FLAG_BITS["W"]))
        produced = format_produced(actual)
        self.now = max(self.now, actual["time_ns"] / 1e9)

        def fail(reason: str) -> None:
            raise Mismatch(ev.line, reason, expected, produced)

        if total != pkt.length:
            fail(f"payload: expected {pkt.length} bytes, the socket sent {total}")
        diff = (actual["flags"] ^ pkt.flags) & ~PSH
        if diff:
            fail(f"flags: expected {flag_string(pkt.flags)}, the socket sent {flag_string(actual['flags'])}")
        if actual["seq"] != pkt.seq:
            fail(f"sequence number: expected {pkt.seq}, the socket sent {actual['seq']}")
        if pkt.ack is not None and actual["flags"] & FLAG_BITS["."] and actual["ack"] != pkt.ack:
            fail(f"ack: expected {pkt.ack}, the socket sent {actual['ack']}")
        if pkt.win is not None and actual["win"] != pkt.win:
            fail(f"window: expected {pkt.win}, the socket sent {actual['win']}")
        if pkt.codepoint is not None:
            want = {"ect01": ("ect0", "ect1")}.get(pkt.codepoint, (pkt.codepoint,))
            if actual["ecn"] not in want:
                fail(f"ECN codepoint: expected [{pkt.codepoint}], the socket sent [{actual['ecn']}]")
        if pkt.options is not None:
            self.check_options(pkt.options, actual["options"], fail)
        when = actual["time_ns"] / 1e9
        if not any_time and not (t - tol <= when <= t_end + tol):
            span = f"{t:.6f}" if t_end == t else f"{t:.6f}~{t_end:.6f}"
            fail(f"timing: expected at {span} s (tolerance {tol * 1e3:.3f} ms), sent at {when:.6f} s")

    def take_packets(self, length: int, deadline: float) -> list[dict]:
        """The socket's next packets carrying `length` payload bytes (one
        packet for length 0), running its timers up to `deadline`, and on
        past it to say when a late packet came."""
        limit = _ns(deadline + LATE_SEARCH_S)
        while True:
            have = 0
            n = 0
            for p in self.pending:
                have += p["len"]
                n += 1
                if have >= length:
                    break
            if self.pending and have >= length:
                break
            nt = self.sock.next_timer()
            if nt is None or nt > limit:
                break
            self.sock.advance(nt)
            self.pending += self.sock.take_output()
        if not self.pending:
            return []
        got = [self.pending.pop(0)]
        while sum(p["len"] for p in got) < length and self.pending \
                and self.pending[0]["seq"] == got[-1]["seq"] + got[-1]["len"] and self.pending[0]["len"] > 0:
            got.append(self.pending.pop(0))
        return got

    def check_options(self, want: list, have: list, fail) -> None:
        if [o[0] for o in want] != [o[0] for o in have]:
            fail(f"TCP options: expected {format_options(want)}, the socket sent {format_options(have)}")
        for w, h in zip(want, have, strict=True):
            if w[0] == "TS":
                self.ts_map[w[1]] = h[1]
                if self.ts_first is None:
                    self.ts_first = (w[1], h[1])
                if w[2] != h[2]:
                    fail(f"TS ecr: expected {w[2]}, the socket echoed {h[2]}")
            elif w[0] == "sack":
                if [tuple(b) for b in w[1]] != [tuple(b) for b in h[1]]:
                    fail(f"SACK blocks: expected {w[1]}, the socket sent {h[1]}")
            elif w != h:
                fail(f"TCP option {w[0]}: expected {' '.join(map(str, w))}, the socket sent {' '.join(map(str, h))}")

    def code(self, ev: Event) -> None:
        if self.sock is None:
            info = {}
        else:
            info = self.sock.tcp_info(_ns(self.now))
        ns = self.code_ns
        for k in [k for k in ns if k.startswith("tcpi_")]:
            del ns[k]
        ns.update(info)
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code_text(ev.body), f"{self.path.name}:{ev.line}", "exec"),
                     {"__builtins__": CODE_BUILTINS}, ns)
        except NameError as exc:
            name = str(exc).split("'")[1] if "'" in str(exc) else str(exc)
            if name.startswith("tcpi_"):
                raise Unsupported(ev.line, f"{name}: a tcp_info field the simulator does not model") from None
            raise Unsupported(ev.line, f"Python name {name} in an assertion: not defined") from None
        except AssertionError as exc:
            # The failing statement: the innermost frame of the script's code.
            tb, lineno = exc.__traceback__, None
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == f"{self.path.name}:{ev.line}":
                    lineno = tb.tb_lineno
                tb = tb.tb_next
            code = code_text(ev.body).splitlines()
            statement = code[lineno - 1].strip() if lineno and lineno <= len(code) else ev.body.strip()
            raise Mismatch(ev.line, f"assertion failed: {statement} (value {exc})", statement,
                           ", ".join(f"{k}={v}" for k, v in sorted(info.items()))) from None
        except Exception as exc:  # noqa: BLE001 (the script's code is the user's)
            raise Unsupported(ev.line, f"assertion code raised {type(exc).__name__}: {exc}") from None


def run_script(path: Path, label: str | None = None) -> Outcome:
    """Runs one script; never raises for what the script contains."""
    name = label or str(path)
    try:
        events = parse(path.read_text())
    except ScriptError as exc:
        return Outcome(name, "unsupported", exc.line, exc.message)
    except OSError as exc:
        return Outcome(name, "unsupported", None, f"cannot read the script: {exc}")
    run = ScriptRun(path, events)
    try:
        run.execute()
    except Unsupported as exc:
        return Outcome(name, "unsupported", exc.line, exc.reason)
    except Mismatch as exc:
        return Outcome(name, "fail", exc.line, exc.reason, exc.expected, exc.produced)
    return Outcome(name, "pass")
