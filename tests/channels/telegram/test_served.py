"""Telegram through the real server: cards, presses by long poll and by webhook, refusals, sync."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from tapgate.decisions.buttons import postback_data
from tapgate.gate.clock import ManualClock
from tests.channels.telegram.served import (
    ALICE,
    AUTH,
    BOB,
    CAROL,
    CAROL_LINE,
    MALLORY,
    SECRET,
    Served,
    serving,
)
from tests.fakes.served import Client, until
from tests.fakes.taps import line_event


def postback(data: str, *, user: str) -> dict[str, object]:
    """A LINE postback event by ``user`` carrying ``data``."""
    return line_event("postback", user, postback={"data": data})


# -- polling: a press decides, the agent resumes, every card is redrawn -------------------


async def test_a_polled_press_approves_and_every_approvers_card_shows_the_outcome(
    served: Served,
) -> None:
    request_id = await served.ask()
    card = await served.card(ALICE, request_id)
    assert "<b>deploy</b> from <b>ci</b>" in card.text
    labels = [b["text"] for row in card.keyboard for b in row]
    assert labels[:2] == ["✅ Approve", "❌ Deny…"]
    agent = asyncio.create_task(served.waited(request_id))
    await served.telegram.press(ALICE, card, card.data("✅ Approve"))
    answer = await asyncio.wait_for(agent, 10)
    assert answer["status"] == "approved"
    assert answer["decided_by"] == "alice"
    await served.settle(until_answers=1)
    [(_, toast)] = served.telegram.answers
    assert toast is not None and toast.startswith("Approved")
    for user in (ALICE, BOB, CAROL):  # redrawn from the stored outcome, buttons gone
        mine = await served.card(user, request_id)
        await until(lambda m=mine: not m.keyboard)  # type: ignore[misc]
        assert "Approved by alice" in mine.shown
    assert served.receiver.offset is not None  # the poll confirmed the press


async def test_a_press_by_someone_not_approving_this_request_is_refused_and_audited(
    served: Served,
) -> None:
    request_id = await served.ask("mine")
    card = await served.card(ALICE, request_id)
    await served.telegram.press(MALLORY, card, card.data("✅ Approve"))
    await served.settle(until_answers=1)
    assert served.telegram.answers[0][1] == "You are not an approver for this request."
    request = await served.gate.get_request(request_id)
    assert request.status == "pending"
    audit = await served.gate.store.audit_log(request_id=request_id)
    [refused] = [e for e in audit if e.event == "refused"]
    assert refused.actor == "mallory"
    assert card.keyboard  # nothing changed


async def test_deny_asks_for_the_reason_with_a_force_reply_and_the_next_message_is_it(
    served: Served,
) -> None:
    request_id = await served.ask()
    card = await served.card(BOB, request_id)
    await served.telegram.press(BOB, card, card.data("❌ Deny"))
    await served.settle(until_answers=1)
    prompt = served.telegram.in_chat(BOB)[-1]
    assert prompt.force_reply and "Type the reason" in prompt.shown
    assert (await served.gate.get_request(request_id)).status == "pending"
    await served.telegram.type(BOB, "not <on> a Friday & never")
    await served.settle()
    request = await served.gate.get_request(request_id)
    assert request.status == "denied"
    assert request.resolution_reason == "not <on> a Friday & never"
    await until(lambda: not card.keyboard)
    assert "Reason: not <on> a Friday & never" in card.shown


async def test_a_quorum_of_two_needs_both_and_counts_a_double_press_once(served: Served) -> None:
    request_id = await served.ask("quorum")
    alices = await served.card(ALICE, request_id)
    await served.telegram.press(ALICE, alices, alices.data("✅ Approve"))
    await served.telegram.press(ALICE, alices, alices.data("✅ Approve"))
    await served.settle(until_answers=2)
    assert (await served.gate.get_request(request_id)).status == "pending"
    bobs = await served.card(BOB, request_id)
    await served.telegram.press(BOB, bobs, bobs.data("✅ Approve"))
    await served.settle(until_answers=3)
    request = await served.gate.get_request(request_id)
    assert request.status == "approved"
    assert set(request.approvals) == {"alice", "bob"}


async def test_allow_for_session_makes_a_grant_that_answers_the_next_call(served: Served) -> None:
    request_id = await served.ask()
    card = await served.card(ALICE, request_id)
    await served.telegram.press(ALICE, card, card.data("Allow for session"))
    await served.settle(until_answers=1)
    assert (await served.gate.get_request(request_id)).scope == "session"
    body = {"tool": "deploy", "arguments": {"env": "prod"}, "session": "s-1"}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        answer = await response.json()
    assert answer["status"] == "allowed"  # the session grant answered, nobody was asked


async def test_start_answers_the_user_id_and_where_it_goes(served: Served) -> None:
    newcomer = "424242424"
    served.telegram.started.add(newcomer)
    await served.telegram.type(newcomer, "/start")
    await served.settle()
    await until(lambda: bool(served.telegram.in_chat(newcomer)))
    [told] = served.telegram.in_chat(newcomer)
    assert "Your Telegram user id is 424242424" in told.shown
    assert 'telegram: "424242424"' in told.shown


async def test_help_and_grants_commands_answer_an_approver(served: Served) -> None:
    await served.telegram.type(ALICE, "/help")
    await served.telegram.type(ALICE, "/grants@tapgate_test_bot")
    await served.settle()
    await until(lambda: len(served.telegram.in_chat(ALICE)) == 2)
    helped, grants = served.telegram.in_chat(ALICE)
    assert "/grants" in helped.shown and "/inbox" in helped.shown
    assert grants.shown == "You have no active grants."


async def test_a_press_in_a_group_decides_nothing(served: Served) -> None:
    request_id = await served.ask()
    card = await served.card(ALICE, request_id)
    update = await served.telegram.press(ALICE, card, card.data("✅ Approve"))
    update["callback_query"]["message"]["chat"] = {"id": -100123, "type": "supergroup"}
    served.telegram._updates[-1] = update
    await served.settle(until_answers=1)
    assert "private chat only" in str(served.telegram.answers[0][1])
    assert (await served.gate.get_request(request_id)).status == "pending"


# -- cross-channel ------------------------------------------------------------------------


async def test_a_decision_on_line_redraws_the_telegram_cards(served: Served) -> None:
    request_id = await served.ask()
    card = await served.card(ALICE, request_id)
    await until(lambda: bool(served.line.pushes))
    item = postback(postback_data("approve", request_id), user=CAROL_LINE)
    assert await served.post(item) == 200
    await until(lambda: not card.keyboard)
    assert "Approved by carol" in card.shown


# -- delivery failures --------------------------------------------------------------------


async def test_an_approver_who_never_started_the_bot_is_a_visible_permanent_failure(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    served.telegram.started.discard(BOB)
    request_id = await served.ask()
    await served.card(ALICE, request_id)
    await until(lambda: "press Start" in caplog.text)
    assert "bob (Telegram user 222222222) has not started the bot" in caplog.text
    sends = [r for r in served.telegram.requests_to("sendMessage") if r.args["chat_id"] == BOB]
    assert len(sends) == 1  # permanent: never retried


# -- webhook mode --------------------------------------------------------------------------


async def test_webhook_refuses_a_wrong_or_missing_secret_before_reading_the_body(
    hooked: Served,
) -> None:
    request_id = await hooked.ask()
    card = await hooked.card(ALICE, request_id)
    update = await hooked.telegram.press(ALICE, card, card.data("✅ Approve"))
    assert await hooked.webhook(update, secret="wrong") == 401
    assert await hooked.webhook(update, secret="") == 401
    async with hooked.client.post("/webhooks/telegram", data=b"{not json") as response:
        assert response.status == 401  # no secret: refused before the body is read
    assert (await hooked.gate.get_request(request_id)).status == "pending"


async def test_webhook_malformed_update_is_a_400(hooked: Served) -> None:
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    for body in (b"{not json", b"[]", b'{"update_id": "x"}', b"\xff\xfe"):
        async with hooked.client.post("/webhooks/telegram", data=body, headers=headers) as r:
            assert r.status == 400


async def test_webhook_press_decides_once_however_often_telegram_delivers_it(
    hooked: Served,
) -> None:
    request_id = await hooked.ask()
    card = await hooked.card(ALICE, request_id)
    update = await hooked.telegram.press(ALICE, card, card.data("✅ Approve"))
    statuses = await asyncio.gather(*(hooked.webhook(update) for _ in range(5)))
    assert statuses == [200] * 5
    request = await hooked.gate.get_request(request_id)
    assert request.status == "approved"
    audit = await hooked.gate.store.audit_log(request_id=request_id)
    assert [e.event for e in audit if e.event in ("approved", "refused")] == ["approved"]
    assert len(hooked.telegram.answers) == 1


async def test_fifty_concurrent_presses_across_telegram_and_line_make_one_decision(
    hooked: Served,
) -> None:
    request_id = await hooked.ask()
    alices = await hooked.card(ALICE, request_id)
    bobs = await hooked.card(BOB, request_id)
    await until(lambda: bool(hooked.line.pushes))
    posts = []
    for n in range(50):
        if n % 5 == 4:
            data = postback_data("approve", request_id)
            posts.append(hooked.post(postback(data, user=CAROL_LINE)))
        elif n % 2:
            update = await hooked.telegram.press(ALICE, alices, alices.data("✅ Approve"))
            posts.append(hooked.webhook(update))
        else:
            update = await hooked.telegram.press(BOB, bobs, postback_data("deny", request_id))
            posts.append(hooked.webhook(update))
    assert set(await asyncio.gather(*posts)) == {200}
    request = await hooked.gate.get_request(request_id)
    assert request.status in ("approved", "denied")
    audit = await hooked.gate.store.audit_log(request_id=request_id)
    decided = [e.event for e in audit if e.event in ("approved", "denied")]
    assert decided == [request.status]
    assert sum(e.event == "refused" for e in audit) == 49


async def test_webhook_mode_registers_the_webhook_when_the_public_url_is_known(
    db_url: str, clock: ManualClock, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
) -> None:
    async for s in serving(db_url, clock, aiohttp_client, mode="webhook"):
        # no server.public_url in these tests: tapgate logged the command instead of guessing
        assert s.telegram.webhook is None
        assert s.telegram.requests_to("setWebhook") == []
