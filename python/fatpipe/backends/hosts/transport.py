"""SSH to the testbed's hosts with asyncssh (the optional ``fatpipe[hosts]``).

One connection per host. Commands run as channels of that connection,
concurrently, but never more at once than the host's session limit (a
semaphore sized from ``max_sessions``, below OpenSSH's ``MaxSessions 10``);
a server that refuses a session (a lower ``MaxSessions``) lowers the limit
to what it accepted, and the command waits for a free session instead of
failing.

Security: host keys are checked against known_hosts (the user's, or the
``UserKnownHostsFile`` of the ssh_config in use) and never accepted
automatically: an ssh_config that turns checking off (``UserKnownHostsFile
none``) is refused. Authentication is by key only (ssh-agent or
IdentityFile): password and keyboard-interactive are disabled. ssh_config's
``ProxyJump`` and ``ProxyCommand`` apply (asyncssh reads them).

Commands are argument lists, joined with :func:`shlex.join` for the remote
shell: nothing from a spec is ever spliced into a shell string.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from ...testbed import SshTarget, Testbed
from ..base import BackendUnavailable

# Keepalives unanswered before the connection counts as lost.
KEEPALIVE_COUNT_MAX = 3
# How a server refuses a session beyond its limit: OpenSSH fails the channel
# open with SSH2_OPEN_CONNECT_FAILED "open failed" (server_input_channel_open()
# when session_new() finds MaxSessions reached), other servers with
# SSH_OPEN_ADMINISTRATIVELY_PROHIBITED (RFC 4254 §5.1); a session whose exec
# request is refused right after it opened is asyncssh's
# OPEN_REQUEST_SESSION_FAILED (seen from OpenSSH 9.2 at its limit).
SESSION_REFUSED_CODES = frozenset({1, 2, 0xFFFFFFFF})
DEFAULT_COMMAND_TIMEOUT_S = 60.0


def asyncssh_module() -> Any:
    """The asyncssh module, or BackendUnavailable saying how to install it."""
    try:
        import asyncssh
    except ImportError:
        raise BackendUnavailable("the hosts backend needs asyncssh: pip install 'fatpipe[hosts]'") from None
    return asyncssh


class HostError(RuntimeError):
    """Something failed on (or on the way to) one host; the message names it."""

    def __init__(self, host: str, target: str, problem: str):
        self.host = host
        self.problem = problem
        super().__init__(f"host {host} ({target}): {problem}")


class HostsFailed(RuntimeError):
    """Several hosts failed at once; ``errors`` holds one HostError each."""

    def __init__(self, errors: Sequence[HostError]):
        self.errors = list(errors)
        super().__init__("; ".join(str(e) for e in self.errors))


@dataclass(frozen=True)
class Endpoint:
    """How to reach one host of the testbed."""

    name: str
    target: SshTarget
    ssh_config: str | None  # None: the user's ~/.ssh/config
    max_sessions: int
    connect_timeout_s: float
    keepalive_s: float


def endpoints(testbed: Testbed) -> list[Endpoint]:
    return [Endpoint(name, host.ssh, testbed.ssh_config_of(name), testbed.max_sessions_of(name),
                     testbed.connect_timeout, testbed.keepalive) for name, host in testbed.hosts.items()]


@dataclass(frozen=True)
class CommandResult:
    host: str
    args: tuple[str, ...]
    exit_status: int | None  # None: killed by a signal or the channel closed
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class SessionLimiter:
    """At most `limit` sessions at once (opening or open).

    When the server refuses a session while others are open, the limit
    drops to the number it accepted and the caller retries after a short
    backoff, once a slot is free. A refusal can be transient: OpenSSH counts
    a session until it has reaped the session's process, a moment after the
    channel closed. So after `limit` sessions opened without a refusal the
    limit grows by one again, up to the configured maximum. A refusal with
    nothing open and nothing opening is an error."""

    BACKOFF_S = 0.05
    MAX_BACKOFF_S = 1.0

    def __init__(self, limit: int):
        if limit < 1:
            raise ValueError(f"session limit {limit}: at least 1")
        self.max_limit = limit
        self.limit = limit
        self.active = 0  # slots taken: sessions opening or open
        self.established = 0  # sessions open
        self.peak = 0  # most sessions open at once (tests and facts)
        self.refusals = 0
        self._opened_since_refusal = 0
        self._changed = asyncio.Condition()

    async def open(self, opener, refused) -> Any:
        """`await opener()` in a free slot; `refused(exc)` tells whether
        `exc` is the server refusing a session. The slot is held until
        :meth:`release`."""
        backoff_s = self.BACKOFF_S
        while True:
            async with self._changed:
                await self._changed.wait_for(lambda: self.active < self.limit)
                self.active += 1
            try:
                session = await opener()
            except BaseException as e:
                async with self._changed:
                    self.active -= 1
                    self._changed.notify_all()
                    if not (isinstance(e, Exception) and refused(e)) or self.active == 0:
                        raise
                    self.refusals += 1
                    self._opened_since_refusal = 0
                    self.limit = max(1, min(self.limit, self.established))
                await asyncio.sleep(backoff_s)
                backoff_s = min(2 * backoff_s, self.MAX_BACKOFF_S)
                continue
            async with self._changed:
                self.established += 1
                self.peak = max(self.peak, self.established)
                self._opened_since_refusal += 1
                if self.limit < self.max_limit and self._opened_since_refusal >= self.limit:
                    self.limit += 1
                    self._opened_since_refusal = 0
                    self._changed.notify_all()
            return session

    async def release(self) -> None:
        async with self._changed:
            self.established -= 1
            self.active -= 1
            self._changed.notify_all()


def remote_command(args: Sequence[str]) -> str:
    """The command line the remote shell runs for argument list `args`."""
    if isinstance(args, str) or not args or not all(isinstance(a, str) for a in args):
        raise TypeError(f"a remote command is a non-empty list of strings, got {args!r}")
    return shlex.join(args)


class HostConnection:
    """An open SSH connection to one host."""

    def __init__(self, endpoint: Endpoint, conn: Any):
        self.endpoint = endpoint
        self.name = endpoint.name
        self._conn = conn
        self.sessions = SessionLimiter(endpoint.max_sessions)

    def _error(self, problem: str) -> HostError:
        return HostError(self.name, str(self.endpoint.target), problem)

    def _refused(self, exc: Exception) -> bool:
        asyncssh = asyncssh_module()
        return isinstance(exc, asyncssh.ChannelOpenError) and exc.code in SESSION_REFUSED_CODES

    @asynccontextmanager
    async def _session(self, opener, close, what: str, lost: str) -> AsyncIterator[Any]:
        """`await opener()` in one slot of the session limiter, held until
        the block ends; then `close(session)` and wait for it to close.
        Errors name the host and `what` (a refused channel) or `lost`."""
        asyncssh = asyncssh_module()
        try:
            session = await self.sessions.open(opener, self._refused)
        except asyncssh.ChannelOpenError as e:
            raise self._error(f"cannot open {what}: {e.reason}") from None
        except (asyncssh.Error, OSError) as e:
            raise self._error(f"{lost}: {e}") from None
        try:
            yield session
        finally:
            close(session)
            try:
                await session.wait_closed()
            finally:
                await self.sessions.release()

    def process(self, args: Sequence[str], **kw: Any):
        """An asyncssh process running `args` (an async context manager),
        holding one session slot until the block ends (then its channel is
        closed)."""
        command = remote_command(args)
        return self._session(lambda: self._conn.create_process(command, **kw), lambda proc: proc.close(),
                             f"a session for `{command[:200]}`", "connection lost")

    def sftp(self):
        """An asyncssh SFTP client on its own session (an async context
        manager; one slot of the limiter until the block ends)."""
        return self._session(self._conn.start_sftp_client, lambda client: client.exit(), "an SFTP session",
                             "cannot open an SFTP session")

    async def run(self, args: Sequence[str], *, input_text: str | None = None,
                  timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S, check: bool = True) -> CommandResult:
        """Run `args` on the host and wait for it. Raises HostError (naming
        the host, the command and its stderr) when it exits non-zero and
        `check`, or when it takes longer than `timeout_s`."""
        asyncssh = asyncssh_module()
        command = remote_command(args)
        async with self.process(args) as proc:
            try:
                stdout, stderr = await asyncio.wait_for(proc.communicate(input_text), timeout_s)
            except TimeoutError:
                raise self._error(f"`{command[:200]}` did not finish within {timeout_s:g} s") from None
            except (asyncssh.Error, OSError) as e:
                raise self._error(f"connection lost while running `{command[:200]}`: {e}") from None
            await proc.wait_closed()
            result = CommandResult(self.name, tuple(args), proc.exit_status, stdout or "", stderr or "")
        if check and not result.ok:
            why = f"exited {result.exit_status}" if result.exit_status is not None else \
                f"was killed ({proc.exit_signal[0] if proc.exit_signal else 'channel closed'})"
            raise self._error(f"`{command[:200]}` {why}: {result.stderr.strip()[-500:] or '(no stderr)'}")
        return result

    async def close(self) -> None:
        self._conn.close()
        await self._conn.wait_closed()


async def _options(asyncssh: Any, ep: Endpoint) -> Any:
    """Connection options from the endpoint and its ssh_config; refuses
    configurations that would skip host-key checking."""
    config = [ep.ssh_config] if ep.ssh_config else ()
    options = await asyncssh.SSHClientConnectionOptions.construct(
        None, config=config, host=ep.target.host, port=ep.target.port or (),
        username=ep.target.user or (),
        password_auth=False, kbdint_auth=False,  # keys only
        connect_timeout=ep.connect_timeout_s, keepalive_interval=ep.keepalive_s,
        keepalive_count_max=KEEPALIVE_COUNT_MAX)
    if options.known_hosts is None:
        raise HostError(ep.name, str(ep.target), "the ssh_config sets UserKnownHostsFile none, which turns "
                        "host-key checking off; fatpipe checks every host key against a known_hosts file")
    return options, config


def _connect_problem(asyncssh: Any, e: BaseException, ep: Endpoint) -> str:
    if isinstance(e, asyncssh.HostKeyNotVerifiable):
        return (f"host key not verifiable ({e.reason}): the host is not in known_hosts or its key changed; "
                "check its fingerprint and add it (ssh-keyscan) — fatpipe never accepts an unknown key")
    if isinstance(e, asyncssh.PermissionDenied):
        return "authentication refused: no key was accepted (fatpipe uses ssh-agent or IdentityFile keys only)"
    if isinstance(e, asyncio.TimeoutError):
        return f"no SSH connection within the connect timeout of {ep.connect_timeout_s:g} s (unreachable?)"
    if isinstance(e, asyncssh.ConfigParseError):
        return f"ssh_config: {e}"
    if isinstance(e, asyncssh.DisconnectError):
        return (f"the connection closed during setup ({e.reason}): the server, or the ProxyCommand or jump "
                "host on the way, ended it (is sshd listening there?)")
    return f"cannot connect: {e}"


async def connect(ep: Endpoint) -> HostConnection:
    """Open the SSH connection to one host (HostError naming it on failure)."""
    asyncssh = asyncssh_module()
    try:
        options, config = await _options(asyncssh, ep)
        conn = await asyncssh.connect(ep.target.host, options=options, config=config)
    except HostError:
        raise
    except (TimeoutError, asyncssh.Error, OSError, ValueError) as e:
        raise HostError(ep.name, str(ep.target), _connect_problem(asyncssh, e, ep)) from None
    return HostConnection(ep, conn)


async def connect_all(eps: Sequence[Endpoint]) -> dict[str, HostConnection]:
    """Connect to every host at once. If any fails, the others are closed
    and HostsFailed lists one HostError per host that failed."""
    results = await asyncio.gather(*(connect(ep) for ep in eps), return_exceptions=True)
    conns = {ep.name: r for ep, r in zip(eps, results, strict=True) if isinstance(r, HostConnection)}
    failed = [r for r in results if not isinstance(r, HostConnection)]
    if failed:
        await close_all(conns)
        for r in failed:
            if not isinstance(r, HostError):
                raise r
        raise HostsFailed(failed)
    return conns


async def close_all(conns: dict[str, HostConnection]) -> None:
    await asyncio.gather(*(c.close() for c in conns.values()), return_exceptions=True)
