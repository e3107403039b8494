"""Typed answers on Telegram: a question's Reply and Deny's reason, through a ForceReply prompt.

The press opens the reply interface (``force_reply``); the approver's reply
(a message with ``reply_to_message``, as Telegram sends it) is the answer or
the reason. A reply after the window is refused in words, not ignored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tapgate.decisions.buttons import parse_postback_data
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import CONTACT_TOOL
from tapgate.server.app import HEARTBEAT
from tests.channels.telegram.conftest import App
from tests.channels.telegram.served import ALICE, AUTH, BOB, Served, serving
from tests.fakes.served import until

RULES: list[dict[str, Any]] = [
    {"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]},
    {"tool": CONTACT_TOOL, "action": "ask", "approvers": ["alice"], "timeout": 3600},
]
CONTACTS = "/humanlayer/v1/contact_requests"


@pytest.fixture
async def typed(db_url: str, clock: ManualClock, aiohttp_client: App) -> AsyncIterator[Served]:
    async for s in serving(db_url, clock, aiohttp_client, rules=RULES):
        yield s


@pytest.fixture
async def typed_hooked(
    db_url: str, clock: ManualClock, aiohttp_client: App
) -> AsyncIterator[Served]:
    async for s in serving(db_url, clock, aiohttp_client, rules=RULES, mode="webhook"):
        yield s


async def question(served: Served) -> str:
    """The agent asks alice through ``human_as_tool``'s endpoint; the request's id from her card."""
    spec = {"msg": "Deploy to eu-west-1 or us-east-1?", "subject": "Deploy window"}
    body = {"run_id": "s-1", "call_id": "call-q", "spec": spec}
    async with served.client.post(CONTACTS, json=body, headers=AUTH) as response:
        assert response.status == 201, await response.text()

    def reply_buttons() -> list[str]:
        return [m.data("💬 Reply") for m in served.telegram.in_chat(ALICE) if m.keyboard]

    await served.ticking(lambda: bool(reply_buttons()))
    parsed = parse_postback_data(reply_buttons()[0])
    assert parsed is not None
    return parsed[1]


async def contact_response(served: Served) -> Any:
    async with served.client.get(f"{CONTACTS}/call-q", headers=AUTH) as response:
        return (await response.json())["status"]["response"]


async def test_a_question_is_answered_by_the_reply_to_the_prompt(typed: Served) -> None:
    request_id = await question(typed)
    card = await typed.card(ALICE, request_id)
    assert "Deploy to eu-west-1 or us-east-1?" in card.shown
    await typed.press(ALICE, card, "💬 Reply")
    prompt = typed.telegram.in_chat(ALICE)[-1]
    assert prompt.force_reply and "Type your answer" in prompt.shown
    assert await contact_response(typed) is None
    await typed.say(ALICE, "eu-west-1 <after> 18:00 & not before", reply_to=prompt)
    assert await contact_response(typed) == "eu-west-1 <after> 18:00 & not before"
    request = await typed.gate.get_request(request_id)
    assert request.resolution_reason == "eu-west-1 <after> 18:00 & not before"
    await until(lambda: not card.keyboard)
    assert "Answer: eu-west-1 <after> 18:00 & not before" in card.shown


async def test_deny_with_a_reason_typed_as_the_reply(typed: Served) -> None:
    request_id = await typed.ask()
    card = await typed.card(BOB, request_id)
    await typed.press(BOB, card, "❌ Deny")
    prompt = typed.telegram.in_chat(BOB)[-1]
    assert prompt.force_reply and "Type the reason" in prompt.shown
    await typed.say(BOB, "change freeze", reply_to=prompt)
    request = await typed.gate.get_request(request_id)
    assert (request.status, request.resolution_reason) == ("denied", "change freeze")


async def test_a_reply_after_the_window_is_refused_in_words_once(typed_hooked: Served) -> None:
    served = typed_hooked
    request_id = await served.ask()
    card = await served.card(BOB, request_id)
    await served.press(BOB, card, "❌ Deny")
    prompt = served.telegram.in_chat(BOB)[-1]
    served.clock.advance(301)  # past reason_window (5 minutes)
    await served.app[HEARTBEAT].beat()  # the window lapses: denied without a reason
    request = await served.gate.get_request(request_id)
    assert (request.status, request.resolution_reason) == ("denied", None)
    late = await served.telegram.type(BOB, "too late, sorry", reply_to=prompt)
    await served.deliver(late)
    told = served.telegram.in_chat(BOB)[-1]
    assert told is not prompt
    assert told.shown.startswith("That reply came too late") and "not used" in told.shown
    assert (await served.gate.get_request(request_id)).resolution_reason is None
    await served.deliver(late)  # Telegram delivers the same update again
    assert served.telegram.in_chat(BOB)[-1] is told  # answered once


async def test_a_plain_message_with_nothing_pending_is_not_answered(typed: Served) -> None:
    await typed.say(BOB, "hello there")
    assert typed.telegram.in_chat(BOB) == []  # chat, not a reply to the bot: left alone
