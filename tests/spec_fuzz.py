"""Hostile study specs for `fatpipe check`, and a runner that classifies outcomes.

`cases()` builds a deterministic list of malformed, absurd or malicious specs
(wrong TOML types, inf/nan, overflow, subnormals, binary files, /dev/zero,
deep nesting, odd sweep keys, sweep bombs, forbidden sweep keys, malformed
linked sweep groups, absurd magnitudes, unknown keys, ...). Each case knows whether it must be rejected
and, when it must, which key the rejection has to name.

Outcomes:
  valid                   `check` accepted it (fine unless the case must be rejected)
  rejected-naming-a-key   SpecError whose problems name the expected key
  rejected-without-key    SpecError naming no key (or not the expected one)
  traceback               any other exception
  hang                    no answer within the timeout
  memory-blowup           MemoryError, allocation failure or killed at the memory limit
  accepted-but-invalid    accepted although the case must be rejected

Run as a script it checks every case in its own `python3 -m fatpipe check`
subprocess (memory limit, timeout) and prints the classes × outcomes table:

    python3 tests/spec_fuzz.py [--timeout 10] [--mem-mib 1024] [--list OUTCOME]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OUTCOMES = (
    "valid", "rejected-naming-a-key", "rejected-without-key", "traceback",
    "hang", "memory-blowup", "accepted-but-invalid",
)


@dataclass(frozen=True)
class Case:
    name: str                   # unique, says what the case is
    cls: str                    # class of hostility (a row of the table)
    text: bytes | None = None   # file content; None when `path` names an existing file
    path: str | None = None     # an existing path to check instead (/dev/zero, a directory)
    must_reject: bool = True    # False: either outcome is fine, as long as it is clean
    key: str | None = None      # the key a rejection must name (prefix match); None: any key
    risky: bool = False         # may hang or exhaust memory: run it in a limited subprocess


# ---- the base spec, written leaf by leaf as TOML literals ----------------

BASE: dict[str, str] = {
    "version": "1",
    "study.name": '"fuzz"',
    "study.description": '"hostile spec"',
    "study.backends": '["sim"]',
    "study.duration": '"10s"',
    "study.warmup": '"1s"',
    "study.repetitions": "2",
    "study.seed": "7",
    "study.interval": '"100ms"',
    "path.rate": '"1Gbit"',
    "path.rtt": '"20ms"',
    "path.loss": "1e-4",
    "path.corruption": "0.0",
    "path.buffer": '"1bdp"',
    "path.mtu": "1500",
    "hosts.default.rmem_max": '"6MiB"',
    "hosts.default.wmem_max": '"4MiB"',
    "hosts.s2.stream_rate_cap": '"500Mbit"',
    "hosts.s2.extra_rtt": '"5ms"',
    "flows.0.kind": '"bulk"',
    "flows.0.cc": '"cubic"',
    "flows.0.streams": "2",
    "flows.0.mss": "1000",
    "flows.0.sender": '"s1"',
    "flows.0.start": '"0s"',
    "flows.1.kind": '"rpc"',
    "flows.1.cc": '"bbr"',
    "flows.1.sender": '"s2"',
    "flows.1.request": '"100B"',
    "flows.1.response": '"1MB"',
    "flows.1.concurrency": "4",
    "flows.2.kind": '"rpc"',
    "flows.2.cc": '"reno"',
    "flows.2.sender": '"s2"',
    "flows.2.request": '"1KB"',
    "flows.2.response": '"10KB"',
    "flows.2.rate": '"200/s"',
}
BASE_SWEEP: dict[str, str] = {"path.loss": "[0.0, 1e-4]", "flows.0.cc": '["reno", "cubic"]'}

TIME_KEYS = ("study.duration", "study.warmup", "study.interval", "path.rtt",
             "hosts.s2.extra_rtt", "flows.0.start")
RATE_KEYS = ("path.rate", "hosts.s2.stream_rate_cap")
SIZE_KEYS = ("hosts.default.rmem_max", "hosts.default.wmem_max", "flows.1.request",
             "flows.1.response", "path.buffer")
INT_KEYS = ("version", "study.repetitions", "study.seed", "path.mtu", "flows.0.streams",
            "flows.0.mss", "flows.1.concurrency")
FLOAT_KEYS = ("path.loss", "path.corruption")
EVENT_RATE_KEYS = ("flows.2.rate",)
NUMERIC_KEYS = TIME_KEYS + RATE_KEYS + SIZE_KEYS + INT_KEYS + FLOAT_KEYS + EVENT_RATE_KEYS
UNIT_SUFFIX = {**{k: "s" for k in TIME_KEYS}, **{k: "Gbit" for k in RATE_KEYS},
               **{k: "MB" for k in SIZE_KEYS}, **{k: "/s" for k in EVENT_RATE_KEYS}}


def render(leaves: dict[str, str | None], sweep: dict[str, str] | None = None,
           extra: str = "", linked: list[dict[str, str]] | None = None) -> bytes:
    """TOML text of `leaves` (dotted key -> TOML literal; None drops the key),
    the cartesian `sweep` and the `linked` groups ([[sweep.linked]] tables)."""
    sections: dict[str, list[str]] = defaultdict(list)
    top: list[str] = []
    for key, literal in leaves.items():
        if literal is None:
            continue
        head, _, leaf = key.rpartition(".")
        (sections[head] if head else top).append(f"{_toml_key(leaf)} = {literal}")
    lines = top[:]
    for head, body in sections.items():
        if head.startswith("flows."):
            lines.append("[[flows]]")
        else:
            lines.append(f"[{head}]")
        lines += body
    sweep = BASE_SWEEP if sweep is None else sweep
    if sweep:
        lines.append("[sweep]")
        lines += [f"{_quote(k)} = {v}" for k, v in sweep.items()]
    for group in linked or []:
        lines.append("[[sweep.linked]]")
        lines += [f"{_quote(k)} = {v}" for k, v in group.items()]
    return ("\n".join(lines) + "\n" + extra).encode()


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _quote(key)


def _quote(s: str) -> str:
    """A TOML basic string; control characters as \\uXXXX escapes."""
    body = s.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in body) + '"'


def _with(key: str, literal: str | None) -> dict[str, str | None]:
    leaves: dict[str, str | None] = dict(BASE)
    leaves[key] = literal
    return leaves


# ---- the classes ----------------------------------------------------------

WRONG_TYPES = {
    "array": "[1, 2]", "table": "{ a = 1 }", "datetime": "1979-05-27T07:32:00Z",
    "date": "1979-05-27", "time": "07:32:00", "true": "true", "false": "false",
    "empty-array": "[]", "empty-table": "{}",
}
ODD_SCALARS = {"word": '"abc"', "minus-one": "-1", "zero": "0", "fraction": "1.5",
               "huge-int": "99999999999999999999999", "empty-string": '""'}


def _wrong_types() -> list[Case]:
    out = []
    for key in BASE:
        for label, lit in WRONG_TYPES.items():
            out.append(Case(f"{key}={label}", "wrong-type", render(_with(key, lit)), key=key))
        for label, lit in ODD_SCALARS.items():
            must = label in ("minus-one", "huge-int") or (label == "empty-string" and key != "study.description")
            out.append(Case(f"{key}={label}", "odd-scalar", render(_with(key, lit)),
                            must_reject=must, key=key))
    return out


def _nonfinite() -> list[Case]:
    out = []
    for key in NUMERIC_KEYS:
        for lit in ("inf", "-inf", "nan", "+inf"):
            out.append(Case(f"{key}={lit}", "inf-nan", render(_with(key, lit)), key=key))
        if key in UNIT_SUFFIX:
            for word in ("inf", "nan"):
                lit = f'"{word}{UNIT_SUFFIX[key]}"'
                out.append(Case(f"{key}={lit}", "inf-nan", render(_with(key, lit)), key=key))
    return out


def _overflow() -> list[Case]:
    out = []
    for key, unit in UNIT_SUFFIX.items():
        for lit in (f'"1e400{unit}"', f'"1e308{unit}"', "1e309"):
            out.append(Case(f"{key}={lit}", "overflow", render(_with(key, lit)), key=key))
    for key in NUMERIC_KEYS:
        for lit in ("18446744073709551616", "1" + "0" * 400, "-1" + "0" * 400):
            out.append(Case(f"{key}={lit[:12]}..({len(lit)} chars)", "overflow", render(_with(key, lit)), key=key))
        # More digits than Python converts (int_max_str_digits): the TOML reader fails.
        out.append(Case(f"{key}=5000 digits", "overflow", render(_with(key, "1" * 5000)), key="toml"))
    return out


def _subnormal() -> list[Case]:
    out = []
    for key, unit in UNIT_SUFFIX.items():
        for lit in ("5e-324", f'"5e-324{unit}"', f'"1e-30{unit}"'):
            out.append(Case(f"{key}={lit}", "subnormal", render(_with(key, lit)), key=key))
    out.append(Case("path.buffer=1e-9pkts", "subnormal", render(_with("path.buffer", '"0.0000000001pkts"')),
                    key="path.buffer"))
    out.append(Case("path.buffer=table-tiny", "subnormal",
                    render(_with("path.buffer", '{ amount = 5e-324, unit = "bdp" }')), key="path.buffer"))
    return out


def _magnitude() -> list[Case]:
    bad = [
        ("study.interval", '"1ns"'), ("study.interval", '"100ns"'), ("study.interval", '"0.5us"'),
        ("study.duration", '"1e308s"'), ("study.duration", '"1e9s"'), ("study.duration", '"48h"'),
        ("study.duration", '"100000s"'), ("path.rate", '"1e20Gbit"'), ("path.rate", '"0.001bit"'),
        ("path.rate", '"1bit"'), ("path.rate", '"1000Tbit"'), ("path.rtt", '"11s"'),
        ("path.rtt", '"0.1ns"'), ("path.buffer", '"1e30bdp"'), ("path.buffer", '"1e15B"'),
        ("hosts.default.rmem_max", '"1e30B"'), ("flows.1.response", '"1e20B"'),
        ("hosts.s2.extra_rtt", '"1e6s"'), ("flows.2.rate", '"1e12/s"'), ("flows.2.rate", '"1e-9/s"'),
        ("hosts.s2.stream_rate_cap", '"1e-3bit"'), ("flows.0.streams", "100000"),
        ("study.repetitions", "1000000"), ("path.mtu", "100"), ("study.seed", "-5"),
    ]
    out = [Case(f"{k}={v}", "magnitude", render(_with(k, v)), key=k) for k, v in bad]
    # More samples per run than the limit: a day at 1 ms.
    leaves = _with("study.duration", '"24h"')
    leaves["study.interval"] = '"1ms"'
    out.append(Case("samples=24h/1ms", "magnitude", render(leaves), key="study.interval"))
    # A time-out free sanity check: the limits themselves are fine.
    for k, v in (("study.duration", '"24h"'), ("study.interval", '"1ms"'), ("path.rate", '"100Gbit"'),
                 ("path.rtt", '"10s"'), ("path.buffer", '"16bdp"')):
        leaves = _with(k, v)
        if k == "study.duration":
            leaves["study.interval"] = '"1s"'
        out.append(Case(f"{k}={v} (fine)", "magnitude", render(leaves), must_reject=False))
    return out


def _booleans() -> list[Case]:
    out = []
    for key in INT_KEYS + FLOAT_KEYS + ("path.buffer", "flows.0.start"):
        for lit in ("true", "false"):
            out.append(Case(f"{key}={lit}", "bool-as-number", render(_with(key, lit)), key=key))
    for lit in ("1.0", '"1"', "2", "0", "-1"):
        out.append(Case(f"version={lit}", "bool-as-number", render(_with("version", lit)), key="version"))
    out.append(Case("version missing", "bool-as-number", render(_with("version", None)), key="version"))
    for axis in ("flows.0.streams", "path.mtu", "path.loss", "path.rate"):
        sweep = {**BASE_SWEEP, axis: "[true, false]"}
        out.append(Case(f"sweep {axis}=[true]", "bool-as-number", render(BASE, sweep), key=f'sweep."{axis}"'))
    return out


SWEEP_KEYS_BAD = [
    "flows.².cc", "flows.٣.cc", "flows.９.cc", "flows.-1.cc", "flows.+0.cc", "flows. 0.cc",
    "flows.00.cc", "flows.0x0.cc", "flows.1e0.cc", "flows.0.cc.x", "flows..cc", "", ".", "..",
    "path", "path.", ".path.rate", "path.rate.x", "path.nope", "flows.0.nope", "flows.99.cc",
    "flows", "flows.0", "hosts", "hosts.default", "hosts.nobody.rmem_max", "sweep",
    "sweep.path.loss", "study.nope", "PATH.rate", "path.RATE", "pаth.rate", "path.rate\u200b",
    "x" * 5000, "flows.0.cc" + ".0" * 500, "hosts.default.rmem_max.x", "path.rate\n",
    "path.\x1b[2Jrate", "flows.0\u0000.cc",
]


def _sweep_keys() -> list[Case]:
    return [Case(f"sweep key {k[:30]!r}", "sweep-key", render(BASE, {**BASE_SWEEP, k: '["a"]'}),
                 key="sweep") for k in SWEEP_KEYS_BAD]


FORBIDDEN_AXES = {
    "study.seed": "[99, 100]", "study.repetitions": "[1, 2]", "study.backends": '[["kernel"]]',
    "study.name": '["x", "y"]', "study.description": '["a"]', "study.interval": '["1s"]',
    "version": "[1, 2]", "study": '[{ name = "x", duration = "1s", seed = 99, repetitions = 1 }]',
    "path": '[{ rate = "1Gbit", rtt = "1ms" }]', "flows": '[[{ cc = "reno" }]]',
    "flows.0": '[{ cc = "reno" }]', "hosts": "[{}]", "hosts.default": "[{}]",
    "flows.0.kind": '["rpc"]', "sweep": "[{}]",
}


def _sweep_forbidden() -> list[Case]:
    return [Case(f"sweep {k}", "sweep-forbidden", render(BASE, {**BASE_SWEEP, k: v}), key="sweep")
            for k, v in FORBIDDEN_AXES.items()]


def _sweep_values() -> list[Case]:
    out = []
    for axis, bads in {
        "path.rate": ['"1e400Gbit"', "inf", '"5e-324Gbit"', "[1]", "{a=1}", "1979-05-27", '"fast"'],
        "study.duration": ['"1e308s"', "nan", "-1", '"0s"'],
        "path.loss": ["[[0.1]]", "2.0", "nan", "-0.5"],
        "flows.0.streams": ["1.5", '"2"', "0", "10000000"],
        "path.mtu": ["65536", "1e3"],
        "flows.0.mss": ["9000"],  # does not fit the mtu
    }.items():
        for bad in bads:
            sweep = {**BASE_SWEEP, axis: f"[{bad}]"}
            out.append(Case(f"sweep {axis}=[{bad}]", "sweep-value", render(BASE, sweep), key="sweep"))
    for axis, lit in (("path.rate", '[]'), ("path.rate", '"1Gbit"'), ("path.rate", "{ a = 1 }")):
        out.append(Case(f"sweep {axis}={lit}", "sweep-value", render(BASE, {axis: lit}), key="sweep"))
    out.append(Case("sweep is an array", "sweep-value", _prepend(render(BASE, {}), "sweep = [1]"), key="sweep"))
    # Combination of axes that is fine alone but not together.
    sweep = {"path.mtu": "[1500, 9000]", "flows.0.mss": "[1000, 8000]"}
    out.append(Case("sweep mss x mtu", "sweep-value", render(BASE, sweep), key="sweep"))
    return out


LINKED_OK = {"flows.1.cc": '["reno", "bbr", "cubic"]', "flows.2.cc": '["reno", "bbr", "cubic"]'}


def _linked() -> list[Case]:
    """[[sweep.linked]] groups: keys that vary together, held to the rules of
    the cartesian sweep plus their own (equal lengths, a key swept once)."""
    def case(name: str, linked: list[dict[str, str]], key: str | None = "sweep.linked", **kw) -> Case:
        return Case(name, "sweep-linked", render(BASE, kw.pop("sweep", None), linked=linked), key=key, **kw)
    out = [
        case("linked ok", [LINKED_OK], must_reject=False),
        case("linked ok, mtu with mss", [{"path.mtu": "[1500, 9000]", "flows.0.mss": "[1460, 8960]"}],
             must_reject=False),
        case("two groups ok", [LINKED_OK, {"path.mtu": "[1500, 9000]", "flows.0.mss": "[1000, 8000]"}],
             must_reject=False),
        case("lengths differ", [{"flows.1.cc": '["reno", "bbr"]', "flows.2.cc": '["reno"]'}],
             key="sweep.linked[0]"),
        case("lengths differ in group 2", [LINKED_OK, {"path.mtu": "[1500]", "flows.0.mss": "[1000, 1001]"}],
             key="sweep.linked[1]"),
        case("also cartesian", [{"flows.0.cc": '["reno"]', "path.mtu": "[1500]"}],
             key='sweep.linked[0]."flows.0.cc"'),
        case("in two groups", [LINKED_OK, {"flows.2.cc": '["reno"]', "path.mtu": "[1500]"}],
             key='sweep.linked[1]."flows.2.cc"'),
        case("one key", [{"flows.1.cc": '["reno"]'}], key="sweep.linked[0]"),
        case("empty group", [{}], key="sweep.linked[0]"),
        case("empty lists", [{"flows.1.cc": "[]", "flows.2.cc": "[]"}], key='sweep.linked[0]."flows.1.cc"'),
        case("mtu with mss apart", [{"path.mtu": "[1500, 9000]", "flows.0.mss": "[8960, 1460]"}],
             key="sweep.linked[0][0]"),
        case("bad cc", [{"flows.1.cc": '["reno", "No!"]', "flows.2.cc": '["reno", "bbr"]'}],
             key="sweep.linked[0][1]"),
    ]
    for label, lit in {**WRONG_TYPES, "bool": "true", "inf": "inf"}.items():
        if label in ("empty-array",):
            continue
        out.append(case(f"value {label}", [{"flows.1.streams": f"[1, {lit}]", "flows.2.cc": '["reno", "bbr"]'}],
                        key="sweep.linked[0]"))
    for k, v in FORBIDDEN_AXES.items():
        out.append(case(f"forbidden {k}", [{k: v, "flows.1.cc": '["reno"]'}], key="sweep.linked[0]"))
    for k in SWEEP_KEYS_BAD:
        out.append(case(f"bad key {k[:30]!r}", [{k: '["a"]', "flows.1.cc": '["reno"]'}], key="sweep.linked[0]"))
    for lit in ("1", '"x"', "[1, 2]", "[[]]", '[{ "flows.1.cc" = "reno", "flows.2.cc" = "bbr" }]'):
        out.append(Case(f"linked = {lit}", "sweep-linked",
                        render(BASE, {**BASE_SWEEP, "linked": lit}), key="sweep.linked"))
    out.append(Case("single [sweep.linked] table", "sweep-linked",
                    render(BASE, extra='[sweep.linked]\n"flows.1.cc" = ["reno"]\n"flows.2.cc" = ["reno"]\n'),
                    key="sweep.linked"))
    # Bombs through linked groups: counted from lengths, before any expansion.
    ten = "[" + ", ".join(str(v + 1) for v in range(10)) + "]"
    groups = [{f"flows.{i}.streams": ten, f"hosts.s{i}.rmem_max": ten} for i in range(3)]
    out.append(case("bomb 2 axes x 3 groups of 10", groups, key="sweep", risky=True,
                    sweep={"path.loss": "[" + ", ".join(f"{i}e-6" for i in range(10)) + "]",
                           "path.mtu": "[" + ", ".join(str(1500 + i) for i in range(10)) + "]"}))
    long_zip = "[" + ", ".join(str(v) for v in range(60_000)) + "]"
    out.append(case("one group of 6*10^4", [{"flows.0.streams": long_zip, "flows.1.concurrency": long_zip}],
                    key="sweep", risky=True))
    deep = "[" * 1000 + "]" * 1000
    out.append(case("linked value 1000 deep", [{"flows.1.cc": f"[{deep}]", "flows.2.cc": '["reno"]'}],
                    key=None, risky=True))
    return out


def _bombs() -> list[Case]:
    axes = ["path.loss", "path.rate", "path.rtt", "path.mtu", "path.buffer", "flows.0.cc",
            "flows.0.streams", "flows.0.mss", "hosts.default.rmem_max"]
    values = {
        "path.loss": [f"{i}e-5" for i in range(10)],
        "path.rate": [f'"{i + 1}Gbit"' for i in range(10)],
        "path.rtt": [f'"{i + 1}ms"' for i in range(10)],
        "path.mtu": [str(1500 + i) for i in range(10)],
        "path.buffer": [f'"{i + 1}bdp"' for i in range(10)],
        "flows.0.cc": ['"reno"', '"cubic"', '"bbr"', '"htcp"', '"dctcp"', '"a"', '"b"', '"c"', '"d"', '"e"'],
        "flows.0.streams": [str(i + 1) for i in range(10)],
        "flows.0.mss": [str(1000 + i) for i in range(10)],
        "hosts.default.rmem_max": [f'"{i + 1}MB"' for i in range(10)],
    }
    out = []
    for n_axes in (5, 6, 9):
        sweep = {a: "[" + ", ".join(values[a]) + "]" for a in axes[:n_axes]}
        out.append(Case(f"bomb {n_axes} axes x 10", "sweep-bomb", render(BASE, sweep), key="sweep", risky=True))
    big = {"path.loss": "[" + ", ".join(f"{i}e-9" for i in range(10_000)) + "]"}
    out.append(Case("one axis of 10^4", "sweep-bomb", render(BASE, big), must_reject=False, risky=True))
    huge = {"path.loss": "[" + ", ".join(f"{i}e-12" for i in range(200_000)) + "]"}
    out.append(Case("one axis of 2*10^5", "sweep-bomb", render(BASE, huge), key=None, risky=True))
    reps = _with("study.repetitions", "10000")
    out.append(Case("10^4 repetitions x 10^3 points", "sweep-bomb",
                    render(reps, {"path.loss": "[" + ", ".join(f"{i}e-9" for i in range(1000)) + "]"}),
                    key="sweep", risky=True))
    return out


def _nesting() -> list[Case]:
    out = []
    for depth in (64, 1000, 100_000):
        arr = "[" * depth + "]" * depth
        tab = "{a=" * depth + "1" + "}" * depth
        out.append(Case(f"array {depth} deep", "deep-nesting", render(_with("study.description", arr)), risky=True))
        out.append(Case(f"table {depth} deep", "deep-nesting", render(_with("study.description", tab)), risky=True))
        out.append(Case(f"sweep value {depth} deep", "deep-nesting",
                        render(BASE, {"path.loss": "[" + arr + "]"}), risky=True))
    dotted = ".".join(["a"] * 1000)
    out.append(Case("dotted table 1000 deep", "deep-nesting", render(BASE, extra=f"[{dotted}]\nx = 1\n"), risky=True))
    return out


def _files(tmp: Path) -> list[Case]:
    rng = random.Random(16)
    good = render(BASE)
    out = [
        Case("random bytes", "binary-file", bytes(rng.randrange(256) for _ in range(4096)), key="file"),
        Case("latin-1 name", "binary-file", good.replace(b'"fuzz"', '"f\xfcz"'.encode("latin-1")), key="file"),
        Case("utf-16", "binary-file", good.decode().encode("utf-16"), key="file"),
        Case("NUL bytes", "binary-file", b"\x00" * 1000, key="file"),
        Case("NUL in value", "binary-file", good.replace(b'"fuzz"', b'"fu\x00zz"'), key="file"),
        Case("empty file", "binary-file", b"", key="version"),
        Case("lone surrogate escape", "binary-file", good.replace(b'"fuzz"', b'"\\uD800"'), key="file"),
        Case("not toml", "binary-file", b"this is not = = toml\n", key="file"),
        Case("2 MiB of comments", "huge-file", b"# x\n" * (1 << 19) + good, key="file", risky=True),
        Case("8 MiB string", "huge-file", render(_with("study.description", '"' + "x" * (8 << 20) + '"')),
             key="file", risky=True),
        Case("/dev/zero", "special-path", path="/dev/zero", key="file", risky=True),
        Case("/dev/null", "special-path", path="/dev/null", key="version", risky=True),
        Case("a directory", "special-path", path=str(tmp), key="file", risky=True),
        Case("missing file", "special-path", path=str(tmp / "does-not-exist.toml"), key="file"),
    ]
    for i in range(20):
        blob = bytearray(good)
        for _ in range(rng.randrange(1, 8)):
            blob[rng.randrange(len(blob))] = rng.randrange(256)
        out.append(Case(f"bit-flipped {i}", "mangled", bytes(blob), must_reject=False))
    return out


def _unknown_keys() -> list[Case]:
    out = []
    for section, key in (("", "colour"), ("study", "colour"), ("path", "colour"), ("hosts.default", "colour"),
                         ("flows.0", "colour"), ("path", "Rate"), ("path", "rаte"), ("study", ""),
                         ("study", "x" * 10_000), ("flows.1", "cc "), ("hosts.s2", "rmem"),
                         ("path", "a\nb"), ("study", "\x1b[2J")):
        leaves = dict(BASE)
        leaves[f"{section}.{key}" if section else key] = "1"
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in key)  # as errors print keys
        out.append(Case(f"unknown {section}.{key[:20]!r}", "unknown-key", render(leaves),
                        key=f"{section}.{shown}"[:20] if section else shown))
    out.append(Case("unknown section", "unknown-key", render(BASE, extra="[colour]\nx = 1\n"), key="colour"))
    out.append(Case("hosts name no sender", "unknown-key", render({**BASE, "hosts.s9.rmem_max": '"1MB"'}),
                    key="hosts.s9"))
    out.append(Case("hosts bad name", "unknown-key", render(BASE, extra='[hosts."../etc"]\nrmem_max = "1MB"\n'),
                    key="hosts"))
    return out


def _structure() -> list[Case]:
    out = []
    for section in ("study", "path", "flows"):
        leaves = {k: v for k, v in BASE.items() if not k.startswith(section + ".")}
        sweep = {} if section == "flows" else None
        # Without [path] the path is the real one (spec.PathSection); what
        # is rejected then is the sweep of a path key that is not there.
        key = "sweep" if section == "path" else section
        out.append(Case(f"no {section}", "structure", render(leaves, sweep), key=key))
    flows_off = {k: v for k, v in BASE.items() if not k.startswith("flows.")}
    for lit in ("[]", "1", '"x"', "{}"):
        out.append(Case(f"flows = {lit}", "structure", _prepend(render(flows_off, {}), f"flows = {lit}"),
                        key="flows"))
    many = dict(flows_off)
    for i in range(65):
        many[f"flows.{i}.cc"] = '"reno"'
    out.append(Case("65 flows", "structure", render(many, {}), key="flows"))
    for section, lit in (("study", "1"), ("path", '"x"'), ("hosts", "[1]"), ("hosts", '{ s1 = 1 }')):
        leaves = {k: v for k, v in BASE.items() if not k.startswith(section + ".")}
        out.append(Case(f"{section} = {lit}", "structure", _prepend(render(leaves), f"{section} = {lit}"),
                        key=section))
    out.append(Case("duplicate key", "structure", render(BASE, extra="[path]\nrate = 1\n"), key="file"))
    # Hostile study names (the first climbs): not a path outside the repository.
    for name in ('"../../etc"', '"a b"', '"ü"', '"' + "n" * 200 + '"', '"-x"'):
        out.append(Case(f"study.name={name[:20]}", "structure", render(_with("study.name", name)), key="study.name"))
    out.append(Case("warmup >= duration", "structure", render(_with("study.warmup", '"10s"')), key="study"))
    out.append(Case("start >= duration", "structure", render(_with("flows.0.start", '"10s"')), key="flows.0"))
    out.append(Case("mss > mtu", "structure", render(_with("flows.0.mss", "1461")), key="flows.0"))
    return out


def _prepend(text: bytes, line: str) -> bytes:
    return (line + "\n").encode() + text


def _units() -> list[Case]:
    forms = ["10 Gbit", "10gbit", "10GBIT", "10Gbit/s", "1,5Gbit", "١٠Gbit", "10Gbit\u00a0", "−10Gbit",
             "-10Gbit", "+10Gbit", ".5Gbit", "5.Gbit", "0x10Gbit", "1_000Mbit", "10 Gbit ", "Gbit",
             "10", "1e", "e5Gbit", "10Gbitt", "10Gbit\\n"]
    out = [Case(f"path.rate={f!r}", "unit-form", render(_with("path.rate", _quote(f))),
                must_reject=f in ("1,5Gbit", "١٠Gbit", "−10Gbit", "-10Gbit", "0x10Gbit", "Gbit", "1e",
                                  "e5Gbit", "10Gbitt", "10Gbit\\n"),
                key="path.rate") for f in forms]
    for f in ("10µs", "10μs", "10 us", "1.5ms", "2min", "1h", "1d", "10 s", "10ms ms", "-0s", "0.0s"):
        leaves = {**_with("study.warmup", _quote(f)), "study.duration": '"2h"'}
        out.append(Case(f"study.warmup={f!r}", "unit-form", render(leaves),
                        must_reject=f in ("1d", "10ms ms"), key="study.warmup"))
    for f in ("6MiB", "6mib", "6 MB", "6M", "6Mb", "1.5KB", "0.5B", "1e3B", "6TB"):
        out.append(Case(f"rmem_max={f!r}", "unit-form", render(_with("hosts.default.rmem_max", _quote(f))),
                        must_reject=f in ("0.5B", "6TB"), key="hosts.default.rmem_max"))
    return out


# The keys of a path that moves (pathspec.py) and hostile values inside them.
MOVING_KEYS = ("path.schedule", "path.loss_model", "path.jitter", "path.policer", "path.aggregation")
MOVING_INNER = {
    "path.schedule": [f'[{{ at = "1s", rate = {v} }}]' for v in ('"infx"', '"1e400x"', '"nanx"', '"-2x"', '"x"',
                                                                  "true", "[1]", '"1e400Gbit"')]
                     + ['[{ at = "inf s", loss = 0.1 }]', '[{ at = "1s", loss = nan }]', '[{ at = "1s" }]',
                        '[{ at = "5s", rtt = "1ms" }, { at = "1s", rtt = "2ms" }]', "[1]",
                        '[{ at = "20s", loss = 0 }]'],
    "path.loss_model": ['"gilbert_elliott:r=nan"', '"gilbert_elliott:r=1e400"', '"gilbert_elliott:mean_burst=inf"',
                        '"gilbert_elliott:r=0.3,p=-1"', '"gilbert_elliott:r=0.3,bad_loss=0"', '"gilbert_elliott"',
                        '{ kind = "gilbert_elliott", r = inf }', '":"', '"gilbert_elliott:r=0.3,,=="'],
    "path.jitter": ['"infms"', '"1e400ms"', '"nan s"', '"-1ms"', '"1ms:reorder=maybe"', '{ deviation = inf }',
                    '"1ms:direction=sideways"'],
    "path.policer": ['"/"', '"1e400Gbit/1KB"', '"50Mbit/1e400B"', '"50Mbit/-1KB"', '"nanbit/10KB"',
                     '{ rate = inf, burst = 10000 }', '"50Mbit/1"'],
    "path.aggregation": ['":::"', '"ack:infms"', '"ack:1ms:1e400B"', '"sideways:1ms"', '"ack:-1ms"',
                         '{ direction = "ack", interval = nan }'],
}


def _moving_path() -> list[Case]:
    out = []
    for key in MOVING_KEYS:
        for label, lit in {**WRONG_TYPES, **ODD_SCALARS, "inf": "inf", "nan": "nan"}.items():
            # An empty table is the default loss model, an empty array no schedule.
            fine = (key, label) in (("path.loss_model", "empty-table"), ("path.schedule", "empty-array"))
            out.append(Case(f"{key}={label}", "moving-path", render(_with(key, lit)), must_reject=not fine, key=key))
        for lit in MOVING_INNER[key]:
            out.append(Case(f"{key}={lit[:40]}", "moving-path", render(_with(key, lit)), key=key))
    return out


def _valid() -> list[Case]:
    out = [Case("base spec", "valid", render(BASE), must_reject=False)]
    for path in sorted((ROOT / "studies").glob("*.toml")):
        out.append(Case(f"bundled {path.stem}", "valid", path.read_bytes(), must_reject=False))
    return out


def cases(tmp: Path) -> list[Case]:
    """Every case, deterministic; `tmp` is a scratch directory that exists."""
    out = (_valid() + _wrong_types() + _nonfinite() + _overflow() + _subnormal() + _magnitude()
           + _booleans() + _sweep_keys() + _sweep_forbidden() + _sweep_values() + _linked() + _bombs()
           + _nesting() + _files(tmp) + _unknown_keys() + _structure() + _units() + _moving_path())
    names = Counter(f"{c.cls}/{c.name}" for c in out)
    dupes = [n for n, k in names.items() if k > 1]
    assert not dupes, f"duplicate case names: {dupes}"
    return out


def case_path(case: Case, tmp: Path, index: int) -> Path:
    if case.path is not None:
        return Path(case.path)
    p = tmp / f"case{index:04d}.toml"
    p.write_bytes(case.text or b"")
    return p


# ---- classification -------------------------------------------------------

_PROBLEM = re.compile(r"^  (.+?): ", re.M)


FILE_KEYS = ("file", "toml")  # problems of the file as a whole: unreadable, not UTF-8, not TOML


def names_key(keys: list[str], expected: str | None) -> bool:
    """Does a problem name `expected` (a key path or a prefix of one)?"""
    if expected is None:
        return any(k and k != "spec" for k in keys)
    if expected in FILE_KEYS:
        return any(k in FILE_KEYS for k in keys)
    return any(k.startswith(expected) for k in keys)


def classify(case: Case, kind: str, keys: list[str] | None = None) -> str:
    """`kind` is what happened: valid, rejected, traceback, hang or memory."""
    if kind == "valid":
        return "accepted-but-invalid" if case.must_reject else "valid"
    if kind == "rejected":
        return "rejected-naming-a-key" if names_key(keys or [], case.key) else "rejected-without-key"
    return {"traceback": "traceback", "hang": "hang", "memory": "memory-blowup"}[kind]


def _limit_memory(mem_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return apply


def run_subprocess(case: Case, path: Path, timeout_s: float = 10.0, mem_mib: int = 1024) -> tuple[str, str]:
    """`python3 -m fatpipe check PATH` under limits -> (outcome, detail)."""
    env = {"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "fatpipe", "check", str(path), "--show", "0"],
            capture_output=True, timeout=timeout_s, cwd=ROOT, env=env,
            preexec_fn=_limit_memory(mem_mib << 20),
        )
    except subprocess.TimeoutExpired:
        return classify(case, "hang"), f"no answer in {timeout_s:g} s"
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 0:
        return classify(case, "valid"), proc.stdout.decode("utf-8", "replace").strip()[:200]
    if "MemoryError" in err or "memory allocation" in err or proc.returncode < 0:
        return classify(case, "memory"), f"exit {proc.returncode}: {err.strip()[-200:]}"
    if "Traceback" in err or not err.startswith("error:"):
        last_line = err.strip().splitlines()[-1][:200] if err.strip() else f"exit {proc.returncode}"
        return classify(case, "traceback"), last_line
    keys = _PROBLEM.findall(err)
    return classify(case, "rejected", keys), err.strip()[:300]


def check_in_process(case: Case, path: Path) -> tuple[str, str]:
    """What `fatpipe check` does (load, validate, plan), in this process."""
    from fatpipe import spec as spec_mod
    from fatpipe.study import plan_runs
    try:
        spec, raw = spec_mod.load(path)
        plans = plan_runs(spec, raw)
    except spec_mod.SpecError as e:
        return classify(case, "rejected", [k for k, _ in e.problems]), str(e)[:300]
    except MemoryError as e:
        return classify(case, "memory"), repr(e)
    except Exception as e:  # noqa: BLE001 - every other exception is a finding
        return classify(case, "traceback"), f"{type(e).__name__}: {e}"[:300]
    return classify(case, "valid"), f"{len(plans)} runs"


def check_case(case: Case, path: Path, timeout_s: float = 10.0, mem_mib: int = 1024) -> tuple[str, str]:
    """In this process unless the case is risky (then in a limited subprocess)."""
    if case.risky:
        return run_subprocess(case, path, timeout_s, mem_mib)
    return check_in_process(case, path)


def acceptable(case: Case, outcome: str) -> bool:
    return outcome == "rejected-naming-a-key" or (outcome == "valid" and not case.must_reject)


def table(results: list[tuple[Case, str, str]]) -> str:
    counts: dict[str, Counter] = defaultdict(Counter)
    for case, outcome, _ in results:
        counts[case.cls][outcome] += 1
    short = {"valid": "valid", "rejected-naming-a-key": "rej+key", "rejected-without-key": "rej-nokey",
             "traceback": "traceback", "hang": "hang", "memory-blowup": "memory",
             "accepted-but-invalid": "acc-invalid"}
    width = max(len(c) for c in counts) + 2
    head = "class".ljust(width) + "".join(short[o].rjust(12) for o in OUTCOMES) + "total".rjust(8)
    lines = [head, "-" * len(head)]
    total: Counter = Counter()
    for cls in sorted(counts):
        c = counts[cls]
        total.update(c)
        lines.append(cls.ljust(width) + "".join(str(c[o] or ".").rjust(12) for o in OUTCOMES)
                     + str(sum(c.values())).rjust(8))
    lines.append("-" * len(head))
    lines.append("all".ljust(width) + "".join(str(total[o] or ".").rjust(12) for o in OUTCOMES)
                 + str(sum(total.values())).rjust(8))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per case")
    ap.add_argument("--mem-mib", type=int, default=1024, help="address-space limit per case")
    ap.add_argument("--list", action="append", default=[], metavar="OUTCOME",
                    help="also list the cases with this outcome (repeatable)")
    ap.add_argument("--class", dest="only", help="only cases of this class")
    ap.add_argument("--in-process", action="store_true",
                    help="check safe cases in this process (fast); risky ones still in subprocesses")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "python"))  # this tree's fatpipe, as the subprocesses use
    with tempfile.TemporaryDirectory(prefix="fatpipe-fuzz-") as d:
        tmp = Path(d)
        all_cases = [c for c in cases(tmp) if not args.only or c.cls == args.only]
        results = []
        t0 = time.monotonic()
        for i, case in enumerate(all_cases):
            run = check_case if args.in_process else run_subprocess
            outcome, detail = run(case, case_path(case, tmp, i), args.timeout, args.mem_mib)
            results.append((case, outcome, detail))
            if case.text is not None:
                os.unlink(tmp / f"case{i:04d}.toml")
    print(f"{len(results)} hostile specs through `fatpipe check` "
          f"(limits: {args.timeout:g} s, {args.mem_mib} MiB address space; {time.monotonic() - t0:.0f} s)\n")
    print(table(results))
    for want in args.list:
        print(f"\n{want}:")
        for case, outcome, detail in results:
            if outcome == want:
                print(f"  [{case.cls}] {case.name!r}: {detail.splitlines()[-1] if detail else ''}"[:300])
    return 0


if __name__ == "__main__":
    sys.exit(main())
