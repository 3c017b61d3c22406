"""What the advice says in words: the recommendation, the socket buffers
and sysctls, whether jumbo frames pay, and the model's assumptions (pure
functions of the request and the ranked table)."""

from __future__ import annotations

import math

import pandas as pd

from .. import ccas as cca_registry
from .. import hostcpu
from ..units import format_rate, format_time
from ..window import bdp_bytes, rmem_for_window, whole_mib, window_of_rmem, window_of_wmem, wmem_for_window
from . import plan as pl
from .plan import Timing, path_window_bytes, setup_changes
from .request import AdviseRequest

# Jumbo frames "pay" when the best jumbo candidate beats the best at the
# smallest MTU by more than this, beyond both intervals.
JUMBO_GAIN = 0.05


def mib(size_bytes: float) -> str:
    return f"{size_bytes / 2**20:.0f} MiB" if size_bytes >= 2**20 else f"{size_bytes / 1024:.0f} KiB"


def sysctl_lines(rmem_bytes: int, wmem_bytes: int) -> list[str]:
    """The sysctls that give sockets these maxima (autotuning kept on)."""
    return [f'net.ipv4.tcp_rmem = "4096 131072 {rmem_bytes}"',
            f'net.ipv4.tcp_wmem = "4096 16384 {wmem_bytes}"',
            f"net.core.rmem_max = {rmem_bytes}", f"net.core.wmem_max = {wmem_bytes}"]


def _pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x * 100:.2g} %"


def margin_text(row, req: AdviseRequest, largest_loss_tried: float = math.nan) -> str:
    at = row["loss_halves_at"]
    if pd.isna(at):
        return "loss margin not measured"
    if math.isinf(at):
        upto = "" if pd.isna(largest_loss_tried) else (
            f" (up to {largest_loss_tried / req.loss:.3g}× today's loss)" if req.loss > 0
            else f" (up to {largest_loss_tried:.2g})")
        return f"it keeps more than half its goodput at every loss tried{upto}"
    if req.loss > 0:
        return f"it keeps half its goodput up to {at / req.loss:.3g}× today's loss ({at:.2g})"
    return f"it keeps half its goodput up to a loss of {at:.2g}"


def _short(row) -> str:
    raised = " with raised buffers" if row["buffers"] == "raised" else ""
    return f"{row['cc']} × {row['streams']}{raised} ({format_rate(row['goodput_bps'])})"


def why_text(table: pd.DataFrame, req: AdviseRequest) -> str:
    """Why the recommendation (rank.choose's steps): how many were equal,
    and what the robustness and harm rules set aside."""
    why = table.attrs.get("why", {})
    n = why.get("equal", 0)
    if n == 0:
        return ("No candidate had two runs within the budget: this rests on one run, without an interval "
                "(give a larger --budget).")
    rows = {k: table[table["candidate"] == why[k]].iloc[0] for k in ("fragile", "harmful") if k in why}
    text = f"Chosen among {n} candidate{'s' if n != 1 else ''} as good as the best (within its 95 % interval or 3 %)"
    reasons = []
    if "fragile" in rows:
        r = rows["fragile"]
        factor = f" ({r['loss_halves_at'] / req.loss:.3g}× today's)" if req.loss > 0 else ""
        at = r["loss_halves_at"]
        reasons.append(f"{_short(r)}, " + (f"whose goodput halves at a loss of {at:.2g}{factor}" if not pd.isna(at)
                                           else "whose loss margin was not measured"))
    if "harmful" in rows:
        r = rows["harmful"]
        share = "an unmeasured share" if pd.isna(r["competing_share"]) else f"{r['competing_share'] * 100:.0f} %"
        reasons.append(f"{_short(r)}, which leaves the competing {req.competing} flow {share}")
    if reasons:
        return text + ", preferred to " + " and to ".join(reasons) + "."
    if n == 1:
        return "It is the only candidate with two runs as good as the best (the budget allowed no more)."
    chosen = table[table["recommended"]].iloc[0]["candidate"]
    return (text + ": the simplest of them (the rule prefers no sysctl change, then the smallest MTU, then "
            f"fewer streams); against today's setup it {changes_text(req, chosen)}.")


def changes_text(req: AdviseRequest, c) -> str:
    """What candidate `c` changes against today's setup, as a clause
    ("raises …, uses MTU 9000 and opens 4 parallel streams")."""
    words = list(setup_changes(req, c).values())
    if not words:
        return "changes nothing"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def recommendation(table: pd.DataFrame, req: AdviseRequest) -> str:
    """One sentence: what to use and what to expect; then why."""
    if table.empty:
        return "No candidate finished: see the failed runs."
    r = table[table["recommended"]].iloc[0]
    raise_text = ""
    if r["buffers"] == "raised":
        raise_text = f", tcp_rmem max {mib(r['rmem_bytes'])} and tcp_wmem max {mib(r['wmem_bytes'])}"
    ci = (f"95 % CI {format_rate(r['goodput_ci_low_bps'])}–{format_rate(r['goodput_ci_high_bps'])}"
          if not pd.isna(r["goodput_ci_low_bps"]) else "one run")
    sentence = (f"Use {r['cc']} with {r['streams']} stream{'s' if r['streams'] != 1 else ''} at MTU "
                f"{r['mtu_bytes']}{raise_text}: expect {format_rate(r['goodput_bps'])} ({ci}, {r['n']} runs), "
                f"{_pct(r['retrans_rate'])} retransmitted; "
                f"{margin_text(r, req, table.attrs.get('largest_loss_tried', math.nan))}")
    if not pd.isna(r["competing_share"]):
        sentence += (f"; it leaves the competing {req.competing} flow {r['competing_share'] * 100:.0f} % "
                     f"of the goodput (Jain {r['jain']:.2f})")
    return sentence + ". " + why_text(table, req)


def baseline_finding(table: pd.DataFrame, req: AdviseRequest) -> str:
    """Today's setup (plan.baseline) against the recommendation."""
    from .plan import baseline
    b = baseline(req)
    today = table[table["candidate"] == b] if not table.empty else table
    rec = table[table["recommended"]] if not table.empty else table
    if today.empty or rec.empty:
        return ""
    t, r = today.iloc[0], rec.iloc[0]
    gain = r["goodput_bps"] / t["goodput_bps"] if t["goodput_bps"] > 0 else math.inf
    return (f"Today ({b.cc}, one stream, MTU {b.mtu}, your buffers): {format_rate(t['goodput_bps'])}"
            f"{', window-bound' if t['window_bound'] else ''}; the recommendation gets {gain:.3g}× that.")


def buffer_findings(table: pd.DataFrame, req: AdviseRequest) -> dict:
    """The window the path needs, what the hosts' buffers allow, whether the
    runs were window-bound, and the sysctls that remove the limit."""
    mtu = min(req.mtu)
    need = path_window_bytes(req, mtu, 1)
    allow = min(window_of_rmem(req.rmem), window_of_wmem(req.wmem))
    per_stream_bps = allow * 8 / req.rtt
    rmem_need, wmem_need = whole_mib(rmem_for_window(need)), whole_mib(wmem_for_window(need))
    as_now = table[table["buffers"] == "as now"] if not table.empty else table
    bound_runs = bool(not as_now.empty and as_now["window_bound"].any())
    window_bound = allow < need
    streams_to_fill = math.ceil(need / allow) if allow > 0 else math.inf
    lines = [f"The path needs a window of {mib(need)} per transfer: BDP {mib(bdp_bytes(req.rate, req.rtt))} "
             f"at {format_rate(req.rate)} × {format_time(req.rtt)}, plus the bottleneck buffer "
             f"({mib(req.buffer_bytes(mtu))}) a loss-based CCA fills."]
    if window_bound:
        lines.append(f"Window-bound: your tcp_rmem max {mib(req.rmem)} / tcp_wmem max {mib(req.wmem)} allow "
                     f"{mib(allow)} in flight per stream, at most {format_rate(per_stream_bps)} per stream"
                     f"{' (the runs with these buffers were limited by them)' if bound_runs else ''}. "
                     f"Raising tcp_rmem max to {mib(rmem_need)} and tcp_wmem max to {mib(wmem_need)} removes "
                     f"the limit for one stream; or use at least {streams_to_fill} streams.")
    else:
        lines.append(f"Your tcp_rmem max {mib(req.rmem)} / tcp_wmem max {mib(req.wmem)} allow a full window "
                     "for one stream: the buffers do not limit this path.")
    return {"window_needed_bytes": need, "window_allowed_bytes": allow, "window_bound": window_bound,
            "window_bound_in_runs": bound_runs, "rmem_needed_bytes": rmem_need, "wmem_needed_bytes": wmem_need,
            "streams_to_fill": streams_to_fill, "lines": lines}


def jumbo_finding(table: pd.DataFrame, req: AdviseRequest) -> str:
    if len(req.mtu) < 2:
        return (f"Jumbo frames not evaluated: only MTU {req.mtu[0]} was allowed "
                "(give --mtu 1500,9000 if the path carries jumbo frames).")
    small = table[table["mtu_bytes"] == min(req.mtu)]
    big = table[table["mtu_bytes"] != min(req.mtu)].sort_values("goodput_bps", ascending=False)
    if small.empty or big.empty:
        return "Jumbo frames: not enough runs to compare."
    s, b = small.iloc[0], big.iloc[0]
    gain = b["goodput_bps"] / s["goodput_bps"] - 1 if s["goodput_bps"] > 0 else math.inf
    pays = gain > JUMBO_GAIN and (pd.isna(b["goodput_ci_low_bps"]) or pd.isna(s["goodput_ci_high_bps"])
                                  or b["goodput_ci_low_bps"] > s["goodput_ci_high_bps"])
    verdict = "pay" if pays else "do not pay"
    return (f"Jumbo frames {verdict}: best at MTU {b['mtu_bytes']} {format_rate(b['goodput_bps'])} "
            f"({b['cc']} x{b['streams']}) against {format_rate(s['goodput_bps'])} at MTU {s['mtu_bytes']} "
            f"({s['cc']} x{s['streams']}), {gain * 100:+.0f} %.")


def _has_host_model(req: AdviseRequest) -> bool:
    keys = req.host_keys()
    return keys.get("cpu_cores") is not None or keys.get("nic_rate") is not None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def host_finding(table: pd.DataFrame, req: AdviseRequest) -> str:
    """What the hosts must drive: with a host model, what one core and the
    host drive and the CPU the recommendation needs (cores, streams per
    core, pacing); without one, that the hosts were taken as infinitely
    fast."""
    from ..hostprofiles import PROFILES
    model = req.host_model()
    if not _has_host_model(req):
        what = f"{model} has no CPU cost model and no NIC ceiling" if model else "no host model was given"
        cap = f" and --stream-cap ({format_rate(req.stream_cap)})" if req.stream_cap else ""
        return (f"Hosts assumed infinitely fast: {what}, so every candidate is limited only by the path, "
                f"its CCA and its buffers{cap}; real hosts may not drive it (give --host-profile NAME, one of "
                f"{', '.join(PROFILES)}, or host-model keys in the request's [host] table; docs/advise.md, "
                "\"Hosts\").")
    keys = req.host_keys()
    rec = table[table["recommended"]] if not table.empty else table
    if rec.empty:
        return f"Hosts: {model}."
    r = rec.iloc[0]
    c = r["candidate"]
    drive = pl.core_drive(req, c)
    total = pl.host_ceiling_bps(req, c)
    lines = [f"Hosts ({model}; sender and receiver alike):"]
    if drive.bps is not None and math.isfinite(drive.bps):
        sack = "" if req.loss <= 0 else " with the SACK work of this loss"
        lines.append(f"one core drives {format_rate(drive.bps)} for one stream at MTU {c.mtu} (sending "
                     f"{format_rate(drive.send_bps)}{sack}, receiving {format_rate(drive.receive_bps)}); "
                     f"one stream never gets more than one core.")
        cores = hostcpu.cores_for(keys, c.streams)
        per_core_streams = math.ceil(c.streams / cores)
        busy = r["goodput_bps"] / cores / drive.bps
        cap = pl.stream_cap_bps(req, c)
        pace = (f"pace each stream at no more than {format_rate(cap)} (tc qdisc fq maxrate, or "
                "SO_MAX_PACING_RATE), what its share of a core drives")
        if c.cc in cca_registry.rate_based():
            pace += f"; {c.cc} paces itself below that"
        lines.append(f"The recommendation needs {_plural(cores, 'core')} at each end for its "
                     f"{_plural(c.streams, 'stream')} ({per_core_streams} per core; each core about "
                     f"{min(busy, 1.0) * 100:.0f} % busy at {format_rate(r['goodput_bps'])}); {pace}.")
    if keys.get("nic_rate") is not None:
        lines.append(f"The sender's NIC carries {format_rate(keys['nic_rate'])} of frames, "
                     f"{format_rate(total)} of payload with these streams.")
    elif total is not None:
        lines.append(f"The host drives at most {format_rate(total)} with these streams.")
    return " ".join(lines)


def assumptions(req: AdviseRequest, t: Timing) -> list[str]:
    if _has_host_model(req):
        keys = req.host_keys()
        gro = " The receiver coalesces with GRO." if keys.get("gro") else ""
        hosts = (f"Hosts: {req.host_model()}, applied to the sender and the receiver as caps: each stream is "
                 "paced at its share of the cores its streams run on (never more than one core drives: "
                 "hostcpu.core_drive)"
                 + (f" and at most --stream-cap ({format_rate(req.stream_cap)})" if req.stream_cap else "")
                 + (f", the sender's NIC at {format_rate(keys['nic_rate'])}" if keys.get("nic_rate") else "")
                 + "." + gro + " The simulator's per-packet CPU queueing "
                 "(ACK compression, receive-ring drops) is not run: a CPU-bound stream is smoother here than "
                 "on a real host. The competing sender, if any, is an ideal host.")
    else:
        hosts = ("No host model: the hosts are infinitely fast, and a stream is limited only by its window, its "
                 "buffers and " + (f"--stream-cap ({format_rate(req.stream_cap)})." if req.stream_cap else
                                   "nothing else (give --host-profile, or --stream-cap if one core cannot "
                                   "drive the link)."))
    out = [
        "Simulated with fatpipe's Linux-faithful packet-level simulator (sim backend), not measured on your hosts.",
        f"Loss is random and independent per packet ({req.loss:g}); bursty loss, reordering and "
        "corruption are not modelled.",
        hosts,
        f"One drop-tail bottleneck of {mib(req.buffer_bytes(min(req.mtu)))}; no other traffic"
        + (f" except one {req.competing} stream from another sender." if req.competing else "."),
        f"Each run lasts {format_time(t.duration_s)} ({t.duration_s / req.rtt:.0f} RTTs) and is measured after "
        f"a {format_time(t.warmup_s)} warm-up: long-term behaviour beyond that (CUBIC's slow recovery at "
        "very low loss, rare timeouts) is not captured.",
        "Receive window = tcp_rmem/2 (tcp_adv_win_scale = 1, autotuning assumed grown to the maximum). "
        "Send buffer = tcp_wmem max of unacknowledged + unsent payload, as the simulator counts it (Linux "
        "charges skb truesize: about the payload with TSO/GSO, up to ~3× it without, when the real window "
        "is smaller); the tcp_wmem advised is 2 × the window, the room fast recovery needs "
        "(tcp_sndbuf_expand's factor 2).",
    ]
    if any(c in cca_registry.rate_based() for c in req.ccas):
        out.append("BBR family: its losses at high random loss follow the simulator's port of Linux's tcp_bbr.c.")
    return out
