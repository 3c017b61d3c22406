"""The path of a run, applied on the testbed's emulator box.

The emulator forwards between the senders and the receiver. Its testbed
``interface`` is the one toward the receiver (checked against its routing
table). As on the kernel backend (fatpipe.linuxpath's model), in this order:

* **netem + tbf** where that kernel has netem (remote_probe.py) and the
  path does not move, or with path.emulator = "netem": tbf (rate,
  burst, limit = buffer) as the root of the interface toward the receiver
  with netem (RTT/2, loss) below it, and netem (RTT/2 + extra RTT, no
  loss) on each interface toward the senders; a moving path's loss model,
  jitter and slots are options of these netems per direction
  (linuxpath/netem_map.py). These qdiscs delay everything leaving those
  interfaces: keep the testbed's SSH off the test interfaces.
* **fatpipe's delay line** (linkem) otherwise: the binary is pushed into the
  run directory and started by the agent; iptables rules in the FORWARD
  chain send the run's packets (TCP between the test addresses, on the
  engine's ports only, so SSH between the same addresses is never delayed)
  to its NFQUEUEs: data toward the receiver through the delay, each flow
  group's loss and the bottleneck queue (rate, byte-limited tail drop),
  ACKs and RPC requests back through the reverse delay, without loss (one
  queue per sender with its own extra RTT).
* **fq_codel** (``path.aqm``, where the emulator's kernel has it, checked
  before the study): with netem, fq_codel in netem's child slot (it queues
  the packets whose delay is over, tbf paces them); with linkem, linkem
  only delays and tbf with fq_codel in its child slot is the bottleneck on
  the interface toward the receiver (qdisc.tbf_bottleneck_args, as on the
  kernel backend).

Every qdisc and rule is added through the agent's ``change`` op with the
command that removes it, so the agent (or `fatpipe clean --testbed`)
removes it whatever ends the run.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field

from ...linuxpath import parse
from ...linuxpath.config import QUEUE_ACK, QUEUE_DATA, PathConfig, one_loss, reverse_delays
from ...linuxpath.flows import group_port
from ...linuxpath.linkem import (
    QueueConfig,
    build_linkem,
    dynamics_file,
    find_linkem,
    linkem_args,
    linkem_group_loss,
    moving_queues,
    origin_text,
    reverse_queues,
    summarize,
)
from ...linuxpath.netem_map import direction_options
from ...linuxpath.qdisc import (
    bottleneck_qdiscs,
    fq_codel_args,
    netem_qdisc_args,
    tbf_args,
    tbf_bottleneck_args,
    tbf_burst_bytes,
)
from ...linuxpath.stats import PathStats
from ...wire import frame_bytes
from . import transport
from .remote_traffic import RemoteHost

LINKEM_FILE = "fatpipe-linkem"
# The class of netem (handle 10: below tbf, qdisc.netem_args) where it
# takes a child qdisc (netem_graft: netem has one class): fq_codel there
# queues packets whose delay is over.
NETEM_CHILD = "10:1"
LINKEM_READY_S = 10.0
IPTABLES_CANDIDATES = ("iptables-legacy", "iptables")


def port_range(groups: list[int]) -> str:
    """The engine's ports of a run's flow groups, as iptables multiport
    takes them: a range FIRST:LAST, or one port alone (multiport refuses a
    range whose ends are equal: "invalid portrange specified",
    libxt_multiport.c)."""
    first, last = group_port(min(groups)), group_port(max(groups))
    return f"{first}:{last}" if last > first else str(first)


def nfqueue_rule_specs(interface: str, receiver_addr: str, sender_queues: dict[str, int],
                       ports: str) -> list[list[str]]:
    """The FORWARD rules (without the iptables binary and -I/-D) that send
    the run's TCP packets to linkem (pure, tested): data toward the
    receiver to QUEUE_DATA, each sender's ACKs to its queue. No
    --queue-bypass: without linkem listening they are dropped, never passed
    undelayed (fail-closed)."""
    rules = []
    for sender_addr, ack_queue in sender_queues.items():
        rules.append(["-o", interface, "-p", "tcp", "-s", sender_addr, "-d", receiver_addr,
                      "-m", "multiport", "--ports", ports, "-j", "NFQUEUE", "--queue-num", str(QUEUE_DATA)])
        rules.append(["-i", interface, "-p", "tcp", "-s", receiver_addr, "-d", sender_addr,
                      "-m", "multiport", "--ports", ports, "-j", "NFQUEUE", "--queue-num", str(ack_queue)])
    return rules


@dataclass
class Interfaces:
    toward_receiver: str
    toward_sender: dict[str, str]  # sender role -> interface


async def route_interface(host: RemoteHost, conn: transport.HostConnection, addr: str) -> str:
    """The interface the emulator's routing table sends `addr` out of."""
    out = (await conn.run(["ip", "-j", "route", "get", addr])).stdout
    try:
        return json.loads(out)[0]["dev"]
    except (ValueError, KeyError, IndexError) as e:
        raise transport.HostError(host.name, str(conn.endpoint.target),
                                  f"cannot read `ip -j route get {addr}` ({e}): {out[:200]!r}") from None


@dataclass
class RemotePath:
    """The path on the emulator box for one run."""

    cfg: PathConfig
    emulator: RemoteHost
    conn: transport.HostConnection
    interface: str  # the testbed's: toward the receiver
    netem: bool  # the emulator's kernel has netem (else linkem)
    receiver_addr: str
    sender_addrs: dict[str, str]  # sender role -> test address
    groups: list[int]
    kind: str = ""
    linkem_pgid: int | None = None
    _tbf_start: parse.QdiscStats | None = None
    _ce_start: int = 0
    details: dict = field(default_factory=dict)

    async def interfaces(self) -> Interfaces:
        toward_rx = await route_interface(self.emulator, self.conn, self.receiver_addr)
        if toward_rx != self.interface:
            raise transport.HostError(
                self.emulator.name, str(self.conn.endpoint.target),
                f"testbed.hosts.{self.emulator.name}.interface = {self.interface!r}, but the route to the receiver "
                f"{self.receiver_addr} leaves through {toward_rx!r}: give the emulator's interface toward the "
                "receiver")
        toward = {role: await route_interface(self.emulator, self.conn, addr)
                  for role, addr in self.sender_addrs.items()}
        return Interfaces(toward_rx, toward)

    async def apply(self) -> None:
        ifs = await self.interfaces()
        if self.netem:
            await self._apply_netem(ifs)
        else:
            await self._apply_linkem()

    async def _change(self, do: list[str], undo: list[str]) -> None:
        await self.emulator.agent.change(do, undo)

    # ---- netem and tbf ----------------------------------------------------

    async def _apply_netem(self, ifs: Interfaces) -> None:
        c = self.cfg
        self.kind = "netem"
        burst = c.burst_bytes or tbf_burst_bytes(c.rate_bps, c.mtu_bytes)
        limit = max(c.buffer_bytes, frame_bytes(c.mtu_bytes))
        rx_if = ifs.toward_receiver
        await self._change(tbf_args(rx_if, c.rate_bps, burst, limit), ["tc", "qdisc", "del", "dev", rx_if, "root"])
        # Loss where the bottleneck sits (toward the receiver), one for all
        # flow groups (plan_problems refuses groups whose loss differs); a
        # moving path's options per direction (netem_map.py).
        data = direction_options("data", c.rtt_s / 2, one_loss(c, "netem on the emulator"), c.dynamics)
        await self._change(netem_qdisc_args(rx_if, data, parent="1:1"), ["tc", "qdisc", "del", "dev", rx_if, "root"])
        if bottleneck_qdiscs(c.aqm):
            # fq_codel in netem's child slot: netem hands it each packet once
            # its delay is over and tbf paces what fq_codel hands on, so the
            # standing queue (and CoDel's sojourn time) is fq_codel's.
            await self._change(fq_codel_args(rx_if, NETEM_CHILD, c.aqm), ["tc", "qdisc", "del", "dev", rx_if, "root"])
        shared, own = reverse_delays(c)
        delays: dict[str, float] = {}
        for role, ifname in ifs.toward_sender.items():
            delay = own.get(role, shared)
            if ifname in delays and abs(delays[ifname] - delay) > 1e-9:
                raise ValueError(f"senders behind interface {ifname} of the emulator ask for different extra RTTs; "
                                 "netem delays a whole interface (give each such sender its own interface)")
            delays[ifname] = delay
        for ifname, delay in delays.items():  # toward the senders: ACKs, RPC requests, no loss
            await self._change(netem_qdisc_args(ifname, direction_options("ack", delay, 0.0, c.dynamics)),
                               ["tc", "qdisc", "del", "dev", ifname, "root"])
        self.details["netem_interfaces"] = {"toward_receiver": rx_if, "toward_senders": sorted(delays)}

    async def _qdisc_stats(self) -> list[parse.QdiscStats]:
        out = (await self.conn.run(["tc", "-s", "qdisc", "show", "dev", self.interface])).stdout
        stats = parse.tc_qdisc_stats(out)
        if not any(q.kind == "tbf" for q in stats):
            raise RuntimeError(f"no tbf on {self.interface} of host {self.emulator.name}: {out[:300]}")
        return stats

    async def _tbf_stats(self) -> parse.QdiscStats:
        return next(q for q in await self._qdisc_stats() if q.kind == "tbf")

    async def _ce_marks(self) -> int:
        """Packets the qdiscs toward the receiver marked CE (fq_codel's ecn_mark)."""
        return sum(q.ecn_marks for q in await self._qdisc_stats())

    @property
    def tbf_bottleneck(self) -> bool:
        """The bottleneck is tbf on the emulator (with netem, or below
        linkem's delay for a qdisc discipline), not linkem's FIFO."""
        return self.netem or bool(bottleneck_qdiscs(self.cfg.aqm))

    # ---- linkem -------------------------------------------------------------

    async def _iptables(self) -> str:
        for binary in IPTABLES_CANDIDATES:
            if (await self.conn.run([binary, "-w", "-S", "FORWARD"], check=False)).ok:
                return binary
        raise transport.HostError(self.emulator.name, str(self.conn.endpoint.target),
                                  "no working iptables (iptables-legacy, or iptables with NFQUEUE) for the delay line")

    async def _push_linkem(self) -> str:
        machine = (await self.conn.run(["uname", "-m"])).stdout.strip()
        if machine != platform.machine():
            raise transport.HostError(self.emulator.name, str(self.conn.endpoint.target),
                                      f"the emulator is {machine} and has no netem; fatpipe's delay line is built "
                                      f"for {platform.machine()} here (enable netem on the emulator)")
        binary = find_linkem() or build_linkem()
        await self.emulator.agent.put(LINKEM_FILE, binary.read_bytes(), mode=0o700)
        return self.emulator.path(LINKEM_FILE)

    async def _apply_linkem(self) -> None:
        c = self.cfg
        self.kind = "linkem-nfqueue"
        binary = await self._push_linkem()
        buffer_bytes = max(c.buffer_bytes, frame_bytes(c.mtu_bytes))
        if self.tbf_bottleneck:
            # A qdisc discipline (fq_codel) below tbf on the interface toward
            # the receiver, after linkem's delay (FORWARD precedes the egress
            # qdisc), as on the kernel backend.
            data = QueueConfig(QUEUE_DATA, "data", c.rtt_s / 2, group_loss=linkem_group_loss(c))
            burst = c.burst_bytes or tbf_burst_bytes(c.rate_bps, c.mtu_bytes)
            for command in tbf_bottleneck_args(self.interface, c.rate_bps, burst, buffer_bytes, c.aqm):
                await self._change(command, ["tc", "qdisc", "del", "dev", self.interface, "root"])
        else:
            data = QueueConfig(QUEUE_DATA, "data", c.rtt_s / 2, rate_bps=c.rate_bps, buffer_bytes=buffer_bytes,
                               group_loss=linkem_group_loss(c))
        # Loss only toward the receiver, each flow group's; the reverse
        # queues (ACKs, RPC requests) are lossless.
        reverse, own = reverse_queues(c, self.sender_addrs)
        queues = [data, *reverse]
        dynamics = origin = None
        if c.moves:
            # A path that moves (or carries cross traffic): linkem applies the simulator's dynamics
            # (docs/path-dynamics.md), from the run's origin (set_origin).
            queues = moving_queues(queues)
            await self.emulator.agent.put("linkem-dynamics.json", dynamics_file(c).encode())
            dynamics, origin = self.emulator.path("linkem-dynamics.json"), self.emulator.path("linkem-origin")
        sender_queues = {addr: own.get(role, QUEUE_ACK) for role, addr in self.sender_addrs.items()}
        args = linkem_args(binary, queues, c.seed, self.emulator.path("linkem-stats.json"),  # type: ignore[arg-type]
                           parent_pid=self.emulator.agent.pid, dynamics_path=dynamics,  # type: ignore[arg-type]
                           origin_path=origin)  # type: ignore[arg-type]
        agent = self.emulator.agent
        self.linkem_pgid = await agent.start(args, stdout="linkem.out", stderr="linkem.err")
        await agent.wait_line(self.linkem_pgid, "ready", "linkem.out", "linkem.err", LINKEM_READY_S)
        ipt = await self._iptables()
        for rule in nfqueue_rule_specs(self.interface, self.receiver_addr, sender_queues, port_range(self.groups)):
            await self._change([ipt, "-w", "-I", "FORWARD", *rule], [ipt, "-w", "-D", "FORWARD", *rule])

    # ---- during and after the run ---------------------------------------------

    async def set_origin(self, t0_wall_s: float) -> None:
        """A moving path's schedule counts from the run's start `t0_wall_s`
        (the controller's clock): linkem gets it on the emulator's clock."""
        if self.linkem_pgid is not None and self.cfg.moves:
            await self.emulator.agent.put("linkem-origin", origin_text(self.emulator.host_time(t0_wall_s)).encode())
            await self.emulator.agent.signal(self.linkem_pgid, "USR2")

    async def mark_start(self) -> None:
        if self.tbf_bottleneck:
            self._tbf_start = await self._tbf_stats()
            self._ce_start = await self._ce_marks()

    async def end_warmup(self) -> None:
        """Lateness counts after the warm-up (linkem forgets it on SIGUSR1)."""
        if self.linkem_pgid is not None:
            await self.emulator.agent.signal(self.linkem_pgid, "USR1")

    async def finish(self) -> PathStats:
        stats = PathStats(emulator=self.kind)
        stats.details.update(self.details)
        stats.details["bottleneck"] = "tbf" if self.tbf_bottleneck else "linkem"
        if self.tbf_bottleneck:
            tbf, start = await self._tbf_stats(), self._tbf_start
            stats.queue_drops = tbf.dropped - (start.dropped if start else 0)
            stats.bottleneck_bytes = tbf.sent_bytes - (start.sent_bytes if start else 0)
            stats.ce_marks = await self._ce_marks() - self._ce_start
        if self.linkem_pgid is not None:
            await self.emulator.agent.stop(self.linkem_pgid, grace_s=5.0)  # SIGTERM: final statistics
            self.linkem_pgid = None
            raw = json.loads(await self.emulator.agent.get("linkem-stats.json"))
            if not raw.get("final"):
                raise RuntimeError(f"fatpipe-linkem on host {self.emulator.name} wrote no final statistics")
            s = summarize(raw)
            stats.packets, stats.random_drops = s["data_packets"], s["dropped"]
            if not self.tbf_bottleneck:
                stats.queue_drops, stats.bottleneck_bytes = s["queue_drops"], s["bottleneck_bytes"]
            stats.late_p50_s, stats.late_p99_s, stats.late_max_s = s["late_p50_s"], s["late_p99_s"], s["late_max_s"]
            stats.policer_drops, stats.reordered = s["policer_drops"], s["reordered"]
            stats.details.update({"linkem": raw, "linkem_summary": s})
        return stats
