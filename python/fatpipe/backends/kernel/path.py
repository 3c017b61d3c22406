"""The emulated path: topology, bottleneck, delay and loss.

::

    sender ns s0 ─┐                                  (data →)
    sender ns s1 ─┼─ router ns ── FORWARD: NFQUEUE 0 ── tbf ── receiver ns
                  │             ◄── FORWARD: NFQUEUE 1 ───────  (← ACKs)

* **Bottleneck** (``PathConfig.bottleneck``):
  ``"tbf"`` (rate, burst, limit = buffer bytes) on the router's egress toward
  the receiver — tbf segments GSO packets larger than its burst and drops
  per packet at the byte limit, so overflow hits MSS segments; or
  ``"linkem"`` (the default when linkem is the delay line): the same FIFO
  rate + byte-limited tail-drop buffer computed inside linkem right after
  the delay. Measured on a 2-core VM: tbf arms its watchdog hrtimer once per
  packet (each one a VM exit), ~50 % of the path's CPU at 83 kpkt/s; with
  the bottleneck in linkem, packets leave in batch verdicts instead and
  1 Gbit/s at MTU 1500 runs without lateness. Both count wire bytes as
  IP length + 14 (Ethernet header). A CE threshold (``PathConfig.aqm``,
  linuxpath/ecn.py) marks inside linkem's bottleneck, per segment, so a
  marking path always takes linkem (emulator and bottleneck), even where
  netem exists; tbf with a CE threshold is refused. fq_codel
  (``PathConfig.aqm``) is Linux's qdisc in tbf's child slot, so it always
  takes the tbf bottleneck, behind either delay line, and only where the
  running kernel has the qdisc (probed before the path is built).
* **ECN negotiation**: ``net.ipv4.tcp_ecn`` of each sender and of the
  receiver namespace (``HostConfig.tcp_ecn``, per-netns sysctl).
* **Delay + loss, linkem** (where the probe finds no netem: kernels built
  without CONFIG_NET_SCH_NETEM):
  ``iptables -j NFQUEUE`` in the router's FORWARD chain sends each direction
  to its own queue; fatpipe-linkem holds every packet RTT/2 and, in the
  data queue only, drops each flow group's TCP data segments with the
  group's probability (``PathConfig.group_loss``, drawn from the
  simulator's seeded stage of that group). The queues are configured
  without NFQA_CFG_F_GSO, so nfnetlink_queue software-segments GSO packets
  before queueing: loss hits individual MSS segments while the senders keep
  TSO/GSO (cheap) — linkem reports the largest packet it saw to prove it.
  The delay line sits before the bottleneck queue (FORWARD precedes the
  egress qdisc), as propagation delay upstream of a router would.
* **Delay + loss, netem** (when ``tc qdisc add … netem`` works): netem on
  each sender's egress (RTT/2 + loss) and on the receiver's egress (RTT/2);
  TSO/GSO are switched off on the senders so netem drops MSS segments.
  netem applies one loss probability to all flow groups, so groups whose
  loss differs (corruption with different MSS) take linkem. The delay line
  is ``PathConfig.emulator`` (the spec's ``path.emulator``): "auto" takes
  linkem for a moving path; "netem" puts the path's loss model, jitter and
  slots on these netems as netem options (linuxpath/netem_map.py) and is
  refused where the probe finds no netem.
* **Loss acts where the bottleneck sits**: on packets travelling sender →
  receiver (bulk data, RPC responses), as a netem user who puts netem on
  that egress gets it, and as the simulator does; the receiver → sender
  direction (ACKs, RPC requests) is lossless with either delay line.
  (Not exercisable on kernels without netem.)
* **Extra RTT per sender** (``HostConfig.extra_rtt_s``, RTT fairness): added
  on the receiver → sender direction, as the simulator does (its ACK pipe
  of a stream is RTT/2 + sender extra + receiver extra). With linkem, each
  sender with its own reverse delay gets its own NFQUEUE (number
  ``QUEUE_SENDER_BASE + i``, matched by destination address ahead of the
  shared ACK rule); every queue keeps one constant delay, so each stays
  FIFO, and the bottleneck (queue 0) stays shared by all senders. With
  netem the extra delay is added to that sender's egress netem.
* **A sender's root qdisc** (``HostConfig.qdisc``, hosts.<name>.qdisc):
  probed on the sender's interface and made its root qdisc where the kernel
  has it (a sender with one takes linkem: netem would need that root);
  where it lacks fq, the sender's sockets are paced by TCP itself instead
  (qdisc.sender_qdisc, engine's ``internal_pacing``). The qdisc goes with
  the sender's namespace (its veth dies with it).
* Addresses come from 198.18.0.0/15 (RFC 2544 benchmarking range), used
  only inside the namespaces: sender i 198.18.i.1/24, receiver 198.19.0.1/24.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...linuxpath import cmd, parse
from ...linuxpath.config import (
    QUEUE_ACK,
    QUEUE_DATA,
    QUEUE_DATA_SPLIT,
    HostConfig,
    PathConfig,
    dynamics_refusal,
    gro_refusal,
    one_loss,
    one_loss_refusal,
)
from ...linuxpath.ecn import linkem_threshold, marks, path_refusal, qdisc_refusal
from ...linuxpath.linkem import (
    RT_PRIORITY,
    QueueConfig,
    build_linkem,
    dynamics_file,
    find_linkem,
    linkem_group_loss,
    moving_queues,
    reverse_queues,
    summarize,
)
from ...linuxpath.netem_map import direction_options, missing_netem
from ...linuxpath.qdisc import (
    SenderQdisc,
    bottleneck_qdiscs,
    netem_qdisc_args,
    probe_args,
    root_qdisc_args,
    sender_qdisc,
    tbf_bottleneck_args,
    tbf_burst_bytes,
)
from ...linuxpath.readback import OFFLOADS, parse_offloads
from ...linuxpath.stats import PathStats
from ...units import format_rate
from ...wire import TCP_IP_TS_HEADER_BYTES, frame_bytes
from .clamp import prime_metrics_cache, route_metric_args
from .delayline import Linkem
from .netns import Namespace, add_veth, new_prefix, receive_in_rt_napi_thread, set_offloads, veth_tx_drops
from .ownership import OwnershipRecord

RECEIVER_ADDR = "198.19.0.1"

# The highest bottleneck rate the kernel path accepts (KernelBackend.check).
# Measured on the 2-core VM of docs/kernel-path.md: veth between namespaces
# without TSO carries ~12 Gbit/s with no delay line at all, so a configured
# rate above this could never be the path's bottleneck: the CPU would be,
# and the run would report whatever it managed as if the link did it.
MAX_RATE_BPS = 10e9
# Where the delay line stayed on time on that machine (MTU -> rate), every
# segment through NFQUEUE, and with a GRO receiver (linkem's unit mode;
# CUBIC, 4 streams; BBR v1's ~10 % tail drops at 1 BDP keep it lower, on
# time to 3 Gbit/s at MTU 1500 and 5 Gbit/s at MTU 9000: bench/README.md).
# Rates between these and MAX_RATE_BPS are accepted (a faster machine may
# keep up); a run that falls behind is flagged emulator_late, host_drops,
# rate_short.
ON_TIME_RATE_BPS = {1500: 1e9, 9000: 3e9}
ON_TIME_RATE_BPS_GRO = {1500: 5e9, 9000: 10e9}


def rate_above_ceiling(rate_bps: float) -> str | None:
    """Why the kernel path cannot emulate `rate_bps`, or None if it may."""
    if rate_bps <= MAX_RATE_BPS:
        return None
    on_time = ", ".join(f"~{format_rate(r)} at MTU {m}" for m, r in sorted(ON_TIME_RATE_BPS.items()))
    on_time_gro = ", ".join(f"~{format_rate(r)} at MTU {m}" for m, r in sorted(ON_TIME_RATE_BPS_GRO.items()))
    return (f"path.rate {format_rate(rate_bps)} is above the kernel backend's ceiling of "
            f"{format_rate(MAX_RATE_BPS)}: veth between namespaces carries ~12 Gbit/s without TSO and the "
            f"delay line stays on time to {on_time} ({on_time_gro} with hosts.receiver.gro; "
            "docs/kernel-path.md), so the machine, not the "
            "emulated link, would set the rate; use the sim backend for this rate")


ROUTER_TO_RECEIVER_IF = "rcv"


def sender_addr(index: int) -> str:
    return f"198.18.{index + 1}.1"


def nfqueue_rules(iptables: str, sender_queues: dict[str, int] | None = None) -> list[list[str]]:
    """iptables commands (run in the router namespace) that send each
    direction through its NFQUEUE. No --queue-bypass: without linkem
    listening packets are dropped, never passed undelayed (fail-closed).
    `sender_queues` (sender address -> queue) gives senders their own
    reverse queue; those rules come first (the first NFQUEUE match wins:
    an accepted packet leaves the chain)."""
    rules = [[iptables, "-w", "-A", "FORWARD", "-o", ROUTER_TO_RECEIVER_IF, "-j", "NFQUEUE",
              "--queue-num", str(QUEUE_DATA)]]
    for addr, num in (sender_queues or {}).items():
        rules.append([iptables, "-w", "-A", "FORWARD", "-i", ROUTER_TO_RECEIVER_IF, "-d", f"{addr}/32",
                      "-j", "NFQUEUE", "--queue-num", str(num)])
    rules.append([iptables, "-w", "-A", "FORWARD", "-i", ROUTER_TO_RECEIVER_IF, "-j", "NFQUEUE",
                  "--queue-num", str(QUEUE_ACK)])
    return rules


def qdisc_available(ns: Namespace, ifname: str, kind: str) -> bool:
    """Probe: can a `kind` qdisc (qdisc.QDISC_CONFIG) be added as the root
    of `ifname` in `ns`? (removes it again)."""
    if not cmd.ok(ns.exec_args(probe_args(kind, ifname))):
        return False
    cmd.ok(ns.exec_args(["tc", "qdisc", "del", "dev", ifname, "root"]))
    return True


def iptables_binary(ns: Namespace) -> str:
    """iptables-legacy (pure xt, per-namespace tables) if it works, else
    iptables (nft with xt compat)."""
    for binary in ("iptables-legacy", "iptables"):
        if cmd.which(binary) and cmd.ok(ns.exec_args([binary, "-w", "-S", "FORWARD"])):
            return binary
    raise RuntimeError("no working iptables (need iptables-legacy or iptables-nft with NFQUEUE)")


class EmulatedPath:
    """Builds the topology on enter, removes it on exit."""

    def __init__(self, cfg: PathConfig, workdir: Path):
        self.cfg = cfg
        self.workdir = Path(workdir)
        self.prefix = new_prefix()
        # Written before each namespace, rule or linkem exists (ownership.py).
        self.record = OwnershipRecord.for_this_process(self.prefix)
        self.namespaces: list[Namespace] = []
        self.senders: dict[str, Namespace] = {}
        self.sender_addrs: dict[str, str] = {}
        self.linkem: Linkem | None = None
        self.ack_napi: dict[str, bool] = {}
        # Per sender that asked for a root qdisc: what it got (_sender_qdisc).
        self.sender_qdiscs: dict[str, SenderQdisc] = {}
        self.emulator = ""
        self.bottleneck = ""
        self._tbf_start: parse.QdiscStats | None = None
        self._ce_start = 0

    # -- topology -------------------------------------------------------
    def _ns(self, role: str) -> Namespace:
        ns = Namespace.create(f"{self.prefix}-{role}", self.record)
        self.namespaces.append(ns)
        return ns

    def _host_sysctls(self, ns: Namespace, host: HostConfig) -> None:
        # tcp_rmem[2] / tcp_wmem[2] bound autotuned buffers (per netns since 4.15).
        ns.sysctl("net.ipv4.tcp_rmem", f"4096 131072 {host.rmem_max_bytes}")
        ns.sysctl("net.ipv4.tcp_wmem", f"4096 16384 {host.wmem_max_bytes}")
        # Each run starts from a clean slate: no cached ssthresh/RTT.
        ns.sysctl("net.ipv4.tcp_no_metrics_save", 1)
        # ECN negotiation (tcp_ecn_send_syn / tcp_ecn_create_request).
        ns.sysctl("net.ipv4.tcp_ecn", host.tcp_ecn)

    def __enter__(self) -> EmulatedPath:
        try:
            self.build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.teardown()

    def build(self) -> None:
        c = self.cfg
        refused = path_refusal(c.aqm, c.emulator, c.bottleneck) or gro_refusal(c, c.emulator, c.bottleneck) \
            or (one_loss_refusal(c.group_loss, "netem") if c.emulator == "netem" else None) \
            or dynamics_refusal(c, c.emulator, c.bottleneck)
        if refused:  # before anything is built
            raise ValueError(refused)
        self.router = self._ns("r")
        self.router.sysctl("net.ipv4.ip_forward", 1)
        self.receiver = self._ns("rx")
        add_veth(self.router, ROUTER_TO_RECEIVER_IF, self.receiver, "eth0", c.mtu_bytes)
        if c.emulator == "netem" and not qdisc_available(self.router, ROUTER_TO_RECEIVER_IF, "netem"):
            raise ValueError(missing_netem("the running kernel"))
        self.router.ip("addr", "add", "198.19.0.254/24", "dev", ROUTER_TO_RECEIVER_IF)
        self.receiver.ip("addr", "add", f"{RECEIVER_ADDR}/24", "dev", "eth0")
        self.receiver.ip("route", "add", "default", "via", "198.19.0.254")
        self._host_sysctls(self.receiver, c.receiver)
        for i, (name, host) in enumerate(c.senders.items()):
            ns = self._ns(f"s{i}")
            router_if = f"s{i}"
            add_veth(self.router, router_if, ns, "eth0", c.mtu_bytes)
            self.router.ip("addr", "add", f"198.18.{i + 1}.254/24", "dev", router_if)
            ns.ip("addr", "add", f"{sender_addr(i)}/24", "dev", "eth0")
            clamp = host.cwnd_clamp_segments
            ns.ip("route", "add", "default", "via", f"198.18.{i + 1}.254", *(route_metric_args(clamp) if clamp else []))
            self._host_sysctls(ns, host)
            if clamp:
                # tcp_init_metrics() takes the route's locked ssthresh only then.
                ns.sysctl("net.ipv4.tcp_no_ssthresh_metrics_save", 0)
            self.senders[name] = ns
            self.sender_addrs[name] = sender_addr(i)
            if host.qdisc is not None:
                self.sender_qdiscs[name] = self._sender_qdisc(ns, host.qdisc)
        # A sender's own root qdisc takes the interface netem would use.
        sender_roots = sorted(name for name, q in self.sender_qdiscs.items() if q.tc_kind)
        emulator = c.emulator
        if emulator == "auto":
            # Marking is linkem's: a CE threshold takes it even where netem exists.
            # So does a GRO receiver (linkem's unit mode), loss that differs
            # between flow groups (linkem applies each group's), and a
            # sender with its own root qdisc.
            emulator = "linkem-nfqueue" if marks(c.aqm) or c.receiver_gro or one_loss_refusal(c.group_loss, "netem") \
                or sender_roots or c.moves \
                or not qdisc_available(self.router, ROUTER_TO_RECEIVER_IF, "netem") else "netem"
        if emulator == "netem" and sender_roots:
            raise ValueError(f"hosts.{sender_roots[0]}.qdisc = {self.sender_qdiscs[sender_roots[0]].asked!r} is the "
                             "root qdisc of the sender's interface, where path.emulator = \"netem\" puts its delay; "
                             "use path.emulator = \"linkem\" (or \"auto\") with a sender qdisc")
        bottleneck = c.bottleneck
        if bottleneck == "auto":
            # A qdisc discipline (fq_codel) sits below tbf, whatever the delay line.
            bottleneck = "linkem" if emulator == "linkem-nfqueue" and not bottleneck_qdiscs(c.aqm) else "tbf"
        if bottleneck == "linkem" and emulator != "linkem-nfqueue":
            raise ValueError("bottleneck='linkem' needs the linkem-nfqueue emulator")
        self.bottleneck = bottleneck
        if bottleneck == "tbf":
            refused = qdisc_refusal(c.aqm, [kind for kind in bottleneck_qdiscs(c.aqm)
                                            if qdisc_available(self.router, ROUTER_TO_RECEIVER_IF, kind)])
            if refused:
                raise ValueError(refused)
            burst = c.burst_bytes or tbf_burst_bytes(c.rate_bps, c.mtu_bytes)
            limit = max(c.buffer_bytes, frame_bytes(c.mtu_bytes))
            for command in tbf_bottleneck_args(ROUTER_TO_RECEIVER_IF, c.rate_bps, burst, limit, c.aqm):
                self.router.run(*command)
        if emulator == "netem":
            self._add_netem()
        else:
            self._add_linkem()
        self.emulator = emulator
        for name, ns in self.senders.items():
            clamp = c.senders[name].cwnd_clamp_segments
            if clamp:
                prime_metrics_cache(ns, self.receiver, RECEIVER_ADDR, clamp)

    @staticmethod
    def _sender_qdisc(ns: Namespace, asked: str) -> SenderQdisc:
        """The sender's asked root qdisc on its interface where the kernel has
        it (probed there), else what qdisc.sender_qdisc decides instead
        (internal pacing for fq). It lives and dies with the namespace."""
        decided = sender_qdisc(asked, qdisc_available(ns, "eth0", asked))
        if decided.tc_kind:
            ns.run(*root_qdisc_args("eth0", decided.tc_kind))
        return decided

    def _add_netem(self) -> None:
        c = self.cfg
        loss = one_loss(c, "netem")
        # The data direction's options on each sender's egress, the ACK
        # direction's on the receiver's (netem_map.py: a moving path's
        # loss model, jitter and slots as netem options).
        for name, ns in self.senders.items():
            set_offloads(ns, "eth0", False, ("tso", "gso"))  # netem must see MSS segments
            # Extra RTT of this sender (and of the receiver) on its own egress.
            extra_s = c.senders[name].extra_rtt_s + c.receiver.extra_rtt_s
            ns.run(*netem_qdisc_args("eth0", direction_options("data", c.rtt_s / 2 + extra_s, loss, c.dynamics)))
        # The reverse direction (ACKs, RPC requests) is lossless.
        self.receiver.run(*netem_qdisc_args("eth0", direction_options("ack", c.rtt_s / 2, 0.0, c.dynamics)))

    def _add_linkem(self) -> None:
        c = self.cfg
        binary = find_linkem() or build_linkem()
        # ACKs reach each sender through an RT NAPI thread, so the sender's
        # TCP work does not run inside linkem's verdict calls (docs/kernel-path.md).
        self.ack_napi = {name: receive_in_rt_napi_thread(ns, "eth0", self.router, f"s{i}", c.mtu_bytes, RT_PRIORITY)
                         for i, (name, ns) in enumerate(self.senders.items())}
        half = c.rtt_s / 2
        # Loss where the bottleneck sits: each flow group's, on this queue only.
        data = QueueConfig(QUEUE_DATA, "data", half, group_loss=linkem_group_loss(c))
        if self.bottleneck == "linkem":
            buffer_bytes = max(c.buffer_bytes, frame_bytes(c.mtu_bytes))
            data = replace(data, rate_bps=c.rate_bps, buffer_bytes=buffer_bytes, ce_threshold=linkem_threshold(c.aqm))
        if c.receiver_gro:
            # Unit mode (crates/linkem/src/units.rs): TSO packets whole
            # unless a segment inside is lost, dropped or marked.
            data = replace(data, split_queue=QUEUE_DATA_SPLIT, mss_by_port=dict(c.mss_by_port),
                           default_mss=max(c.mss_by_port.values(), default=c.mtu_bytes - TCP_IP_TS_HEADER_BYTES))
        reverse, own = reverse_queues(c, c.senders)
        queues = [data, *reverse]
        moving = c.moves
        if moving:
            queues = moving_queues(queues)
        sender_queues = {self.sender_addrs[name]: num for name, num in own.items()}
        self.linkem = Linkem(self.router, binary, queues, c.seed, self.workdir / "linkem-stats.json", self.record,
                             dynamics=dynamics_file(c) if moving else None)
        ipt = iptables_binary(self.router)
        for rule in nfqueue_rules(ipt, sender_queues):
            self.router.add_iptables_rule(rule)

    # -- measurements ---------------------------------------------------
    def tbf_stats(self) -> parse.QdiscStats:
        out = self.router.run("tc", "-s", "qdisc", "show", "dev", ROUTER_TO_RECEIVER_IF)
        for q in parse.tc_qdisc_stats(out):
            if q.kind == "tbf":
                return q
        raise RuntimeError(f"no tbf on {ROUTER_TO_RECEIVER_IF}: {out}")

    def ce_marks(self) -> int:
        """Packets the qdiscs toward the receiver marked CE (fq_codel's ecn_mark)."""
        out = self.router.run("tc", "-s", "qdisc", "show", "dev", ROUTER_TO_RECEIVER_IF)
        return sum(q.ecn_marks for q in parse.tc_qdisc_stats(out))

    def offloads(self) -> dict[str, dict[str, dict[str, bool]]]:
        """The offloads (readback.OFFLOADS) of every interface of the path as
        ``ethtool -k`` reads them: namespace ("receiver", "router", "sender
        NAME") -> interface -> {tso, gso, gro, lro}."""
        links = [("receiver", self.receiver, "eth0"), ("router", self.router, ROUTER_TO_RECEIVER_IF)]
        links += [("router", self.router, f"s{i}") for i in range(len(self.senders))]
        links += [(f"sender {name}", ns, "eth0") for name, ns in self.senders.items()]
        out: dict[str, dict[str, dict[str, bool]]] = {}
        for label, ns, ifname in links:
            got = parse_offloads(ns.run("ethtool", "-k", ifname))
            if set(got) != set(OFFLOADS):
                raise RuntimeError(f"ethtool -k {ifname} in {ns.name} lists {sorted(got)}, not {sorted(OFFLOADS)}")
            out.setdefault(label, {})[ifname] = got
        return out

    def end_warmup(self) -> None:
        """Lateness is reported for the measured part of the run only."""
        if self.linkem is not None:
            self.linkem.reset_lateness()

    def set_origin(self, t0_wall_s: float) -> None:
        """The run starts at `t0_wall_s`: a moving path's schedule counts from it."""
        if self.linkem is not None:
            self.linkem.set_origin(t0_wall_s)

    def mark_start(self) -> None:
        if self.bottleneck == "tbf":
            self._tbf_start = self.tbf_stats()
            self._ce_start = self.ce_marks()

    def finish(self) -> PathStats:
        """Stop the delay line and collect what the path did."""
        stats = PathStats(emulator=self.emulator)
        stats.details["bottleneck"] = self.bottleneck
        if self.bottleneck == "tbf":
            tbf, start = self.tbf_stats(), self._tbf_start
            # tbf's drops include its child's (fq_codel's CoDel and limit
            # drops reach it through qdisc_tree_reduce_backlog).
            stats.queue_drops = tbf.dropped - (start.dropped if start else 0)
            stats.bottleneck_bytes = tbf.sent_bytes - (start.sent_bytes if start else 0)
            stats.ce_marks = self.ce_marks() - self._ce_start
        if self.linkem is not None:
            raw = self.linkem.stop()
            self.linkem = None
            s = summarize(raw)
            stats.packets, stats.random_drops = s["data_packets"], s["dropped"]
            if self.bottleneck == "linkem":
                stats.queue_drops, stats.bottleneck_bytes = s["queue_drops"], s["bottleneck_bytes"]
                stats.ce_marks = s["ce_marks"]
            stats.late_p50_s, stats.late_p99_s, stats.late_max_s = s["late_p50_s"], s["late_p99_s"], s["late_max_s"]
            stats.policer_drops, stats.reordered = s["policer_drops"], s["reordered"]
            stats.details.update({"linkem": raw, "linkem_summary": s})  # keeps "bottleneck"
            sender_ifs = [f"s{i}" for i in range(len(self.senders))]
            stats.details["ack_napi"] = dict(self.ack_napi)
            stats.host_drops = veth_tx_drops(self.router, sender_ifs)
        return stats

    def teardown(self) -> None:
        if self.linkem is not None:
            try:
                self.linkem.stop()
            except Exception:  # noqa: BLE001
                pass
            self.linkem = None
        for ns in reversed(self.namespaces):
            ns.delete()
        self.namespaces.clear()
        if not self.record.namespaces:  # one that could not be deleted stays recorded
            self.record.discard()
