"""The testbed of the hosts backend: which machines play which role, and how
fatpipe reaches them over SSH.

A testbed is a ``[testbed]`` table, either inside a study or alone in a file
passed with ``--testbed FILE`` (so one study runs on several testbeds)::

    [testbed]
    connect_timeout = "10s"
    keepalive = "15s"                   # SSH keepalive interval (3 unanswered: connection lost)
    lease = "30s"                       # an agent that hears nothing for this long cleans up
    [testbed.hosts.alpha]
    ssh = "fatpipe@alpha.example.org"   # user@host[:port]; ~/.ssh/config applies
    address = "10.1.0.1"                # the address its test traffic uses
    interface = "eth1"
    role = "s1"                         # a sender named in flows, "receiver" or "emulator"

Validation is as strict as the study's (spec.py): unknown keys are errors,
every error names the key path and the host (``testbed.hosts.alpha.ssh``).
No password is accepted anywhere: fatpipe authenticates with keys (ssh-agent
or an IdentityFile) and checks host keys against known_hosts.

This module defines its models on its own (the study's Spec holds a
:class:`Testbed`); spec.load_testbed reads a file.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from .spec_errors import SpecError, validation_problems
from .units import UnitError, parse_time_s

RECEIVER_ROLE = "receiver"
EMULATOR_ROLE = "emulator"
# A sender role is a sender name of the study's flows (spec.FlowSection.sender).
SENDER_NAME_PATTERN = r"^[A-Za-z0-9_]{1,8}$"
HOST_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
# Linux interface names: at most IFNAMSIZ-1 = 15 bytes, no '/' or whitespace.
INTERFACE_PATTERN = r"^[A-Za-z0-9_.:@-]{1,15}$"
# OpenSSH's sshd allows MaxSessions = 10 sessions per connection by default;
# fatpipe stays below it (and lowers its limit further when a server refuses).
DEFAULT_MAX_SESSIONS = 8
MAX_MAX_SESSIONS = 64
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_KEEPALIVE_S = 15.0
# How long a host's agent outlives a controller it no longer hears from
# (renewed three times per lease): then it stops the run and undoes it.
DEFAULT_LEASE_S = 30.0

_NO_PASSWORDS = ("fatpipe never takes passwords: authenticate with an SSH key (ssh-agent, or IdentityFile "
                 "in your ssh_config)")


def _time_s(lo: float, hi: float):
    def convert(value: Any) -> float:
        try:
            x = parse_time_s(value)
        except UnitError as e:
            raise ValueError(str(e)) from None
        if not lo <= x <= hi:
            raise ValueError(f"{x:g} s is outside {lo:g} s … {hi:g} s")
        return x
    return BeforeValidator(convert)


def _refuse_secret(value: Any) -> Any:
    if value is not None:
        raise ValueError(_NO_PASSWORDS)
    return value


# A field that exists only to be refused with a message that names it.
Secret = Annotated[Any, BeforeValidator(_refuse_secret)]


@dataclass(frozen=True)
class SshTarget:
    """``user@host[:port]`` as written in a testbed (user and port optional:
    then ssh_config, else the local user and port 22, decide)."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user + '@' if self.user else ''}{host}{f':{self.port}' if self.port else ''}"


_TARGET = re.compile(r"^(?:(?P<user>[^@:\s]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.-]+))"
                     r"(?::(?P<port>[0-9]{1,5}))?$")


def parse_ssh_target(text: str) -> SshTarget:
    """``user@host[:port]`` → SshTarget; ValueError saying what is allowed."""
    if not isinstance(text, str):
        raise ValueError(f"write the SSH target as a string \"user@host[:port]\", got {type(text).__name__}")
    user_part = text.rsplit("@", 1)[0] if "@" in text else ""
    if ":" in user_part:
        # Not echoed: the text holds a password.
        raise ValueError(f"the SSH target carries a password after the user name (user:password@host); "
                         f"{_NO_PASSWORDS}")
    m = _TARGET.match(text)
    if not m:
        raise ValueError(f"cannot read {text[:80]!r} as an SSH target; write \"user@host\", \"user@host:port\" "
                         "or \"user@[ipv6]:port\" (a Host alias of your ssh_config works too)")
    port = int(m.group("port")) if m.group("port") else None
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"port {port} is outside 1 … 65535")
    return SshTarget(host=m.group("v6") or m.group("host"), user=m.group("user"), port=port)


class _Strict(BaseModel):
    # The same strictness as the study's models (spec._Strict): unknown keys
    # are errors, no bool-as-int, no "2"-as-int.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class TestbedHost(_Strict):
    """One machine of the testbed."""

    ssh: Annotated[SshTarget, BeforeValidator(parse_ssh_target)]
    address: str
    interface: Annotated[str, Field(pattern=INTERFACE_PATTERN)]
    role: str
    ssh_config: str | None = None  # an ssh_config file instead of ~/.ssh/config
    max_sessions: Annotated[int, Field(ge=1, le=MAX_MAX_SESSIONS)] | None = None
    password: Secret = None
    passphrase: Secret = None

    @field_validator("address")
    @classmethod
    def _ip_address(cls, value: str) -> str:
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise ValueError(f"{value[:80]!r} is not an IP address; write the address this host's test "
                             "traffic uses, e.g. \"10.1.0.1\" or \"fd00::1\"") from None

    @field_validator("role")
    @classmethod
    def _known_role(cls, value: str) -> str:
        if value in (RECEIVER_ROLE, EMULATOR_ROLE) or re.fullmatch(SENDER_NAME_PATTERN, value):
            return value
        raise ValueError(f"got {value[:40]!r}; a role is \"{RECEIVER_ROLE}\", \"{EMULATOR_ROLE}\" or a sender "
                         "name of the study's flows (1-8 letters, digits or _, e.g. \"s1\")")

    @property
    def is_sender(self) -> bool:
        return self.role not in (RECEIVER_ROLE, EMULATOR_ROLE)


class Testbed(_Strict):
    """The machines of one testbed and how to reach them."""

    __test__ = False  # not a pytest test class despite its name

    hosts: Annotated[dict[Annotated[str, Field(pattern=HOST_NAME_PATTERN)], TestbedHost],
                     Field(min_length=1, max_length=256)]
    ssh_config: str | None = None  # for every host without its own
    max_sessions: Annotated[int, Field(ge=1, le=MAX_MAX_SESSIONS)] = DEFAULT_MAX_SESSIONS
    connect_timeout: Annotated[float, _time_s(0.1, 600.0)] = DEFAULT_CONNECT_TIMEOUT_S
    keepalive: Annotated[float, _time_s(1.0, 3600.0)] = DEFAULT_KEEPALIVE_S
    lease: Annotated[float, _time_s(2.0, 3600.0)] = DEFAULT_LEASE_S
    password: Secret = None
    passphrase: Secret = None

    @model_validator(mode="after")
    def _roles(self) -> Testbed:
        problems = []
        by_role: dict[str, list[str]] = {}
        for name, host in self.hosts.items():
            by_role.setdefault(host.role, []).append(name)
        for role, names in by_role.items():
            if len(names) > 1:
                problems.append(f"role {role!r} is given to several hosts ({', '.join(names)}); "
                                "each role is played by one host")
        if RECEIVER_ROLE not in by_role:
            problems.append(f"no host has role = \"{RECEIVER_ROLE}\"; a testbed needs one receiver")
        if not any(h.is_sender for h in self.hosts.values()):
            problems.append("no host is a sender; give at least one host the role of a sender named in "
                            "the flows (e.g. role = \"s1\")")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # ---- derived ----------------------------------------------------------

    def host_for_role(self, role: str) -> tuple[str, TestbedHost] | None:
        for name, host in self.hosts.items():
            if host.role == role:
                return name, host
        return None

    def senders(self) -> dict[str, str]:
        """sender role -> host name."""
        return {h.role: name for name, h in self.hosts.items() if h.is_sender}

    def ssh_config_of(self, name: str) -> str | None:
        host = self.hosts[name]
        return host.ssh_config if host.ssh_config is not None else self.ssh_config

    def max_sessions_of(self, name: str) -> int:
        host = self.hosts[name]
        return host.max_sessions if host.max_sessions is not None else self.max_sessions

    def relative_to(self, base_dir: Path) -> Testbed:
        """This testbed with relative ssh_config paths made relative to
        `base_dir` (the directory of the file that holds it)."""
        def fix(path: str | None) -> str | None:
            if path is None:
                return None
            p = Path(path).expanduser()
            return str(p if p.is_absolute() else (base_dir / p).resolve())
        hosts = {n: h.model_copy(update={"ssh_config": fix(h.ssh_config)}) for n, h in self.hosts.items()}
        return self.model_copy(update={"hosts": hosts, "ssh_config": fix(self.ssh_config)})


def study_problems(testbed: Testbed, senders: set[str]) -> list[tuple[str, str]]:
    """A testbed against a study's flows: every sender the flows name has a
    host, and every sender host is used."""
    have = set(testbed.senders())
    problems = []
    for sender in sorted(senders - have):
        problems.append(("testbed.hosts", f"the flows name sender {sender!r} but no testbed host has "
                                          f"role = {sender!r} (sender hosts: {sorted(have) or 'none'})"))
    for sender in sorted(have - senders):
        problems.append((f"testbed.hosts.{testbed.senders()[sender]}.role",
                         f"sender {sender!r} sends no flow of the study (flows name {sorted(senders)})"))
    return problems


def validate_testbed(raw: Any, source: str = "") -> Testbed:
    """A raw ``[testbed]`` table → Testbed, or a SpecError naming key and host."""
    if not isinstance(raw, dict):
        raise SpecError([("testbed", "write the testbed as a [testbed] table with [testbed.hosts.NAME] "
                                     "tables")], source)
    try:
        return Testbed.model_validate(raw)
    except ValidationError as e:
        raise SpecError(validation_problems(e, prefix="testbed."), source) from None
