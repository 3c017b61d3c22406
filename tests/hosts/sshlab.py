"""A testbed on one machine: network namespaces that play hosts, each with a
real OpenSSH server, reached from the root namespace through
``ProxyCommand ip netns exec NS python3 tcp_relay.py %h %p`` (the code path
of a bastion; tcp_relay.py is nc with TCP_NODELAY).

Topology (veth, as the kernel backend wires its namespaces)::

    s1 (198.19.1.1, eth0) ── (198.19.1.2, to-s1) emu (198.19.2.2, to-rx) ── (198.19.2.1, eth0) rx

Keys (host keys, the client key, authorized_keys, known_hosts) are made
per lab in a temporary directory. Namespaces are named ``fph-<pid>-<role>``
so the kernel backend's `fatpipe clean` (which owns ``fp-`` names) leaves
them alone; :func:`remove_stale` removes those of dead test processes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fatpipe.backends.kernel.cleanup import stop_process
from fatpipe.backends.kernel.netns import Namespace, add_veth
from fatpipe.linuxpath import cmd, parse

LAB_PREFIX = "fph-"
# The lab's ProxyCommand: nc with TCP_NODELAY (see tcp_relay.py).
RELAY = Path(__file__).with_name("tcp_relay.py")
SSHD = "/usr/sbin/sshd"
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
MTU_BYTES = 1500


def missing_requirements() -> str | None:
    """Why the lab cannot be built here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, sshd)"
    for tool, path in (("sshd", SSHD), ("ssh-keygen", shutil.which("ssh-keygen")), ("nc", shutil.which("nc")),
                       ("ip", shutil.which("ip"))):
        if not path or not os.path.exists(path):
            return f"needs {tool} (apt-get install openssh-server netcat-openbsd iproute2)"
    try:
        import asyncssh  # noqa: F401 - only its presence is checked
    except ImportError:
        return "needs asyncssh (pip install 'fatpipe[hosts]')"
    return None


class LabNamespace(Namespace):
    """The kernel backend's Namespace under the test prefix ``fph-``."""

    def __init__(self, name: str):
        if not name.startswith(LAB_PREFIX):
            raise ValueError(f"lab namespace {name!r} must start with {LAB_PREFIX!r}")
        self.name = name

    @classmethod
    def create(cls, name: str) -> LabNamespace:
        ns = cls(name)
        cmd.run(["ip", "netns", "add", name])
        ns.ip("link", "set", "lo", "up")
        return ns

    def delete(self) -> None:
        remove_namespace(self.name)


def remove_namespace(name: str) -> None:
    """Kill what runs in lab namespace `name`, then delete it."""
    if not name.startswith(LAB_PREFIX):
        raise ValueError(f"refusing to remove {name!r}: not a lab namespace")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = parse.ip_netns_pids(cmd.run(["ip", "netns", "pids", name], check=False))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if pids:
            time.sleep(0.2)
    cmd.run(["ip", "netns", "delete", name], check=False)


def lab_namespaces(pid: int | None = None) -> list[str]:
    """Lab namespaces (of test process `pid`, else of any)."""
    names = parse.ip_netns_list(cmd.run(["ip", "netns", "list"], check=False))
    prefix = f"{LAB_PREFIX}{pid}-" if pid is not None else LAB_PREFIX
    return [n for n in names if n.startswith(prefix)]


def remove_stale() -> list[str]:
    """Remove lab namespaces whose test process is gone."""
    removed = []
    for name in lab_namespaces():
        owner = name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            remove_namespace(name)
            removed.append(name)
    return removed


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains `text` (read from /proc; a check only)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


@dataclass
class Sshd:
    """One sshd daemon: a host alias of the lab's ssh_config."""

    alias: str
    ns: LabNamespace
    address: str
    port: int
    proc: subprocess.Popen | None = None


@dataclass
class Lab:
    dir: Path
    namespaces: dict[str, LabNamespace] = field(default_factory=dict)
    daemons: dict[str, Sshd] = field(default_factory=dict)
    host_pubkeys: dict[str, str] = field(default_factory=dict)  # role -> "type base64"

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    # ---- building ---------------------------------------------------------

    def keygen(self, path: Path) -> str:
        cmd.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fatpipe-lab", "-f", str(path)])
        return " ".join(path.with_suffix(".pub").read_text().split()[:2])

    def add_sshd(self, alias: str, role: str, address: str, port: int = 22, max_sessions: int = 10,
                 env: dict[str, str] | None = None) -> Sshd:
        """Start an sshd in namespace `role` on address:port; `env` is set
        in its sessions (sshd_config SetEnv)."""
        ns = self.namespaces[role]
        base = self.dir / alias
        base.mkdir()
        lines = [f"ListenAddress {address}", f"Port {port}",
                 f"HostKey {self.dir / role / 'ssh_host_ed25519_key'}",
                 f"PidFile {base / 'sshd.pid'}", f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
                 "StrictModes no", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                 "KbdInteractiveAuthentication no", "UsePAM no", f"MaxSessions {max_sessions}",
                 "Subsystem sftp internal-sftp", "LogLevel INFO"]
        if env:
            lines.append("SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()))
        (base / "sshd_config").write_text("\n".join(lines) + "\n")
        d = Sshd(alias, ns, address, port)
        d.proc = ns.popen([SSHD, "-D", "-f", str(base / "sshd_config"), "-E", str(base / "sshd.log")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.daemons[alias] = d
        deadline = time.monotonic() + 10
        while not cmd.ok(ns.exec_args(["nc", "-z", "-w", "1", address, str(port)]), timeout_s=3):
            if d.proc.poll() is not None or time.monotonic() > deadline:
                log = (base / "sshd.log").read_text() if (base / "sshd.log").exists() else ""
                raise RuntimeError(f"sshd {alias} did not start (exit {d.proc.poll()}): {log[-500:]}")
            time.sleep(0.05)
        return d

    def write_client_files(self, extra_hosts: dict[str, dict[str, str]] | None = None) -> None:
        """ssh_config (one Host per daemon, plus `extra_hosts`: alias -> options)
        and known_hosts (every namespace's key under its addresses)."""
        blocks = []
        hosts = {a: {"Hostname": d.address, "Port": str(d.port), "ProxyCommand":
                     f"ip netns exec {d.ns.name} {sys.executable} {RELAY} %h %p"} for a, d in self.daemons.items()}
        hosts.update(extra_hosts or {})
        for alias, opts in hosts.items():
            merged = {"User": "root", "IdentityFile": str(self.dir / "client_key"), "IdentitiesOnly": "yes",
                      "UserKnownHostsFile": str(self.known_hosts), **opts}
            blocks.append(f"Host {alias}\n" + "".join(f"    {k} {v}\n" for k, v in merged.items()))
        self.ssh_config.write_text("\n".join(blocks))
        lines = []
        for d in self.daemons.values():
            name = d.address if d.port == 22 else f"[{d.address}]:{d.port}"
            lines.append(f"{name} {self.host_pubkeys[self._role_of(d.ns)]}")
        self.known_hosts.write_text("\n".join(sorted(set(lines))) + "\n")

    def _role_of(self, ns: LabNamespace) -> str:
        return next(r for r, n in self.namespaces.items() if n is ns)

    # ---- tearing down -----------------------------------------------------

    def close(self) -> None:
        for d in self.daemons.values():
            if d.proc is not None:
                stop_process(d.proc)
        for ns in self.namespaces.values():
            ns.delete()
        shutil.rmtree(self.dir, ignore_errors=True)

    def leftovers(self) -> list[str]:
        """What of this lab still exists (empty after close())."""
        out = [f"namespace {n}" for n in lab_namespaces(os.getpid())
               if n in {ns.name for ns in self.namespaces.values()}]
        out += [f"process {pid}" for pid in processes_mentioning(str(self.dir))]
        out += [f"sshd {a} (pid {d.proc.pid})" for a, d in self.daemons.items()
                if d.proc is not None and d.proc.poll() is None]
        return out


_close_lock = threading.Lock()


def build_lab(tag: str = "") -> Lab:
    """The three-host lab with its sshd daemons:

    * ``lab-s1``, ``lab-emu``, ``lab-rx``: one sshd per host, port 22;
    * ``lab-s1-max4``: s1 again, port 2204, ``MaxSessions 4``;
    * ``lab-rx-skew``: rx again, port 2299, its sessions' clock 100 s ahead
      (libfaketime), when libfaketime is installed."""
    lab = Lab(Path(tempfile.mkdtemp(prefix=f"fatpipe-lab-{os.getpid()}-")))
    try:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        lab.keygen(lab.dir / "client_key")
        (lab.dir / "authorized_keys").write_text((lab.dir / "client_key.pub").read_text())
        for role in ("s1", "emu", "rx"):
            lab.namespaces[role] = LabNamespace.create(f"{LAB_PREFIX}{os.getpid()}{tag}-{role}")
            (lab.dir / role).mkdir()
            lab.host_pubkeys[role] = lab.keygen(lab.dir / role / "ssh_host_ed25519_key")
        s1, emu, rx = (lab.namespaces[r] for r in ("s1", "emu", "rx"))
        add_veth(s1, "eth0", emu, "to-s1", MTU_BYTES)
        add_veth(rx, "eth0", emu, "to-rx", MTU_BYTES)
        s1.ip("addr", "add", "198.19.1.1/24", "dev", "eth0")
        emu.ip("addr", "add", "198.19.1.2/24", "dev", "to-s1")
        emu.ip("addr", "add", "198.19.2.2/24", "dev", "to-rx")
        rx.ip("addr", "add", "198.19.2.1/24", "dev", "eth0")
        s1.ip("route", "add", "default", "via", "198.19.1.2")
        rx.ip("route", "add", "default", "via", "198.19.2.2")
        emu.sysctl("net.ipv4.ip_forward", 1)
        lab.add_sshd("lab-s1", "s1", "198.19.1.1")
        lab.add_sshd("lab-emu", "emu", "198.19.1.2")
        lab.add_sshd("lab-rx", "rx", "198.19.2.1")
        lab.add_sshd("lab-s1-max4", "s1", "198.19.1.1", port=2204, max_sessions=4)
        if os.path.exists(FAKETIME_LIB):
            lab.add_sshd("lab-rx-skew", "rx", "198.19.2.1", port=2299,
                         env={"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": "+100"})
        lab.write_client_files()
    except BaseException:
        lab.close()
        raise
    return lab
