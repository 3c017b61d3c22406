"""Repetition statistics per grid point: mean, sd and a Student-t interval.

Rules
-----
* A *grid point* is one combination of the swept keys and one flow group
  (its CCA, streams and MSS), on one backend. :func:`point_columns` names the
  columns that identify it.
* Only runs with ``status == "ok"`` and a non-missing metric count.
* ``sd`` is the sample standard deviation (ddof = 1).
* The 95 % confidence interval of the mean is ``mean ± t(0.975, n−1)·sd/√n``
  (Student t, repetitions assumed independent and roughly normal). With one
  repetition there is no interval (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

CONFIDENCE = 0.95

# The flow group's own columns, which identify it within a sweep point.
# cwnd_clamp is in the runs table only when a flow of the study is clamped.
GROUP_COLUMNS = ["flow_group", "kind", "cc", "cwnd_clamp", "streams", "mss_bytes"]


# ---- Student t quantile (no scipy) -------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t (bisection on :func:`t_cdf`)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if q < 0.5:
        return -t_quantile(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


# ---- mean and interval ------------------------------------------------------


def mean_ci(values: Iterable[float], confidence: float = CONFIDENCE) -> dict[str, float]:
    """Mean, sample sd, n and the Student-t interval of the mean.

    Missing values (None/NaN) are dropped. Returns NaN for what cannot be
    computed (no values; sd and interval with a single value).
    """
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[~np.isnan(x)]
    n = int(x.size)
    out = {"n": n, "mean": math.nan, "sd": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    if n == 0:
        return out
    mean = float(x.mean())
    out["mean"] = mean
    if n >= 2:
        sd = float(x.std(ddof=1))
        half = t_quantile(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
        out.update(sd=sd, ci_low=mean - half, ci_high=mean + half)
    return out


# ---- grid points ------------------------------------------------------------


def swept_columns(runs: pd.DataFrame) -> list[str]:
    """The swept keys of a runs table (dotted column names), in table order."""
    return [c for c in runs.columns if "." in c]


def point_columns(runs: pd.DataFrame, with_backend: bool = True) -> list[str]:
    """Columns identifying a grid point: backend, every swept key, then the
    flow group's own columns. (Swept keys such as ``flows.0.cc`` also matter
    for the rows of the *other* flow groups, so all of them are kept.)"""
    cols = (["backend"] if with_backend and "backend" in runs.columns else [])
    cols += swept_columns(runs)
    cols += [c for c in GROUP_COLUMNS if c in runs.columns]
    return cols


def repeats_group_column(table: pd.DataFrame, key: str) -> bool:
    """Whether swept `key` only restates a flow group's own column: it is a
    flow setting (``flows.N.*``) or the MTU (which sets the MSS), and it takes
    one value per combination of the group columns present."""
    if not (key.startswith("flows.") or key == "path.mtu"):
        return False
    own = [c for c in GROUP_COLUMNS if c in table.columns]
    return bool(own) and table.groupby(own, dropna=False)[key].nunique(dropna=False).max() <= 1


def display_columns(runs: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """`keys` without what tables people read need not repeat: a swept key
    that the flow group's own columns determine (``path.mtu`` given the MSS,
    ``flows.0.cc`` when group 0 is the only group), and ``backend`` when the
    study used one backend."""
    own = [c for c in GROUP_COLUMNS if c in runs.columns]
    drop = {k for k in keys if k in runs.columns and own and repeats_group_column(runs, k)}
    if "backend" in runs.columns and runs["backend"].nunique() <= 1:
        drop.add("backend")
    return without_repeated_swept(runs, [k for k in keys if k not in drop])


def without_repeated_swept(table: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """`keys` without a swept key whose column equals an earlier swept key's
    on every row: keys of one linked group (``flows.1.cc`` and ``flows.2.cc``
    set together) are shown once, by the first of them."""
    out: list[str] = []
    for k in keys:
        if "." in k and k in table.columns and any(
                "." in p and p in table.columns and table[k].astype(object).equals(table[p].astype(object))
                for p in out):
            continue
        out.append(k)
    return out


def _flag_union(values: Iterable) -> str:
    flags = set()
    for v in values:
        if isinstance(v, str):
            flags.update(f for f in v.split(",") if f)
    return ",".join(sorted(flags))


def grid_summary(runs: pd.DataFrame, metric: str = "goodput_bps",
                 keys: Sequence[str] | None = None,
                 confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per grid point: the keys, then ``n``, ``mean``, ``sd``,
    ``ci_low``, ``ci_high`` of `metric` over ok repetitions, ``failed`` (runs
    not ok) and ``flags`` (the union of the repetitions' flags)."""
    keys = list(keys) if keys is not None else point_columns(runs)
    out_cols = [*keys, "n", "mean", "sd", "ci_low", "ci_high", "failed", "flags"]
    if runs.empty or metric not in runs.columns:
        return pd.DataFrame(columns=out_cols)
    rows = []
    for key, grp in runs.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        ok = grp[grp["status"] == "ok"] if "status" in grp.columns else grp
        stats = mean_ci(ok[metric].tolist(), confidence)
        rows.append({
            **dict(zip(keys, key, strict=True)), **stats,
            "failed": int(len(grp) - len(ok)),
            "flags": _flag_union(ok["flags"]) if "flags" in ok.columns else "",
        })
    return pd.DataFrame(rows, columns=out_cols)
