"""The email channel under test: the real server on a loopback port, the fake SMTP relay, links.

The server is the real app (``build_app``) with a manual clock, its email
channel pointed at :class:`~tests.fakes.smtp.FakeSmtp`; ``public_url`` is the
server's own loopback address, so the links in the mails open this server.
Approvers: alice and bob (``oncall``), carol (billing), dave (escalation only).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.config import Config, parse_config
from tapgate.decisions.review_links import ReviewLinks
from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.server.app import HEARTBEAT, build_app
from tapgate.server.keys import GATE
from tests.fakes import FakeLine
from tests.fakes.served import AGENT_TOKEN, channels, until
from tests.fakes.smtp import FakeSmtp, Mail
from tests.fakes.taps import ReservedPort

ALICE = "alice@example.test"
BOB = "Bob@Example.test"
CAROL = "carol@example.test"
DAVE = "dave@example.test"
SENDER = "tapgate@gate.example.test"
LINK = re.compile(r"https?://[^\s\"<>]+/email/review/[A-Za-z0-9_\-]+")
_HIDDEN = re.compile(r'name="(\w+)" value="([^"]*)"')


LINE_ALICE, LINE_BOB = "U" + "a1" * 16, "U" + "b2" * 16
"""alice's and bob's LINE ids, when the server also has LINE (``serving(line=...)``)."""


def make_config(smtp_port: int, db_url: str, port: int, line_url: str | None = None) -> Config:
    config = _config(smtp_port, db_url, port)
    if line_url is not None:  # alice and bob on LINE too: a decision there, mails here
        config["channels"]["line"] = channels(line_url=line_url)["line"]
        config["approvers"][0]["line"], config["approvers"][1]["line"] = LINE_ALICE, LINE_BOB
    return parse_config(config, env={})


def _config(smtp_port: int, db_url: str, port: int) -> dict[str, Any]:
    return {
        "server": {
            "max_wait": 60,
            "heartbeat_interval": 3600,
            "public_url": f"http://127.0.0.1:{port}",
        },
        "store": {"url": db_url},
        "agents": [{"name": "ci", "token": AGENT_TOKEN, "max_pending": 0, "asks_per_minute": 0}],
        "approvers": [
            {"name": "alice", "email": ALICE, "groups": ["oncall"]},
            {"name": "bob", "email": BOB, "groups": ["oncall"]},
            {"name": "carol", "email": CAROL},
            {"name": "dave", "email": DAVE},
        ],
        "channels": {
            "console": {"enabled": False},
            "email": {
                "smtp_host": "127.0.0.1",
                "smtp_port": smtp_port,
                "security": "none",
                "from": SENDER,
                "timeout": 30,  # a loaded machine once took over 5 s to reach the loopback fake
            },
        },
        "policy": {
            "remind_every": 0,
            "tools": {
                "bash": {"shell": "command", "remember": ["once", "session", "always"]},
                "read_file": {"risk": "read_only"},
            },
            "rules": [
                {
                    "tool": "deploy",
                    "args": {"env": "forbidden"},
                    "action": "deny",
                    "reason": "never to forbidden",
                },
                {"tool": "deploy", "action": "ask", "approvers": ["oncall"], "timeout": 600},
                {"tool": "bash", "action": "ask", "approvers": ["alice"], "timeout": 600},
                {"tool": "billing", "action": "ask", "approvers": ["carol"], "timeout": 600},
                {
                    "tool": "migrate",
                    "action": "ask",
                    "approvers": ["oncall"],
                    "quorum": 2,
                    "timeout": 600,
                },
                {
                    "tool": "release",
                    "action": "ask",
                    "approvers": ["alice"],
                    "timeout": 3600,
                    "remind_every": 120,
                    "escalate_after": 300,
                    "escalate_to": ["dave"],
                },
            ],
        },
    }


@dataclass
class Served:
    """The real app on a real loopback port, the fake relay and the manual clock."""

    app: web.Application
    server: TestServer
    smtp: FakeSmtp
    clock: ManualClock
    line: FakeLine | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def gate(self) -> Gate:
        return self.app[GATE]

    async def beat(self) -> None:
        await self.app[HEARTBEAT].beat()

    async def agent(
        self, method: str, path: str, body: Any = None, *, status: int = 200
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, self.url + path, json=body, headers=headers) as response,
        ):
            answer: dict[str, Any] = await response.json()
            assert response.status in (status, 200, 201, 202), answer
            return answer

    async def post_webhook(self, path: str, body: bytes, headers: dict[str, str]) -> None:
        """POST a signed platform event to the server; it must be acknowledged."""
        async with (
            aiohttp.ClientSession() as http,
            http.post(self.url + path, data=body, headers=headers) as response,
        ):
            assert response.status == 200, await response.text()

    async def ask(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        body = {"tool": tool, "arguments": arguments or {"env": "prod"}, "session": "s1"}
        answer = await self.agent("POST", "/v1/tool-calls", body, status=201)
        request_id: str = answer["id"]
        return request_id

    async def mails_to(self, address: str, count: int = 1) -> list[Mail]:
        """The mails the relay accepted for ``address``, once there are ``count`` (I/O only)."""
        await until(lambda: len(self.smtp.to(address)) >= count)
        return self.smtp.to(address)

    async def stale_link(self, request_id: str, approver: str, address: str) -> str:
        """A link minted for ``approver`` at ``address``, as a config that had them left one."""
        minted = await ReviewLinks(self.gate, channel="email").mint(
            request_id,
            batch=False,
            approver=approver,
            address=address,
            key=f"stale-{approver}",
            expires_at=(await self.gate.get_request(request_id)).expires_at,
        )
        return f"{self.url}/email/review/{minted.token}"

    async def link(self, address: str, index: int = -1, count: int = 1) -> str:
        """The review link in ``address``'s mail number ``index`` (the text part's)."""
        mails = await self.mails_to(address, count)
        found = LINK.findall(mails[index].part("plain"))
        assert len(found) == 1, found
        return str(found[0])


async def reminded(served: Served, address: str, first: Mail) -> Mail:
    """Past ``remind_every`` (120 s), one beat: the reminder, checked to reply to ``first``."""
    root = first.header("Message-ID")
    served.clock.advance(121)
    await served.beat()
    reminder = (await served.mails_to(address, 2))[1]
    assert reminder.header("In-Reply-To") == root and reminder.header("References") == root
    assert reminder.header("Subject") == "Re: " + first.header("Subject")
    assert reminder.header("Message-ID") != root
    return reminder


async def page(link: str, method: str = "GET") -> tuple[int, str, dict[str, str]]:
    """Fetch the page as a scanner would: status, body, the form's hidden fields."""
    async with aiohttp.ClientSession() as http, http.request(method, link) as response:
        text = await response.text()
        return response.status, text, dict(_HIDDEN.findall(text))


async def post(link: str, fields: dict[str, str], **headers: str) -> tuple[int, str]:
    """Submit the page's form: status and the sentence shown."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(link, data=fields, headers=headers) as response,
    ):
        return response.status, await response.text()


async def answer(link: str, action: str, reason: str | None = None) -> tuple[int, str]:
    """Open the page, then press ``action`` (as a person does)."""
    status, _, fields = await page(link)
    assert status == 200, status
    form = {**fields, "action": action}
    if reason is not None:
        form["reason"] = reason
    return await post(link, form)


@contextlib.asynccontextmanager
async def serving(db_url: str, *, line: FakeLine | None = None) -> AsyncIterator[Served]:
    """The real app on ``db_url``, the fake relay (and LINE), a manual clock; closed after."""
    clock = ManualClock()
    reserved = ReservedPort()
    async with FakeSmtp() as smtp:
        config = make_config(smtp.port, db_url, reserved.port, None if line is None else line.url)
        app = build_app(config, clock=clock)
        server = TestServer(
            app, host="127.0.0.1", port=reserved.port, socket_factory=reserved.socket_factory
        )
        await server.start_server()
        try:
            yield Served(app=app, server=server, smtp=smtp, clock=clock, line=line)
        finally:
            await server.close()
