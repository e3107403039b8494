"""Teams end to end: the real app, the fake Entra + Bot Framework + Bot Connector, signed for real.

An approver installs the app (tapgate stores the conversation), the agent
asks over HTTP, the dispatcher posts the Adaptive Card to the fake Bot
Connector at the activity's service URL, the approver presses a button (an
``adaptiveCard/action`` invoke with a real RS256 token), and the invoke is
answered with the redrawn card while every other approver's card is
replaced through ``updateActivity``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tapgate.decisions.buttons import postback_data
from tapgate.gate.clock import ManualClock
from tests.channels.teams.served import TeamsServed, address, served_teams
from tests.fakes.served import Client, until
from tests.fakes.teams import APP_ID, FakeTeams

APPROVERS: list[dict[str, Any]] = [
    {"name": "alice", "teams": address(1)},
    {"name": "bob", "teams": address(2)},
]
RULES: list[dict[str, Any]] = [
    {"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]},
    {"tool": "release", "action": "ask", "approvers": ["alice", "bob"], "quorum": 2},
]


@pytest.fixture
async def served(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[TeamsServed]:
    async with served_teams(migrated_db_url, clock, aiohttp_client, APPROVERS, RULES) as served:
        await served.install(1, 2)
        yield served


async def card_for(served: TeamsServed, user: int, request_id: str) -> None:
    short = request_id[:8]
    await until(lambda: any(short in p.text for p in served.teams.cards_in(user)))


def invoked_card(answer: dict[str, Any]) -> str:
    assert answer["statusCode"] == 200, answer
    assert answer["type"] == "application/vnd.microsoft.card.adaptive"
    return json.dumps(answer["value"], ensure_ascii=False)


async def test_a_press_decides_answers_with_the_card_and_redraws_the_other_approvers(
    served: TeamsServed,
) -> None:
    request_id = await served.ask("deploy")
    await card_for(served, 1, request_id)
    await card_for(served, 2, request_id)
    card = served.teams.cards_in(1)[0].card
    assert card["version"] == "1.5"
    approve = next(a for a in card["actions"] if a["title"] == "Approve")
    assert approve["type"] == "Action.Execute"
    assert approve["fallback"]["type"] == "Action.Submit"
    agent = asyncio.create_task(served.waited(request_id))

    status, answer = await served.post(served.teams.press(1, approve["data"]["tg"]))

    assert status == 200
    shown = invoked_card(answer)
    assert "Approved by alice" in shown and "actions" not in answer["value"]
    assert (await agent)["status"] == "approved"
    bobs = served.teams.cards_in(2)[0]
    await until(lambda: len(bobs.versions) == 2)  # updateActivity on bob's card
    assert "Approved by alice" in bobs.text and "actions" not in bobs.card
    assert served.teams.requests_to("update")[0].method == "PUT"


async def test_deny_takes_the_reason_typed_on_the_card(served: TeamsServed) -> None:
    request_id = await served.ask("deploy")
    await card_for(served, 2, request_id)
    press = served.teams.press(
        2, postback_data("deny", request_id), inputs={"reason": "not on a Friday"}
    )
    status, answer = await served.post(press)
    assert status == 200 and "Denied by bob" in invoked_card(answer)
    request = await served.gate.get_request(request_id)
    assert request.status == "denied" and request.resolution_reason == "not on a Friday"


async def test_a_non_approver_gets_the_card_back_with_a_refusal_and_is_audited(
    served: TeamsServed,
) -> None:
    request_id = await served.ask("deploy")
    await card_for(served, 1, request_id)
    status, answer = await served.post(served.teams.press(9, postback_data("approve", request_id)))
    shown = invoked_card(answer)
    assert status == 200 and "not an approver" in shown
    assert '"title": "Approve"' in shown  # the card itself unchanged: still asking
    assert (await served.gate.get_request(request_id)).status == "pending"
    audit = await served.gate.store.audit_log(request_id=request_id)
    assert any(e.event == "refused" for e in audit), [e.event for e in audit]


async def test_the_same_activity_redelivered_decides_once(served: TeamsServed) -> None:
    request_id = await served.ask("deploy")
    await card_for(served, 1, request_id)
    press = served.teams.press(1, postback_data("approve", request_id))
    first = await served.post(press)
    again = await served.post(press)  # the Bot Connector retrying the same activity id
    assert first[0] == again[0] == 200
    assert "Approved by alice" in invoked_card(again[1])
    audit = await served.gate.store.audit_log(request_id=request_id)
    assert [e.event for e in audit].count("approved") == 1


async def test_fifty_concurrent_presses_make_exactly_one_decision(served: TeamsServed) -> None:
    request_id = await served.ask("deploy")
    await card_for(served, 1, request_id)
    presses = [
        served.teams.press(1 + i % 2, postback_data("deny" if i % 3 else "approve", request_id))
        for i in range(50)
    ]
    results = await asyncio.gather(*(served.post(p) for p in presses))
    assert all(status == 200 for status, _ in results)
    request = await served.gate.get_request(request_id)
    assert request.status in ("approved", "denied")
    audit = await served.gate.store.audit_log(request_id=request_id)
    decided = [e for e in audit if e.event in ("approved", "denied")]
    assert len(decided) == 1, [e.event for e in audit]


async def test_a_quorum_counts_each_approver_once_on_teams(served: TeamsServed) -> None:
    request_id = await served.ask("release")
    await card_for(served, 1, request_id)
    approve = postback_data("approve", request_id)
    _, first = await served.post(served.teams.press(1, approve))
    assert "1 of 2" in invoked_card(first)
    _, twice = await served.post(served.teams.press(1, approve))
    assert "already counted" in invoked_card(twice)
    assert (await served.gate.get_request(request_id)).status == "pending"
    _, second = await served.post(served.teams.press(2, approve))
    assert "Approved" in invoked_card(second)
    assert (await served.gate.get_request(request_id)).status == "approved"


def _forged(teams: FakeTeams, now: float) -> str:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return teams.sign(now=now, key=other)  # the published key id, someone else's key


BAD_TOKENS: dict[str, Callable[[FakeTeams, float], str]] = {
    "forged": _forged,
    "expired": lambda t, now: t.sign(now=now - 3600 - 301, lifetime=3600),
    "wrong audience": lambda t, now: t.sign(now=now, audience="someone-elses-bot"),
    "wrong issuer": lambda t, now: t.sign(now=now, issuer="https://evil.example"),
    "wrong serviceUrl": lambda t, now: t.sign(now=now, service_url="https://evil.example/"),
    "unsigned": lambda t, now: t.sign(now=now, algorithm="none"),
    "HS256 with the public key": lambda t, now: t.sign(now=now, algorithm="HS256", key=b"x" * 32),
}


@pytest.mark.parametrize("kind", sorted(BAD_TOKENS))
async def test_a_bad_token_changes_nothing(served: TeamsServed, kind: str) -> None:
    request_id = await served.ask("deploy")
    await card_for(served, 1, request_id)
    token = BAD_TOKENS[kind](served.teams, served.now())
    press = served.teams.press(1, postback_data("approve", request_id))
    status, answer = await served.post(press, token=token)
    assert status in (401, 403) and answer == {"error": "refused"}
    assert (await served.gate.get_request(request_id)).status == "pending"
    assert await served.gate.store.inbox.count() == 0
    audit = await served.gate.store.audit_log(request_id=request_id)
    assert [e.event for e in audit] == ["requested"]


async def test_an_unendorsed_key_is_refused_403(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    async with served_teams(migrated_db_url, clock, aiohttp_client, APPROVERS, RULES) as served:
        served.teams.endorsements = ["webchat"]
        status, _ = await served.post(served.teams.installed(1))
        assert status == 403
        assert await served.gate.store.conversations.get("teams", address(1)) is None


async def test_no_token_at_all_and_garbage_bodies_are_refused_without_a_traceback(
    served: TeamsServed, caplog: pytest.LogCaptureFixture
) -> None:
    async with served.client.post("/webhooks/teams", data=b"{}") as response:
        assert response.status == 401
    status, _ = await served.post({}, raw=b"\xff not json")
    assert status == 400
    assert not any(r.exc_info for r in caplog.records)


async def test_an_approver_without_a_conversation_is_told_to_install_the_app(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with served_teams(migrated_db_url, clock, aiohttp_client, APPROVERS, RULES) as served:
        assert "alice cannot be reached yet" in caplog.text
        await served.install(2)  # bob only
        request_id = await served.ask("deploy")
        await card_for(served, 2, request_id)
        await until(lambda: "must install the tapgate app" in caplog.text)
        assert served.teams.cards_in(1) == []


async def test_id_command_replies_with_the_address_to_configure(served: TeamsServed) -> None:
    status, _ = await served.post(served.teams.message(7, "id"))
    assert status == 200
    said = [r.body for r in served.teams.requests_to("send") if r.body.get("text")]
    assert said and address(7) in said[-1]["text"]


def test_the_fake_signs_for_this_bot() -> None:
    assert APP_ID  # the audience every test token names, unless a test says otherwise
