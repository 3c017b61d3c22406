"""`fatpipe clean --testbed FILE`: remove what fatpipe's runs left on the
hosts — their run directories (layout.py), each only if it carries fatpipe's
owner record and its agent is gone (remote_clean.py), after the agent's
cleanup-only mode (agent.py) has stopped the processes and restored the
sysctls a dead agent recorded."""

from __future__ import annotations

import asyncio
import json

from ...testbed import Testbed
from ..base import BackendUnavailable
from . import agent, layout, remote_clean, transport

CLEAN_TIMEOUT_S = 60.0


class CleanIncomplete(BackendUnavailable):
    """Some hosts could not be cleaned; the message says which and why, and
    what was removed on the others."""


def parse_clean(text: str) -> list[dict]:
    """remote_clean.py's JSON list (pure); ValueError if malformed."""
    try:
        entries = json.loads(text)
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and {"path", "action", "why"} <= set(e) for e in entries):
            raise ValueError("not a list of {path, action, why}")
    except ValueError as e:
        raise ValueError(f"the host's clean script answered something else than expected ({e}): "
                         f"{text[:200]!r}") from None
    return entries


async def _clean_host(ep: transport.Endpoint, root: str) -> list[dict]:
    conn = await transport.connect(ep)
    try:
        result = await conn.run(["python3", "-c", layout.script_source(remote_clean.__file__), root,
                                 layout.RUN_DIR_PREFIX, layout.OWNER_FILE, layout.STATE_FILE],
                                input_text=layout.script_source(agent.__file__), timeout_s=CLEAN_TIMEOUT_S)
        try:
            return parse_clean(result.stdout)
        except ValueError as e:
            raise transport.HostError(ep.name, str(ep.target), str(e)) from None
    finally:
        await conn.close()


async def clean_async(testbed: Testbed, root: str = layout.REMOTE_ROOT) -> list[str]:
    eps = transport.endpoints(testbed)
    results = await asyncio.gather(*(_clean_host(ep, root) for ep in eps), return_exceptions=True)
    removed, failed = [], []
    for ep, r in zip(eps, results, strict=True):
        if isinstance(r, transport.HostError):
            failed.append(str(r))
        elif isinstance(r, BaseException):
            raise r
        else:
            removed += [f"host {ep.name}: {e['path']} ({e['why']})" for e in r if e["action"] == "removed"]
            failed += [f"host {ep.name}: kept {e['path']}: {e['why']}" for e in r if e["action"] != "removed"]
    if failed:
        done = "; ".join(removed) or "nothing"
        raise CleanIncomplete(f"not everything could be cleaned: {'; '.join(failed)} (removed: {done})")
    return removed


def clean(testbed: Testbed, root: str = layout.REMOTE_ROOT) -> list[str]:
    """Descriptions of the run directories removed on the testbed's hosts.
    Raises CleanIncomplete naming each host that could not be reached and
    each directory kept (a run still going), after cleaning the rest."""
    transport.asyncssh_module()
    return asyncio.run(clean_async(testbed, root))
