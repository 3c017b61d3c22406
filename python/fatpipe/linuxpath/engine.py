"""fatpipe's traffic engine: the program run inside a namespace.

Standard library only, run by path (``python3 engine.py receiver|sender
CONFIG_JSON``) so it needs nothing from the fatpipe package inside the
namespace. The host side is flows.py (configs, parsers) and the backend that starts it.

* ``receiver``: listens on one port per flow group, reads and discards
  everything, prints ``ready`` once listening, exits at the deadline. Each
  listener carries its group's CCA (TCP_CONGESTION), which the accepted
  sockets inherit: the receiving end runs the flow's CCA, as the RPC
  client does (see run_receiver).
* ``sender``: opens `streams` TCP connections of one flow group with
  TCP_CONGESTION = cc and TCP_MAXSEG = mss, prints ``connected``, waits for
  the common start time, sends bulk data until the end time (as fast as
  the socket takes it, or, with an ``app`` limit, at its rates and pauses:
  AppWriter) and samples
  TCP_INFO (and TCP_CC_INFO) of every socket every `sample_interval_s` into
  a JSON-lines file (sampling.py; raw bytes, base64; parsed on the host by
  tcpinfo.py).

Bulk flows are the kind these two roles carry. RPC flows run as two more
roles from rpc_engine.py (same directory):

* ``server`` (sender namespace): answers requests with responses; its
  sockets carry the flow's CCA and MSS and are the ones sampled.
* ``client`` (receiver namespace): issues RPCs on persistent connections
  and records one row per completed RPC.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time

from sampling import apply_pacing, sample_line  # beside this file: the script's directory is on sys.path

CHUNK_BYTES = 1 << 20
# What a transfer connection sends first, before the run starts: its data
# set and its stream in it (network order), so the receiver can tell them apart.
TRANSFER_HEADER = struct.Struct("!II")


def _sleep_until(t_wall: float) -> None:
    while True:
        left = t_wall - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


# -- receiver ---------------------------------------------------------------
def _drain(conn: socket.socket, deadline: float) -> None:
    buf = bytearray(CHUNK_BYTES)
    conn.settimeout(0.5)
    try:
        while time.time() < deadline:
            try:
                if conn.recv_into(buf) == 0:
                    return
            except TimeoutError:
                continue
    except OSError:
        return
    finally:
        conn.close()


def _drain_transfer(conn: socket.socket, deadline: float, group: int, t0: float, record_fd: int) -> None:
    """Read one transfer connection to its end (the sender's FIN, or the
    deadline): its header (data set and stream, TRANSFER_HEADER), then count
    the bytes and note when the last arrived. Its record is one line
    appended to the record file in one write (O_APPEND), as soon as the
    connection ends, so the host can read the completed data sets once the
    senders are done."""
    buf = bytearray(CHUNK_BYTES)
    header = b""
    got = 0
    last = None
    conn.settimeout(0.5)
    try:
        while time.time() < deadline:
            try:
                n = conn.recv_into(buf)
            except TimeoutError:
                continue
            if n == 0:
                break
            now = time.time()
            if len(header) < TRANSFER_HEADER.size:
                take = min(n, TRANSFER_HEADER.size - len(header))
                header += bytes(buf[:take])
                n -= take
            if n:
                got += n
                last = now
    except OSError:
        pass
    finally:
        conn.close()
    if len(header) == TRANSFER_HEADER.size:
        transfer, stream = TRANSFER_HEADER.unpack(header)
        line = json.dumps({"group": group, "transfer": transfer, "stream": stream, "bytes": got,
                           "last_s": None if last is None else last - t0}) + "\n"
        os.write(record_fd, line.encode())


def receive_bulk(listener: socket.socket, deadline: float, threads: list[threading.Thread],
                 transfer: tuple[int, float, int] | None = None) -> None:
    """Accept and drain a group's connections until the deadline; a
    transfer group's (`transfer`: its group, t0 and the record file) are
    recorded (_drain_transfer)."""
    listener.settimeout(0.2)
    while time.time() < deadline:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        if transfer is not None:
            t = threading.Thread(target=_drain_transfer, args=(conn, deadline, *transfer), daemon=True)
        else:
            t = threading.Thread(target=_drain, args=(conn, deadline), daemon=True)
        t.start()
        threads.append(t)


def run_receiver(cfg: dict) -> int:
    deadline = cfg["deadline_wall_s"]
    threads: list[threading.Thread] = []
    acceptors = []
    record_fd = -1
    if cfg.get("transfers_path"):
        record_fd = os.open(cfg["transfers_path"], os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
    for group in cfg["groups"]:
        kind = group["kind"]
        if kind not in ("bulk", "transfer"):
            raise NotImplementedError(f"flow kind {kind!r} is not implemented by the kernel engine yet")
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # The receiving end runs the flow's CCA: Linux gives an accepted
        # socket its listener's CCA when that was set with TCP_CONGESTION
        # (tcp_ca_openreq_child(): icsk_ca_setsockopt), the namespace default
        # otherwise. It matters for CCAs with receiver-side hooks: a DCTCP
        # listener accepts the ECT SYN of a DCTCP sender (tcp_ca_needs_ecn(
        # listen_sk) in tcp_ecn_create_request()) and its sockets ACK at once
        # when the CE state flips (dctcp_ece_ack_update()); the simulator's
        # receiver models the same (DCTCP on both ends). A pure receiver
        # sends no data, so a loss-based CCA there changes nothing.
        if group.get("cc"):
            ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, group["cc"].encode())
        ls.bind((cfg["addr"], group["port"]))
        ls.listen(1024)
        transfer = (group["group"], cfg.get("t0_wall_s", 0.0), record_fd) if kind == "transfer" else None
        t = threading.Thread(target=receive_bulk, args=(ls, deadline, threads, transfer), daemon=True)
        acceptors.append(t)
    for t in acceptors:
        t.start()
    print("ready", flush=True)
    for t in acceptors:
        t.join()
    for t in threads:
        t.join(timeout=1.0)
    return 0


# -- sender -----------------------------------------------------------------
def open_stream(cfg: dict) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cfg["cc"].encode())
    # maxseg_bytes is the MSS for segments of mss_bytes payload (Linux
    # mss_cache): the host adds the timestamp option (fatpipe.wire.tcp_maxseg).
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, int(cfg["maxseg_bytes"]))
    # A CPU-bound host modelled as a per-socket pacing cap, or a sender
    # paced as fq would pace it (qdisc.sender_qdisc): SO_MAX_PACING_RATE.
    apply_pacing(s, cfg)
    s.connect((cfg["dst"], cfg["port"]))
    return s


class AppWriter:
    """An application-limited writer's schedule (the plan's AppLimit,
    docs/path-dynamics.md "Application-limited senders"), the simulator's
    rule (crates/sim/src/app_rate.rs): ticks every `tick_s` from the
    stream's start; a step at `at_s` (from the run's start t0) takes effect
    at the first tick at or after it; each tick at a limited rate and not
    paused owes the rate's bytes for one tick, the fraction carried; a pause
    owes nothing and is not caught up; ticks spent blocked in a write owe
    nothing (:meth:`skip_until`)."""

    def __init__(self, app: dict, t0_wall_s: float, start_wall_s: float):
        self.tick_s = float(app["tick_s"])
        self.start = start_wall_s
        self.steps = [(t0_wall_s + st["at_s"], st.get("rate_bps"), st.get("pause_s")) for st in app.get("steps", ())]
        self.rate_bps = app.get("rate_bps")
        self.paused_until = 0.0
        self.owed = 0.0
        self.next_tick = 0  # the index of the next tick to run

    def tick_time(self, k: int) -> float:
        return self.start + k * self.tick_s

    def _apply_steps(self, t: float) -> None:
        while self.steps and self.steps[0][0] <= t + 1e-9:
            at, rate, pause = self.steps.pop(0)
            if pause is not None:
                self.paused_until = max(self.paused_until, at + pause)
            else:
                self.rate_bps = rate

    def run_ticks(self, now: float) -> tuple[int, bool]:
        """Runs the ticks due by `now`: (bytes to write, whether the last
        one is unlimited: the application always has data)."""
        n = 0
        unlimited = False
        while self.tick_time(self.next_tick) <= now:
            t = self.tick_time(self.next_tick)
            self._apply_steps(t)
            paused = t < self.paused_until
            unlimited = not paused and self.rate_bps is None
            if unlimited:
                self.owed = 0.0
            elif not paused:
                self.owed += self.rate_bps * self.tick_s / 8
                whole = int(self.owed)
                self.owed -= whole
                n += whole
            self.next_tick += 1
        return n, unlimited

    def skip_until(self, t: float) -> None:
        """A write blocked until `t`: the ticks before it owe nothing
        (their steps still apply)."""
        while self.tick_time(self.next_tick) < t:
            self._apply_steps(self.tick_time(self.next_tick))
            self.next_tick += 1

    def next_change(self) -> float | None:
        """When the next step happens (None: no more), for an unlimited writer."""
        return self.steps[0][0] if self.steps else None


def _write(sock: socket.socket, data: memoryview, n: int, end_wall_s: float) -> None:
    """Write `n` bytes as a blocking write() does (it returns once all are
    in the send buffer), giving up at the end of the run."""
    while n > 0 and time.time() < end_wall_s:
        try:
            n -= sock.send(data[:min(n, len(data))])
        except TimeoutError:
            continue


def send_limited(sock: socket.socket, app: dict, t0_wall_s: float, start_wall_s: float, end_wall_s: float,
                 data: memoryview) -> None:
    """Write per `app` (AppWriter) from the stream's start to the end."""
    writer = AppWriter(app, t0_wall_s, start_wall_s)
    while True:
        now = time.time()
        if now >= end_wall_s:
            return
        n, unlimited = writer.run_ticks(now)
        if unlimited:
            until = min(end_wall_s, writer.next_change() or end_wall_s)
            while time.time() < until:
                try:
                    sock.send(data)
                except TimeoutError:
                    continue
            writer.skip_until(time.time())
            continue
        if n:
            _write(sock, data, n, end_wall_s)
            writer.skip_until(time.time())
        _sleep_until(min(end_wall_s, writer.tick_time(writer.next_tick)))


def _begin(sock: socket.socket, start_wall_s: float, first_send: list, i: int) -> memoryview:
    """A writer's start: short send timeouts (so the end is noticed), the
    wait for its start, the first send's time noted; its write buffer."""
    data = memoryview(bytearray(CHUNK_BYTES))
    sock.settimeout(0.1)
    _sleep_until(start_wall_s)
    first_send[i] = time.time()
    return data


def send_bulk(sock: socket.socket, start_wall_s: float, end_wall_s: float, errors: list[str],
              first_send: list, i: int, app: dict | None = None, t0_wall_s: float = 0.0) -> None:
    """Send from `start_wall_s` until `end_wall_s`; `first_send[i]` is the
    wall time of the stream's first send() (when its data began). Every
    stream's thread is running before the start and waits for it itself, so
    the streams begin within about a millisecond of each other instead of
    one thread start apart (~2 ms each with 32 streams under the GIL).
    With `app` (the plan's AppLimit) the writes follow its rates and
    pauses (send_limited), its steps' times counted from `t0_wall_s`."""
    data = _begin(sock, start_wall_s, first_send, i)
    try:
        if app is not None:
            send_limited(sock, app, t0_wall_s, start_wall_s, end_wall_s, data)
            return
        while time.time() < end_wall_s:
            try:
                sock.send(data)
            except TimeoutError:
                continue
    except OSError as e:
        errors.append(f"send: {e}")


def run_sender(cfg: dict) -> int:
    kind = cfg["kind"]
    if kind not in ("bulk", "transfer"):
        raise NotImplementedError(f"flow kind {kind!r} is not implemented by the kernel engine yet")
    t0 = cfg["t0_wall_s"]
    start = t0 + cfg.get("start_s", 0.0)
    end = t0 + cfg["duration_s"]
    interval = cfg["sample_interval_s"]
    errors: list[str] = []
    if kind == "transfer":
        socks, starts, workers, first_send = transfer_workers(cfg, t0, end, errors)
    else:
        socks = [open_stream(cfg) for _ in range(cfg["streams"])]
        starts = [start] * len(socks)
        first_send = [None] * len(socks)
        workers = [threading.Thread(target=send_bulk, args=(s, start, end, errors, first_send, i, cfg.get("app"), t0),
                                    daemon=True)
                   for i, s in enumerate(socks)]
    print("connected", flush=True)
    for w in workers:
        w.start()
    # The samples file appears at the start, as it always has (the hosts
    # tests wait for it as the sign that traffic runs).
    _sleep_until(start)
    with open(cfg["samples_path"], "w") as out:
        k = 0
        while True:
            due = start + k * interval
            _sleep_until(due)
            now = time.time()
            for i, s in enumerate(socks):
                if now >= starts[i]:  # a data set's streams from its start, as the simulator samples
                    out.write(sample_line(s, now - t0, i))
            out.flush()  # each interval whole on disk: the host reads them live (linuxpath/tail.py)
            k += 1
            if now >= end:
                break
    for w in workers:
        w.join(timeout=2.0)
    for s in socks:
        s.close()
    with open(cfg["first_send_path"], "w") as out:
        json.dump({"first_send_s": [None if t is None else t - t0 for t in first_send]}, out)
    if errors:
        print(json.dumps({"errors": errors[:10]}), file=sys.stderr)
    return 0


class ChunkPool:
    """A data set's bytes handed out in chunks to the streams that ask
    (split = "chunks": work stealing)."""

    def __init__(self, size_bytes: int, chunk_bytes: int):
        self.left = size_bytes
        self.chunk = chunk_bytes
        self.lock = threading.Lock()

    def take(self) -> int:
        with self.lock:
            n = min(self.chunk, self.left)
            self.left -= n
            return n


def send_transfer(sock: socket.socket, start_wall_s: float, end_wall_s: float, errors: list[str], first_send: list,
                  i: int, share: int | None, pool: ChunkPool | None) -> None:
    """Write one stream's part of a data set from its start: its `share`
    (split = "equal"), or chunks from `pool` until none is left, each a
    blocking write that returns once the chunk is in the send buffer; then
    close the sending direction (the receiver sees the end)."""
    data = _begin(sock, start_wall_s, first_send, i)
    try:
        if share is not None:
            _write(sock, data, share, end_wall_s)
        else:
            while (n := pool.take()) and time.time() < end_wall_s:
                _write(sock, data, n, end_wall_s)
        sock.shutdown(socket.SHUT_WR)
    except OSError as e:
        errors.append(f"send: {e}")


def transfer_workers(cfg: dict, t0: float, end: float, errors: list[str]):
    """A transfer group's connections, one set of `streams` per data set,
    each announcing itself (TRANSFER_HEADER) before the run starts, and
    their writers: (sockets, each one's start, threads, first sends)."""
    tr = cfg["transfer"]
    streams = cfg["streams"]
    socks, starts, workers = [], [], []
    first_send: list = [None] * (streams * len(tr["starts_s"]))
    for k, at_s in enumerate(tr["starts_s"]):
        pool = ChunkPool(tr["size_bytes"], tr["chunk_bytes"]) if tr["split"] == "chunks" else None
        for i in range(streams):
            s = open_stream(cfg)
            s.sendall(TRANSFER_HEADER.pack(k, i))
            j = len(socks)
            socks.append(s)
            starts.append(t0 + at_s)
            workers.append(threading.Thread(
                target=send_transfer, args=(s, t0 + at_s, end, errors, first_send, j,
                                            None if pool else tr["shares"][i], pool), daemon=True))
    return socks, starts, workers, first_send


def _roles() -> dict:
    import rpc_engine  # beside this file: the script's directory is on sys.path
    return {"sender": run_sender, "receiver": run_receiver,
            "server": rpc_engine.run_server, "client": rpc_engine.run_client}


def main(argv: list[str]) -> int:
    roles = _roles()
    if len(argv) != 3 or argv[1] not in roles:
        print(f"usage: engine.py {'|'.join(roles)} CONFIG_JSON", file=sys.stderr)
        return 2
    cfg = json.loads(argv[2])
    try:
        os.nice(-10)  # end hosts keep up with the path when other work shares the CPUs
    except OSError:
        pass
    return roles[argv[1]](cfg)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
