"""The candidates `fatpipe advise` tries and the studies it builds for them.

A **candidate** is one choice the user can make: CCA, parallel streams,
MTU (the MSS follows it: MTU - 40, less the timestamp option) and the
hosts' socket buffers (the user's, or raised to what the path needs:
fatpipe.window). Each stage of the advice is an ordinary study, built in
memory as a spec and written out as TOML (so `fatpipe run STAGE.toml`
repeats it): one [[sweep.linked]] group lists the candidates, a cartesian
``path.loss`` axis multiplies them for the loss margin.

**Timing** is chosen from the path: warm-up of at least WARMUP_RTTS round
trips and the RTTs slow start needs to reach the window, a measured span of
MEASURE_RTTS round trips (at least MIN_MEASURE_S) but no more than
MAX_MEASURE_PACKETS packets at the link rate, never below MIN_MEASURE_RTTS
round trips; the budget may shrink it toward MIN_MEASURE_RTTS too. At
100 Gbit/s a 50-RTT span at 70 ms holds ~30 M packets: 20 RTTs (2.5 BBR
gain cycles, ~10⁴ loss events at 0.1 %) hold enough, and the repetitions'
interval says how much the runs differ.

**Loss bound**: a generous upper bound of one loss-based stream's goodput
at random loss p over a run of the advice's length: the larger of
LOSS_BASED_HEADROOM × RFC 9438's CUBIC response (the steady state) and
SLOW_START_EXIT / p segments per round trip. Runs last tens of RTTs, too
short for a stream to forget slow start: the first loss comes after about
1/p packets and is seen a round trip later, when the window has doubled
(at 1e-4 and 20 ms one cubic stream averages 5× its steady state over
such a run). The second term dominates for every Linux CCA's steady state
(Scalable's MIMD response is 0.075/p, Illinois' most aggressive AIMD
√(75/p)); test_advise.py checks the bound against the simulator for every
loss-based CCA. BBR and Westwood (its ssthresh after a loss is its
bandwidth estimate × min RTT, tcp_westwood.c, so random loss does not
bound it) have none.

**Pruning** (prune_dominated): a loss-based CCA at n streams whose loss
bound stays below the link's goodput ceiling is dominated by the same CCA
at more streams (while loss-bound, goodput grows with the streams), so
only the rungs whose bound reaches the link, and the largest rung, are run.

**Hosts**: with a host model (req.host_keys(): a profile under the
request's [host] keys, sender and receiver alike), each stream is capped
at its share of the cores its candidate's streams run on
(stream_cap_bps: hostcpu.core_drive at the request's loss, at most one
core), linked beside the candidate as the sender's stream_rate_cap; the
sender gets the host's nic_rate, the receiver its GRO; a candidate's
buffers are sized for the capped rate (tuned_buffers). The simulator's
per-packet CPU queueing is not run (docs/advise.md, "Hosts").

**Cost** of a run is predicted, not taken as the full link: bottleneck
packets (fatpipe.estimate's formula) scaled by the goodput the candidate
can expect (the link for BBR and Westwood, the loss bound otherwise),
capped by buffers, --stream-cap and the hosts, with slow start's ramp (about twice
the window in packets over log2(window/IW) round trips) instead of the
full rate at the start. Wall time = packets / the sim backend's packets
per second.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

from .. import ccas as cca_registry
from .. import hostcpu
from ..analysis.models import cubic_bps
from ..backends.sim import SIM_PACKETS_PER_S
from ..toml_write import toml_value
from ..window import rmem_for_window, whole_mib, window_needed_bytes, window_of_rmem, window_of_wmem, wmem_for_window
from ..wire import ETH_HEADER_BYTES, goodput_ceiling_bps, mss_with_timestamps, packet_loss_probability
from .request import AdviseRequest

LOSS_BASED_HEADROOM = 3.0
SLOW_START_EXIT = 2.0  # window at slow start's end, × 1/p segments (module doc)
WARMUP_RTTS = 20
MEASURE_RTTS = 50
MIN_MEASURE_RTTS = 20
MIN_MEASURE_S = 2.0
MAX_MEASURE_PACKETS = 4e6
MIN_WARMUP_S = 0.5
INITIAL_WINDOW_SEGMENTS = 10  # RFC 6928, Linux's TCP_INIT_CWND
# Per run beyond the simulation: the store's files, the summary.
RUN_OVERHEAD_S = 0.08
SENDER = "s1"
COMPETITOR = "s2"
# The linked keys that make a candidate (in this order).
CANDIDATE_KEYS = ("flows.0.cc", "flows.0.streams", "path.mtu", "hosts.receiver.rmem_max", "hosts.s1.wmem_max")
# With a host model, each candidate's per-stream cap (stream_cap_bps) is
# linked beside its keys: a function of the candidate, not part of it.
STREAM_CAP_KEY = "hosts.s1.stream_rate_cap"


@dataclass(frozen=True, order=True)
class Candidate:
    cc: str
    streams: int
    mtu: int
    rmem_bytes: int  # the receiver's tcp_rmem[2]
    wmem_bytes: int  # the sender's tcp_wmem[2]

    @property
    def mss_bytes(self) -> int:
        return mss_with_timestamps(self.mtu)

    def label(self) -> str:
        return (f"{self.cc} x{self.streams} MTU {self.mtu} rmem {self.rmem_bytes / 2**20:.0f}MiB "
                f"wmem {self.wmem_bytes / 2**20:.0f}MiB")

    def values(self) -> tuple:
        return (self.cc, self.streams, self.mtu, self.rmem_bytes, self.wmem_bytes)


def candidate_of(row: Any) -> Candidate:
    """The candidate of a runs-table row (its linked sweep columns)."""
    return Candidate(*(type_(row[k]) for type_, k in zip((str, int, int, int, int), CANDIDATE_KEYS, strict=True)))


def path_window_bytes(req: AdviseRequest, mtu: int, streams: int = 1) -> float:
    """The window each of `streams` streams needs on this path (fatpipe.window)."""
    return window_needed_bytes(req.rate, req.rtt, mss_with_timestamps(mtu), mtu, req.buffer_bytes(mtu), streams)


def tuned_buffers(req: AdviseRequest, mtu: int, streams: int) -> tuple[int, int]:
    """(rmem, wmem) that let each stream carry its share of the full path,
    or no more than its cap (stream_cap_bps: a stream held to a core's
    rate needs no window beyond that rate's), never below what the hosts
    have now."""
    w = path_window_bytes(req, mtu, streams)
    cap = _stream_cap_bps(req, mtu, streams)
    share = goodput_ceiling_bps(req.rate, mss_with_timestamps(mtu), mtu) / streams
    if cap is not None and cap < share:
        w *= cap / share
    return max(req.rmem, whole_mib(rmem_for_window(w))), max(req.wmem, whole_mib(wmem_for_window(w)))


def buffer_options(req: AdviseRequest, mtu: int, streams: int) -> list[tuple[int, int]]:
    """The hosts' buffers as they are, and raised for the path if that differs."""
    now, tuned = (req.rmem, req.wmem), tuned_buffers(req, mtu, streams)
    return [now] if tuned == now else [now, tuned]


def stream_ladder(max_streams: int, factor: int = 4) -> list[int]:
    """1, factor, factor², … up to max_streams (which is always included)."""
    out, n = [], 1
    while n < max_streams:
        out.append(n)
        n *= factor
    return [*out, max_streams]


def baseline(req: AdviseRequest) -> Candidate:
    """What the hosts do today: Linux's default CCA (or the first one
    allowed), one stream, the smallest MTU, the hosts' buffers."""
    default = cca_registry.linux_default()
    cc = default if default in req.ccas else req.ccas[0]
    return Candidate(cc, 1, min(req.mtu), req.rmem, req.wmem)


# What a candidate changes on the hosts against today's setup (baseline),
# in the order the recommendation rule weighs them (rank.simplicity): a
# sysctl change first, then jumbo frames, parallel streams, another CCA.
CHANGE_KINDS = ("buffers", "mtu", "streams", "cc")


def setup_changes(req: AdviseRequest, c: Candidate) -> dict[str, str]:
    """What candidate `c` changes against today's setup (baseline(req)):
    kind (CHANGE_KINDS) → words, in that order; empty when it changes
    nothing. The one definition the ranking, the table and the sentences
    use."""
    today = baseline(req)
    out = {}
    if (c.rmem_bytes, c.wmem_bytes) != (today.rmem_bytes, today.wmem_bytes):
        out["buffers"] = (f"raises tcp_rmem max to {c.rmem_bytes / 2**20:.0f} MiB and tcp_wmem max to "
                          f"{c.wmem_bytes / 2**20:.0f} MiB (sysctl)")
    if c.mtu != today.mtu:
        out["mtu"] = f"uses MTU {c.mtu}"
    if c.streams != today.streams:
        out["streams"] = f"opens {c.streams} parallel streams"
    if c.cc != today.cc:
        out["cc"] = f"runs {c.cc} instead of {today.cc}"
    return out


def coarse_candidates(req: AdviseRequest) -> list[Candidate]:
    """Every CCA × a ladder of stream counts × every MTU, with buffers raised
    for the path (the hosts' own buffers are tried near the best later),
    and the baseline; rungs the loss bound says are dominated are pruned."""
    out = [baseline(req)]
    for cc in req.ccas:
        for streams in stream_ladder(req.max_streams):
            for mtu in req.mtu:
                c = Candidate(cc, streams, mtu, *tuned_buffers(req, mtu, streams))
                if c not in out:
                    out.append(c)
    return prune_dominated(req, out, keep=out[0])


def neighbours(req: AdviseRequest, c: Candidate) -> list[Candidate]:
    """Candidates next to `c`: half and twice the streams, the other MTUs,
    the other buffer option."""
    out = []
    for streams in {max(1, c.streams // 2), min(req.max_streams, c.streams * 2)} - {c.streams}:
        out.append(Candidate(c.cc, streams, c.mtu, *tuned_buffers(req, c.mtu, streams)))
    for mtu in set(req.mtu) - {c.mtu}:
        out.append(Candidate(c.cc, c.streams, mtu, *tuned_buffers(req, mtu, c.streams)))
    out += [replace(c, rmem_bytes=r, wmem_bytes=w) for r, w in buffer_options(req, c.mtu, c.streams)]
    return out


# ---- timing and cost -----------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    warmup_s: float
    duration_s: float
    interval_s: float

    @property
    def measured_s(self) -> float:
        return self.duration_s - self.warmup_s


def _up(x: float, step: float) -> float:
    return round(math.ceil(x / step - 1e-9) * step, 9)


def slow_start_rtts(req: AdviseRequest) -> int:
    """Round trips slow start takes from the initial window to the path's
    window (doubling each round trip)."""
    segments = path_window_bytes(req, min(req.mtu)) / mss_with_timestamps(min(req.mtu))
    return math.ceil(math.log2(max(2.0, segments / INITIAL_WINDOW_SEGMENTS)))


def timing(req: AdviseRequest, squeeze: float = 1.0) -> Timing:
    """Warm-up and duration for this path; `squeeze` in (0, 1] shortens the
    measured span toward MIN_MEASURE_RTTS (never below)."""
    interval = min(0.5, max(0.02, round(2 * req.rtt, 3)))
    warmup = _up(max(WARMUP_RTTS * req.rtt, (slow_start_rtts(req) + 5) * req.rtt, MIN_WARMUP_S), interval)
    mtu = min(req.mtu)
    link_pps = req.rate / (8 * (mtu + ETH_HEADER_BYTES))
    measure = min(max(MEASURE_RTTS * req.rtt, MIN_MEASURE_S), MAX_MEASURE_PACKETS / link_pps)
    measure = max(MIN_MEASURE_RTTS * req.rtt, measure * squeeze)
    return Timing(warmup, _up(warmup + measure, interval), interval)


def loss_bound_bps(req: AdviseRequest, cc: str, mss_bytes: int, loss: float | None = None) -> float:
    """Generous upper bound of one stream's goodput at random loss (module
    doc, "Loss bound"); inf when the loss does not bound the CCA."""
    p = packet_loss_probability(req.loss if loss is None else loss, 0.0, mss_bytes)
    # The registry's loss_bound trait (module doc, "Loss bound").
    if cc in cca_registry.not_loss_bound() or p <= 0:
        return math.inf
    steady = LOSS_BASED_HEADROOM * float(cubic_bps(mss_bytes, req.rtt, p))
    return max(steady, SLOW_START_EXIT / p * mss_bytes * 8 / req.rtt)


def reaches_link(req: AdviseRequest, cc: str, streams: int, mtu: int) -> bool:
    """Whether `streams` streams of `cc` can fill the link by the loss bound."""
    mss = mss_with_timestamps(mtu)
    return streams * loss_bound_bps(req, cc, mss) >= goodput_ceiling_bps(req.rate, mss, mtu)


def prune_dominated(req: AdviseRequest, cands: list[Candidate], keep: Candidate | None = None) -> list[Candidate]:
    """Drop a candidate when the same CCA, MTU and buffer choice is tried
    with more streams and the loss bound says this one cannot reach the
    link (module doc, "Pruning"); `keep` is never dropped."""
    out = []
    for c in cands:
        more = [d for d in cands if (d.cc, d.mtu) == (c.cc, c.mtu) and d.streams > c.streams
                and _same_buffer_choice(req, c, d)]
        if c == keep or not more or reaches_link(req, c.cc, c.streams, c.mtu):
            out.append(c)
    return out


def _same_buffer_choice(req: AdviseRequest, c: Candidate, d: Candidate) -> bool:
    """Both with the hosts' own buffers, or both raised for the path."""
    now = (req.rmem, req.wmem)
    return ((c.rmem_bytes, c.wmem_bytes) == now) == ((d.rmem_bytes, d.wmem_bytes) == now)


# ---- the hosts (module doc, "Hosts") ---------------------------------------------


def core_drive(req: AdviseRequest, c: Candidate) -> hostcpu.CoreDrive:
    """What one core of the hosts (req.host_keys(): sender and receiver
    alike) drives for one stream of `c` at the request's loss, with the
    SACK work of the holes a stream's share of the path's window opens."""
    return _core_drive(req, c.mtu, c.streams)


def _core_drive(req: AdviseRequest, mtu: int, streams: int) -> hostcpu.CoreDrive:
    mss = mss_with_timestamps(mtu)
    window_segments = path_window_bytes(req, mtu, streams) / mss
    return hostcpu.core_drive(req.host_keys(), mss, mtu,
                              sack_blocks=hostcpu.sack_blocks_per_ack(req.loss, window_segments))


def stream_cap_bps(req: AdviseRequest, c: Candidate) -> float | None:
    """The most one stream of `c` may send: --stream-cap, and with a host
    model its share of the cores its streams run on (hostcpu.cores_for),
    so never more than one core drives; None: no cap."""
    return _stream_cap_bps(req, c.mtu, c.streams)


def _stream_cap_bps(req: AdviseRequest, mtu: int, streams: int) -> float | None:
    caps = [req.stream_cap] if req.stream_cap else []
    per_core = _core_drive(req, mtu, streams).bps
    cores = hostcpu.cores_for(req.host_keys(), streams)
    if per_core is not None and math.isfinite(per_core) and cores:
        caps.append(per_core * cores / streams)
    return min(caps) if caps else None


def host_ceiling_bps(req: AdviseRequest, c: Candidate) -> float | None:
    """The most the sending host drives for `c` in total (its cores and
    its NIC: hostcpu.host_drive_bps); None: unlimited."""
    return hostcpu.host_drive_bps(req.host_keys(), core_drive(req, c).bps, c.mss_bytes, c.mtu, c.streams)


def expected_goodput_bps(req: AdviseRequest, c: Candidate, loss: float | None = None) -> float:
    """A generous guess of a candidate's goodput, for its cost only."""
    ceiling = goodput_ceiling_bps(req.rate, c.mss_bytes, c.mtu)
    per_stream = min(ceiling, loss_bound_bps(req, c.cc, c.mss_bytes, loss))
    window = min(window_of_rmem(c.rmem_bytes), window_of_wmem(c.wmem_bytes))
    per_stream = min(per_stream, window * 8 / req.rtt, stream_cap_bps(req, c) or math.inf)
    return min(ceiling, c.streams * per_stream, host_ceiling_bps(req, c) or math.inf)


def run_wall_s(req: AdviseRequest, c: Candidate, t: Timing, loss: float | None = None,
               extra_bps: float = 0.0) -> float:
    """Predicted wall time of one run on one core."""
    bps = min(req.rate, expected_goodput_bps(req, c, loss) + extra_bps)
    frame = 8 * (c.mtu + ETH_HEADER_BYTES)
    window_pkts = bps * req.rtt / frame
    ramp_s = math.log2(max(2.0, window_pkts / INITIAL_WINDOW_SEGMENTS)) * req.rtt
    packets = (2 * window_pkts if ramp_s < t.duration_s else 0.0) + bps / frame * max(0.0, t.duration_s - ramp_s)
    return packets / SIM_PACKETS_PER_S + RUN_OVERHEAD_S


# ---- the study of one stage ------------------------------------------------------


def stage_raw(req: AdviseRequest, name: str, candidates: list[Candidate], t: Timing, repetitions: int,
              seed: int, losses: list[float] | None = None, competing: str | None = None) -> dict[str, Any]:
    """The spec (a raw TOML mapping) of one stage: every candidate (linked)
    × `losses` (a cartesian path.loss axis, else the request's loss), with
    one stream of `competing` from a second sender if given."""
    mtu0 = candidates[0].mtu
    hosts: dict[str, Any] = {"receiver": {"rmem_max": candidates[0].rmem_bytes},
                             SENDER: {"wmem_max": candidates[0].wmem_bytes}}
    caps = [stream_cap_bps(req, c) for c in candidates]
    if caps[0] is not None:
        hosts[SENDER]["stream_rate_cap"] = caps[0]
    host = req.host_keys()
    if host.get("nic_rate") is not None:
        hosts[SENDER]["nic_rate"] = host["nic_rate"]
    if host.get("gro"):
        hosts["receiver"]["gro"] = True
    flows: list[dict[str, Any]] = [{"cc": candidates[0].cc, "streams": candidates[0].streams, "sender": SENDER}]
    if competing:
        rmem, wmem = tuned_buffers(req, max(req.mtu), 1)
        hosts[COMPETITOR] = {"wmem_max": wmem}
        flows.append({"cc": competing, "streams": 1, "sender": COMPETITOR})
    sweep: dict[str, Any] = {}
    if losses:
        sweep["path.loss"] = list(losses)
    linked = {key: [c.values()[i] for c in candidates] for i, key in enumerate(CANDIDATE_KEYS)}
    if len(set(caps)) > 1:  # a host model: each candidate's streams share its cores
        linked[STREAM_CAP_KEY] = caps
    sweep["linked"] = [linked]
    return {
        "version": 1,
        "study": {"name": name, "backends": ["sim"], "duration": t.duration_s, "warmup": t.warmup_s,
                  "interval": t.interval_s, "repetitions": repetitions, "seed": seed,
                  "description": f"fatpipe advise: {req.describe()}"},
        "path": {"rate": req.rate, "rtt": req.rtt, "loss": req.loss, "mtu": mtu0,
                 "buffer": _buffer_text(req)},
        "hosts": hosts,
        "flows": flows,
        "sweep": sweep,
    }


def _buffer_text(req: AdviseRequest) -> str | int:
    b = req.buffer
    return {"bdp": f"{b.amount:g}bdp", "packets": f"{b.amount:g}pkts"}.get(b.unit, int(b.amount))


def toml_text(raw: dict[str, Any]) -> str:
    """A stage's spec as TOML (tables, arrays of tables, the linked sweep)."""
    lines: list[str] = []
    value = toml_value

    def table(header: str, items: dict[str, Any]) -> None:
        lines.append(header)
        lines.extend(f"{json.dumps(k) if '.' in k else k} = {value(v)}" for k, v in items.items()
                     if not isinstance(v, dict) and k != "linked")

    lines.append(f"version = {raw['version']}")
    for section in ("study", "path"):
        if section in raw:
            table(f"[{section}]", raw[section])
    for host, limits in raw["hosts"].items():
        table(f"[hosts.{host}]", limits)
    for flow in raw["flows"]:
        table("[[flows]]", flow)
    table("[sweep]", raw["sweep"])
    for group in raw["sweep"].get("linked", []):
        table("[[sweep.linked]]", group)
    return "\n".join(lines) + "\n"
