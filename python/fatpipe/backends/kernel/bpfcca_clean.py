"""`fatpipe clean`: fatpipe BPF congestion controls another tool left
registered (docs/bpf-ccas.md, "Lifetime").

fatpipe registers its ports only through BPF links, which end with the
loader; but a port's object registered by a tool without links (Debian's
bpftool 7.1 / libbpf 1.1, `bpftool struct_ops register`) stays until it is
unregistered. Such a registration is fatpipe's when its programs are the
port's programs: same program names, and the same kernel tags (the tag is a
hash of the verified instructions with map references zeroed,
kernel/bpf/core.c bpf_prog_calc_tag(), so the same object on the same
kernel gets the same tags whichever libbpf loaded it). Those are
unregistered; a registration under a port's name whose programs differ is
someone else's and only reported.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from ...linuxpath import cmd
from .bpfcca import BINARY, Port, kernel_ccas, loader, source_names, wait_until

TIMEOUT_S = 30.0
GONE_TIMEOUT_S = 10.0
# `bpftool struct_ops dump` prints each op as "<signature> <prog name>/prog_id:<id>".
PROG_REF = re.compile(r"(\S+)/prog_id:(\d+)")

ProgramTags = frozenset[tuple[str, str]]  # (program name, tag hex)


def parse_port_tags(text: str) -> dict[str, ProgramTags]:
    """``fatpipe-ccaload --tags`` output (port, program, tag; tab-separated)
    → the programs' tags per port (pure)."""
    tags: dict[str, set[tuple[str, str]]] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and all(parts):
            tags.setdefault(parts[0], set()).add((parts[1], parts[2]))
    return {name: frozenset(t) for name, t in tags.items()}


def parse_struct_ops_programs(dump_json: str) -> dict[str, int]:
    """Program name → id of every op a `bpftool -j struct_ops dump id N`
    reports (pure). bpftool prints one JSON value per line group, not one
    document, so the ops are found by their "name/prog_id:N" text."""
    return {name: int(pid) for name, pid in PROG_REF.findall(dump_json)}


def _bpftool(*args: str) -> str | None:
    r = subprocess.run(["bpftool", *args], capture_output=True, text=True, timeout=TIMEOUT_S)
    return r.stdout if r.returncode == 0 else None


def _registered_programs(struct_ops_id: int) -> ProgramTags | None:
    dump = _bpftool("struct_ops", "dump", "id", str(struct_ops_id))
    if dump is None:
        return None
    tags = set()
    for name, prog_id in parse_struct_ops_programs(dump).items():
        shown = _bpftool("-j", "prog", "show", "id", str(prog_id))
        if shown is None:
            return None
        tags.add((name, json.loads(shown).get("tag", "")))
    return frozenset(tags)


def _port_programs(binary: Path, name: str) -> ProgramTags | None:
    r = subprocess.run([str(binary), "--tags", name], capture_output=True, text=True, timeout=TIMEOUT_S)
    if r.returncode != 0:
        return None
    return parse_port_tags(r.stdout).get(name)


def _held_by_our_loaders() -> set[str]:
    """Names that running fatpipe-ccaload processes hold (their argv)."""
    held: set[str] = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and Path(argv[0].decode(errors="replace")).name == BINARY:
            held |= {a.decode(errors="replace") for a in argv[1:] if a and not a.startswith(b"-")}
    return held


def struct_ops_left() -> list[str]:
    """Unregister fatpipe ports that another tool left registered (their
    programs' tags equal the port's); report registrations under a port's
    name that are not provably fatpipe's. One line per registration."""
    if not cmd.which("bpftool"):
        return []
    shown = _bpftool("-j", "struct_ops", "show")
    if shown is None:
        return []
    try:
        maps = json.loads(shown or "[]")
    except ValueError:
        return []
    binary: Path | None
    ports: dict[str, Port]
    try:
        binary, ports = loader(build=False)
    except (FileNotFoundError, RuntimeError):
        binary, ports = None, {}
    names = set(ports) | set(source_names())
    held = _held_by_our_loaders()
    lines = []
    for m in maps:
        name, sid = m.get("name", ""), m.get("id")
        if m.get("kernel_struct_ops") != "tcp_congestion_ops" or name not in names or name in held:
            continue
        ours = _port_programs(binary, name) if binary is not None and name in ports else None
        theirs = _registered_programs(int(sid))
        if ours is not None and theirs is not None and ours == theirs:
            gone = _bpftool("struct_ops", "unregister", "id", str(sid)) is not None and wait_until(
                lambda n=name: n not in kernel_ccas(), GONE_TIMEOUT_S)
            if gone:
                lines.append(f"unregistered BPF congestion control {name!r} (struct_ops id {sid}): fatpipe's port "
                             f"(same programs and tags), left registered by a tool without BPF links")
                continue
            lines.append(f"could not unregister fatpipe's BPF congestion control {name!r} (struct_ops id {sid}): "
                         f"`bpftool struct_ops unregister id {sid}` failed")
            continue
        why = ("its programs differ from fatpipe's port" if ours is not None and theirs is not None
               else "its programs could not be compared with fatpipe's port")
        lines.append(f"left alone BPF congestion control {name!r} (struct_ops id {sid}): {why}, so not provably "
                     f"fatpipe's; `bpftool struct_ops unregister id {sid}` removes it")
    return lines
