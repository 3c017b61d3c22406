"""Reads a script in packetdrill's language into timed events.

The subset read is the one Linux's public TCP suites use: timed lines
(absolute, `+` relative, `~` ranges, `*` any time, `start...end` for
blocking calls), inbound (`<`) and outbound (`>`) TCP packets with flags,
sequence range, ack, window, options and an ECN codepoint in brackets,
system calls with their expected return value, `%{ ... }%` Python
assertions and backtick shell commands. Anything else is a
`ScriptError` naming the line, which the runner reports as unsupported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Flag letters as packetdrill writes them (tcp_packet.c), with the header
# bit each stands for (RFC 9293 §3.1; E and W are ECE and CWR, RFC 3168).
FLAG_BITS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, ".": 0x10, "U": 0x20, "E": 0x40, "W": 0x80}
CODEPOINTS = ("noecn", "ect0", "ect1", "ect01", "ce")


def flag_string(flags: int) -> str:
    """TCP header flags as packetdrill writes them (`S.`, `P.`, `SEW`)."""
    return "".join(c for c, b in FLAG_BITS.items() if flags & b)


class ScriptError(Exception):
    """A construct outside what the interpreter reads, at a line."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass
class Timing:
    """When an event happens: `kind` is "absolute", "relative" or "any";
    `start_s`/`end_s` in seconds (end differs from start for a range, or a
    blocking call's end)."""

    kind: str
    start_s: float
    end_s: float | None = None
    blocking_end_s: float | None = None


@dataclass
class TcpPacket:
    direction: str  # "<" inbound, ">" outbound
    flags: int
    seq: int
    end: int
    length: int
    ack: int | None
    win: int | None
    options: list[tuple] | None  # None: `<...>`, not checked; [] none expected
    codepoint: str | None  # None: not given, not checked

    def flag_string(self) -> str:
        return flag_string(self.flags)


@dataclass
class Syscall:
    name: str
    args: list[str]
    result: str  # the expected return value as written ("3", "-1")
    errno: str | None = None


@dataclass
class Event:
    line: int
    timing: Timing
    kind: str  # "packet", "syscall", "code", "command", "option"
    text: str
    packet: TcpPacket | None = None
    syscall: Syscall | None = None
    body: str = ""  # code or command text
    extra: dict = field(default_factory=dict)


_NUMBER = r"\+?\d*\.?\d+"
# A time, a range (`a~b`), or a blocking call's start and end (`a...b`).
_TIME = re.compile(rf"^(\*|{_NUMBER}(?:~{_NUMBER})?)(?:\s*\.\.\.\s*({_NUMBER}))?(?=\s|$)")


def _number(token: str, line: int) -> tuple[bool, float]:
    rel = token.startswith("+")
    try:
        return rel, float(token.lstrip("+"))
    except ValueError:
        raise ScriptError(line, f"bad time {token!r}") from None


def parse_timing(token: str, line: int) -> Timing:
    if token == "*":
        return Timing("any", 0.0)
    if "~" in token:
        a, b = token.split("~", 1)
        rel_a, start = _number(a, line)
        rel_b, end = _number(b, line)
        if rel_a != rel_b:
            raise ScriptError(line, f"time range {token!r} mixes relative and absolute ends")
        return Timing("relative" if rel_a else "absolute", start, end)
    rel, value = _number(token, line)
    return Timing("relative" if rel else "absolute", value)


def _strip_comment(line: str) -> str:
    """Drops a `//` comment outside quotes."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i]
    return line


def _nesting(text: str):
    """Each character with the bracket depth and quoting around it (after
    the character itself)."""
    depth, quoted = 0, False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth -= 1
        yield ch, depth, quoted


def _balanced(text: str) -> bool:
    final = 0
    for _, final, _ in _nesting(text):  # noqa: B007 (the depth after the last character)
        pass
    return final <= 0


def split_events(text: str) -> list[tuple[int, str | None, str]]:
    """Cuts a script into (line, time token or None, body) chunks:
    backtick commands and %{ }% blocks may span lines, as may a call
    whose brackets are still open at the end of a line."""
    lines = text.split("\n")
    out: list[tuple[int, str | None, str]] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        lineno = i + 1
        stripped = _strip_comment(raw).strip()
        i += 1
        if not stripped:
            continue
        token = None
        m = _TIME.match(stripped)
        if m:
            token = m.group(1) if m.group(2) is None else f"{m.group(1)}...{m.group(2)}"
            stripped = stripped[m.end():].strip()
        for opener, closer in (("`", "`"), ("%{", "}%")):
            if stripped.startswith(opener):
                body = stripped[len(opener):]
                while closer not in body:
                    if i >= len(lines):
                        raise ScriptError(lineno, f"{opener} without its closing {closer}")
                    body += "\n" + lines[i]
                    i += 1
                inner, _, rest = body.partition(closer)
                if _strip_comment(rest).strip():
                    raise ScriptError(lineno, f"text after {closer}: {rest.strip()!r}")
                out.append((lineno, token, opener + inner + closer))
                break
        else:
            while not _balanced(stripped) and i < len(lines):
                stripped += " " + _strip_comment(lines[i]).strip()
                i += 1
            out.append((lineno, token, stripped))
    return out


def _split_args(text: str) -> list[str]:
    args, cur = [], ""
    for ch, depth, quoted in _nesting(text):
        if ch == "," and depth == 0 and not quoted:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


def parse_options(text: str, line: int) -> list[tuple]:
    """`mss 1000,sackOK,nop,nop,nop,wscale 7` → option tuples."""
    opts: list[tuple] = []
    for part in (p.strip() for p in text.split(",")):
        words = part.split()
        if not words:
            continue
        kind = words[0]
        try:
            if kind == "nop" and len(words) == 1:
                opts.append(("nop",))
            elif kind == "sackOK" and len(words) == 1:
                opts.append(("sackOK",))
            elif kind == "mss" and len(words) == 2:
                opts.append(("mss", int(words[1])))
            elif kind == "wscale" and len(words) == 2:
                opts.append(("wscale", int(words[1])))
            elif kind == "TS" and len(words) == 5 and words[1] == "val" and words[3] == "ecr":
                opts.append(("TS", int(words[2]), int(words[4])))
            elif kind == "sack" and len(words) >= 2:
                blocks = []
                for b in words[1:]:
                    left, right = b.split(":")
                    blocks.append((int(left), int(right)))
                opts.append(("sack", blocks))
            else:
                raise ScriptError(line, f"TCP option {part!r}: not modelled")
        except ValueError:
            raise ScriptError(line, f"bad TCP option {part!r}") from None
    return opts


_SEQ = re.compile(r"^(\d+):(\d+)\((\d+)\)$")


def parse_packet(direction: str, body: str, line: int) -> TcpPacket:
    rest = body.strip()
    codepoint = None
    m = re.match(r"^\[([a-z0-9]+)\]\s*", rest)
    if m:
        codepoint = m.group(1)
        if codepoint not in CODEPOINTS:
            raise ScriptError(line, f"ECN codepoint [{codepoint}]: allowed {', '.join(CODEPOINTS)}")
        rest = rest[m.end():]
    options: list[tuple] | None = []
    if "<" in rest:
        rest, _, opt_text = rest.partition("<")
        if not opt_text.rstrip().endswith(">"):
            raise ScriptError(line, "TCP options without their closing '>'")
        opt_text = opt_text.rstrip()[:-1].strip()
        options = None if opt_text == "..." else parse_options(opt_text, line)
    words = rest.split()
    if len(words) < 2:
        raise ScriptError(line, f"not a TCP packet: {body.strip()!r}")
    flags = 0
    for ch in words[0]:
        if ch not in FLAG_BITS:
            raise ScriptError(line, f"TCP flag {ch!r} in {words[0]!r}: allowed {''.join(FLAG_BITS)}")
        flags |= FLAG_BITS[ch]
    sm = _SEQ.match(words[1])
    if not sm:
        raise ScriptError(line, f"sequence range {words[1]!r}: expected start:end(length)")
    seq, end, length = (int(x) for x in sm.groups())
    if end - seq != length:
        raise ScriptError(line, f"sequence range {words[1]!r}: end - start is not the length")
    ack = win = None
    i = 2
    while i < len(words):
        key = words[i]
        if key in ("ack", "win") and i + 1 < len(words):
            try:
                value = int(words[i + 1])
            except ValueError:
                raise ScriptError(line, f"{key} {words[i + 1]!r}: expected a number") from None
            if key == "ack":
                ack = value
            else:
                win = value
            i += 2
        else:
            raise ScriptError(line, f"packet field {key!r}: not modelled")
    return TcpPacket(direction, flags, seq, end, length, ack, win, options, codepoint)


_CALL = re.compile(r"^([a-z_0-9]+)\((.*)\)\s*=\s*(-?\w+)\s*(\w+)?\s*(\(.*\))?\s*$", re.S)


def parse_syscall(body: str, line: int) -> Syscall:
    m = _CALL.match(body.strip())
    if not m:
        raise ScriptError(line, f"not a system call with its result: {body.strip()[:60]!r}")
    name, args, result, errno, _ = m.groups()
    return Syscall(name, _split_args(args), result, errno)


def parse(text: str) -> list[Event]:
    """All events of a script, in order."""
    events: list[Event] = []
    for line, token, body in split_events(text):
        if token is None and body.startswith("--"):
            events.append(Event(line, Timing("absolute", 0.0), "option", body, body=body))
            continue
        if token is None and not body.startswith("`"):
            raise ScriptError(line, f"an event without a time: {body[:60]!r}")
        blocking_end = None
        if token and "..." in token:
            # `start...end call()`: a blocking call and when it returns.
            token, _, end = token.partition("...")
            blocking_end = _number(end, line)[1]
        timing = parse_timing(token, line) if token else Timing("absolute", 0.0)
        timing.blocking_end_s = blocking_end
        if body.startswith("`"):
            events.append(Event(line, timing, "command", body, body=body[1:-1]))
        elif body.startswith("%{"):
            events.append(Event(line, timing, "code", body, body=body[2:-2]))
        elif body[:1] in "<>":
            events.append(Event(line, timing, "packet", body, packet=parse_packet(body[0], body[1:], line)))
        else:
            events.append(Event(line, timing, "syscall", body, syscall=parse_syscall(body, line)))
    return events
