"""Runs conformance scripts by file or directory and sums them up: per
script pass / fail / unsupported, per directory the counts, as text for
people and JSON for CI (`fatpipe conform`)."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

from .outcome import Outcome
from .runner import run_script

STATUSES = ("pass", "fail", "unsupported")


def find_scripts(paths: list[Path]) -> list[Path]:
    """The .pkt files named, and those under the directories named, sorted
    within each directory; a path that does not exist raises."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(p.rglob("*.pkt"))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such script or directory")
    return out


def run_all(paths: list[Path]) -> list[Outcome]:
    return [run_script(s) for s in find_scripts(paths)]


def by_directory(outcomes: list[Outcome]) -> OrderedDict[str, dict[str, int]]:
    table: OrderedDict[str, dict[str, int]] = OrderedDict()
    for o in outcomes:
        row = table.setdefault(str(Path(o.script).parent), {s: 0 for s in STATUSES})
        row[o.status] += 1
    return table


def format_text(outcomes: list[Outcome], verbose: bool = False) -> str:
    lines = []
    for o in outcomes:
        if o.status == "pass":
            if verbose:
                lines.append(f"pass         {o.script}")
            continue
        where = f":{o.line}" if o.line else ""
        lines.append(f"{o.status:<12} {o.script}{where}: {o.reason}")
        if o.status == "fail":
            lines.append(f"    expected: {(o.expected or '').splitlines()[0] if o.expected else '-'}")
            lines.append(f"    produced: {o.produced or '(nothing)'}")
    lines.append("")
    lines.append(f"{'directory':<40} {'pass':>5} {'fail':>5} {'unsupported':>12}")
    for d, row in by_directory(outcomes).items():
        lines.append(f"{d:<40} {row['pass']:>5} {row['fail']:>5} {row['unsupported']:>12}")
    total = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    lines.append(f"{'total':<40} {total['pass']:>5} {total['fail']:>5} {total['unsupported']:>12}")
    return "\n".join(lines)


def to_json(outcomes: list[Outcome]) -> str:
    total = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    return json.dumps({"scripts": [o.to_dict() for o in outcomes],
                       "directories": by_directory(outcomes), "total": total}, indent=1)
