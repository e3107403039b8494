"""The real app with approvers on the fake Teams: build it, post signed activities, ask.

``TeamsServed`` is the app (``build_app``), its test client, the manual clock
and the fake Teams. Approvers are people 1..3 of the fake (``oid(n)``) in
the fake's tenant; each test module writes its own policy.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tapgate.channels.teams.webhook import TeamsWebhook
from tapgate.config import parse_config
from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.server.app import build_app
from tapgate.server.keys import GATE
from tapgate.server.routes import RECEIVERS
from tests.fakes.served import AGENT_TOKEN, Client
from tests.fakes.teams import TENANT, FakeTeams, oid

__all__ = ["AUTH", "TeamsServed", "address", "served_teams"]

AUTH = {"Authorization": f"Bearer {AGENT_TOKEN}"}


def address(user: int) -> str:
    """``approvers[].teams`` of fake user ``user``."""
    return f"{TENANT}/{oid(user)}"


@dataclass
class TeamsServed:
    app: web.Application
    client: Client
    clock: ManualClock
    teams: FakeTeams

    @property
    def gate(self) -> Gate:
        return self.app[GATE]

    def webhook(self) -> TeamsWebhook:
        receiver = self.app[RECEIVERS]["teams"]
        assert isinstance(receiver, TeamsWebhook)
        return receiver

    async def post(
        self, activity: dict[str, Any], *, token: str | None = None, raw: bytes | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Post ``activity`` signed by the fake Bot Connector (or with ``token``)."""
        signed = token if token is not None else self.teams.sign(now=self.now())
        body = raw if raw is not None else json.dumps(activity).encode()
        headers = self.teams.headers(signed)
        async with self.client.post("/webhooks/teams", data=body, headers=headers) as response:
            status = response.status
            answer = await response.json() if response.content_type == "application/json" else {}
        await self.webhook().settled()
        return status, answer

    def now(self) -> float:
        return self.clock.now().timestamp()

    async def install(self, *users: int) -> None:
        for user in users:
            status, _ = await self.post(self.teams.installed(user))
            assert status == 200

    async def ask(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        body = {"tool": tool, "arguments": arguments or {"env": "prod"}}
        async with self.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
            answer: dict[str, Any] = await response.json()
            assert response.status in (200, 201, 202), answer
            return str(answer["id"])

    async def waited(self, request_id: str, wait: float = 30) -> dict[str, Any]:
        url = f"/v1/tool-calls/{request_id}?wait={wait}"
        async with self.client.get(url, headers=AUTH) as response:
            answer: dict[str, Any] = await response.json()
            return answer


_SERVER: dict[str, Any] = {"max_wait": 60, "heartbeat_interval": 3600}


def config(
    teams: FakeTeams,
    db_url: str,
    approvers: list[dict[str, Any]],
    rules: list[dict[str, Any]],
    *,
    extra_channels: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    server: dict[str, Any] | None = None,
) -> Any:
    raw: dict[str, Any] = {
        "server": {**_SERVER, **(server or {})},
        "store": {"url": db_url},
        "agents": [{"name": "ci", "token": AGENT_TOKEN}],
        "approvers": approvers,
        "channels": {
            "console": {"enabled": False},
            "teams": teams.settings(),
            **(extra_channels or {}),
        },
        "policy": {"rules": rules, **(policy or {})},
    }
    return parse_config(raw, env={})


@asynccontextmanager
async def served_teams(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    approvers: list[dict[str, Any]],
    rules: list[dict[str, Any]],
    **options: Any,
) -> AsyncIterator[TeamsServed]:
    async with FakeTeams() as teams:
        app = build_app(config(teams, db_url, approvers, rules, **options), clock=clock)
        client = await aiohttp_client(app)
        yield TeamsServed(app=app, client=client, clock=clock, teams=teams)
        await client.close()  # the app stops (its dispatcher too) before the fakes do
