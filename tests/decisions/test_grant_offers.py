"""What the cards offer to remember, and a single-use "Always", end to end.

The real app and notifiers with the fake Slack and LINE APIs (the setup of
``test_grants_chat``): "Allow for session" appears only for a call (or a
batch) that has a session, on both platforms; a tool with ``always_uses: 1``
says "once" on its Always button, and its grant lets exactly one later call
through, even when two identical calls race for it over the HTTP API.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from tapgate.decisions.texts import NO_GRANTS
from tapgate.gate.clock import ManualClock
from tapgate.server.app import build_app
from tests.decisions import test_batch_cards as both
from tests.decisions import test_grants_chat as chat
from tests.decisions.test_batch_cards import Served
from tests.fakes import FakeLine, FakeSlack, dm_channel_for
from tests.fakes.served import AGENT_TOKEN, ALICE, LINE_TOKEN, click, until

AUTH = {"Authorization": f"Bearer {AGENT_TOKEN}"}


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


@pytest.fixture
async def served(
    db_url: str,  # first: the database must outlive the app's shutdown
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[both.Client]],
) -> AsyncIterator[Served]:
    async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
        app = build_app(chat.make_config(slack.url, line.url, db_url), clock=clock)
        client = await aiohttp_client(app)
        yield Served(app=app, client=client, slack=slack, line=line, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


async def submit(
    served: Served, tool: str, arguments: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    body = {"tool": tool, "arguments": arguments, **extra}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        answer: dict[str, Any] = await response.json()
        assert response.status in (200, 201), answer
        return answer


async def cards(served: Served, ident: str) -> tuple[str, str]:
    """The Slack blocks and the LINE messages (as JSON text) that carry ``ident``, once sent.

    The clock moves past the dispatcher's per-person pacing first (about a
    message a second), so a second card to the same approver goes out.
    """

    def slack() -> list[str]:
        return [json.dumps(p.blocks) for p in served.slack.posts if ident in json.dumps(p.blocks)]

    def line() -> list[str]:
        return [
            json.dumps(p.messages) for p in served.line.pushes if ident in json.dumps(p.messages)
        ]

    # The pacing wait may start after a first advance (the card was still being queued):
    # move the clock on until both cards are out, a few seconds at most, far from expiry.
    for _ in range(10):
        served.clock.advance(2)
        try:
            await until(lambda: bool(slack()) and bool(line()), timeout=1.0)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError(f"no Slack and LINE card for {ident} within 20 paced seconds")
    return slack()[0], line()[0]


# -- "Allow for session" only with a session ------------------------------------------


async def test_allow_for_session_is_offered_only_to_a_call_with_a_session(served: Served) -> None:
    without = await submit(served, "deploy_web", {"env": "staging"})
    slack, line = await cards(served, without["id"])
    assert "tapgate_approve_session" not in slack and "a=approve_session" not in line
    assert "tapgate_approve_always" in slack and "a=approve_always" in line

    with_session = await submit(served, "deploy_web", {"env": "prod"}, session="s-42")
    slack, line = await cards(served, with_session["id"])
    assert "tapgate_approve_session" in slack and "a=approve_session" in line
    assert "Session: deploy_web with env=prod in s-42" in slack


async def test_allow_all_for_session_is_offered_only_to_a_batch_with_a_session(
    served: Served,
) -> None:
    calls = [
        {"tool": "deploy_web", "arguments": {"env": "a"}},
        {"tool": "deploy_web", "arguments": {"env": "b"}},
    ]
    without = await served.submit(calls, session=None)
    slack, line = await cards(served, without["id"])
    assert "tapgate_approve_all_session" not in slack and "a=approve_all_session" not in line
    assert "tapgate_approve_session" not in slack and "a=approve_session" not in line

    with_session = await served.submit(calls, session="s-7")
    slack, line = await cards(served, with_session["id"])
    assert "tapgate_approve_all_session" in slack and "a=approve_all_session" in line


# -- single-use Always ----------------------------------------------------------------


async def test_a_single_use_always_says_once_and_lets_one_of_two_racing_calls_through(
    served: Served,
) -> None:
    asked = await submit(served, "restart", {"service": "web", "why": "stuck"})
    slack, line = await cards(served, asked["id"])
    assert "Always: restart with service=web, once" in slack
    assert "Always: restart with service=web, once" in line
    channel = dm_channel_for(ALICE[0])
    await served.slack_tap(click("approve_always", asked["id"], ALICE, channel))
    [grant] = await served.gate.grants()
    assert (grant.created_by, grant.uses_left) == ("alice", 1)
    _, listed = await chat.slash(served, "grants")
    assert chat.buttons(listed["blocks"]) == [grant.id]

    racing = await asyncio.gather(
        submit(served, "restart", {"service": "web", "why": "again"}),
        submit(served, "restart", {"service": "web", "why": "again"}),
    )
    by_status = {answer["status"]: answer for answer in racing}
    assert sorted(by_status) == ["allowed", "pending"]  # one by the grant, the other asked
    assert by_status["allowed"]["source"] == "grant"
    third = await submit(served, "restart", {"service": "web", "why": "third"})
    assert third["status"] == "pending"  # spent: it asks again
    assert (await chat.slash(served, "grants"))[1]["text"] == NO_GRANTS
    used = [e for e in await served.gate.audit_log() if e.event == "grant_used"]
    assert [(e.actor, e.detail["grant"]) for e in used] == [("agent:ci", grant.id)]
