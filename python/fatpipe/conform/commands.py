"""The shell commands a conformance script runs before its socket exists
(backtick lines and the `defaults.sh` they source), read for what they
set: sysctls (`sysctl -q k=v`, `echo v > /proc/sys/...`, the suites'
`set_sysctls.py`), CCA module parameters, and the qdisc on the test
device. Nothing is executed: a command outside this set is refused,
naming it, and the script is reported as unsupported."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

# tcp_cubic's module parameters and their defaults (net/ipv4/tcp_cubic.c),
# the values the simulator's CUBIC is built with (cc/cubic.rs).
CUBIC_PARAMETER_DEFAULTS = {
    "fast_convergence": "1",
    "beta": "717",
    "initial_ssthresh": "0",
    "bic_scale": "41",
    "tcp_friendliness": "1",
    "hystart": "1",
    "hystart_detect": "3",
    "hystart_low_window": "16",
    "hystart_ack_delta_us": "2000",
}

# Root qdiscs on the test device that leave the socket's timing alone
# (no pacing below TCP, no queue that would hold a packet back); fq paces
# every flow at its sk_pacing_rate, which the sender models.
PLAIN_QDISCS = ("pfifo", "pfifo_fast", "noqueue")
# The setting a `tc qdisc ... root KIND` line makes (fatpipe_sim::conform::sysctls).
ROOT_QDISC_KEY = "dev.root_qdisc"


class CommandError(Exception):
    """A command outside what the simulated socket can take."""


def _arith(text: str) -> str:
    """Expands `$((15*1024*1024))` (digits and + - * / only)."""

    def value(m: re.Match) -> str:
        expr = m.group(1)
        if not re.fullmatch(r"[\d\s+\-*/()]+", expr):
            raise CommandError(f"shell arithmetic {expr!r}: only numbers and + - * / are read")
        return str(int(eval(expr, {"__builtins__": {}})))

    return re.sub(r"\$\(\((.*?)\)\)", value, text)


def _proc_key(path: str) -> str:
    if not path.startswith("/proc/sys/"):
        raise CommandError(f"writes {path}: only /proc/sys and tcp_cubic's parameters are read")
    return path[len("/proc/sys/"):].replace("/", ".")


def _module_param(path: str, value: str) -> None:
    m = re.fullmatch(r"/sys/module/tcp_cubic/parameters/(\w+)", path)
    if not m or m.group(1) not in CUBIC_PARAMETER_DEFAULTS:
        raise CommandError(f"writes {path}: not a module parameter the simulator reads")
    default = CUBIC_PARAMETER_DEFAULTS[m.group(1)]
    if value != default:
        raise CommandError(f"tcp_cubic {m.group(1)} = {value}: the simulator's CUBIC models only {default}")


def read_commands(text: str, base: Path, depth: int = 0) -> list[tuple[str, str]]:
    """The sysctls (key, value) set by a command block, in order.
    `base` is the script's directory, against which sourced files resolve."""
    if depth > 4:
        raise CommandError("shell scripts nested more than 4 deep")
    settings: list[tuple[str, str]] = []
    joined = re.sub(r"\\\n", " ", text)
    for raw in joined.split("\n"):
        line = raw.split(" #", 1)[0].strip() if not raw.strip().startswith("#") else ""
        if not line or line.startswith("#!"):
            continue
        line = _arith(line)
        line = re.sub(r"\s*(>\s*/dev/null|2>&1|2>\s*/dev/null)", "", line).strip()
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise CommandError(f"cannot read {line!r}: {exc}") from None
        if not words:
            continue
        cmd = words[0]
        if cmd == "sysctl":
            for w in words[1:]:
                if w.startswith("-"):
                    continue
                if "=" not in w:
                    raise CommandError(f"sysctl {w!r}: expected key=value")
                k, v = w.split("=", 1)
                settings.append((k.replace("/", "."), v))
        elif cmd == "echo" and len(words) >= 3 and ">" in words:
            at = words.index(">")
            value = " ".join(words[1:at])
            path = words[at + 1] if at + 1 < len(words) else ""
            if path.startswith("/sys/module/"):
                _module_param(path, value)
            else:
                settings.append((_proc_key(path), value))
        elif cmd.endswith("set_sysctls.py"):
            for w in words[1:]:
                path, _, value = w.partition("=")
                settings.append((_proc_key(path), value))
        elif cmd.endswith(".sh") and not cmd.startswith("/tmp/sysctl_restore_"):
            path = (base / cmd).resolve()
            if not path.is_file():
                raise CommandError(f"sources {cmd}, which does not exist next to the script")
            settings += read_commands(path.read_text(), path.parent, depth + 1)
        elif re.fullmatch(r"/tmp/sysctl_restore_\S*\.sh", cmd):
            continue  # set_sysctls.py's undo script: the simulated socket leaves nothing to undo
        elif cmd == "ip" and words[1:3] == ["tcp_metrics", "flush"]:
            continue  # no route-metrics cache in the model
        elif cmd == "tc" and words[1:2] == ["qdisc"] and words[2:3] in (["add"], ["replace"]) and "root" in words:
            at = words.index("root")
            kind = words[at + 1] if at + 1 < len(words) else ""
            if kind not in PLAIN_QDISCS + ("fq",) or words[at + 2:]:
                raise CommandError(f"root qdisc {' '.join(words[at + 1:])!r}: "
                                   f"allowed {', '.join(PLAIN_QDISCS)} or fq, without parameters")
            settings.append((ROOT_QDISC_KEY, kind))
        else:
            raise CommandError(f"shell command {line!r}: not read by the simulator")
    return settings
