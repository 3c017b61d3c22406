"""The system calls a conformance script makes, applied to the simulated
socket: one connection, opened passively (socket, bind, listen, accept)
or actively (socket, connect), written to, closed. A call outside this
set, or one expected to fail, is refused as unsupported, naming it."""

from __future__ import annotations

import re
import weakref

from .. import _native
from .outcome import Mismatch, Unsupported
from .script import Event

# Socket options the simulated socket applies, by name, with how the
# value is written in a script ([N] integers, "name" strings).
APPLIED_OPTIONS = ("TCP_CONGESTION", "SO_SNDBUF", "SO_RCVBUF", "TCP_MAXSEG", "SO_MAX_PACING_RATE")
# Options that change nothing the model covers: address reuse, and
# TCP_NODELAY (every write fills whole segments, so Nagle never holds one).
IGNORED_OPTIONS = ("SO_REUSEADDR", "SO_REUSEPORT", "TCP_NODELAY")


def _int_arg(text: str) -> int | None:
    m = re.fullmatch(r"\[?\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*\]?", text.strip())
    return int(m.group(1), 0) if m else None


def _str_arg(text: str) -> str | None:
    m = re.fullmatch(r'"([^"]*)"', text.strip())
    return m.group(1) if m else None


class SyscallRunner:
    def __init__(self, run):
        # A weak reference: the run owns this runner, and a cycle would let
        # the cyclic collector drop the socket (a thread-bound native
        # object) on whatever thread it happens to run.
        self.run_state = weakref.proxy(run)
        self.listen_fd: int | None = None
        self.conn_fd: int | None = None

    def _unsupported(self, ev: Event, reason: str) -> Unsupported:
        return Unsupported(ev.line, reason)

    def _mismatch(self, ev: Event, reason: str, produced: str) -> Mismatch:
        return Mismatch(ev.line, reason, ev.text, produced)

    def _fd(self, ev: Event, index: int = 0) -> int:
        fd = _int_arg(ev.syscall.args[index]) if len(ev.syscall.args) > index else None
        if fd is None or fd not in (self.listen_fd, self.conn_fd):
            named = ev.syscall.args[index] if ev.syscall.args else "?"
            raise self._unsupported(ev, f"{ev.syscall.name}() on fd {named}: not the script's socket")
        return fd

    def _expect(self, ev: Event, value: int) -> None:
        want = _int_arg(ev.syscall.result)
        if want != value:
            raise self._mismatch(ev, f"{ev.syscall.name}() returned {value}, expected {ev.syscall.result}", str(value))

    def run(self, ev: Event) -> None:
        call = ev.syscall
        run = self.run_state
        now_ns = int(round(run.now * 1e9))
        if call.errno and call.errno != "EINPROGRESS":
            raise self._unsupported(ev, f"{call.name}() expected to fail with {call.errno}: "
                                        "error paths are not modelled")
        handler = getattr(self, f"call_{call.name}", None)
        if handler is None:
            raise self._unsupported(ev, f"system call {call.name}(): not modelled")
        try:
            handler(ev, now_ns)
        except ValueError as exc:
            raise self._unsupported(ev, str(exc)) from None

    def call_socket(self, ev: Event, _now_ns: int) -> None:
        run = self.run_state
        if run.sock is not None:
            raise self._unsupported(ev, "a second socket: the simulator runs one connection per script")
        if "SOCK_STREAM" not in ev.syscall.args:
            raise self._unsupported(ev, "a socket that is not SOCK_STREAM")
        run.sock = _native.ConformSocket(run.sysctls)
        self.listen_fd = _int_arg(ev.syscall.result)

    def call_setsockopt(self, ev: Event, _now_ns: int) -> None:
        self._fd(ev)
        args = ev.syscall.args
        if len(args) < 4:
            raise self._unsupported(ev, "setsockopt() with fewer than four arguments")
        name, raw = args[2], args[3]
        if name in IGNORED_OPTIONS:
            pass
        elif name in APPLIED_OPTIONS:
            value = _str_arg(raw) if name == "TCP_CONGESTION" else _int_arg(raw)
            if value is None:
                raise self._unsupported(ev, f"{name} value {raw!r}: expected [N] or \"name\"")
            self.run_state.sock.setsockopt(name, value)
        else:
            raise self._unsupported(ev, f"socket option {name}: not modelled")
        self._expect(ev, 0)

    def call_getsockopt(self, ev: Event, _now_ns: int) -> None:
        self._fd(ev)
        args = ev.syscall.args
        name = args[2] if len(args) > 2 else "?"
        if name == "TCP_MAXSEG":
            have = self.run_state.sock.maxseg()
        elif name == "SO_ERROR":
            have = 0  # no socket error: the modelled connection never fails
        else:
            raise self._unsupported(ev, f"getsockopt({name}): not modelled")
        want = _int_arg(args[3])
        if want != have:
            raise self._mismatch(ev, f"{name} is {have}, expected {want}", str(have))
        self._expect(ev, 0)

    def call_bind(self, ev: Event, _now_ns: int) -> None:
        self._fd(ev)
        self._expect(ev, 0)

    def call_fcntl(self, ev: Event, _now_ns: int) -> None:
        self._fd(ev)
        # O_NONBLOCK changes only whether calls wait, and no modelled call
        # waits: connect() and accept() are checked against the script.
        want = _int_arg(ev.syscall.result)
        if want is None:
            raise self._unsupported(ev, f"fcntl() returning {ev.syscall.result}")

    def call_listen(self, ev: Event, _now_ns: int) -> None:
        self._fd(ev)
        self.run_state.sock.listen()
        self._expect(ev, 0)

    def call_accept(self, ev: Event, _now_ns: int) -> None:
        self._fd(ev)
        if not self.run_state.sock.is_established():
            raise self._mismatch(ev, "accept(): no connection has completed its handshake", "no connection")
        self.conn_fd = _int_arg(ev.syscall.result)

    def call_connect(self, ev: Event, now_ns: int) -> None:
        self._fd(ev)
        self.run_state.sock.connect(now_ns)
        self.conn_fd = self.listen_fd
        self.run_state.collect()

    def _write(self, ev: Event, now_ns: int, size_arg: int) -> None:
        fd = self._fd(ev)
        if fd != self.conn_fd:
            raise self._unsupported(ev, f"{ev.syscall.name}() on the listening socket")
        size = _int_arg(ev.syscall.args[size_arg]) if len(ev.syscall.args) > size_arg else None
        if size is None:
            raise self._unsupported(ev, f"{ev.syscall.name}() size {ev.syscall.args[size_arg:size_arg + 1]}: "
                                        "expected a number")
        wrote = self.run_state.sock.write(now_ns, size)
        self._expect(ev, wrote)

    def call_write(self, ev: Event, now_ns: int) -> None:
        self._write(ev, now_ns, 2)

    def call_send(self, ev: Event, now_ns: int) -> None:
        if len(ev.syscall.args) > 3 and ev.syscall.args[3].strip() not in ("0", "MSG_DONTWAIT"):
            raise self._unsupported(ev, f"send() flags {ev.syscall.args[3]}: not modelled")
        self._write(ev, now_ns, 2)

    def call_close(self, ev: Event, now_ns: int) -> None:
        fd = self._fd(ev)
        if fd == self.conn_fd:
            self.run_state.sock.close(now_ns)
            self.run_state.collect()
        self._expect(ev, 0)

    def call_shutdown(self, ev: Event, now_ns: int) -> None:
        fd = self._fd(ev)
        how = ev.syscall.args[1].strip() if len(ev.syscall.args) > 1 else ""
        if fd != self.conn_fd or how not in ("SHUT_WR", "SHUT_RDWR"):
            raise self._unsupported(ev, f"shutdown({how}): only SHUT_WR on the connection is modelled")
        self.run_state.sock.close(now_ns)
        self.run_state.collect()
        self._expect(ev, 0)
