"""The controller's side of the agent (agent.py) on one host.

:meth:`AgentClient.launch` creates the run directory over SFTP (mode 0700;
an existing one is an error, never reused), writes the owner record so that
`fatpipe clean --testbed` recognises the directory from the first moment,
pushes the agent, and starts it over one SSH channel. Requests are JSON
lines answered in order of their ids, each with a timeout; every error names
the host. A renew task keeps the agent's lease; :meth:`close` closes the
agent's stdin, which makes it kill what it started, restore what it changed
and remove the run directory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import agent, layout, transport

REQUEST_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 30.0
# The agent's cleanup: SIGTERM grace, SIGKILL wait, sysctl writes, rmtree.
CLOSE_TIMEOUT_S = agent.STOP_GRACE_S + agent.KILL_WAIT_S + 10.0


class AgentError(transport.HostError):
    """The agent on a host refused a request, failed, or is gone."""


class AgentClient:
    """One agent on one host, over one channel of `conn`."""

    def __init__(self, conn: transport.HostConnection, run_dir: str, lease_s: float):
        self.conn = conn
        self.run_dir = run_dir
        self.lease_s = lease_s
        self.pid: int | None = None
        self.cleaned: dict | None = None  # the agent's last report ("event": "cleaned")
        self._proc_cm: Any = None
        self._proc: Any = None
        self._ids = 0
        self._pending: dict[int, asyncio.Future] = {}
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task | None = None
        self._renewer: asyncio.Task | None = None
        # Set by close(): the renewal loop ends at its next turn.
        self._closing = False
        self._gone: str | None = None  # why the agent can no longer answer
        self._ready: asyncio.Future = asyncio.get_running_loop().create_future()

    def _error(self, problem: str) -> AgentError:
        ep = self.conn.endpoint
        return AgentError(ep.name, str(ep.target), f"agent in {self.run_dir}: {problem}")

    # ---- starting -----------------------------------------------------------

    @classmethod
    async def launch(cls, conn: transport.HostConnection, run_id: str, *, lease_s: float = agent.DEFAULT_LEASE_S,
                     keep_results: bool = False, renew: bool = True, root: str = layout.REMOTE_ROOT,
                     python: str = "python3") -> AgentClient:
        run_dir = layout.run_dir(run_id, root)
        client = cls(conn, run_dir, lease_s)
        await client._push(run_id)
        args = [python, "-u", f"{run_dir}/{layout.AGENT_FILE}", "--run-dir", run_dir, "--run-id", run_id,
                "--lease", repr(float(lease_s))] + (["--keep-results"] if keep_results else [])
        client._proc_cm = conn.process(args)
        client._proc = await client._proc_cm.__aenter__()
        client._reader = asyncio.create_task(client._read())
        try:
            ready = await asyncio.wait_for(asyncio.shield(client._ready), READY_TIMEOUT_S)
        except TimeoutError:
            await client.close()
            raise client._error(f"did not start within {READY_TIMEOUT_S:g} s") from None
        except AgentError:
            await client.close()
            raise
        client.pid = ready["pid"]
        if renew:
            client._renewer = asyncio.create_task(client._renew_loop())
        return client

    async def _push(self, run_id: str) -> None:
        asyncssh = transport.asyncssh_module()
        source = layout.script_source(agent.__file__).encode()
        owner = json.dumps(layout.owner_record(run_id, None, self.lease_s)).encode()
        excl = asyncssh.FXF_WRITE | asyncssh.FXF_CREAT | asyncssh.FXF_EXCL
        async with self.conn.sftp() as sftp:
            try:
                await sftp.mkdir(self.run_dir, asyncssh.SFTPAttrs(permissions=0o700))
            except asyncssh.SFTPError as e:
                raise self._error(f"cannot create the run directory ({e.reason}); if a crashed run left it, "
                                  "`fatpipe clean --testbed FILE` removes it") from None
            try:
                for name, data, mode in ((layout.OWNER_FILE, owner, 0o600), (layout.AGENT_FILE, source, 0o600)):
                    async with sftp.open(f"{self.run_dir}/{name}", excl, asyncssh.SFTPAttrs(permissions=mode),
                                         encoding=None) as f:
                        await f.write(data)
            except asyncssh.SFTPError as e:
                # The directory is this run's (mkdir succeeded): do not leave it unmarked.
                with contextlib.suppress(asyncssh.SFTPError):
                    await sftp.rmtree(self.run_dir)
                raise self._error(f"cannot push the agent: {e.reason}") from None

    # ---- the channel ------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while True:
                line = await self._proc.stdout.readline()
                if not line:
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue  # not the protocol (never printed by the agent)
                if msg.get("event") == "ready" and not self._ready.done():
                    self._ready.set_result(msg)
                elif msg.get("event") == "cleaned":
                    self.cleaned = msg
                elif msg.get("id") in self._pending:
                    fut = self._pending.pop(msg["id"])
                    if not fut.done():
                        fut.set_result(msg)
        except Exception as e:  # noqa: BLE001 - any channel failure ends the agent's answers
            self._gone = f"the channel failed: {e}"
        finally:
            if self._gone is None:
                err = ""
                with contextlib.suppress(Exception):
                    err = (await asyncio.wait_for(self._proc.stderr.read(), 2.0)).strip()
                reason = self.cleaned.get("reason") if self.cleaned else None
                self._gone = (f"the agent exited ({reason})" if reason else "the agent's channel closed") + \
                    (f": {err[-300:]}" if err and not self.cleaned else "")
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(self._error(self._gone))
            self._pending.clear()
            if not self._ready.done():
                self._ready.set_exception(self._error(self._gone))

    async def request(self, op: str, answer_within_s: float = REQUEST_TIMEOUT_S, **fields: Any) -> dict:
        """Send one request and wait for its answer (AgentError naming the
        host if the agent refuses it, is gone, or takes over `answer_within_s`)."""
        if self._gone is not None:
            raise self._error(self._gone)
        async with self._lock:
            self._ids += 1
            rid = self._ids
            fut = asyncio.get_running_loop().create_future()
            self._pending[rid] = fut
            try:
                self._proc.stdin.write(json.dumps({"id": rid, "op": op, **fields}) + "\n")
            except (OSError, transport.asyncssh_module().Error) as e:
                self._pending.pop(rid, None)
                raise self._error(f"{op}: the channel is gone ({e})") from None
        try:
            answer = await asyncio.wait_for(fut, answer_within_s)
        except TimeoutError:
            self._pending.pop(rid, None)
            raise self._error(f"{op}: no answer within {answer_within_s:g} s") from None
        if not answer.get("ok"):
            raise self._error(f"{op} refused: {answer.get('error')}")
        return answer

    # ---- operations ---------------------------------------------------------------

    async def start(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str = ".",
                    stdout: str | None = None, stderr: str | None = None) -> int:
        """Start `argv` in its own process group; returns the group id."""
        answer = await self.request("start", argv=list(argv), env=dict(env or {}), cwd=cwd, stdout=stdout,
                                    stderr=stderr)
        return int(answer["pgid"])

    async def stop(self, pgid: int, grace_s: float = agent.STOP_GRACE_S) -> int | None:
        """SIGTERM group `pgid`, SIGKILL after `grace_s`; its leader's exit code."""
        answer = await self.request("stop", answer_within_s=grace_s + agent.KILL_WAIT_S + REQUEST_TIMEOUT_S, pgid=pgid,
                                    grace_s=grace_s)
        return answer["returncode"]

    async def wait_line(self, pgid: int, word: str, stdout: str, stderr: str | None, timeout_s: float) -> None:
        """Wait until group `pgid`'s output file `stdout` has the line `word`
        (AgentError with its stderr if it exits first or takes longer)."""
        await self.request("wait", answer_within_s=timeout_s + REQUEST_TIMEOUT_S, pgid=pgid, word=word,
                           stdout=stdout, stderr=stderr, timeout_s=timeout_s)

    async def wait_exit(self, pgid: int, timeout_s: float, stderr: str | None = None) -> tuple[int, str]:
        """Wait for group `pgid`'s leader to exit: (exit status, its stderr's tail)."""
        answer = await self.request("wait", answer_within_s=timeout_s + REQUEST_TIMEOUT_S, pgid=pgid,
                                    stderr=stderr, timeout_s=timeout_s)
        return int(answer["returncode"]), str(answer.get("stderr_tail", ""))

    async def signal(self, pgid: int, name: str) -> None:
        await self.request("signal", pgid=pgid, signal=name)

    async def change(self, do: Sequence[str], undo: Sequence[str]) -> None:
        """Run `do` on the host; `undo` runs when the agent ends (saved first)."""
        await self.request("change", do=list(do), undo=list(undo))

    async def sysctl_set(self, key: str, value: str) -> str:
        """Set an allowed sysctl (restored when the agent ends); its old value."""
        return (await self.request("sysctl_set", key=key, value=value))["old"]

    async def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        await self.request("put", path=path, data_b64=base64.b64encode(data).decode(), mode=mode)

    async def get(self, path: str, offset: int = 0) -> bytes:
        """File `path` of the run directory from byte `offset` on."""
        return base64.b64decode((await self.request("get", path=path, offset=offset))["data_b64"])

    async def fetch(self, path: str, local: Path) -> int:
        """Copy file `path` of the run directory to `local` over SFTP (a
        large file: `get` carries small ones through the agent's channel);
        its size in bytes."""
        asyncssh = transport.asyncssh_module()
        try:
            async with self.conn.sftp() as sftp:
                await sftp.get(f"{self.run_dir}/{path}", str(local))
        except asyncssh.SFTPError as e:
            raise self._error(f"cannot fetch {path}: {e.reason}") from None
        return local.stat().st_size

    async def clock_ns(self) -> int:
        """The host's wall clock (for clock.measure_offset)."""
        return int((await self.request("clock"))["t_ns"])

    async def status(self) -> dict:
        return await self.request("status")

    async def renew(self) -> None:
        await self.request("renew", lease_s=self.lease_s)

    async def _renew_loop(self) -> None:
        # Three renewals per lease: one lost or late answer does not end the run.
        while self._gone is None and not self._closing:
            await asyncio.sleep(self.lease_s / 3)
            with contextlib.suppress(AgentError):
                await self.renew()

    # ---- ending ---------------------------------------------------------------

    async def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> dict | None:
        """Close the agent's stdin and wait (up to `timeout_s`) for it to
        clean up and exit; the agent's report, or None if the channel was
        already gone."""
        if self._renewer is not None:
            # A cancellation that meets a renewal's own answer timeout can be
            # taken for that timeout (asyncio.wait_for before Python 3.12,
            # gh-86296), and the renewal's AgentError is suppressed: the
            # loop would sleep on with nobody to cancel it again. The flag
            # ends it at its next turn whatever happens to the cancellation.
            self._closing = True
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        if self._proc is None:
            return None
        with contextlib.suppress(Exception):
            self._proc.stdin.write_eof()
        deadline = time.monotonic() + timeout_s
        try:
            if self._reader is not None:
                await asyncio.wait_for(asyncio.shield(self._reader), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            pass
        finally:
            cm, self._proc_cm, self._proc = self._proc_cm, None, None
            await cm.__aexit__(None, None, None)
            if self._reader is not None and not self._reader.done():
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader
        return self.cleaned
