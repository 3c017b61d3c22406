"""The report's time-sequence graph of one run's capture (docs/captures.md):
the first data connection of its sender-side pcap (else the receiver's),
zoomable like the run's series (interactive.py: the highest byte sent,
the cumulative ACK and the highest SACKed byte, and the retransmissions
so far) above a static tcptrace-style figure (each segment a stroke,
retransmissions in red, the ACK line)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.sequence import time_sequence
from ..loaded import LoadedStudy
from ..pcapread import packets
from . import interactive
from .files import ReportFiles
from .page import Section

MB = 1e6


def captured_run(study: LoadedStudy, run_id: str | None) -> tuple[str, object] | None:
    """(run, its capture file to draw): `run_id`'s, else the first ok run's
    that has one; the sender side's first."""
    ok = study.runs[study.runs["status"] == "ok"]["run_id"].drop_duplicates().tolist()
    for rid in ([run_id] if run_id else ok):
        files = study.captures(rid)
        if files:
            files.sort(key=lambda p: (not p.name.startswith("capture-sender"), p.name))
            return rid, files[0]
    return None


def _t0(study: LoadedStudy, rid: str, name: str) -> float:
    """The run's start on capture file `name`'s clock: its host's wall
    clock on the hosts backend (each file's own), the machine's on the
    kernel backend, 0 for the simulator's."""
    try:
        facts = study.run_facts(rid)
    except KeyError:
        return 0.0
    own = next((f.get("t0_wall_s") for f in facts.get("captures", []) if f.get("file") == name), None)
    return float(own if own is not None else facts.get("capture_t0_wall_s", 0.0))


def sequence_payload(ts: dict[str, pd.DataFrame]) -> dict:
    """The interactive view's data: lines on one time axis, stepped."""
    data, acks = ts["data"], ts["acks"]
    t = np.array(sorted(set(data["t_s"]) | set(acks["t_s"])), dtype=float)

    def stepped(frame: pd.DataFrame, col: str) -> np.ndarray:
        s = frame.groupby("t_s")[col].max()
        return s.reindex(t).ffill().to_numpy(dtype=float)

    high = data.assign(end=data["end"].cummax())
    retrans = data.assign(n=data["retrans"].astype(int).cumsum())
    lines = [stepped(high, "end") / MB, stepped(acks, "ack") / MB, stepped(acks, "sack_high") / MB,
             stepped(retrans, "n")]
    times, reduced = interactive.reduce_lines(t, lines, interactive.bucket_count(len(lines)))
    names = ["highest byte sent", "cumulative ACK", "highest SACKed byte", "retransmitted segments"]
    streams = [{"label": n, "color": interactive.COLORS[i], "total": False} for i, n in enumerate(names)]
    out = [{"stream": i, "dash": False, "lo": interactive._round(lo),
            "hi": None if hi is None else interactive._round(hi)} for i, (lo, hi) in enumerate(reduced)]
    return {"t": interactive._round(times), "warmup_s": 0.0, "samples": int(len(t)),
            "buckets": int(len(times)) if len(times) < len(t) else None, "left_out": 0, "streams": streams,
            "panels": [{"name": "sequence", "label": "sequence (MB from the first byte)", "lines": out[:3]},
                       {"name": "retrans", "label": "retransmitted segments so far", "lines": out[3:]}]}


def sequence_figure(ts: dict[str, pd.DataFrame], title: str):
    """tcptrace's time-sequence graph: each segment a stroke from its
    first to its last byte, retransmissions red, the ACK line green, the
    highest SACKed byte purple."""
    import matplotlib.pyplot as plt

    data, acks = ts["data"], ts["acks"]
    fig, ax = plt.subplots(figsize=(9, 4.6))
    for retrans, color, label in ((False, "#1d1d1f", "segment"), (True, "#d62728", "retransmission")):
        d = data[data["retrans"] == retrans]
        if not d.empty:
            ax.vlines(d["t_s"], d["start"] / MB, d["end"] / MB, colors=color, linewidth=1.2 if retrans else 0.6,
                      label=label)
    if not acks.empty:
        ax.step(acks["t_s"], acks["ack"] / MB, where="post", color="#2ca02c", linewidth=0.8, label="ACK")
        sacked = acks.dropna(subset=["sack_high"])
        if not sacked.empty:
            ax.plot(sacked["t_s"], sacked["sack_high"] / MB, ".", color="#9467bd", markersize=2, label="SACK")
    ax.set_xlabel("time since the run started (s)")
    ax.set_ylabel("sequence (MB from the first byte)")
    ax.set_title(title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def sequence_section(study: LoadedStudy, files: ReportFiles, run_id: str | None) -> Section | None:
    found = captured_run(study, run_id)
    if found is None:
        return None
    rid, path = found
    ts = time_sequence(packets(path), _t0(study, rid, path.name))
    if ts is None or ts["data"].empty:
        return None
    conn = ts["connection"].iloc[0]
    title = f"{rid}: {conn['src']} → {conn['dst']} ({path.name})"
    body = interactive.view_html(sequence_payload(ts), "fp-seq", "capture")
    body += files.figure(sequence_figure(ts, title), "time_sequence",
                         f"Time-sequence graph of the first connection in {path.name} of run {rid}; "
                         f"{int(ts['data']['retrans'].sum())} retransmitted segments. Every file is in "
                         f"work/{rid}/ (Wireshark, tcptrace and tshark read them).")
    return Section("capture", "Time-sequence graph from the capture", body,
                   "Each data segment as seen at the capture point (a TSO burst at the sender is one stroke), "
                   "retransmissions in red, the receiver's cumulative ACK and highest SACKed byte.")
