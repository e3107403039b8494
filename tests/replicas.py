"""Real ``tapgate serve`` processes for the replica tests: start, ask, tap, stop.

Each replica is the installed console script in its own process, with a
config written to the test's directory, so what is tested is what a team
deploys: separate processes that share nothing but the database.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.fakes.slack import DEFAULT_BOT_TOKEN

_LISTENING = re.compile(r"tapgate listening on (http://127\.0\.0\.1:\d+)")

TOKEN = "replica-agent-token-0123456789"
SECRET = "replica-channel-secret"
LINE_TOKEN = "replica-line-token"
APPROVER = "U" + "d" * 32
SLACK_APPROVER = "U0ALICE"
SLACK_SECRET = "replica-slack-signing-secret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DEFAULT_POLICY = "{default_timeout: 10m, rules: [{tool: deploy, action: ask}]}"


@dataclass
class Replica:
    """One running ``tapgate serve``: its base URL and its process."""

    name: str
    url: str
    proc: asyncio.subprocess.Process

    async def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then its exit status (it must stop cleanly within ``timeout``)."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), timeout)

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs, exactly like a machine that dies."""
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()


async def start_replica(
    tmp: Path,
    name: str,
    db_url: str,
    line_url: str,
    *,
    server: str = "",
    policy: str = DEFAULT_POLICY,
    line: str = "",
    slack_url: str | None = None,
    env: dict[str, str] | None = None,
    port: int | None = None,
    channels: str = "",
    approver: str = "",
) -> Replica:
    """Start ``tapgate serve`` on a free port and wait until ``/readyz`` says 200.

    ``server`` and ``line`` are extra YAML flow-mapping entries (``"a: 1, b: 2"``)
    for the ``server`` and ``channels.line`` sections; ``slack_url`` adds a
    Slack channel talking to the fake Slack API there (alice is
    :data:`SLACK_APPROVER` on it); ``env`` is added to the process environment;
    ``port`` is for a server restarted where its agents expect it (the restart tests);
    ``channels`` and ``approver`` are extra flow-mapping entries for ``channels`` and alice.
    """
    slack = (
        f", slack: {{bot_token: '{DEFAULT_BOT_TOKEN}', signing_secret: '{SLACK_SECRET}', "
        f"api_base_url: '{slack_url}'}}"
        if slack_url is not None
        else ""
    )
    config = tmp / f"{name}.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port or 8080}{', ' + server if server else ''}}}\n"
        f"store: {{url: '{db_url}'}}\n"
        f"agents: [{{name: ci, token: '{TOKEN}', max_pending: 0, asks_per_minute: 0}}]\n"
        f"approvers: [{{name: alice, line: '{APPROVER}', slack: '{SLACK_APPROVER}'"
        f"{', ' + approver if approver else ''}}}]\n"
        f"channels: {{line: {{channel_access_token: '{LINE_TOKEN}', "
        f"channel_secret: '{SECRET}', api_base_url: '{line_url}'"
        f"{', ' + line if line else ''}}}{slack}{', ' + channels if channels else ''}}}\n"
        f"policy: {policy}\n"
    )
    exe = str(Path(sys.executable).with_name("tapgate"))
    log = (tmp / f"{name}.log").open("ab")  # the child process keeps its own copy
    start = log.tell()  # a restart appends: only this process's lines name its port
    # Port 0 unless the test names one: the server binds a port the system picks and names it
    # in its listening line, so no other process can take it between choosing and binding.
    proc = await asyncio.create_subprocess_exec(
        exe,
        "serve",
        "--config",
        str(config),
        "--port",
        str(port or 0),
        env={**os.environ, **(env or {})},
        stdout=log,
        stderr=log,
    )
    log.close()
    async with aiohttp.ClientSession() as session:
        for _ in range(400):
            url = _listening(tmp / f"{name}.log", start, port)
            if url is not None and await _ready(session, url):
                return Replica(name, url, proc)
            if proc.returncode is not None:
                break
            await asyncio.sleep(0.05)
    proc.kill()
    await proc.wait()
    logged = (tmp / f"{name}.log").read_text(errors="replace")[-2000:]
    raise AssertionError(f"replica {name} never became ready:\n{logged}")


async def _ready(session: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with session.get(url + "/readyz") as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


def _listening(log: Path, start: int, port: int | None) -> str | None:
    """The server's base URL: ``port``, or the one its listening line (past ``start``) names."""
    if port:
        return f"http://127.0.0.1:{port}"
    with log.open("rb") as lines:
        lines.seek(start)
        named = _LISTENING.search(lines.read().decode("utf-8", "replace"))
    return named.group(1) if named else None


async def ask(session: aiohttp.ClientSession, url: str, n: int, tool: str = "deploy") -> str:
    """Submit one call that the policy asks about; its request id."""
    async with session.post(
        url + "/v1/tool-calls", headers=AUTH, json={"tool": tool, "arguments": {"n": n}}
    ) as response:
        body = await response.json()
    assert body["decision"] == "pending", body
    return str(body["id"])
