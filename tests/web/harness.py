"""What the web inbox tests share: the config, the served app, an agent, signed chat taps."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.config import Config, parse_config
from tapgate.decisions.buttons import INBOX_POSTBACK
from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.server.app import build_app
from tapgate.server.keys import GATE
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.receivers import line_webhook, slack_webhook
from tests.fakes.served import (
    AGENT_TOKEN,
    ALICE,
    BOB,
    CAROL,
    LINE_SECRET,
    LINE_TOKEN,
    SLACK_SECRET,
    TEAM,
    channels,
    click,
    until,
)
from tests.fakes.taps import (
    ReservedPort,
    line_body,
    line_event,
    line_headers,
    signed_line_text,
    slack_form,
    slack_headers,
)

LINK = re.compile(r"https?://[^\s>|]+/inbox/sign-in\?token=[A-Za-z0-9_\-]+")


def make_config(slack_url: str, line_url: str, db_url: str, port: int) -> Config:
    people: tuple[tuple[str, tuple[str, str], list[str]], ...] = (
        ("alice", ALICE, ["oncall"]),
        ("bob", BOB, ["oncall"]),
        ("carol", CAROL, []),  # an approver, but not of deploys
    )
    return parse_config(
        {
            "server": {
                "max_wait": 60,
                "heartbeat_interval": 3600,
                "public_url": f"http://127.0.0.1:{port}",
            },
            "store": {"url": db_url},
            "agents": [
                {"name": "ci", "token": AGENT_TOKEN, "max_pending": 0, "asks_per_minute": 0}
            ],
            "approvers": [
                {"name": name, "slack": ids[0], "slack_team": TEAM, "line": ids[1], "groups": g}
                for name, ids, g in people
            ],
            "channels": channels(slack_url=slack_url, line_url=line_url),
            "policy": {
                "tools": {"read_file": {"risk": "read_only"}},
                "rules": [
                    {
                        "tool": "deploy",
                        "args": {"env": "forbidden"},
                        "action": "deny",
                        "reason": "never to forbidden",
                    },
                    {"tool": "deploy", "action": "ask", "approvers": ["oncall"], "timeout": 600},
                    {"tool": "billing", "action": "ask", "approvers": ["carol"], "timeout": 600},
                ],
            },
        },
        env={},
    )


@dataclass
class Served:
    """The real app on a real loopback port, both fake chats and the manual clock."""

    app: web.Application
    server: TestServer
    slack: FakeSlack
    line: FakeLine
    clock: ManualClock

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def gate(self) -> Gate:
        return self.app[GATE]

    async def agent(
        self, method: str, path: str, body: Any = None, *, status: int = 200
    ) -> dict[str, Any]:
        """One agent API call with the agent's bearer token; the JSON answer."""
        headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, self.url + path, json=body, headers=headers) as response,
        ):
            answer: dict[str, Any] = await response.json()
            assert response.status == status, answer
            return answer

    async def submit_batch(self, calls: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.agent(
            "POST", "/v1/tool-call-batches", {"calls": calls, "session": "s1"}, status=201
        )

    async def line_link(self, user: tuple[str, str]) -> str:
        """Type ``inbox`` to the LINE bot as ``user``; the sign-in link LINE's reply carried."""
        before = len(self.line.replies)
        body, headers = signed_line_text(LINE_SECRET, user[1], "inbox")
        await self._post("/webhooks/line", body, headers)
        await line_webhook(self.app).settled()
        await until(lambda: len(self.line.replies) > before)
        texts = [m.get("text", "") for r in self.line.replies[before:] for m in r.messages]
        return _link_in(texts)

    async def line_button_link(self, user: tuple[str, str]) -> str:
        """Tap "Open inbox" under a LINE card as ``user``; the link in LINE's reply."""
        before = len(self.line.replies)
        body, headers = _signed_line_postback(user[1], INBOX_POSTBACK)
        await self._post("/webhooks/line", body, headers)
        await line_webhook(self.app).settled()
        await until(lambda: len(self.line.replies) > before)
        return _link_in([m.get("text", "") for r in self.line.replies[before:] for m in r.messages])

    async def slack_button_link(self, user: tuple[str, str]) -> str:
        """Tap "Open inbox" on a Slack card as ``user``; the link in the ephemeral Slack got."""
        before = len(self.slack.ephemerals) + len(self.slack.responses)
        payload = click("open_inbox", "inbox", user, self.slack.dm_channel(user[0]))
        payload["response_url"] = self.slack.response_url("button")
        await self.slack_tap(payload)
        await until(lambda: len(self.slack.ephemerals) + len(self.slack.responses) > before)
        texts = [e.text or "" for e in self.slack.ephemerals] + [
            json.dumps(r.body) for r in self.slack.responses
        ]
        return _link_in(texts)

    async def slash(self, user: tuple[str, str], text: str) -> str:
        """``/tapgate <text>`` from ``user``; what the 200 says back (the usage, or nothing)."""
        form = {"command": "/tapgate", "text": text, "user_id": user[0], "team_id": TEAM}
        return await self._slack_post(urlencode(form).encode())

    async def slack_link(self, user: tuple[str, str]) -> str:
        """``/tapgate inbox`` in Slack as ``user``; the link in the ephemeral answer.

        A slash command is answered in its 200 (Slack shows that body to the
        sender only), not through the Web API: the body is what Slack received.
        """
        return _link_in([await self.slash(user, "inbox")])

    async def slack_tap(self, payload: dict[str, Any]) -> None:
        await self._slack_post(slack_form(payload))
        await until(lambda: not slack_webhook(self.app)._tasks)

    async def _slack_post(self, body: bytes) -> str:
        timestamp = int(self.clock.now().timestamp())
        return await self._post(
            "/webhooks/slack", body, slack_headers(SLACK_SECRET, body, timestamp)
        )

    async def _post(self, path: str, body: bytes, headers: dict[str, str]) -> str:
        """POST signed ``body``; the 200's text (Slack shows an ack's text to the sender)."""
        async with (
            aiohttp.ClientSession() as http,
            http.post(self.url + path, data=body, headers=headers) as response,
        ):
            text = await response.text()
            assert response.status == 200, text
            return text


def _signed_line_postback(user_id: str, data: str) -> tuple[bytes, dict[str, str]]:
    body = line_body(line_event("postback", user_id, postback={"data": data}))
    return body, line_headers(LINE_SECRET, body)


def _link_in(texts: list[str]) -> str:
    found = [m.group(0) for t in texts for m in LINK.finditer(t)]
    assert found, texts
    return found[-1]


_HIDDEN = re.compile(r'name="(\w+)" value="([^"]*)"')


class Browser:
    """An HTTP client with its own cookie jar: one person's browser."""

    def __init__(self, served: Served, http: aiohttp.ClientSession) -> None:
        self.served, self.http = served, http
        self.csrf = ""

    async def open_link(self, link: str) -> tuple[int, dict[str, str]]:
        """GET the link page; its status and its form's hidden fields."""
        async with self.http.get(link) as response:
            return response.status, dict(_HIDDEN.findall(await response.text()))

    async def sign_in(self, link: str) -> int:
        """Open the link and press "Sign in"; the final status (200 when signed in)."""
        status, fields = await self.open_link(link)
        if status != 200:
            return status
        async with self.http.post(self.served.url + "/inbox/sign-in", data=fields) as response:
            if response.status == 200:
                found = re.search(r'name="csrf-token" content="([^"]+)"', await response.text())
                self.csrf = found.group(1) if found else ""
            return response.status

    async def post(self, path: str, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
        headers = {"Accept": "application/json", **headers}
        async with self.http.post(self.served.url + path, json=body, headers=headers) as response:
            return response.status, await response.json()

    async def get(self, path: str, **headers: str) -> aiohttp.ClientResponse:
        async with self.http.get(self.served.url + path, headers=headers) as response:
            await response.read()
            return response


@contextlib.asynccontextmanager
async def serving(db_url: str) -> AsyncIterator[Served]:
    """The real app on ``db_url``, with fake chats and a manual clock; closed after."""
    clock = ManualClock()
    reserved = ReservedPort()
    async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
        app = build_app(make_config(slack.url, line.url, db_url, reserved.port), clock=clock)
        server = TestServer(
            app, host="127.0.0.1", port=reserved.port, socket_factory=reserved.socket_factory
        )
        await server.start_server()
        try:
            yield Served(app=app, server=server, slack=slack, line=line, clock=clock)
        finally:
            await server.close()
