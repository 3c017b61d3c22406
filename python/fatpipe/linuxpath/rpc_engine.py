"""RPC flows of the traffic engine (standard library only; engine.py runs
these inside the namespaces).

Semantics follow the simulator (crates/sim/src/app.rs, engine.rs):

* each stream of an RPC flow group is one persistent TCP connection from
  the *client* (receiver namespace) to a *server* in the sender's namespace;
* an RPC is a request of `request_bytes` written by the client
  (receiver → sender) and a response of `response_bytes` written by the
  server (sender → receiver, through the bottleneck, with the flow's CCA
  and MSS on the server socket);
* requests are pipelined on the connection and answered in order, so the
  k-th RPC of a stream completes when k × response_bytes have arrived;
* closed loop: `concurrency` RPCs are issued per stream at the flow's start
  and each completion issues the next one at once;
* open loop: Poisson arrivals at `rate_per_s` per stream (exponential gaps
  from a seeded RNG), starting one gap after the flow's start; an arrival
  is queued on the connection whatever is outstanding; no arrival is
  scheduled past the end of the run;
* a row per completed RPC: stream, start_s = issue time (the scheduled
  arrival for the open loop) since the common start, duration_s = until
  the last response byte was read. RPCs unfinished at the end are dropped.
"""

from __future__ import annotations

import json
import random
import selectors
import socket
import time
from collections import deque

RECV_CHUNK_BYTES = 1 << 20
SEND_CHUNK_BYTES = 1 << 18
ZEROS = memoryview(bytes(SEND_CHUNK_BYTES))


# -- pure helpers (tested) --------------------------------------------------
def newly_done(received_bytes: int, done: int, unit_bytes: int) -> int:
    """Whole units (requests or responses) completed by `received_bytes`
    beyond the `done` already counted: in-order byte stream, fixed sizes."""
    return max(0, received_bytes // unit_bytes - done)


def poisson_gap_s(rng: random.Random, rate_per_s: float) -> float:
    """Exponential inter-arrival gap of a Poisson process (app.rs next_gap)."""
    return rng.expovariate(rate_per_s)


def stream_rng(seed: int, group: int, stream: int) -> random.Random:
    """A per-stream RNG: the same (seed, group, stream) gives the same gaps."""
    return random.Random(f"fatpipe-rpc-{seed}-{group}-{stream}")


def _mss_opt(s: socket.socket, maxseg_bytes: int) -> None:
    # The host computed TCP_MAXSEG for the flow's payload per segment
    # (fatpipe.wire.tcp_maxseg: the MSS covers the timestamp option).
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, int(maxseg_bytes))


def _sleep_until(t_wall: float) -> None:
    while (left := t_wall - time.time()) > 0:
        time.sleep(min(left, 0.05))


# -- server (sender namespace) ----------------------------------------------
class _ServerConn:
    __slots__ = ("sock", "received", "answered", "to_send")

    def __init__(self, sock: socket.socket):
        self.sock, self.received, self.answered, self.to_send = sock, 0, 0, 0


def _server_socket_opts(s: socket.socket, cfg: dict) -> None:
    from sampling import apply_pacing  # beside this file (run by path in a namespace)

    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cfg["cc"].encode())
    # A CPU-bound host modelled as a per-socket pacing cap, or a sender
    # paced as fq would pace it (qdisc.sender_qdisc): SO_MAX_PACING_RATE.
    apply_pacing(s, cfg)


def run_server(cfg: dict) -> int:
    """Listen, accept `streams` connections (accept order = the client's
    connect order = stream index), answer requests until the end time and
    sample TCP_INFO of every server socket like a bulk sender."""
    from sampling import sample_line  # beside this file (run by path in a namespace)

    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Set on the listener so accepted sockets inherit them: the MSS clamp
    # must be in place before the handshake (tcp_conn_request uses user_mss).
    _server_socket_opts(ls, cfg)
    _mss_opt(ls, cfg["maxseg_bytes"])
    ls.bind((cfg["addr"], cfg["port"]))
    ls.listen(cfg["streams"] + 16)
    print("ready", flush=True)
    t0 = cfg["t0_wall_s"]
    start, end = t0 + cfg.get("start_s", 0.0), t0 + cfg["duration_s"]
    ls.settimeout(max(0.1, t0 - time.time() + 5.0))
    conns = []
    for _ in range(cfg["streams"]):
        s, _ = ls.accept()
        _server_socket_opts(s, cfg)
        s.setblocking(False)
        conns.append(_ServerConn(s))
    ls.close()
    sel = selectors.DefaultSelector()
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
    buf = bytearray(RECV_CHUNK_BYTES)
    req, resp = cfg["request_bytes"], cfg["response_bytes"]
    interval = cfg["sample_interval_s"]
    _sleep_until(start)
    k = 0
    with open(cfg["samples_path"], "w") as out:
        while True:
            due = start + k * interval
            now = time.time()
            if now >= due:
                for i, c in enumerate(conns):
                    out.write(sample_line(c.sock, now - t0, i))
                out.flush()  # each interval whole on disk (linuxpath/tail.py)
                k += 1
                if now >= end:
                    break
                continue
            for key, events in sel.select(timeout=max(0.0, min(due, end) - now)):
                c = key.data
                if events & selectors.EVENT_READ:
                    n = _read_or_unregister(sel, c, buf)
                    if n == 0:
                        continue
                    if n > 0:
                        c.received += n
                        # In-order requests, answered in order (pipelining).
                        new = newly_done(c.received, c.answered, req)
                        c.answered += new
                        c.to_send += new * resp
                if events & selectors.EVENT_WRITE or c.to_send:
                    _send_pending(c)
                _watch_writable_while_sending(sel, c)
    for c in conns:
        c.sock.close()
    return 0


def _read_or_unregister(sel: selectors.BaseSelector, c, buf: bytearray) -> int:
    """Bytes read from `c.sock` into `buf`; -1 when nothing was ready; 0 at
    end of stream, after which the socket is no longer watched."""
    try:
        n = c.sock.recv_into(buf)
    except (BlockingIOError, InterruptedError):
        return -1
    if n == 0:
        sel.unregister(c.sock)
    return n


def _watch_writable_while_sending(sel: selectors.BaseSelector, c) -> None:
    """Watch `c.sock` for writability exactly while it has bytes to send."""
    want = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.to_send else 0)
    if sel.get_map().get(c.sock) is not None and sel.get_key(c.sock).events != want:
        sel.modify(c.sock, want, c)


def _send_pending(c: _ServerConn | _ClientConn) -> None:
    """Send as much of `c.to_send` (zero bytes) as the socket takes now."""
    while c.to_send > 0:
        try:
            n = c.sock.send(ZEROS[: min(c.to_send, SEND_CHUNK_BYTES)])
        except (BlockingIOError, InterruptedError):
            return
        c.to_send -= n


# -- client (receiver namespace) --------------------------------------------
class _ClientConn:
    __slots__ = ("index", "sock", "to_send", "issued", "received", "done", "next_arrival", "rng")

    def __init__(self, index: int, sock: socket.socket, rng: random.Random):
        self.index, self.sock, self.rng = index, sock, rng
        self.to_send = 0  # request bytes not yet written
        self.issued: deque[float] = deque()  # issue times of outstanding RPCs
        self.received = 0  # response bytes read
        self.done = 0  # RPCs completed
        self.next_arrival = float("inf")


def run_client(cfg: dict) -> int:
    """Connect `streams` persistent connections, issue RPCs (closed or open
    loop) from the flow's start to the end, write one JSON line per
    completed RPC to `rpcs_path`."""
    conns = []
    for i in range(cfg["streams"]):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cfg["cc"].encode())
        _mss_opt(s, cfg["maxseg_bytes"])
        s.connect((cfg["dst"], cfg["port"]))
        s.setblocking(False)
        conns.append(_ClientConn(i, s, stream_rng(cfg["seed"], cfg["group"], i)))
    print("connected", flush=True)
    t0 = cfg["t0_wall_s"]
    start, end = t0 + cfg.get("start_s", 0.0), t0 + cfg["duration_s"]
    req, resp = cfg["request_bytes"], cfg["response_bytes"]
    concurrency, rate = cfg.get("concurrency"), cfg.get("rate_per_s")
    sel = selectors.DefaultSelector()
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
    buf = bytearray(RECV_CHUNK_BYTES)
    rows: list[tuple[int, float, float]] = []

    def issue(c: _ClientConn, at: float) -> None:
        c.issued.append(at)
        c.to_send += req
        _send_pending(c)

    _sleep_until(start)
    now = time.time()
    for c in conns:
        if concurrency:
            for _ in range(concurrency):  # closed loop: `concurrency` in flight
                issue(c, now)
        else:  # open loop: first arrival one exponential gap after the start
            c.next_arrival = start + poisson_gap_s(c.rng, rate)
    while (now := time.time()) < end:
        for c in conns:
            while c.next_arrival <= now:
                issue(c, c.next_arrival)  # the arrival's own time is the start
                gap = poisson_gap_s(c.rng, rate)
                c.next_arrival = c.next_arrival + gap if c.next_arrival + gap <= end else float("inf")
        wake = min([end] + [c.next_arrival for c in conns])
        for key, events in sel.select(timeout=max(0.0, wake - now)):
            c = key.data
            if events & selectors.EVENT_READ:
                n = _read_or_unregister(sel, c, buf)
                if n == 0:
                    continue
                if n > 0:
                    t = time.time()
                    c.received += n
                    for _ in range(newly_done(c.received, c.done, resp)):
                        c.done += 1
                        if not c.issued:
                            continue  # a response nobody asked for: cannot happen
                        began = c.issued.popleft()
                        rows.append((c.index, began - t0, t - began))
                        if concurrency:
                            issue(c, t)  # closed loop: the next one at once
            if events & selectors.EVENT_WRITE:
                _send_pending(c)
            _watch_writable_while_sending(sel, c)
        for c in conns:  # a request written partly registers for writability
            if c.to_send and sel.get_map().get(c.sock) is not None:
                if not sel.get_key(c.sock).events & selectors.EVENT_WRITE:
                    sel.modify(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    for c in conns:
        c.sock.close()
    with open(cfg["rpcs_path"], "w") as out:
        for stream, start_s, duration_s in rows:
            out.write(json.dumps({"stream": stream, "start_s": start_s, "duration_s": duration_s}) + "\n")
    return 0

