"""Kernel-vs-sim fidelity tables for docs/fidelity.md.

    python3 bench/fidelity_table.py [RESULTS_DIR] [--export DIR]

Reads (under RESULTS_DIR, default results/) the kernel and sim results of
studies/fidelity.toml (fidelity/, fidelity-sim/), of
studies/fidelity-fairness.toml (fidelity-fairness/, fidelity-fairness-sim/, pooled
with its companions fidelity-fairness-more*/ and fidelity-fairness-more*-sim/)
and the kernel results of studies/bpf-port-validation.toml
(bpf-port-validation/), and of studies/fidelity-resolve.toml
(fidelity-resolve/, fidelity-resolve-sim/) and, when present, the
simulator with a GRO receiver on the grid (fidelity-sim-gro/), and prints
markdown tables:

1. per CCA and grid point, sim/kernel goodput ratio with its 95 % interval
   (fatpipe compare's rule: compare.compare_points, over runs paired by seed
   where both sides have the seeds: the number of pairs and their
   correlation ρ follow), and the retransmission rate of each side;
2. the 3-flow point: flow 0's share of the three flows' goodput on each
   side, and the goodput ratio of flow 0;
3. the BPF ports fp_reno/fp_cubic against the built-in reno/cubic (port /
   built-in ratio with its interval; retransmission rates).

A point is marked when its ratio is outside +-15 % (compare.DISAGREE_FRACTION)
and, separately, when its interval excludes 1 (the difference is resolved).

--export DIR writes the data behind the tables as CSV (docs/fidelity-data/):
compare's tables (goodput, retransmission rate), the per-run rows of each
side and, per kernel run, the data and ACK packets linkem carried.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd

from fatpipe.compare import DISAGREE_FRACTION, compare_points
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
    if pd.isna(row.ratio):
        return "–"
    ci = "" if pd.isna(row.ratio_ci_low) else f" [{row.ratio_ci_low:.2f}–{row.ratio_ci_high:.2f}]"
    mark = ""
    if abs(row.ratio - 1) > DISAGREE_FRACTION:
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


RUN_COLUMNS = ["study", "run_id", "seed", "cc", "streams", "loss", "flow_group", "goodput_bps", "retrans_rate",
               "path_random_drops", "path_queue_drops", "path_packets", "path_late_p99_s", "flags"]


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


def export(base: Path, out: Path) -> None:
    """The CSVs behind the tables (see the module's docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, kernel_dir, sim_dir in (("grid", "fidelity", "fidelity-sim"),
                                      ("grid-gro", None, "fidelity-sim-gro"),
                                      ("resolve", "fidelity-resolve", "fidelity-resolve-sim"),
                                      ("fairness", "fidelity-fairness", "fidelity-fairness-sim")):
        if not all((base / d / "runs.parquet").exists() for d in (kernel_dir or "fidelity", sim_dir)):
            continue
        k, s = pooled(base, *more(base, kernel_dir or "fidelity")), pooled(base, *more(base, sim_dir))
        compare_points(k, s).to_csv(out / f"{name}-goodput.csv", index=False)
        compare_points(k, s, metric="retrans_rate").to_csv(out / f"{name}-retrans.csv", index=False)
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
    print("## Grid: sim/kernel goodput ratio [95 % CI]; kernel / sim goodput; kernel / sim retransmissions\n")
    print(grid_table(runs(base / "fidelity"), runs(base / "fidelity-sim")))
    if (base / "fidelity-sim-gro" / "runs.parquet").exists():
        print("\n## Grid, the simulator's receiver with GRO: sim/kernel\n")
        print(grid_table(runs(base / "fidelity"), runs(base / "fidelity-sim-gro")))
    if all((base / d / "runs.parquet").exists() for d in ("fidelity-resolve", "fidelity-resolve-sim")):
        print("\n## More repetitions where the grid did not resolve 15 %\n")
        print(grid_table(runs(base / "fidelity-resolve"), runs(base / "fidelity-resolve-sim")))
    if (base / "fidelity-fairness").exists():
        print("\n## 1 X vs 2 CUBIC\n")
        print(fairness_table(pooled(base, *more(base, "fidelity-fairness")),
                             pooled(base, *more(base, "fidelity-fairness-sim"))))
    if (base / "bpf-port-validation").exists():
        print("\n## BPF ports vs built-in (kernel)\n")
        print(validation_table(runs(base / "bpf-port-validation")))
    print("\n(!: outside ±15 % and the interval excludes 1; ?: outside ±15 %, interval includes 1; "
          "'±15 % needs N': the interval is wider than ±15 %, and N repetitions per side (pairs) would "
          "narrow it to ±15 % at the variance seen)")


if __name__ == "__main__":
    main(sys.argv[1:])
