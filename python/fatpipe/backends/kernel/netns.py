"""Network namespaces, veth links, addresses and per-namespace sysctls.

Names are ``fp-<pid>-<n>-<role>`` (unique per process and topology); each
is written to the run's ownership record before it is created
(ownership.py), which is what `fatpipe clean` trusts, not the name. Only commands of the form
``ip -n NS …`` / ``ip netns exec NS …`` touch network state: the host's own
interfaces, routes and sysctls are never changed.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from collections.abc import Sequence

from ...linuxpath import cmd
from .cleanup import REGISTRY, remove_namespace
from .ownership import NAME_PREFIX, OwnershipRecord

_counter = itertools.count()

# Sysctls that are per network namespace (so writing them inside a
# namespace never changes the host). Anything else is refused.
PER_NETNS_SYSCTLS = frozenset({
    "net.ipv4.ip_forward",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_no_ssthresh_metrics_save",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_adv_win_scale",
    "net.ipv6.conf.all.disable_ipv6",
    "net.ipv6.conf.default.disable_ipv6",
})


# Where `ip netns add` bind-mounts a named namespace (ip-netns(8)).
NETNS_RUN_DIR = "/run/netns/"

# Per-link settings a namespace may write (Namespace.write_net_sysfs).
NET_SYSFS = "/sys/class/net/"


def new_prefix() -> str:
    """``fp-<pid>-<n>``: unique within this host while this process lives."""
    return f"{NAME_PREFIX}{os.getpid()}-{next(_counter)}"


class Namespace:
    """One network namespace, deleted (with its processes) on release."""

    def __init__(self, name: str, record: OwnershipRecord | None = None):
        if not name.startswith(NAME_PREFIX):
            raise ValueError(f"namespace {name!r} must start with {NAME_PREFIX!r}")
        self.name = name
        self.record = record

    @classmethod
    def create(cls, name: str, record: OwnershipRecord) -> Namespace:
        """Record `name` as this run's (before it exists), then create it."""
        record.claim_namespace(name)
        ns = cls(name, record)
        REGISTRY.add(f"netns {name}", ns.delete)
        cmd.run(["ip", "netns", "add", name])
        ns.ip("link", "set", "lo", "up")
        return ns

    def delete(self) -> None:
        REGISTRY.discard(f"netns {self.name}")
        remove_namespace(self.name)
        # Forgotten only once gone (`ip netns add` made /run/netns/<name>).
        if self.record is not None and not os.path.lexists(f"{NETNS_RUN_DIR}{self.name}"):
            self.record.release_namespace(self.name)

    def add_iptables_rule(self, rule: Sequence[str]) -> None:
        """Run an ``iptables … -A …`` command in this namespace, recorded
        first (so `fatpipe clean` knows it is fatpipe's)."""
        if self.record is not None:
            self.record.claim_iptables_rule(self.name, list(rule))
        self.run(*rule)

    def ip(self, *args: str) -> str:
        return cmd.run(["ip", "-n", self.name, *args])

    def exec_args(self, args: Sequence[str]) -> list[str]:
        """The argument list that runs `args` inside this namespace."""
        return ["ip", "netns", "exec", self.name, *args]

    def run(self, *args: str, check: bool = True, timeout_s: float = 30.0) -> str:
        return cmd.run(self.exec_args(args), check=check, timeout_s=timeout_s)

    def sysctl(self, key: str, value: str | int) -> None:
        """Set a per-namespace sysctl (refuses host-global keys)."""
        if key not in PER_NETNS_SYSCTLS:
            raise ValueError(f"sysctl {key} is not known to be per-namespace; refusing to set it")
        path = "/proc/sys/" + key.replace(".", "/")
        # `ip netns exec` remounts /proc/sys/net for the namespace; writing
        # through `sh -c` is avoided: sysctl(8) takes the value as an argument.
        self.run("sysctl", "-q", "-w", f"{key}={value}")
        got = self.run("cat", path).split()
        if got != str(value).split():
            raise RuntimeError(f"{self.name}: {key} is {got}, wanted {value}")

    def write_net_sysfs(self, path: str, value: str) -> None:
        """Write `value` to /sys/class/net/… as this namespace sees it (`ip
        netns exec` mounts the namespace's own /sys). tee(1) takes the path
        as an argument and the value on stdin: no shell."""
        if not path.startswith(NET_SYSFS) or ".." in path:
            raise ValueError(f"refusing to write {path}: only {NET_SYSFS}… of a namespace's own links")
        cmd.run(self.exec_args(["tee", path]), input_text=value)

    def popen(self, args: Sequence[str], **kw) -> subprocess.Popen:
        """Start `args` inside the namespace in its own session (so a
        terminal's Ctrl-C reaches fatpipe, which then stops it in order)."""
        return subprocess.Popen(self.exec_args(args), start_new_session=True, **kw)


def add_veth(a: Namespace, a_if: str, b: Namespace, b_if: str, mtu_bytes: int) -> None:
    """A veth pair with one end in each namespace (created inside `a`, so no
    interface ever appears in the host namespace)."""
    a.ip("link", "add", a_if, "mtu", str(mtu_bytes), "type", "veth",
         "peer", "name", b_if, "mtu", str(mtu_bytes), "netns", b.name)
    a.ip("link", "set", a_if, "up")
    b.ip("link", "set", b_if, "up")


def set_offloads(ns: Namespace, ifname: str, on: bool, features: Sequence[str] = ("tso", "gso", "gro")) -> None:
    args = ["ethtool", "-K", ifname]
    for f in features:
        args += [f, "on" if on else "off"]
    ns.run(*args)



def napi_thread_pids() -> set[str]:
    """PIDs of the kernel's threaded-NAPI pollers (`napi/<dev>-<id>`)."""
    out = subprocess.run(["pgrep", "^napi/"], capture_output=True, text=True, check=False).stdout
    return set(out.split())


def receive_in_rt_napi_thread(rx_ns: Namespace, rx_if: str, tx_ns: Namespace, tx_if: str,
                              mtu_bytes: int, rt_priority: int) -> bool:
    """Make packets that `tx_if` sends to its veth peer `rx_if` be received
    by a NAPI kernel thread at SCHED_FIFO `rt_priority` instead of inside the
    sender's call. Returns False (and leaves the link as it was) when the
    thread cannot be identified.

    The delay line re-injects ACKs with a batch verdict; without this, the
    sender's whole ACK processing and the data it then transmits (through
    iptables into NFQUEUE again) run inside linkem's verdict call, which
    made linkem tens of ms late with several BBR streams. veth uses its NAPI
    ring only when the receiving end has GRO on and the sending end has TSO
    off (veth_skb_is_eligible_for_gro()); `threaded` moves the poll into a
    kthread. gro_max_size of one MTU keeps GRO from merging ACKs. The thread
    must be real-time: at normal priority it starved behind linkem and
    veth's 256-packet ring overflowed."""
    tx_ns.run("ethtool", "-K", tx_if, "tso", "off")
    rx_ns.run("ethtool", "-K", rx_if, "gro", "on")
    rx_ns.ip("link", "set", "dev", rx_if, "gro_max_size", str(mtu_bytes))
    before = napi_thread_pids()
    rx_ns.write_net_sysfs(f"{NET_SYSFS}{rx_if}/threaded", "1")
    new = napi_thread_pids() - before
    if len(new) == 1 and cmd.ok(["chrt", "-f", "-p", str(rt_priority), new.pop()]):
        return True
    rx_ns.write_net_sysfs(f"{NET_SYSFS}{rx_if}/threaded", "0")
    rx_ns.run("ethtool", "-K", rx_if, "gro", "off")
    return False


def veth_tx_drops(ns: Namespace, ifnames: Sequence[str]) -> int:
    """Packets veth dropped on transmit from these interfaces (a full peer
    ring), which no other counter of the path sees."""
    links = json.loads(ns.run("ip", "-s", "-j", "link"))
    return sum(link["stats64"]["tx"]["dropped"] for link in links if link["ifname"] in ifnames)
