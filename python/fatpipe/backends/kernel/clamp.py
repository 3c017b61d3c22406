"""A flow's ``cwnd_clamp`` on the kernel path: a locked route metric.

Linux offers two ways to set ``tp->snd_cwnd_clamp`` from outside the CCA:

* a sock_ops BPF program calling ``bpf_setsockopt(TCP_BPF_SNDCWND_CLAMP)``
  (net/core/filter.c: ``tp->snd_cwnd_clamp = val; tp->snd_ssthresh = val``),
  which needs a compiled BPF object and a cgroup to attach it to;
* the route's ``cwnd lock N`` metric, read at connection start by
  tcp_init_metrics() (net/ipv4/tcp_metrics.c): ``if (tcp_metric_locked(tm,
  TCP_METRIC_CWND)) tp->snd_cwnd_clamp = tcp_metric_get(tm,
  TCP_METRIC_CWND)``, and ``ssthresh lock N`` the same way for
  ``snd_ssthresh`` (at most the clamp) when
  ``net.ipv4.tcp_no_ssthresh_metrics_save`` is 0; tcp_init_cwnd() then caps
  the initial window at the clamp.

fatpipe uses the route: nothing to compile or attach, and the result is
the BPF option's (clamp = ssthresh = N). The metric is per route, so per
sender namespace: every stream of every flow of that sender gets the same
clamp, and flows of one sender that ask for different clamps are refused.
It acts on connections of either direction of open (bulk senders connect,
RPC servers accept).

tcp_init_metrics() reads the metric through the tcp_metrics cache entry
of the (source, destination) pair and does not create one
(``tcp_get_metrics(sk, dst, false)``); a new entry copies the route's
metrics and locks (tcpm_suck_dst). On kernels without the 2025 change
that reads the locked cwnd from the route directly (Linux 6.18 among
them: measured there, cwnd grew to 136 under ``cwnd lock 20`` until an
entry existed), the first connection to the receiver would be unclamped. So
:func:`prime_metrics_cache` opens and closes one short connection from the
sender namespace with metrics saving on (tcp_update_metrics() creates the
entry at TIME-WAIT), turns saving off again, and checks with
``ip tcp_metrics`` that the entry holds the clamp. The entry also caches
that connection's RTT, which only seeds the first RTO of later
connections when it exceeds their handshake RTT (tcp_init_metrics).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import Protocol

from ...linuxpath.cmd import read_first_line
from .cleanup import stop_process

# Seconds to wait for the priming connection's metrics entry.
PRIME_TIMEOUT_S = 10.0
# Seconds the priming listener may take to print its port (a Python start).
LISTENER_READY_S = 10.0

# One line of `ip tcp_metrics show ADDR`: "198.19.0.1 age 0.01sec ssthresh 20 cwnd 20 rtt 69us …".
_METRIC = re.compile(r"\b(cwnd|ssthresh) (\d+)\b")


def route_metric_args(clamp_segments: int) -> list[str]:
    """`ip route` metric arguments that make tcp_init_metrics() set
    snd_cwnd_clamp = snd_ssthresh = `clamp_segments` (pure)."""
    n = str(int(clamp_segments))
    return ["cwnd", "lock", n, "ssthresh", "lock", n]


def cached_metrics(text: str) -> dict[str, int]:
    """cwnd and ssthresh of `ip tcp_metrics show ADDR` output (pure)."""
    return {k: int(v) for k, v in _METRIC.findall(text)}


class _Ns(Protocol):
    name: str

    def ip(self, *args: str) -> str: ...
    def run(self, *args: str, check: bool = True, timeout_s: float = 30.0) -> str: ...
    def sysctl(self, key: str, value: str | int) -> None: ...
    def popen(self, args, **kw) -> subprocess.Popen: ...


_LISTEN = ("import socket,sys\n"
           "s=socket.socket(); s.bind((sys.argv[1],0)); s.listen(1)\n"
           "print(s.getsockname()[1], flush=True)\n"
           "c,_=s.accept(); c.settimeout(10); c.recv(1); c.close()\n")
_CONNECT = ("import socket,sys\n"
            "s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=10)\n"
            "s.shutdown(socket.SHUT_WR); s.recv(1); s.close()\n")


def prime_metrics_cache(sender: _Ns, receiver: _Ns, receiver_addr: str, clamp_segments: int) -> None:
    """Create the sender's tcp_metrics entry for `receiver_addr` from its
    clamped route (module docstring), then check that it holds the clamp."""
    sender.sysctl("net.ipv4.tcp_no_metrics_save", 0)
    try:
        server = receiver.popen([sys.executable, "-c", _LISTEN, receiver_addr],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            port = read_first_line(server, f"cwnd clamp: the priming listener in {receiver.name}", stop_process,
                                   accept=str.isdigit, expected="port number", timeout_s=LISTENER_READY_S)
            sender.run(sys.executable, "-c", _CONNECT, receiver_addr, port, timeout_s=15.0)
            server.wait(timeout=15.0)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        deadline = time.monotonic() + PRIME_TIMEOUT_S
        while True:
            got = cached_metrics(sender.ip("tcp_metrics", "show", receiver_addr))
            if got.get("cwnd") == clamp_segments:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"cwnd clamp: {sender.name}'s tcp_metrics entry for {receiver_addr} holds "
                                   f"{got or 'nothing'}, not cwnd {clamp_segments}: the kernel would not clamp")
            time.sleep(0.05)
    finally:
        sender.sysctl("net.ipv4.tcp_no_metrics_save", 1)


__all__ = ["cached_metrics", "prime_metrics_cache", "route_metric_args"]
