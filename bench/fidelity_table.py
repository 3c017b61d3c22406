"""Kernel-vs-sim fidelity tables for docs/fidelity.md.

    python3 bench/fidelity_table.py [RESULTS_DIR] [--export DIR]

Reads (under RESULTS_DIR, default results/) the kernel and sim results of
studies/fidelity.toml (fidelity/, fidelity-sim/), of
studies/fidelity-fairness.toml (fidelity-fairness/, fidelity-fairness-sim/, pooled
with its companions fidelity-fairness-more*/ and fidelity-fairness-more*-sim/)
and the kernel results of studies/bpf-port-validation.toml
(bpf-port-validation/), and of studies/fidelity-resolve.toml
(fidelity-resolve/, fidelity-resolve-sim/) and, when present, the
simulator with a GRO receiver on the grid (fidelity-sim-gro/) and the
lossless studies studies/fidelity-deep-buffer.toml (fidelity-deep-buffer/,
fidelity-deep-buffer-sim/) and studies/fidelity-many-flows-grid.toml
(fidelity-many-flows-grid/, fidelity-many-flows-grid-sim/), and prints
markdown tables (a study whose directories are absent is skipped):

1. per CCA and grid point, sim/kernel goodput ratio with its 95 % interval
   (fatpipe compare's rule: compare.compare_points, over runs paired by seed
   where both sides have the seeds: the number of pairs and their
   correlation ρ follow), and the retransmission rate of each side;
2. the 3-flow point: flow 0's share of the three flows' goodput on each
   side, and the goodput ratio of flow 0;
3. the BPF ports fp_reno/fp_cubic against the built-in reno/cubic (port /
   built-in ratio with its interval; retransmission rates);
4. the lossless points, per CCA: sim/kernel goodput ratio, the median
   smoothed RTT of each side (the queue the CCA keeps) with its sim/kernel
   ratio, the retransmission rate of each side with its ratio. Many flows:
   per run, the three senders' goodput summed and their median smoothed RTT
   and retransmission rate averaged (the senders are alike: same CCA,
   streams and path), then compared as one point (run_totals).

A point is marked when it disagrees as compare says (compare_points'
`disagree`: its ratio outside +-15 %, compare.DISAGREE_FRACTION; two
retransmission rates below compare.RETRANS_AGREE_BELOW agree) and, separately,
when its interval excludes 1 (the difference is resolved).

--export DIR writes the data behind the tables as CSV (docs/fidelity-data/):
compare's tables (NAME-goodput.csv, NAME-srtt.csv for the median smoothed
RTT, NAME-retrans.csv; many-flows-* over run_totals), the per-run rows of
each side (NAME-kernel-runs.csv, NAME-sim-runs.csv) and, per kernel run,
the data and ACK packets linkem carried (NAME-kernel-acks.csv), for NAME in
grid, grid-gro, resolve, fairness, deep-buffer, many-flows.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd

from fatpipe.compare import DISAGREE_FRACTION, RETRANS_AGREE_BELOW, compare_points
from fatpipe.results import StudyStore


def runs(path: Path) -> pd.DataFrame:
    """The ok runs of one study directory, with the directory's name as
    `study` (run ids repeat across studies: kernel-p000-r00 in each)."""
    r = StudyStore(path).load().runs
    return r[r["status"] == "ok"].assign(study=path.name)


def pooled(base: Path, *names: str) -> pd.DataFrame:
    """The ok runs of every study directory in `names` that exists, together
    (the same grid point's repetitions from several studies pool)."""
    found = [runs(base / n) for n in names if (base / n / "runs.parquet").exists()]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame()


def fmt_ratio(row) -> str:
    """A compare_points row's ratio, interval and marks (the module's docstring)."""
    if pd.isna(row.ratio):  # A's mean is 0 (or missing); compare_points says whether that disagrees
        return "– **!**" if row.disagree else "–"
    ci = "" if pd.isna(row.ratio_ci_low) else f" [{row.ratio_ci_low:.2f}–{row.ratio_ci_high:.2f}]"
    mark = ""
    if row.disagree:
        mark = " **!**" if not pd.isna(row.ratio_ci_low) and (row.ratio_ci_low > 1 or row.ratio_ci_high < 1) else " ?"
    paired = f" (paired: {int(row.pairs)}, ρ {row.pair_corr:.2f})" if getattr(row, "pairs", 0) else ""
    wide = not pd.isna(row.ratio_ci_high) and row.ratio_ci_high / row.ratio > 1 + DISAGREE_FRACTION
    needs = f" · ±15 % needs {row.reps_to_resolve:.0f}" if wide and not pd.isna(row.reps_to_resolve) else ""
    return f"{row.ratio:.2f}{ci}{mark}{paired}{needs}"


def mean_by(r: pd.DataFrame, keys: list[str], col: str) -> pd.Series:
    return r.groupby(keys)[col].mean()


def grid_table(kernel: pd.DataFrame, sim: pd.DataFrame) -> str:
    t = compare_points(kernel, sim)
    keys = ["cc", "loss", "streams"]
    rk, rs = mean_by(kernel, keys, "retrans_rate"), mean_by(sim, keys, "retrans_rate")
    gk, gs = mean_by(kernel, keys, "goodput_bps"), mean_by(sim, keys, "goodput_bps")
    points = sorted({(row.loss, row.streams) for row in t.itertuples()})
    head = "| CCA | " + " | ".join(f"loss {lo:g}, {s} stream{'s' if s > 1 else ''}" for lo, s in points) + " |"
    lines = [head, "|---" * (len(points) + 1) + "|"]
    order = list(dict.fromkeys(kernel["cc"]))
    for cc in order:
        cells = []
        for lo, s in points:
            row = t[(t["cc"] == cc) & (t["loss"] == lo) & (t["streams"] == s)]
            if row.empty:
                cells.append("–")
                continue
            r = row.iloc[0]
            k = (cc, lo, s)
            cells.append(f"{fmt_ratio(r)}<br>{gk.get(k, float('nan')) / 1e6:.0f} / {gs.get(k, float('nan')) / 1e6:.0f} "
                         f"Mbit/s<br>rtx {100 * rk.get(k, float('nan')):.3f} / {100 * rs.get(k, float('nan')):.3f} %")
        lines.append(f"| {cc} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def share_of_flow0(r: pd.DataFrame) -> pd.DataFrame:
    per_run = r.pivot_table(index=["study", "run_id", "flows.0.cc"], columns="flow_group", values="goodput_bps")
    share = per_run[0] / per_run.sum(axis=1)
    out = share.groupby(level="flows.0.cc").agg(["mean", "std", "count"])
    out["total"] = per_run.sum(axis=1).groupby(level="flows.0.cc").mean()
    return out


def fairness_table(kernel: pd.DataFrame, sim: pd.DataFrame) -> str:
    sk, ss = share_of_flow0(kernel), share_of_flow0(sim)
    t = compare_points(kernel[kernel["flow_group"] == 0], sim[sim["flow_group"] == 0])
    lines = ["| flow 0 (vs 2 CUBIC) | share kernel (mean ± sd, n) | share sim | total kernel / sim Mbit/s "
             "| flow 0 goodput sim/kernel |", "|---|---|---|---|---|"]
    for cc in dict.fromkeys(kernel.loc[kernel["flow_group"] == 0, "cc"]):
        row = t[t["cc"] == cc]
        k, s = sk.loc[cc], ss.loc[cc] if cc in ss.index else None
        sim_share = f"{100 * s['mean']:.1f} ± {100 * s['std']:.1f} % ({int(s['count'])})" if s is not None else "–"
        total = f"{k['total'] / 1e6:.0f} / {s['total'] / 1e6:.0f}" if s is not None else "–"
        lines.append(f"| {cc} | {100 * k['mean']:.1f} ± {100 * k['std']:.1f} % ({int(k['count'])}) | {sim_share} | "
                     f"{total} | {fmt_ratio(row.iloc[0]) if not row.empty else '–'} |")
    return "\n".join(lines)


def validation_table(r: pd.DataFrame) -> str:
    ported = r["cc"].str.startswith("fp_")
    builtin = r[~ported]
    port = r[ported].assign(**{c: (lambda d, c=c: d[c].str.removeprefix("fp_")) for c in ("cc", "flows.0.cc")})
    t = compare_points(builtin, port)
    rt = compare_points(builtin, port, metric="retrans_rate")
    lines = ["| CCA | loss | streams | built-in / port Mbit/s | port/built-in goodput | built-in / port rtx % "
             "| port/built-in rtx rate |", "|---|---|---|---|---|---|---|"]
    for row in t.sort_values(["cc", "loss", "streams"]).itertuples():
        x = rt[(rt["cc"] == row.cc) & (rt["loss"] == row.loss) & (rt["streams"] == row.streams)].iloc[0]
        lines.append(f"| {row.cc} | {row.loss:g} | {row.streams} | {row.a_mean / 1e6:.1f} / {row.b_mean / 1e6:.1f} | "
                     f"{fmt_ratio(row)} | {100 * x.a_mean:.3f} / {100 * x.b_mean:.3f} | {fmt_ratio(x)} |")
    return "\n".join(lines)


def run_totals(r: pd.DataFrame) -> pd.DataFrame:
    """One row per run (flow group 0's identity): goodput summed over the
    run's flow groups (NaN when a group has none), median smoothed RTT and
    retransmission rate averaged over them: for runs whose flow groups are
    alike (studies/fidelity-many-flows-grid.toml: three senders, one CCA)."""
    ident = ["study", "run_id"]
    totals = r.groupby(ident).agg(
        goodput_bps=("goodput_bps", lambda g: g.sum() if g.notna().all() else float("nan")),
        srtt_p50_s=("srtt_p50_s", "mean"), retrans_rate=("retrans_rate", "mean"))
    first = r[r["flow_group"] == 0].drop(columns=list(totals.columns))
    return first.merge(totals.reset_index(), on=ident, how="left")


def one_point_per_cc(t: pd.DataFrame, what: str) -> dict:
    """compare_points' rows by CCA, for studies whose only swept key is the CCA."""
    t = t[t["matched"]]
    twice = t["cc"][t["cc"].duplicated()]
    if len(twice):
        raise ValueError(f"{what}: more than one grid point for cc {twice.iloc[0]!r} (expected one per CCA)")
    return {row.cc: row for row in t.itertuples()}


def lossless_table(kernel: pd.DataFrame, sim: pd.DataFrame, what: str) -> str:
    """Per CCA: goodput, median smoothed RTT and retransmission rate, kernel
    and sim, each with compare's sim/kernel ratio (one point per CCA)."""
    good = one_point_per_cc(compare_points(kernel, sim), what)
    srtt = one_point_per_cc(compare_points(kernel, sim, metric="srtt_p50_s"), what)
    rtx = one_point_per_cc(compare_points(kernel, sim, metric="retrans_rate"), what)
    lines = ["| CCA | goodput sim/kernel | kernel / sim Mbit/s | median srtt kernel / sim ms | srtt sim/kernel "
             "| rtx kernel / sim % | rtx sim/kernel |", "|---|---|---|---|---|---|---|"]
    for cc in dict.fromkeys(kernel["cc"]):
        if cc not in good:
            lines.append(f"| {cc} | – | – | – | – | – | – |")
            continue
        g, d, x = good[cc], srtt.get(cc), rtx.get(cc)
        delay = (f"{1e3 * d.a_mean:.1f} / {1e3 * d.b_mean:.1f} | {fmt_ratio(d)}" if d is not None else "– | –")
        retrans = (f"{100 * x.a_mean:.3f} / {100 * x.b_mean:.3f} | {fmt_ratio(x)}" if x is not None else "– | –")
        lines.append(f"| {cc} | {fmt_ratio(g)} | {g.a_mean / 1e6:.1f} / {g.b_mean / 1e6:.1f} | {delay} | {retrans} |")
    return "\n".join(lines)


# The lossless studies: (CSV name, kernel study directory (the sim's adds
# -sim), title, the rows compared per run).
LOSSLESS = (
    ("deep-buffer", "fidelity-deep-buffer", "1 stream, lossless 100 Mbit/s, 40 ms, 4 BDP", lambda r: r),
    ("many-flows", "fidelity-many-flows-grid",
     "3 senders × 32 streams, lossless 100 Mbit/s, 10 ms, 1 BDP (per run: the senders' total goodput, "
     "their mean median srtt and retransmission rate)", run_totals),
)

RUN_COLUMNS = ["study", "run_id", "seed", "cc", "streams", "loss", "flow_group", "goodput_bps", "retrans_rate",
               "srtt_p50_s", "path_random_drops", "path_queue_drops", "path_packets", "path_late_p99_s", "flags"]


def ack_counts(study: Path) -> pd.DataFrame:
    """Per kernel run: data segments and other packets (ACKs) linkem carried."""
    rows = []
    for f in sorted((study / "runs").glob("*.json")):
        facts = json.loads(f.read_text()).get("facts") or {}
        lk = facts.get("linkem") or {}
        if lk.get("data_packets"):
            acks = lk["packets"] - lk["data_packets"]
            rows.append({"study": study.name, "run_id": f.stem, "data_packets": lk["data_packets"], "ack_packets": acks,
                         "segments_per_ack": round(lk["data_packets"] / acks, 2) if acks else None})
    return pd.DataFrame(rows)


def more(base: Path, name: str) -> tuple[str, ...]:
    """A study directory and its "-more" companions under `base`
    (fidelity-fairness-sim: fidelity-fairness-more-sim,
    fidelity-fairness-more2-sim, ...), which repeat its grid points."""
    if not name.startswith("fidelity-fairness"):
        return (name,)
    companion = re.compile(r"fidelity-fairness-more\d*" + re.escape(name.removeprefix("fidelity-fairness")))
    return (name, *sorted(d.name for d in base.iterdir() if d.is_dir() and companion.fullmatch(d.name)))


def have(base: Path, *names: str) -> bool:
    """Whether every study directory in `names` holds results."""
    return all((base / d / "runs.parquet").exists() for d in names)


# compare's tables written per study: (file suffix, runs column).
COMPARED = (("goodput", "goodput_bps"), ("srtt", "srtt_p50_s"), ("retrans", "retrans_rate"))


def export(base: Path, out: Path) -> None:
    """The CSVs behind the tables (see the module's docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, kernel_dir, sim_dir, compared in (
            ("grid", "fidelity", "fidelity-sim", None),
            ("grid-gro", None, "fidelity-sim-gro", None),
            ("resolve", "fidelity-resolve", "fidelity-resolve-sim", None),
            ("fairness", "fidelity-fairness", "fidelity-fairness-sim", None),
            *((name, kdir, f"{kdir}-sim", rows) for name, kdir, _title, rows in LOSSLESS)):
        if not have(base, kernel_dir or "fidelity", sim_dir):
            continue
        k, s = pooled(base, *more(base, kernel_dir or "fidelity")), pooled(base, *more(base, sim_dir))
        ck, cs = (compared(k), compared(s)) if compared else (k, s)
        for suffix, metric in COMPARED:
            compare_points(ck, cs, metric=metric).to_csv(out / f"{name}-{suffix}.csv", index=False)
        s[[c for c in RUN_COLUMNS if c in s.columns]].to_csv(out / f"{name}-sim-runs.csv", index=False)
        if kernel_dir:
            k[[c for c in RUN_COLUMNS if c in k.columns]].to_csv(out / f"{name}-kernel-runs.csv", index=False)
            acks = pd.concat([ack_counts(base / d) for d in more(base, kernel_dir) if (base / d).exists()])
            if not acks.empty:
                flow0 = k[k["flow_group"] == 0]  # a run's CCA is flow group 0's (the fairness point's X)
                acks.merge(flow0[["study", "run_id", "cc"]].drop_duplicates(), on=["study", "run_id"]).to_csv(
                    out / f"{name}-kernel-acks.csv", index=False)
    if (base / "bpf-port-validation").exists():
        v = runs(base / "bpf-port-validation")
        v[[c for c in RUN_COLUMNS if c in v.columns]].to_csv(out / "validation-kernel-runs.csv", index=False)


def main(argv: list[str]) -> None:
    args = list(argv)
    if "--export" in args:
        i = args.index("--export")
        out = Path(args[i + 1])
        del args[i:i + 2]
        export(Path(args[0]) if args else Path("results"), out)
        return
    base = Path(args[0]) if args else Path("results")
    if have(base, "fidelity", "fidelity-sim"):
        print("## Grid: sim/kernel goodput ratio [95 % CI]; kernel / sim goodput; kernel / sim retransmissions\n")
        print(grid_table(runs(base / "fidelity"), runs(base / "fidelity-sim")))
    if have(base, "fidelity", "fidelity-sim-gro"):
        print("\n## Grid, the simulator's receiver with GRO: sim/kernel\n")
        print(grid_table(runs(base / "fidelity"), runs(base / "fidelity-sim-gro")))
    if have(base, "fidelity-resolve", "fidelity-resolve-sim"):
        print("\n## More repetitions where the grid did not resolve 15 %\n")
        print(grid_table(runs(base / "fidelity-resolve"), runs(base / "fidelity-resolve-sim")))
    for _name, kdir, title, rows in LOSSLESS:
        if have(base, kdir, f"{kdir}-sim"):
            print(f"\n## Lossless: {title}\n")
            print(lossless_table(rows(runs(base / kdir)), rows(runs(base / f"{kdir}-sim")), kdir))
    if (base / "fidelity-fairness").exists():
        print("\n## 1 X vs 2 CUBIC\n")
        print(fairness_table(pooled(base, *more(base, "fidelity-fairness")),
                             pooled(base, *more(base, "fidelity-fairness-sim"))))
    if (base / "bpf-port-validation").exists():
        print("\n## BPF ports vs built-in (kernel)\n")
        print(validation_table(runs(base / "bpf-port-validation")))
    print("\n(!: outside ±15 % and the interval excludes 1; ?: outside ±15 %, interval includes 1; "
          "'±15 % needs N': the interval is wider than ±15 %, and N repetitions per side (pairs) would "
          "narrow it to ±15 % at the variance seen; retransmission rates below "
          f"{RETRANS_AGREE_BELOW:.1%} on both sides agree; –: no ratio, the kernel's rate is 0, "
          "marked when the simulator's is not below that)")


if __name__ == "__main__":
    main(sys.argv[1:])
