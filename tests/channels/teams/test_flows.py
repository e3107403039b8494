"""Batches, session grants, reminders, escalation and cross-channel redraws, reaching Teams.

The same real app and fakes as test_webhook.py; reminders and escalation
are the heartbeat's, driven by the manual clock (one beat per ``beat()``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from tapgate.decisions.buttons import batch_postback_data, postback_data
from tapgate.gate.clock import ManualClock
from tapgate.server.app import HEARTBEAT
from tests.channels.teams.served import AUTH, TeamsServed, address, served_teams
from tests.fakes import FakeLine
from tests.fakes.served import LINE_SECRET, LINE_TOKEN, Client, channels, until
from tests.fakes.taps import signed_line_tap

BOB_LINE = "U" + "b2" * 16
APPROVERS: list[dict[str, Any]] = [
    {"name": "alice", "teams": address(1)},
    {"name": "bob", "teams": address(2), "line": BOB_LINE},
]
RULES: list[dict[str, Any]] = [
    {"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]},
    {"tool": "migrate", "action": "ask", "approvers": ["alice"], "remind_every": 120},
    {
        "tool": "release",
        "action": "ask",
        "approvers": ["alice"],
        "timeout": 3600,
        "escalate_after": 300,
        "escalate_to": ["bob"],
    },
]

Served = tuple[TeamsServed, FakeLine]


@pytest.fixture
async def served(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[Served]:
    async with FakeLine(access_token=LINE_TOKEN) as line:
        line_section = channels(line_url=line.url)["line"]
        async with served_teams(
            migrated_db_url,
            clock,
            aiohttp_client,
            APPROVERS,
            RULES,
            extra_channels={"line": line_section},
        ) as teams:
            await teams.install(1, 2)
            yield teams, line


async def ticking(served: TeamsServed, predicate: Callable[[], bool]) -> None:
    """Wait for ``predicate`` while the manual clock moves a second at a time.

    Teams paces messages to one chat (half a second apart, by the gate's
    clock): a second card to the same person waits for the clock to move.
    """
    for _ in range(200):
        if predicate():
            return
        served.clock.advance(1)
        await asyncio.sleep(0.02)
    raise AssertionError("condition never became true")


def texts(served: TeamsServed, user: int) -> list[str]:
    return [p.text for p in served.teams.cards_in(user)]


async def test_a_batch_is_one_card_and_approve_all_decides_every_call(served: Served) -> None:
    teams, _ = served
    calls = [{"tool": "deploy", "arguments": {"n": n}} for n in range(3)]
    body = {"calls": calls, "session": "s1"}
    async with teams.client.post("/v1/tool-call-batches", json=body, headers=AUTH) as response:
        batch = await response.json()
        assert response.status == 201, batch
    batch_id = batch["id"]
    await until(lambda: any("Approve all" in t for t in texts(teams, 1)))
    assert len(teams.teams.cards_in(1)) == 1
    status, answer = await teams.post(
        teams.teams.press(1, batch_postback_data("approve_all", batch_id))
    )
    shown = json.dumps(answer["value"])
    assert status == 200 and shown.count("Approved by alice") == 3, shown
    for request_id in [c["id"] for c in batch["calls"] if c.get("id")]:
        assert (await teams.gate.get_request(request_id)).status == "approved"


async def test_allow_for_session_grants_the_next_identical_call(served: Served) -> None:
    teams, _ = served
    body = {"tool": "deploy", "arguments": {"env": "prod"}, "session": "s1"}
    async with teams.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        request_id = (await response.json())["id"]
    await until(lambda: any("Allow for session" in t for t in texts(teams, 1)))
    await teams.post(teams.teams.press(1, postback_data("approve_session", request_id)))
    assert (await teams.gate.get_request(request_id)).scope == "session"
    async with teams.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        again = await response.json()
    assert again["status"] == "allowed" and "session grant from alice" in again["reason"]


async def test_reminders_and_escalation_reach_teams(served: Served) -> None:
    teams, _ = served
    beat = teams.app[HEARTBEAT].beat
    reminded = await teams.ask("migrate")
    await until(lambda: any(reminded[:8] in t for t in texts(teams, 1)))
    escalated = await teams.ask("release")
    await ticking(teams, lambda: sum(escalated[:8] in t for t in texts(teams, 1)) == 1)
    assert not any(escalated[:8] in t for t in texts(teams, 2))
    teams.clock.advance(301)
    await beat()
    await ticking(teams, lambda: sum(reminded[:8] in t for t in texts(teams, 1)) >= 2)
    await ticking(teams, lambda: any(escalated[:8] in t for t in texts(teams, 2)))
    status, answer = await teams.post(teams.teams.press(2, postback_data("approve", escalated)))
    assert status == 200 and "Approved by bob" in json.dumps(answer["value"])


async def test_a_decision_on_line_redraws_the_teams_cards(served: Served) -> None:
    teams, line = served
    request_id = await teams.ask("deploy")
    await until(lambda: any(request_id[:8] in t for t in texts(teams, 1)))
    await until(lambda: any(p.to == BOB_LINE for p in line.pushes))
    body, headers = signed_line_tap(LINE_SECRET, BOB_LINE, request_id)
    async with teams.client.post("/webhooks/line", data=body, headers=headers) as response:
        assert response.status == 200
    alices = teams.teams.cards_in(1)[0]
    await until(lambda: len(alices.versions) == 2)
    assert "Approved by bob" in alices.text and "actions" not in alices.card
