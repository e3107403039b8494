"""A password in a tool call never leaves tapgate: every channel and the log, for real.

The real server (``build_app`` on a loopback port) with its configured Slack,
LINE and console channels, the fake Slack and LINE APIs, an agent that asks
over the HTTP API and an approver who taps Approve on LINE, which rewrites
the Slack message too. Everything the fakes received (raw bytes, posts and
updates), everything printed and everything logged is searched for the
password. Reproduces a finding of a security review: ``mysql -pSECRET`` went out in clear.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.config import parse_config
from tapgate.server.app import build_app
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.receivers import line_webhook
from tests.fakes.slack import DEFAULT_BOT_TOKEN
from tests.fakes.taps import signed_line_tap

AGENT_TOKEN = "e2e-agent-token-0123456789"
LINE_TOKEN = "e2e-line-token"
LINE_SECRET = "e2e-line-secret"
ALICE_LINE = "U" + "a1" * 16
ALICE_SLACK = "U0ALICE"
PASSWORD = "MyP4ssw0rdQ7x"  # letters and digits only: no encoding can hide it from the search
SECRETS = {
    "mysql": (f"mysql -u root -p{PASSWORD} -e 'select 1'", "-p********"),
    "db_pass": (f"DB_PASS={PASSWORD} ./migrate.sh", "DB_PASS=********"),
    "sshpass": (f"sshpass -p {PASSWORD} ssh -p 22 db", "sshpass -p ********"),
    "redis": (f"redis-cli -a {PASSWORD} ping", "-a ********"),
}


@dataclass
class Served:
    """The real server with Slack, LINE and the console, and the two fake platforms."""

    app: web.Application
    url: str
    slack: FakeSlack
    line: FakeLine

    async def ask(self, command: str) -> str:
        """The agent submits a Bash call over the HTTP API; the new request's id."""
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{self.url}/v1/tool-calls",
                json={"tool": "Bash", "arguments": {"command": command}, "session": "s1"},
                headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
            ) as response,
        ):
            body = await response.json()
            assert response.status == 201, body
            return str(body["id"])

    async def approve_on_line(self, request_id: str) -> None:
        """Alice taps Approve in LINE: a webhook call signed as LINE signs it."""
        body, headers = signed_line_tap(LINE_SECRET, ALICE_LINE, request_id, "approve")
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.url}/webhooks/line", data=body, headers=headers) as response,
        ):
            assert response.status == 200
        await line_webhook(self.app).settled()

    def everything_sent(self) -> str:
        """Every byte both platforms received, and their decoded views of it."""
        raw = [r.raw_body.decode("utf-8", "replace") for r in self.slack.requests]
        raw += [r.raw_body.decode("utf-8", "replace") for r in self.line.requests]
        decoded = [json.dumps(r.body, ensure_ascii=False) for r in self.slack.requests]
        decoded += [json.dumps(r.body, ensure_ascii=False) for r in self.line.requests]
        return "\n".join(raw + decoded)


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the server and the fakes run until ``predicate`` holds (I/O only)."""
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
        config = parse_config(
            {
                "server": {"heartbeat_interval": 3600},
                "store": {"url": f"sqlite:///{tmp_path / 'tapgate.db'}"},
                "agents": [{"name": "ci-bot", "token": AGENT_TOKEN}],
                "approvers": [{"name": "alice", "line": ALICE_LINE, "slack": ALICE_SLACK}],
                "channels": {
                    "console": {"enabled": True},
                    "line": {
                        "channel_access_token": LINE_TOKEN,
                        "channel_secret": LINE_SECRET,
                        "api_base_url": line.url,
                        "timeout": 5,
                    },
                    "slack": {
                        "bot_token": DEFAULT_BOT_TOKEN,
                        "signing_secret": "e2e-slack-signing-secret",
                        "api_base_url": slack.url,
                        "timeout": 5,
                    },
                },
                "policy": {"rules": [{"tool": "Bash", "action": "ask", "approvers": ["alice"]}]},
            }
        )
        app = build_app(config)
        async with TestServer(app, host="127.0.0.1") as server:
            url = str(server.make_url("")).rstrip("/")
            yield Served(app=app, url=url, slack=slack, line=line)


@pytest.mark.parametrize("case", list(SECRETS))
async def test_a_password_in_a_command_reaches_no_channel_and_no_log(
    served: Served,
    case: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    command, shown = SECRETS[case]
    request_id = await served.ask(command)

    def delivered() -> bool:
        return bool(served.slack.messages) and bool(served.line.pushes)

    await until(delivered)
    await served.approve_on_line(request_id)
    await until(lambda: all(len(m.versions) == 2 for m in served.slack.messages.values()))
    await until(lambda: bool(served.line.replies))

    [message] = served.slack.messages.values()
    posted, updated = message.versions
    for version in (posted, updated):  # the post and the update both show the masked command
        assert shown in json.dumps(version.blocks, ensure_ascii=False)
    pushed: list[Any] = [push.messages for push in served.line.pushes]
    assert shown in json.dumps(pushed, ensure_ascii=False)
    printed = capsys.readouterr()
    assert shown in printed.out  # the console channel shows it masked too

    assert PASSWORD not in served.everything_sent()
    assert PASSWORD not in printed.out + printed.err
    assert PASSWORD not in caplog.text
    assert all(PASSWORD not in str(record.args) for record in caplog.records)
