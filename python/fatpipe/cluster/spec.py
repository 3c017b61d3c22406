"""`--cluster SPEC`: which Dask cluster a study's runs go to.

    local[:N]                       N worker processes on this machine (default: the CPU count)
    tcp://HOST:PORT                 an existing scheduler (also tls://)
    ssh:HOST,HOST,...[,key=value]   SSHCluster: the first host runs the scheduler, every
                                    host after it one worker
    slurm:key=value,...             dask-jobqueue's SLURMCluster (options in SLURM_OPTIONS)

Options are comma-separated ``key=value`` items; a bad one is a
:class:`ClusterSpecError` naming it and what is allowed (docs/cluster.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field


class ClusterSpecError(ValueError):
    """A --cluster SPEC that cannot be used; the message says what is allowed."""


# ssh: options besides the hosts.
SSH_OPTIONS = {
    "ssh_config": "an OpenSSH client config file for asyncssh (default ~/.ssh/config)",
    "known_hosts": "a known_hosts file (default ~/.ssh/known_hosts)",
    "python": "the Python on the hosts (default: python3)",
    "nthreads": "threads per worker (default: the host's cores)",
}

# slurm: every option, with its default.
SLURM_OPTIONS = {
    "jobs": ("1", "batch jobs to submit; each runs `processes` workers"),
    "cores": ("1", "cores per job (#SBATCH --cpus-per-task)"),
    "processes": ("1", "worker processes per job"),
    "memory": ("4GB", "memory per job (#SBATCH --mem)"),
    "walltime": ("01:00:00", "time limit per job (#SBATCH -t)"),
    "queue": ("", "partition (#SBATCH -p)"),
    "account": ("", "account to charge (#SBATCH -A)"),
    "python": ("", "the Python on the compute nodes (default: this one's path)"),
    "interface": ("", "network interface the workers listen on (e.g. ib0)"),
    "directive": ("", "an extra #SBATCH directive, e.g. directive=--exclusive (repeatable)"),
    "exclusive": ("0", "1: each job owns its node (--exclusive) and its worker offers the machine tokens "
                       "the study's backends need (kernel); needs processes=1"),
}

SPEC_FORMS = "local[:N], tcp://HOST:PORT, ssh:HOST,HOST,...[,key=value] or slurm:key=value,..."
_ADDRESS = re.compile(r"^(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:\d+$")


@dataclass(frozen=True)
class ClusterSpec:
    """A parsed --cluster SPEC: `kind` (local, address, ssh, slurm) and its values."""

    kind: str
    text: str
    workers: int = 0  # local
    address: str = ""  # address
    hosts: tuple[str, ...] = ()  # ssh
    options: dict[str, str] = field(default_factory=dict)
    directives: tuple[str, ...] = ()  # slurm

    def describe(self) -> str:
        if self.kind == "local":
            return f"a local Dask cluster of {self.workers} worker processes"
        if self.kind == "address":
            return f"the Dask scheduler at {self.address}"
        if self.kind == "ssh":
            return f"an SSH cluster (scheduler on {self.hosts[0]}, workers on {', '.join(self.hosts[1:])})"
        return f"a Slurm cluster of {self.options['jobs']} jobs"


def _items(text: str, what: str) -> list[str]:
    items = [i.strip() for i in text.split(",")]
    if any(not i for i in items):
        raise ClusterSpecError(f"--cluster {what}: an empty item in {text!r}; items are separated by single commas")
    return items


def _key_value(item: str, allowed: dict, spec: str) -> tuple[str, str]:
    key, _, value = item.partition("=")
    if key not in allowed or not value:
        raise ClusterSpecError(f"--cluster {spec}: option {item!r} is not allowed; options: "
                               + ", ".join(f"{k}=…" for k in allowed))
    return key, value


def _positive_int(spec: str, key: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ClusterSpecError(f"--cluster {spec}: {key} = {value!r} must be a whole number >= 1")
    return int(value)


def parse_cluster_spec(text: str) -> ClusterSpec:
    """The ClusterSpec of a --cluster argument (forms: SPEC_FORMS)."""
    text = text.strip()
    kind, sep, rest = text.partition(":")
    if kind == "local":
        workers = _positive_int(text, "N", rest) if sep else (os.cpu_count() or 1)
        return ClusterSpec("local", text, workers=workers)
    if kind in ("tcp", "tls"):
        if not _ADDRESS.match(text):
            raise ClusterSpecError(f"--cluster {text}: a scheduler address is {kind}://HOST:PORT")
        return ClusterSpec("address", text, address=text)
    if kind == "ssh" and rest:
        hosts, options = [], {}
        for item in _items(rest, text):
            if "=" in item:
                key, value = _key_value(item, SSH_OPTIONS, text)
                options[key] = value
            else:
                hosts.append(item)
        if len(hosts) < 2:
            raise ClusterSpecError(f"--cluster {text}: ssh: needs a scheduler host and at least one worker host "
                                   "(repeat the first host to run a worker beside the scheduler)")
        if "nthreads" in options:
            _positive_int(text, "nthreads", options["nthreads"])
        return ClusterSpec("ssh", text, hosts=tuple(hosts), options=options)
    if kind == "slurm":
        options = {k: default for k, (default, _) in SLURM_OPTIONS.items()}
        directives = []
        for item in _items(rest, text) if rest else []:
            key, value = _key_value(item, SLURM_OPTIONS, text)
            if key == "directive":
                directives.append(value)
            else:
                options[key] = value
        for key in ("jobs", "cores", "processes"):
            _positive_int(text, key, options[key])
        if options["exclusive"] not in ("0", "1"):
            raise ClusterSpecError(f"--cluster {text}: exclusive = {options['exclusive']!r} must be 0 or 1")
        if options["exclusive"] == "1" and options["processes"] != "1":
            raise ClusterSpecError(f"--cluster {text}: exclusive=1 needs processes=1 (one worker per machine)")
        return ClusterSpec("slurm", text, options=options, directives=tuple(directives))
    raise ClusterSpecError(f"--cluster {text!r}: not a cluster; use {SPEC_FORMS}")
