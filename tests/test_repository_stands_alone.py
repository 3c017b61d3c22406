"""The repository stands alone: no tracked file names a path outside it.

The rule (`outside_references`), applied to every text file `git ls-files`
lists (files holding a NUL byte are binary and skipped; `.gitignore` files
too, whose patterns that start with a slash are anchored at the repository
root by git's own rule):

1. Absolute paths. A slash that starts a token (not preceded by a word
   character or one of ``. ~ < > / : \\ - *``, so URLs, units like
   "Mbit/s", closing HTML tags and path fragments after a glob or a name do
   not count), then a name, is an absolute path if a further "/" follows
   the name, or if the name alone is one of HOME_ROOTS. It names a place
   outside the repository unless its first name is one of SYSTEM_ROOTS:
   the directories of the Linux filesystem hierarchy whose paths the code
   reads or writes as the system's (procfs, sysfs, devices, installed
   programs and libraries, configuration, runtime state such as network
   namespaces, scratch files in the temporary directory, add-on software).
   Anything else (a user's home, another checkout, a shared directory) is
   reported. A path written from "~" (as the SSH client's ~/.ssh/config)
   is the reader's own file, and is not a path of this kind.
2. Climbing. A run of "../" that starts a token (not preceded by a word
   character, ".", "/" or "-") climbs above the repository root when it
   has more steps than the file has directories above it.
3. Documents kept elsewhere. An upper-case Markdown name (as README.md)
   that is no tracked file's name, and the talks' transcripts by their
   numbers (the word seed followed by a three-digit number from 000, or a
   numbered file in a seeds directory): the talks are cited by authors,
   title and venue (docs/talks.md).

A line that says "not a path outside the repository", or follows a line
that says it, is exempt: each exception (a fragment of a path, a name in
another program's namespace, a hostile input) is explained where it is.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]

SYSTEM_ROOTS = frozenset({"proc", "sys", "dev", "usr", "etc", "run", "var", "tmp", "bin", "sbin", "boot", "opt"})
# Names that are a reference outside the repository even without a further
# slash (a user's home or a mount point named alone).
HOME_ROOTS = frozenset({"home", "root", "work", "Users", "mnt", "media"})
EXEMPT = "not a path outside the repository"

ABSOLUTE = re.compile(r"(?<![\w.~<>/:\\*-])/(?P<first>[A-Za-z_][\w.-]*)(?P<rest>(?:/[\w.$-]*)+)?")
CLIMB = re.compile(r"(?<![\w./-])(?:\.\./)+")
UPPER_MD = re.compile(r"(?<![\w.-])(?:[\w.-]+/)*(?P<name>[A-Z][A-Z0-9_-]*\.md)\b")
TALK_FILE = re.compile(r"\bseeds? 0\d\d\b|\bseeds/\d{3}_", re.I)


def outside_references(rel_path: str, text: str, tracked_names: frozenset[str]) -> list[str]:
    """Every reference to a path outside the repository in the text of the
    tracked file `rel_path`, as "line N: what (why)"."""
    depth = len(PurePosixPath(rel_path).parts) - 1
    found = []
    previous = ""
    for number, line in enumerate(text.splitlines(), 1):
        exempt = EXEMPT in line or EXEMPT in previous
        previous = line
        if exempt:
            continue
        for m in ABSOLUTE.finditer(line):
            if m["first"] in SYSTEM_ROOTS or not (m["rest"] or m["first"] in HOME_ROOTS):
                continue
            found.append(f"line {number}: {m.group(0)} (absolute path outside the system directories)")
        for m in CLIMB.finditer(line):
            steps = m.group(0).count("../")
            if steps > depth:
                found.append(f"line {number}: {m.group(0)} (climbs {steps} directories from {depth} deep)")
        for m in UPPER_MD.finditer(line):
            if m["name"] not in tracked_names:
                found.append(f"line {number}: {m.group(0)} (no such document in the repository)")
        for m in TALK_FILE.finditer(line):
            found.append(f"line {number}: {m.group(0)} (a talk's transcript file: cite authors, title, venue)")
    return found


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def test_no_tracked_file_names_a_path_outside_the_repository():
    files = tracked_files()
    assert len(files) > 100 and "README.md" in files  # the listing worked
    names = frozenset(PurePosixPath(p).name for p in files)
    problems = []
    for rel in files:
        if PurePosixPath(rel).name == ".gitignore":
            continue
        path = ROOT / rel
        if not path.is_file():  # deleted in the work tree, or a submodule
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        problems += [f"{rel}: {p}" for p in outside_references(rel, data.decode("utf-8", "replace"), names)]
    assert not problems, "files name paths outside the repository:\n" + "\n".join(problems)


# The rule itself, on examples. This file is scanned like every other, so
# paths outside the repository are built from parts and never written out.
NAMES = frozenset({"README.md", "talks.md"})


def absolute(*names: str) -> str:
    return "/" + "/".join(names)


def up(steps: int) -> str:
    return "../" * steps


@pytest.mark.parametrize("rel, line", [
    ("docs/x.md", f"the studies document (`{absolute('work', 'shared', 'studies.md')}`)"),
    ("bench/x.py", f'DEFAULT = "{absolute("work", "ns3-venv", "bin", "python")}"'),
    ("x.md", f"python3 -m venv {absolute('work', 'venv')}"),
    ("x.md", f"cd {absolute('home', 'alice', 'fatpipe')}"),
    ("x.md", "see " + absolute("root")),
    ("x.md", "mounted at " + absolute("mnt", "data", "runs")),
    ("x.md", "kept in " + absolute("srv", "lab", "talks")),
    ("x.md", f"[design]({up(1)}design.md)"),  # from the root, one step up
    ("docs/x.md", f"[other]({up(2)}shared/x.md)"),
    ("crates/sim/src/x.rs", f'include_str!("{up(4)}x")'),
    ("x.rs", "//! no global RNG (" + "DESIGN" + ".md)"),
    ("studies/x.toml", "# The talk's numbers (" + "STUDIES" + ".md, study A)"),
    ("x.toml", 'source = "Welzl, IETF 121 (' + "seed" + ' 002)"'),
    ("x.md", "the transcript " + "seeds/" + "003_553b.txt"),
])
def test_the_rule_finds(rel, line):
    assert outside_references(rel, line + "\n", NAMES), line


@pytest.mark.parametrize("rel, line", [
    ("x.md", "bounded by /proc/sys/net/ipv4/tcp_rmem and /sys/class/net/veth0/mtu"),
    ("x.py", 'open("/dev/null")  # /usr/bin/env, /etc/hostname, /run/fatpipe, /var/run/netns/fp-1'),
    ("x.py", 'stats = "/tmp/s.json"; python=/opt/fatpipe/bin/python3; /boot/config-6.1'),
    ("x.md", "10 Gbit/s and 1/2 BDP, 100 packets/s, https://www.rfc-editor.org/rfc/rfc9438"),
    ("x.md", "ssh reads ~/.ssh/config"),
    ("x.py", "html = f'<td>{x}</td></tr></table>'"),
    ("x.py", 'glob("libbpf-sys-*/out/include/bpf/bpf_helpers.h")'),
    ("docs/x.md", "[studies](../studies/README.md) and [talks](talks.md)"),
    ("crates/bpfports/build.rs", f'manifest.join("{up(2)}bpf/cca")'),
    ("x.md", f"a/{up(2)}x is a name inside a path, not a climb from here"),
    ("x.md", 'seeds = "per-run"; --seed 2, seeds 5, seed=1'),
    ("x.py", f'std::string s = "{absolute("work", "x")}";  // {EXEMPT}: a namespace'),
    ("x.py", f"# {EXEMPT}: a hostile name\nname = '{up(2)}etc'"),
])
def test_the_rule_lets_pass(rel, line):
    assert outside_references(rel, line + "\n", NAMES) == []


def test_an_exemption_covers_its_line_and_the_next_only():
    ok, bad = absolute("work", "a"), absolute("work", "b")
    text = f"# {EXEMPT}\nok = '{ok}'\nbad = '{bad}'\n"
    assert outside_references("x.py", text, NAMES) == [f"line 3: {bad} (absolute path outside the system directories)"]
