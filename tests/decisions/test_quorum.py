"""Quorum, separation of duties, reminders and escalation, through the real server.

The agent asks over HTTP and waits (``GET /v1/tool-calls/{id}?wait=``); the
real dispatcher sends each approver's card through the real notifiers to the
fake Slack and LINE APIs; approvers tap, signed for real. Reminders and
escalation are the heartbeat's, driven by the injected clock (one beat per
``beat()``). What a tap means is core.taps; these tests check the whole path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from tapgate.config import Config, parse_config
from tapgate.decisions.buttons import postback_data
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import GateEvent
from tapgate.server.app import HEARTBEAT, build_app
from tests.decisions.test_batch_cards import Client, Served
from tests.fakes import FakeLine, FakeSlack, dm_channel_for
from tests.fakes.served import (
    AGENT_TOKEN,
    ALICE,
    BOB,
    CAROL,
    LINE_TOKEN,
    TEAM,
    channels,
    click,
    until,
)

AUTH = {"Authorization": f"Bearer {AGENT_TOKEN}"}


def make_config(slack_url: str, line_url: str, db_url: str) -> Config:
    """alice on Slack, bob on LINE (two channels), carol on both and the agent's owner."""
    return parse_config(
        {
            "server": {"max_wait": 60, "heartbeat_interval": 3600},
            "store": {"url": db_url},
            "agents": [{"name": "ci", "token": AGENT_TOKEN, "owner": "carol"}],
            "approvers": [
                {"name": "alice", "slack": ALICE[0], "slack_team": TEAM, "groups": ["oncall"]},
                {"name": "bob", "line": BOB[1], "groups": ["oncall"]},
                {"name": "carol", "slack": CAROL[0], "slack_team": TEAM, "line": CAROL[1]},
            ],
            "channels": channels(slack_url=slack_url, line_url=line_url),
            "policy": {
                "remind_every": 120,
                "rules": [
                    {"tool": "deploy", "action": "ask", "approvers": ["oncall"], "quorum": 2},
                    {
                        "tool": "billing",
                        "action": "ask",
                        "approvers": ["carol", "alice"],
                        "self_approval": False,
                    },
                    {
                        "tool": "release",
                        "action": "ask",
                        "approvers": ["alice"],
                        "timeout": 3600,
                        "remind_every": 0,
                        "escalate_after": 300,
                        "escalate_to": ["bob"],
                    },
                    {"tool": "migrate", "action": "ask", "approvers": ["alice"], "timeout": 600},
                ],
            },
        },
        env={},
    )


@pytest.fixture
async def served(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[Served]:
    async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
        app = build_app(make_config(slack.url, line.url, db_url), clock=clock)
        client = await aiohttp_client(app)
        yield Served(app=app, client=client, slack=slack, line=line, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


async def ask(served: Served, tool: str) -> str:
    body = {"tool": tool, "arguments": {"env": "prod"}}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        answer: dict[str, Any] = await response.json()
        assert response.status in (200, 201, 202), answer
        request_id: str = answer["id"]
        return request_id


async def waited(served: Served, request_id: str, wait: float = 30) -> dict[str, Any]:
    """The agent's long-poll: answers only when the request is decided (or ``wait`` ends)."""
    url = f"/v1/tool-calls/{request_id}?wait={wait}"
    async with served.client.get(url, headers=AUTH) as response:
        answer: dict[str, Any] = await response.json()
        assert response.status == 200, answer
        return answer


def slack_card_texts(served: Served, user: tuple[str, str]) -> list[str]:
    channel = dm_channel_for(user[0])
    return [json.dumps(m.blocks) for m in served.slack.messages.values() if m.channel == channel]


def line_pushes_to(served: Served, user: tuple[str, str]) -> list[str]:
    return [json.dumps(p.messages) for p in served.line.pushes if p.to == user[1]]


async def test_quorum_of_two_on_slack_and_line_counts_a_double_tap_once(served: Served) -> None:
    request_id = await ask(served, "deploy")
    await until(lambda: bool(slack_card_texts(served, ALICE) and line_pushes_to(served, BOB)))
    assert "Needs 2 approvals: 0 of 2" in slack_card_texts(served, ALICE)[0]
    agent = asyncio.create_task(waited(served, request_id))
    channel = dm_channel_for(ALICE[0])
    await served.slack_tap(click("approve", request_id, ALICE, channel))
    await served.slack_tap(click("approve", request_id, ALICE, channel))  # counts once
    told = served.ephemerals(ALICE)
    assert len(told) == 2 and "1 of 2: alice approved" in told[0], told
    assert "already counted" in told[1]
    await asyncio.sleep(0.05)
    assert not agent.done()  # the agent's wait ends only with the quorum
    request = await served.gate.get_request(request_id)
    assert request.status == "pending" and request.approvals == ("alice",)
    reply = await served.line_tap(postback_data("approve", request_id), user=BOB)
    assert reply.startswith("Approved - deploy")
    answer = await asyncio.wait_for(agent, 5)
    assert answer["status"] == "approved"
    assert "alice and bob" in json.dumps(answer)
    events = [(e.event, e.actor) for e in await served.gate.audit_log(request_id=request_id)]
    assert ("approval", "alice") in events and ("approved", "bob") in events
    assert [e for e in events if e[0] == "refused"] == [("refused", "alice")]


async def test_a_deny_after_one_approval_denies(served: Served) -> None:
    request_id = await ask(served, "deploy")
    await until(lambda: bool(slack_card_texts(served, ALICE)))
    agent = asyncio.create_task(waited(served, request_id))
    await served.slack_tap(click("approve", request_id, ALICE, dm_channel_for(ALICE[0])))
    assert "1 of 2: alice approved" in served.ephemerals(ALICE)[0]
    reply = await served.line_tap(postback_data("deny", request_id), user=BOB)
    assert reply.startswith("Denied - deploy")
    answer = await asyncio.wait_for(agent, 5)
    assert answer["status"] == "denied"


async def test_the_owner_cannot_approve_their_own_agent(served: Served) -> None:
    request_id = await ask(served, "billing")
    await until(lambda: bool(line_pushes_to(served, CAROL)))
    assert "carol owns this agent" in line_pushes_to(served, CAROL)[0]
    reply = await served.line_tap(postback_data("approve", request_id), user=CAROL)
    assert "You own this agent" in reply
    assert (await served.gate.get_request(request_id)).status == "pending"
    [refused] = [
        e for e in await served.gate.audit_log(request_id=request_id) if e.event == "refused"
    ]
    assert refused.actor == "carol" and "self-approval" in refused.detail["why"]
    await served.slack_tap(click("approve", request_id, ALICE, dm_channel_for(ALICE[0])))
    assert (await served.gate.get_request(request_id)).resolved_by == "alice"


def posts_to(served: Served, user: tuple[str, str]) -> int:
    """Slack messages posted to ``user``'s DM: the card and each reminder."""
    return sum(p.channel == dm_channel_for(user[0]) for p in served.slack.posts)


def sent_to(served: Served, approver: str) -> Callable[[], int]:
    """Counts the messages to ``approver`` the dispatcher has finished with.

    The fake counts a post when it arrives, before the dispatcher has marked
    its row sent and stamped the destination's Slack pace (next message one
    second after this one finished, by the gate's clock). Moving the manual
    clock in between stamps the pace from the moved time, and the next
    message to that destination then waits for a time the test never
    reaches. The ``notified`` event is published right before the stamp,
    with no await between, so a count seen here has been stamped.
    """
    sent: list[GateEvent] = []
    served.gate.bus.subscribe(
        lambda e: (
            sent.append(e)
            if e.kind == "notified" and e.detail.get("approver") == approver
            else None
        )
    )
    return lambda: len(sent)


async def test_reminders_repeat_by_the_clock_and_stop_at_the_decision(served: Served) -> None:
    sent = sent_to(served, "alice")  # the clock moves only once the dispatcher is done
    request_id = await ask(served, "migrate")
    await until(lambda: sent() == 1, timeout=30)
    beat = served.app[HEARTBEAT].beat
    served.clock.advance(121)
    await beat()
    await until(lambda: sent() == 2, timeout=30)
    served.clock.advance(60)
    await beat()  # the next one is due 120 s after the first, not yet
    served.clock.advance(61)
    await beat()
    await until(lambda: sent() == 3, timeout=30)
    assert posts_to(served, ALICE) == 3  # the card and two reminders, on Slack
    await served.slack_tap(click("approve", request_id, ALICE, dm_channel_for(ALICE[0])))
    assert (await served.gate.get_request(request_id)).status == "approved"
    served.clock.advance(240)
    await beat()
    await asyncio.sleep(0.05)
    assert posts_to(served, ALICE) == 3  # decided: no more reminders


async def test_a_rule_without_escalation_escalates_to_nobody(served: Served) -> None:
    """An empty ``escalate_to`` stays empty: expanding it would mean every approver."""
    plain = await served.gate.get_request(await ask(served, "migrate"))
    assert plain.escalate_to == () and plain.escalate_at is None
    escalating = await served.gate.get_request(await ask(served, "release"))
    assert escalating.escalate_to == ("bob",) and escalating.escalate_at is not None


async def test_escalation_adds_an_approver_whose_tap_decides(served: Served) -> None:
    request_id = await ask(served, "release")
    await until(lambda: bool(slack_card_texts(served, ALICE)), timeout=30)
    reply = await served.line_tap(postback_data("approve", request_id), user=BOB)
    assert "not an approver" in reply  # not yet
    agent = asyncio.create_task(waited(served, request_id))
    served.clock.advance(301)
    await served.app[HEARTBEAT].beat()
    await until(lambda: bool(line_pushes_to(served, BOB)), timeout=30)
    card = line_pushes_to(served, BOB)[0]
    assert "Escalated: bob added" in card and "nobody answered within 5 min" in card
    await served.app[HEARTBEAT].beat()  # once: a second beat adds nothing and sends nothing
    await asyncio.sleep(0.05)
    assert len(line_pushes_to(served, BOB)) == 1
    assert (await served.gate.get_request(request_id)).approvers == ("alice", "bob")
    reply = await served.line_tap(postback_data("approve", request_id), user=BOB)
    assert reply.startswith("Approved - release")
    answer = await asyncio.wait_for(agent, 5)
    assert answer["status"] == "approved"
