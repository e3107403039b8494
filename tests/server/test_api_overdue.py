"""A read past a request's deadline says ``expired``, whether or not a sweep has run.

A tap after the deadline expires the request at once; ``GET`` used to say
``pending`` until the heartbeat's next sweep (disabled here, as in
``test_api``), although the request could no longer be approved.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tapgate.config import parse_config
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.server.app import build_app
from tapgate.server.keys import GATE, STORE

TOKEN = "ci-bot-token-0123456789abcdef"
Client = TestClient[web.Request, web.Application]


@pytest.fixture(params=["deny", "allow"])
async def client(
    request: pytest.FixtureRequest,
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> Client:
    config = parse_config(
        {
            "server": {"heartbeat_interval": 3600},  # no sweep: the read itself must expire it
            "store": {"url": db_url},
            "agents": [{"name": "ci-bot", "token": TOKEN}],
            "approvers": [{"name": "alice", "slack": "U0ALICE"}],
            "policy": {
                "default_approvers": ["alice"],
                "on_timeout": request.param,
                "rules": [{"tool": "deploy", "action": "ask", "timeout": "5m"}],
            },
        }
    )
    app = build_app(config, clock=clock, notifiers=[RecordingNotifier("console")])
    return await aiohttp_client(app)


async def send(client: Client, method: str, path: str, body: Any = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with client.request(method, path, json=body, headers=headers) as response:
        assert response.status in (200, 201), await response.text()
        found: dict[str, Any] = await response.json()
        return found


async def test_a_read_past_the_deadline_reports_expired_with_the_timeout_verdict(
    client: Client, clock: ManualClock
) -> None:
    verdict = client.app[GATE].policy.spec.on_timeout
    made = await send(client, "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": {}})
    path = f"/v1/tool-calls/{made['id']}"
    clock.advance(299)
    assert (await send(client, "GET", path))["status"] == "pending"
    clock.advance(2)  # past expires_at; no sweep has run
    read = await send(client, "GET", path)
    assert read["status"] == "expired"
    assert read["decision"] == verdict
    assert (await client.app[STORE].get_request(made["id"])).status == "expired"
    pending = await send(client, "GET", "/v1/tool-calls?status=pending")
    assert pending["tool_calls"] == []
    assert (await send(client, "GET", path)) == read  # expired once, read the same after


async def test_a_list_past_the_deadline_reports_expired(client: Client, clock: ManualClock) -> None:
    made = await send(client, "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": {}})
    clock.advance(301)
    listed = await send(client, "GET", "/v1/tool-calls")
    [call] = [c for c in listed["tool_calls"] if c["id"] == made["id"]]
    assert call["status"] == "expired"
