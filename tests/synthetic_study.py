"""Synthetic study directories with realistic shapes, for report tests and
demos: runs.parquet, series.parquet and rpcs.parquet written directly.

`streams_study` resembles study A (CCA × MTU × streams × loss on 10 Gbit/s,
20 ms, 6 MB receive windows); `sharing_study` resembles study C (two bulk
flows from two senders plus an RPC flow). Goodput follows simple models
(per-stream window cap, Mathis-like loss response, BBR loss tolerance) with
seeded noise, so results are deterministic.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

RATE_BPS = 10e9
RTT_S = 0.02
RMEM_BYTES = 6e6


def _stream_bps(cc: str, mss: int, loss: float, streams: int) -> float:
    window_cap = RMEM_BYTES * 8 / RTT_S  # 2.4 Gbit/s per stream
    if cc == "bbr":
        tol = 0.02 * (1 + math.log2(streams))  # parallel streams tolerate more loss
        per = window_cap * (1.0 if loss < tol else 0.02)
    else:
        k = {"cubic": 1.6, "reno": 1.0, "htcp": 2.0}[cc]
        per = k * 1.22 * mss * 8 / (RTT_S * math.sqrt(loss)) if loss > 0 else window_cap
    return min(window_cap, per, RATE_BPS / streams)


def _series_rows(run_id, backend, group, streams, stream_bps, duration_s, interval_s,
                 rng, collapse=None):
    rows = []
    steps = int(round(duration_s / interval_s))
    for s in range(streams):
        delivered = 0.0
        retrans = 0
        for i in range(steps + 1):
            t = i * interval_s
            g = 0.0 if i == 0 else max(0.0, stream_bps * (1 + 0.08 * rng.standard_normal()))
            if collapse and collapse[0] <= t <= collapse[1]:
                g = stream_bps * 0.01
            delivered += g * interval_s / 8
            retrans += int(rng.poisson(2))
            rows.append({
                "run_id": run_id, "backend": backend, "flow_group": group, "stream": s,
                "t_s": t, "delivered_bytes": int(delivered), "goodput_bps": g,
                "cwnd_segments": int(g * RTT_S / 8 / 1448) + 10,
                "srtt_s": RTT_S * (1.05 + 0.05 * rng.random()), "min_rtt_s": RTT_S,
                "retrans_segments": retrans, "segs_out": 100 * i,
                "pacing_rate_bps": g * 1.2, "delivery_rate_bps": g,
                "inflight_segments": 10, "ca_state": "open",
            })
    return rows


def _write(root: Path, runs, series, rpcs=None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "study.toml").write_text("# synthetic\n")
    # The plan, as fatpipe's manifest records it: every run written here.
    plan = [{"run_id": run_id, "seed": seed}
            for run_id, seed in dict.fromkeys((r["run_id"], r["seed"]) for r in runs)]
    (root / "manifest.json").write_text(json.dumps({"schema_version": 1, "study": root.name, "runs": plan}))
    pd.DataFrame(runs).to_parquet(root / "runs.parquet")
    pd.DataFrame(series).to_parquet(root / "series.parquet")
    if rpcs:
        pd.DataFrame(rpcs).to_parquet(root / "rpcs.parquet")
    return root


def _base_row(run_id, backend, rep, seed, mtu, loss, duration_s, warmup_s):
    return {"run_id": run_id, "backend": backend, "rep": rep, "seed": seed,
            "status": "ok", "reason": "", "rate_bps": RATE_BPS, "rtt_s": RTT_S,
            "loss": loss, "corruption": 0.0, "buffer_bytes": int(RATE_BPS * RTT_S / 8),
            "mtu_bytes": mtu, "duration_s": duration_s, "warmup_s": warmup_s}


def streams_study(root: Path, backend: str = "sim", ccs=("bbr", "cubic", "reno", "htcp"),
                  streams=(1, 2, 4, 8), mtus=(1500, 9000), losses=(1e-5, 1e-4, 1e-3, 1e-2),
                  reps: int = 3, duration_s: float = 12.0, warmup_s: float = 2.0,
                  interval_s: float = 0.5, seed: int = 1, scale: float = 1.0) -> Path:
    """Study A's grid; `scale` multiplies every goodput (to fake a backend
    that disagrees)."""
    rng = np.random.default_rng(seed)
    runs, series = [], []
    point = 0
    for cc in ccs:
        for mtu in mtus:
            for n in streams:
                for loss in losses:
                    mss = mtu - 52
                    per = _stream_bps(cc, mss, loss, n) * scale
                    for rep in range(reps):
                        run_id = f"{backend}-p{point:03d}-r{rep:02d}"
                        noise = 1 + 0.04 * rng.standard_normal()
                        collapse = (5.0, 8.0) if (cc == "cubic" and n == 1 and rep == 0
                                                  and loss == losses[0] and mtu == mtus[0]) else None
                        srows = _series_rows(run_id, backend, 0, n, per * noise, duration_s,
                                             interval_s, rng, collapse)
                        series += srows
                        after = [r["goodput_bps"] for r in srows if r["t_s"] > warmup_s]
                        goodput = float(np.sum(after)) / (len(after) / n)
                        runs.append({
                            **_base_row(run_id, backend, rep, seed + rep, mtu, loss,
                                        duration_s, warmup_s),
                            "path.mtu": mtu, "path.loss": loss, "flows.0.cc": cc,
                            "flows.0.streams": n, "flow_group": 0, "kind": "bulk", "cc": cc,
                            "streams": n, "mss_bytes": mss, "sender": "s1",
                            "goodput_bps": goodput, "retrans_rate": loss * 1.1,
                            "srtt_p50_s": RTT_S * 1.07, "srtt_p99_s": RTT_S * 1.1,
                            "min_rtt_s": RTT_S, "rwnd_limited_frac": 0.5 if n == 1 else 0.0,
                            "sndbuf_limited_frac": 0.0,
                            "flags": "rwnd_limited" if n == 1 and cc == "bbr" else "",
                            "wall_s": 1.0,
                        })
                    point += 1
    return _write(root, runs, series)


def sharing_study(root: Path, backend: str = "sim", reps: int = 3, duration_s: float = 12.0,
                  warmup_s: float = 2.0, interval_s: float = 0.5, seed: int = 2,
                  rpc_scale: float = 1.0) -> Path:
    """Flow 0 (swept CCA) vs flow 1 (cubic) from two senders, plus an RPC flow."""
    rng = np.random.default_rng(seed)
    runs, series, rpcs = [], [], []
    shares = {"cubic": 0.5, "bbr": 0.7, "reno": 0.5}
    for point, cc0 in enumerate(["cubic", "bbr", "reno"]):
        for rep in range(reps):
            run_id = f"{backend}-p{point:03d}-r{rep:02d}"
            base = _base_row(run_id, backend, rep, seed + rep, 1500, 0.0, duration_s, warmup_s)
            bulk = RATE_BPS * 0.9
            g0 = bulk * shares[cc0] * (1 + 0.03 * rng.standard_normal())
            g1 = bulk - g0
            for group, cc, g, kind in ((0, cc0, g0, "bulk"), (1, "cubic", g1, "bulk"),
                                       (2, "cubic", 0.05 * RATE_BPS, "rpc")):
                series += _series_rows(run_id, backend, group, 1, g, duration_s, interval_s, rng)
                row = {**base, "flows.0.cc": cc0, "flow_group": group, "kind": kind, "cc": cc,
                       "streams": 1, "mss_bytes": 1448, "sender": f"s{group + 1}",
                       "goodput_bps": g, "retrans_rate": 1e-4, "flags": "", "wall_s": 1.0}
                if kind == "rpc":
                    d = 0.021 * rpc_scale * (1 + shares[cc0]) * rng.lognormal(0, 0.4, 200)
                    for k, dur in enumerate(d):
                        rpcs.append({"run_id": run_id, "flow_group": group, "stream": 0,
                                     "start_s": warmup_s + k * 0.05, "duration_s": float(dur),
                                     "response_bytes": 1_000_000})
                    for q, name in ((50, "p50"), (90, "p90"), (99, "p99"), (99.9, "p999")):
                        row[f"rpc_{name}_s"] = float(np.percentile(d, q))
                runs.append(row)
    return _write(root, runs, series, rpcs)


def lossless_study(root: Path, backend: str = "sim", ccs=("cubic", "bbr", "vegas"), groups: int = 1,
                   streams: int = 1, reps: int = 3, seed: int = 1, goodput_bps=None, srtt_s=None,
                   retrans_rate=None, rate_bps: float = 100e6, rtt_s: float = 0.04,
                   buffer_bdp: float = 4.0, duration_s: float = 4.0, warmup_s: float = 1.0,
                   interval_s: float = 0.5) -> Path:
    """One lossless point per CCA, like studies/fidelity-deep-buffer.toml
    (groups=1) and studies/fidelity-many-flows-grid.toml (groups=3: every
    flow group of a run has the point's CCA, swept together). goodput_bps,
    srtt_s and retrans_rate map a CCA to each flow group's value (defaults:
    an equal share of 90 % of the rate, 1.5 × the RTT, 0.1 %); repetition r
    scales every value by 1 + 0.02 (r − 1), so two studies made with the
    same maps differ by their maps alone."""
    goodput_bps, srtt_s, retrans_rate = goodput_bps or {}, srtt_s or {}, retrans_rate or {}
    rng = np.random.default_rng(seed)
    runs, series = [], []
    for point, cc in enumerate(ccs):
        for rep in range(reps):
            run_id = f"{backend}-p{point:03d}-r{rep:02d}"
            scale = 1 + 0.02 * (rep - 1)
            base = _base_row(run_id, backend, rep, seed + rep, 1500, 0.0, duration_s, warmup_s)
            base.update(rate_bps=rate_bps, rtt_s=rtt_s, buffer_bytes=int(buffer_bdp * rate_bps * rtt_s / 8),
                        **{f"flows.{g}.cc": cc for g in range(groups)})
            for group in range(groups):
                g = goodput_bps.get(cc, 0.9 * rate_bps / groups) * scale
                series += _series_rows(run_id, backend, group, streams, g / streams, duration_s, interval_s, rng)
                runs.append({**base, "flow_group": group, "kind": "bulk", "cc": cc, "streams": streams,
                             "mss_bytes": 1448, "sender": f"s{group + 1}", "goodput_bps": g,
                             "retrans_rate": retrans_rate.get(cc, 1e-3) * scale,
                             "srtt_p50_s": srtt_s.get(cc, 1.5 * rtt_s) * scale, "min_rtt_s": rtt_s,
                             "flags": "", "wall_s": 1.0})
    return _write(root, runs, series)
