"""The ns-3 side of bench/ns3_compare.py: one bulk TCP flow over a dumbbell.

Runs inside the separate ns-3 virtualenv (see bench/requirements-ns3.txt),
never in the project's environment: ns3_compare.py starts it as a
subprocess with that venv's python, so a crash or a very long run stays
bounded by a timeout.

    "$FATPIPE_NS3_PYTHON" bench/ns3_scenario.py --cc bbr   # the ns-3 venv's python

Topology (one sender, one receiver):

    sender --10 Gbit/s, 0 ms-- R1 ==1 Gbit/s, 10 ms== R2 --10 Gbit/s, 0 ms-- receiver

R1's bottleneck device holds the only real queue: a drop-tail queue of
--buffer-bytes (no queue disc in front of it; every other device queue is
large enough never to drop). Random loss is a RateErrorModel in packet units
on R2's bottleneck device (receive side), so it hits data packets only (ACKs
travel the other way). TCP is configured to Linux defaults where ns-3 has
the attribute: initial cwnd 10, delayed ACK every 2 segments (40 ms
timeout, Linux's TCP_DELACK_MIN), SACK, timestamps, window scaling, min RTO
200 ms, PRR recovery; MSS 1448 payload bytes (1500-byte IP packets with the
timestamp option).

Prints one line "RESULT <json>" on stdout: wall times (around
Simulator::Run only, and the whole script including the ns-3 import),
bytes the PacketSink received at the warm-up mark and at the end, goodput
over the measured span, and the drop counts (bottleneck drop-tail, random
loss). Before it, one "PROGRESS ..." line per --progress-s of simulated time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

T_START = time.perf_counter()

CCAS = {"bbr": "ns3::TcpBbr", "cubic": "ns3::TcpCubic"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cc", choices=sorted(CCAS), required=True)
    p.add_argument("--rate-bps", type=float, default=1e9, help="bottleneck rate")
    p.add_argument("--rtt-s", type=float, default=0.02, help="base RTT (propagation)")
    p.add_argument("--loss", type=float, default=1e-5, help="random loss per data packet")
    p.add_argument("--buffer-bytes", type=int, default=2_500_000, help="bottleneck drop-tail buffer")
    p.add_argument("--mtu-bytes", type=int, default=1500)
    p.add_argument("--mss-bytes", type=int, default=1448)
    p.add_argument("--duration-s", type=float, default=10.0)
    p.add_argument("--warmup-s", type=float, default=2.0)
    p.add_argument("--sock-buf-bytes", type=int, default=32 << 20, help="SndBufSize and RcvBufSize")
    p.add_argument("--access-rate", default="10Gbps", help="sender and receiver access links")
    p.add_argument("--send-size", type=int, default=128 * 1024, help="BulkSend bytes per write")
    p.add_argument(
        "--seed", type=int, default=1, help="ns-3 run number (RngRun); the RNG seed stays 1"
    )
    p.add_argument("--progress-s", type=float, default=0.5, help="PROGRESS line every this much sim time")
    p.add_argument(
        "--cwnd-trace-s",
        type=float,
        default=0.0,
        help="print the sender's cwnd every this much sim time (CWND lines) and each ssthresh "
        "or congestion-state change (CCEVENT lines); 0 = off",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="extra ns3::Config::SetDefault, e.g. ns3::TcpSocketBase::Sack=false (repeatable)",
    )
    return p.parse_args(argv)


_COUNTERS_CPP = r"""
#include "ns3/point-to-point-net-device.h"
#include "ns3/queue.h"
#include "ns3/traffic-control-layer.h"
namespace fatpipe_bench {
using namespace ns3;
// With no queue disc, the traffic-control layer drops a packet when the
// device queue has stopped (full): that, plus any drop by the queue itself,
// is the bottleneck's drop-tail count.
uint64_t tc_drops = 0, queue_drops = 0, random_drops = 0;
void OnTcDrop(Ptr<const Packet>) { ++tc_drops; }
void OnQueueDrop(Ptr<const Packet>) { ++queue_drops; }
void OnRxDrop(Ptr<const Packet>) { ++random_drops; }
uint64_t BottleneckDrops() { return tc_drops + queue_drops; }
void Hook(Ptr<Node> r1, Ptr<PointToPointNetDevice> r1dev, Ptr<PointToPointNetDevice> r2dev) {
    r1->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", MakeCallback(&OnTcDrop));
    r1dev->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&OnQueueDrop));
    r2dev->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnRxDrop));
}
}
"""


_CWND_TRACE_CPP = r"""
#include "ns3/config.h"
#include "ns3/simulator.h"
#include "ns3/tcp-socket-state.h"
#include <cstdio>
namespace fatpipe_trace {
using namespace ns3;
// The sender's TcpSocketState trace sources, in C++ so no Python runs per
// ACK: cwnd and ssthresh sampled every dt, and every ssthresh or
// congestion-state change printed as it happens (with cwnd at that time).
uint32_t cwnd = 0, ssthresh = 0, mss = 1;
void Event(const char* kind, uint64_t old_v, uint64_t new_v) {
    std::printf("CCEVENT t=%.6f kind=%s old=%llu new=%llu cwnd_seg=%.1f\n",
                Simulator::Now().GetSeconds(), kind, (unsigned long long)old_v,
                (unsigned long long)new_v, double(cwnd) / mss);
    std::fflush(stdout);
}
void OnCwnd(uint32_t, uint32_t v) { cwnd = v; }
void OnSsthresh(uint32_t old_v, uint32_t v) {
    ssthresh = v;
    Event("ssthresh_seg", old_v / mss, v / mss);
}
void OnState(TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n) {
    Event("cong_state", o, n);
}
void Sample(double dt) {
    std::printf("CWND t=%.4f cwnd_seg=%.1f ssthresh_seg=%.1f\n", Simulator::Now().GetSeconds(),
                double(cwnd) / mss, double(ssthresh) / mss);
    std::fflush(stdout);
    Simulator::Schedule(Seconds(dt), &Sample, dt);
}
void Connect(double dt) {
    // ns-3's attribute namespace, not a path outside the repository.
    std::string s = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(s + "CongestionWindow", MakeCallback(&OnCwnd));
    Config::ConnectWithoutContext(s + "SlowStartThreshold", MakeCallback(&OnSsthresh));
    Config::ConnectWithoutContext(s + "CongState", MakeCallback(&OnState));
    Sample(dt);
}
// The socket exists once BulkSend has started (t = 0): connect just after.
void Start(double dt, uint32_t segment_size) {
    mss = segment_size;
    Simulator::Schedule(MicroSeconds(1), &Connect, dt);
}
}
"""


def _start_cwnd_trace(dt_s: float, mss_bytes: int) -> None:
    """CWND and CCEVENT lines on stdout (cong_state: 0 open, 1 disorder,
    2 cwr, 3 recovery, 4 loss)."""
    import cppyy

    cppyy.cppdef(_CWND_TRACE_CPP)
    cppyy.gbl.fatpipe_trace.Start(dt_s, mss_bytes)


def _counters():
    """Drop counters in C++ (cppyy JIT): trace callbacks, no Python per packet."""
    import cppyy

    cppyy.cppdef(_COUNTERS_CPP)
    return cppyy.gbl.fatpipe_bench


def _die_with_parent() -> None:
    """Linux: get SIGKILL when the parent (ns3_compare.py) dies, so no orphan
    ns-3 run keeps a core busy after the comparison was interrupted."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: nothing to do
        pass


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _die_with_parent()

    from importlib.metadata import version

    from ns import ns  # the cppyy-based bindings of the PyPI package `ns3`

    t_imported = time.perf_counter()

    # ---- TCP defaults, Linux-like where ns-3 has the attribute -------------
    cfg = ns.Config.SetDefault
    cfg("ns3::TcpL4Protocol::SocketType", ns.StringValue(CCAS[args.cc]))
    cfg("ns3::TcpL4Protocol::RecoveryType", ns.StringValue("ns3::TcpPrrRecovery"))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(args.mss_bytes))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(args.sock_buf_bytes))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(args.sock_buf_bytes))
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    cfg("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(40)))
    cfg("ns3::TcpSocket::TcpNoDelay", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
    for item in args.set:
        path, _, value = item.partition("=")
        cfg(path, ns.StringValue(value))
    # TcpBbr turns pacing on by itself; CUBIC stays unpaced, as in Linux
    # without the fq qdisc.

    # --seed selects ns-3's run number (an independent substream), not its
    # seed. SetSeed(s) fills MRG32k3a's state with s, and the generator is
    # linear, so each component's values are s times those of seed 1 (mod m)
    # and rare events (u < 1e-5) line up: with SetSeed(1..3) the random
    # losses hit the same packets.
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(args.seed)

    # ---- topology -----------------------------------------------------------
    nodes = ns.NodeContainer()
    nodes.Create(4)  # 0 sender, 1 R1, 2 R2, 3 receiver
    big_queue = "1000000p"  # access links: never the place that drops

    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.StringValue(args.access_rate))
    access.SetDeviceAttribute("Mtu", ns.UintegerValue(args.mtu_bytes))
    access.SetChannelAttribute("Delay", ns.StringValue("0ms"))
    access.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue(big_queue))

    bottleneck = ns.PointToPointHelper()
    bottleneck.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(args.rate_bps))))
    bottleneck.SetDeviceAttribute("Mtu", ns.UintegerValue(args.mtu_bytes))
    bottleneck.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(args.rtt_s / 2)))
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue(f"{args.buffer_bytes}B"))

    def pair(i: int, j: int) -> ns.NodeContainer:
        c = ns.NodeContainer()
        c.Add(nodes.Get(i))
        c.Add(nodes.Get(j))
        return c

    d_left = access.Install(pair(0, 1))
    d_mid = bottleneck.Install(pair(1, 2))
    d_right = access.Install(pair(2, 3))

    ns.InternetStackHelper().Install(nodes)
    addr = ns.Ipv4AddressHelper()
    ifaces = []
    for k, devs in enumerate((d_left, d_mid, d_right)):
        addr.SetBase(ns.Ipv4Address(f"10.1.{k}.0"), ns.Ipv4Mask("255.255.255.0"))
        ifaces.append(addr.Assign(devs))
    # Assign() put a pfifo_fast queue disc on every device: remove them so
    # the device queues above are the only queues.
    tch = ns.TrafficControlHelper()
    for devs in (d_left, d_mid, d_right):
        tch.Uninstall(devs)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # Random loss on data packets, at the receive side of the bottleneck.
    em = ns.CreateObject[ns.RateErrorModel]()
    em.SetUnit(ns.RateErrorModel.ERROR_UNIT_PACKET)
    em.SetRate(args.loss)
    em.SetRandomVariable(ns.CreateObject[ns.UniformRandomVariable]())
    r2_dev = ns.DynamicCast[ns.PointToPointNetDevice](d_mid.Get(1))
    r2_dev.SetAttribute("ReceiveErrorModel", ns.PointerValue(em))
    r1_dev = ns.DynamicCast[ns.PointToPointNetDevice](d_mid.Get(0))
    counters = _counters()
    counters.Hook(nodes.Get(1), r1_dev, r2_dev)

    # ---- applications -------------------------------------------------------
    port = 5001
    sink_helper = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    )
    sink_apps = sink_helper.Install(nodes.Get(3))
    sink_apps.Start(ns.Seconds(0.0))
    sink = ns.DynamicCast[ns.PacketSink](sink_apps.Get(0))

    bulk = ns.BulkSendHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ifaces[2].GetAddress(1), port).ConvertTo()
    )
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))  # unlimited
    bulk.SetAttribute("SendSize", ns.UintegerValue(args.send_size))
    bulk_apps = bulk.Install(nodes.Get(0))
    bulk_apps.Start(ns.Seconds(0.0))
    if args.cwnd_trace_s > 0:
        _start_cwnd_trace(args.cwnd_trace_s, args.mss_bytes)

    t_setup = time.perf_counter()
    print(f"READY elapsed_s={t_setup - T_START:.3f}", flush=True)

    # ---- run: [0, warmup) then [warmup, duration), in chunks ---------------
    # Simulator::Run is called once per --progress-s of simulated time, so a
    # caller that has to kill a long run still learns how far it got (the
    # PROGRESS lines); the chunking costs nothing measurable.
    run_wall = 0.0
    rx_warm = None
    t_warm = None
    now = 0.0
    marks = [args.warmup_s]
    t = args.progress_s
    while t < args.duration_s - 1e-9:
        marks.append(t)
        t += args.progress_s
    marks = sorted(set(round(m, 9) for m in marks if 0 < m < args.duration_s)) + [args.duration_s]
    for mark in marks:
        t0 = time.perf_counter()
        ns.Simulator.Stop(ns.Seconds(mark - now))
        ns.Simulator.Run()
        run_wall += time.perf_counter() - t0
        now = ns.Simulator.Now().GetSeconds()
        if rx_warm is None and mark >= args.warmup_s:
            rx_warm = int(sink.GetTotalRx())
            t_warm = now
        print(
            f"PROGRESS sim_s={now:.3f} run_wall_s={run_wall:.3f} rx_bytes={int(sink.GetTotalRx())} "
            f"bottleneck_drops={int(counters.BottleneckDrops())} random_drops={int(counters.random_drops)}",
            flush=True,
        )
    rx_end = int(sink.GetTotalRx())
    t_end = now
    events = None
    try:
        events = int(ns.Simulator.GetEventCount())
    except Exception:  # noqa: BLE001 - not in every ns-3 version
        pass
    bottleneck_drops = int(counters.BottleneckDrops())
    random_drops = int(counters.random_drops)
    ns.Simulator.Destroy()

    span = t_end - t_warm
    result = {
        "cc": args.cc,
        "ns3_version": version("ns3"),
        "run_wall_s": run_wall,
        "import_wall_s": t_imported - T_START,
        "setup_wall_s": t_setup - t_imported,
        "total_wall_s": time.perf_counter() - T_START,
        "sim_s": t_end,
        "rx_bytes_warmup": rx_warm,
        "rx_bytes_end": rx_end,
        "goodput_bps": (rx_end - rx_warm) * 8 / span if span > 0 else None,
        "bottleneck_drops": bottleneck_drops,
        "random_drops": random_drops,
        "events": events,
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
