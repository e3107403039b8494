"""What an approver types to the bot in Teams, and "Open in inbox", through the real app.

``whoami`` / ``help`` / ``grants`` / ``inbox`` are ``message`` activities
signed by the fake Bot Connector; the answers are what the fake recorded in
the sender's chat. A Revoke on a grants listing is a press like any other
(an ``adaptiveCard/action`` invoke), answered with the listing as it is now.
The server has a public URL here, so cards carry "Open in inbox" and
``inbox`` can mint a sign-in link. Last, a question (a HumanLayer contact
request) answered from its card's text box: once, by an approver only.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from tapgate.decisions.buttons import postback_data, revoke_postback_data
from tapgate.decisions.texts import NO_INBOX
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import CONTACT_TOOL, Grant
from tapgate.server.api.humanlayer import PREFIX as HUMANLAYER
from tests.channels.teams.served import AUTH, TeamsServed, address, served_teams
from tests.fakes.served import Client, until

PUBLIC = "https://tapgate.example.test"
APPROVERS: list[dict[str, Any]] = [
    {"name": "alice", "teams": address(1)},
    {"name": "bob", "teams": address(2)},
]
RULES: list[dict[str, Any]] = [{"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]}]


@pytest.fixture
async def served(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[TeamsServed]:
    server = {"public_url": PUBLIC}
    async with served_teams(
        migrated_db_url, clock, aiohttp_client, APPROVERS, RULES, server=server
    ) as served:
        await served.install(1, 2)
        yield served


async def said(served: TeamsServed, user: int, text: str) -> dict[str, Any]:
    """Send ``text`` as ``user``; the one message the bot answered with in their chat."""
    before = len(served.teams.requests_to("send"))
    status, _ = await served.post(served.teams.message(user, text))
    assert status == 200
    sent = served.teams.requests_to("send")[before:]
    chat = served.teams.conversation_of(user)
    [answer] = [r.body for r in sent if chat in r.path]
    return dict(answer)


async def alices_grants(served: TeamsServed) -> list[Grant]:
    found, _ = await served.gate.store.owned_grants.mine("alice", now=served.clock.now(), limit=9)
    return found


def shown(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


def actions(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Every action of the message's card, at the bottom or in an ActionSet."""
    content = message["attachments"][0]["content"]
    found = list(content.get("actions", []))
    for block in content["body"]:
        found += block.get("actions", [])
    return found


async def test_whoami_names_the_id_and_whether_tapgate_knows_them(served: TeamsServed) -> None:
    known = await said(served, 1, "  WhoAmI ")
    assert "approver alice" in known["text"] and address(1) in known["text"]
    stranger = await said(served, 7, "whoami")
    assert address(7) in stranger["text"] and "approvers[].teams" in stranger["text"]


async def test_help_lists_every_command_and_chat_is_left_alone(served: TeamsServed) -> None:
    listed = (await said(served, 1, "help"))["text"]
    for word in ("whoami", "grants", "inbox", "help"):
        assert f'"{word}"' in listed
    before = len(served.teams.requests_to("send"))
    await served.post(served.teams.message(1, "can you help me with grants?"))
    assert len(served.teams.requests_to("send")) == before  # ordinary chat: no answer


async def test_grants_lists_own_grants_and_revoke_takes_once_owner_only(
    served: TeamsServed,
) -> None:
    assert "no active grants" in shown(await said(served, 1, "grants"))
    body = {"tool": "deploy", "arguments": {"env": "prod"}, "session": "s1"}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        request_id = (await response.json())["id"]
    await until(lambda: any(request_id[:8] in p.text for p in served.teams.cards_in(1)))
    await served.post(served.teams.press(1, postback_data("approve_session", request_id)))

    listing = await said(served, 1, "grants")
    [revoke] = actions(listing)
    assert revoke["title"] == "Revoke 1" and "deploy" in shown(listing)
    [grant] = await alices_grants(served)
    assert revoke["data"]["tg"] == revoke_postback_data(grant.id)
    assert "no active grants" in shown(await said(served, 2, "grants"))  # bob made none

    # Bob pressing alice's Revoke (the action string is not a secret): refused, audited.
    status, answer = await served.post(served.teams.press(2, revoke_postback_data(grant.id)))
    assert status == 200 and "only the approver who" in shown(answer).lower()
    assert await alices_grants(served)

    press = served.teams.press(1, revoke_postback_data(grant.id))
    status, answer = await served.post(press)
    assert status == 200 and "Revoked" in shown(answer["value"])
    assert "no active grants" in shown(answer["value"])  # the listing as it is now
    assert await alices_grants(served) == []
    await served.post(press)  # the Bot Connector retrying the same activity
    audit = await served.gate.store.audit_log()
    assert [line.event for line in audit].count("grant_revoked") == 1


async def test_inbox_sends_a_sign_in_link_that_does_not_sign_in_on_get(
    served: TeamsServed,
) -> None:
    message = await said(served, 1, "inbox")
    [link] = actions(message)
    assert link["type"] == "Action.OpenUrl" and link["url"].startswith(f"{PUBLIC}/inbox/sign-in?")
    url = urlsplit(link["url"])
    for _ in range(3):  # a link scanner, a preview, the person: nobody is signed in by a GET
        async with served.client.get(f"{url.path}?{url.query}") as response:
            assert response.status == 200 and 'method="post"' in await response.text()
            assert "tapgate_session" not in response.cookies
    stranger = await said(served, 7, "inbox")
    assert "Only configured approvers" in stranger["text"]


async def test_cards_open_in_the_inbox_without_signing_anyone_in(served: TeamsServed) -> None:
    request_id = await served.ask("deploy")
    await until(lambda: any(request_id[:8] in p.text for p in served.teams.cards_in(1)))
    card = served.teams.cards_in(1)[0]
    [opens] = [a for a in card.card["actions"] if a["type"] == "Action.OpenUrl"]
    assert opens["title"] == "Open in inbox" and opens["url"] == f"{PUBLIC}/inbox#r-{request_id}"
    async with served.client.get("/inbox") as response:
        assert response.status == 401  # signed out: told to ask the chat, never signed in
    await served.post(served.teams.press(1, postback_data("approve", request_id)))
    await until(lambda: "Approved by alice" in card.text)
    assert "actions" not in card.card  # decided: no buttons, no link


async def test_without_a_public_url_there_is_no_inbox_link(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    async with served_teams(migrated_db_url, clock, aiohttp_client, APPROVERS, RULES) as served:
        await served.install(1)
        request_id = await served.ask("deploy")
        await until(lambda: any(request_id[:8] in p.text for p in served.teams.cards_in(1)))
        assert "Action.OpenUrl" not in served.teams.cards_in(1)[0].text
        assert (await said(served, 1, "inbox"))["text"] == NO_INBOX


async def test_a_question_is_answered_from_the_card_once_by_an_approver_only(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    rules = [{"tool": CONTACT_TOOL, "action": "ask", "approvers": ["alice", "bob"]}]
    async with served_teams(migrated_db_url, clock, aiohttp_client, APPROVERS, rules) as served:
        await served.install(1, 2)
        spec = {"msg": "Deploy to eu-west-1 or **us-east-1**?", "subject": "Region"}
        body = {"run_id": "r1", "call_id": "call-q", "spec": spec}
        url = f"{HUMANLAYER}/contact_requests"
        async with served.client.post(url, json=body, headers=AUTH) as response:
            assert response.status == 201, await response.text()
        await until(lambda: any("Region" in p.text for p in served.teams.cards_in(1)))
        card = served.teams.cards_in(1)[0]
        assert "**us-east-1**" in card.text  # shown as typed, in a TextRun
        [box] = [b for b in card.card["body"] if b.get("type") == "Input.Text"]
        reply = next(a for a in card.card["actions"] if a.get("title") == "Reply")
        assert box["id"] == "answer" and reply["data"]["tg"].startswith("v=1&a=reply&r=")
        data = reply["data"]["tg"]

        status, empty = await served.post(served.teams.press(1, data))
        assert status == 200 and "Type your answer" in shown(empty["value"])
        status, stranger = await served.post(
            served.teams.press(9, data, inputs={"answer": "us-east-1"})
        )
        assert status == 200 and "not an approver" in shown(stranger["value"])

        answer = served.teams.press(1, data, inputs={"answer": "eu-west-1, after 18:00"})
        results = [await served.post(answer) for _ in range(2)]  # and the Bot Connector's retry
        assert all(s == 200 for s, _ in results)
        assert "eu-west-1, after 18:00" in shown(results[0][1]["value"])
        late = await served.post(served.teams.press(2, data, inputs={"answer": "us-east-1"}))
        assert "already" in shown(late[1]["value"]).lower()

        async with served.client.get(f"{url}/call-q", headers=AUTH) as response:
            contact = await response.json()
        assert contact["status"]["response"] == "eu-west-1, after 18:00", contact
        audit = await served.gate.store.audit_log()
        assert [e.event for e in audit].count("approved") == 1
        bobs = served.teams.cards_in(2)[0]
        await until(lambda: "eu-west-1, after 18:00" in bobs.text)  # redrawn for bob too
