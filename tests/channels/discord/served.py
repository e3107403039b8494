"""The real app with Discord (and LINE) on local fakes, for the Discord channel's served tests.

alice is on Discord, bob on Discord and LINE, carol on LINE only; the fake
Discord API and the interaction :class:`~tests.fakes.discord_api.Signer`
(its key pair generated per test) stand in for Discord.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pytest
from aiohttp import web

from tapgate.channels.discord.webhook import DiscordInteractions
from tapgate.config import Config, parse_config
from tapgate.gate.clock import ManualClock
from tapgate.server.app import build_app
from tapgate.server.routes import RECEIVERS
from tests.fakes import FakeLine
from tests.fakes.discord_api import APPLICATION_ID, BOT_TOKEN, DiscordMessage, FakeDiscord, Signer
from tests.fakes.served import (
    AGENT_TOKEN,
    BOB,
    CAROL,
    LINE_TOKEN,
    Client,
    LineServed,
    channels,
    until,
)

__all__ = [
    "ALICE_D",
    "AUTH",
    "BOB_D",
    "DiscordServed",
    "discord_config",
    "served_fixture",
    "serving",
]

ALICE_D = "100000000000000001"
BOB_D = "100000000000000002"
STRANGER_D = "100000000000000009"
AUTH = {"Authorization": f"Bearer {AGENT_TOKEN}"}


def discord_config(
    discord_url: str,
    line_url: str,
    db_url: str,
    public_key: str,
    rules: list[dict[str, Any]],
    *,
    public_url: str | None = None,
    more_approvers: Sequence[dict[str, Any]] = (),
) -> Config:
    found = channels(line_url=line_url)
    found["discord"] = {
        "application_id": APPLICATION_ID,
        "public_key": public_key,
        "bot_token": BOT_TOKEN,
        "api_base_url": discord_url,
        "timeout": 5,
    }
    return parse_config(
        {
            "server": {"max_wait": 60, "heartbeat_interval": 3600}
            | ({"public_url": public_url} if public_url else {}),
            "store": {"url": db_url},
            "agents": [{"name": "ci", "token": AGENT_TOKEN}],
            "approvers": [
                {"name": "alice", "discord": ALICE_D, "groups": ["oncall"]},
                {"name": "bob", "discord": BOB_D, "line": BOB[1], "groups": ["oncall"]},
                {"name": "carol", "line": CAROL[1]},
                *more_approvers,
            ],
            "channels": found,
            "policy": {"rules": rules},
        },
        env={},
    )


@dataclass
class DiscordServed(LineServed):
    """The served app, the fake Discord API and Discord's signer."""

    discord: FakeDiscord
    signer: Signer

    @property
    def receiver(self) -> DiscordInteractions:
        return cast(DiscordInteractions, self.app[RECEIVERS]["discord"])

    async def interact(
        self, payload: dict[str, Any], *, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """POST ``payload`` signed (or with ``headers``) to the endpoint; status and JSON answer."""
        body = json.dumps(payload).encode()
        sent = headers if headers is not None else self.signer.headers(body)
        async with self.client.post("/webhooks/discord", data=body, headers=sent) as response:
            status = response.status
            answer = await response.json(content_type=None)
        return status, answer

    async def ask(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        body = {"tool": tool, "arguments": arguments or {"env": "prod"}}
        async with self.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
            answer: dict[str, Any] = await response.json()
            assert response.status in (200, 201, 202), answer
            return str(answer["id"])

    async def status(self, request_id: str) -> dict[str, Any]:
        async with self.client.get(f"/v1/tool-calls/{request_id}", headers=AUTH) as response:
            answer: dict[str, Any] = await response.json()
            return answer

    async def card(self, user: str, needle: str = "") -> DiscordMessage:
        """The card in ``user``'s DM that mentions ``needle``, once the outbox sent it."""

        def found() -> DiscordMessage | None:
            return next((m for m in self.discord.cards_to(user) if needle in m.text), None)

        await until(lambda: found() is not None)
        card = found()
        assert card is not None
        return card


@contextlib.asynccontextmanager
async def serving(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    rules: list[dict[str, Any]],
    *,
    public_url: str | None = None,
    before_start: Callable[[FakeDiscord], None] | None = None,
    more_approvers: Sequence[dict[str, Any]] = (),
) -> AsyncIterator[DiscordServed]:
    """The real app on the fakes; ``before_start`` scripts the fake Discord before it starts.

    ``more_approvers`` are added after alice, bob and carol (a test of many presses).
    """
    signer = Signer()
    async with FakeDiscord() as discord, FakeLine(access_token=LINE_TOKEN) as line:
        if before_start is not None:
            before_start(discord)
        config = discord_config(
            discord.url,
            line.url,
            db_url,
            signer.public_key,
            rules,
            public_url=public_url,
            more_approvers=more_approvers,
        )
        app = build_app(config, clock=clock)
        client = await aiohttp_client(app)
        yield DiscordServed(
            app=app, client=client, clock=clock, line=line, discord=discord, signer=signer
        )
        await client.close()  # the app stops (its dispatcher too) before the fakes do


def served_fixture(rules: list[dict[str, Any]], *, public_url: str | None = None) -> Any:
    """A test module's ``served`` fixture: the app on the fakes with ``rules``."""

    @pytest.fixture
    async def served(
        migrated_db_url: str,
        clock: ManualClock,
        aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    ) -> AsyncIterator[DiscordServed]:
        async with serving(
            migrated_db_url, clock, aiohttp_client, rules, public_url=public_url
        ) as found:
            yield found

    return served
