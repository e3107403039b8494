"""Cards kept in step between Slack and Telegram, both ways, through the real server.

alice approves on Slack and on Telegram, bob on Telegram. A Slack click
(signed with the fake's signing secret, posted to ``/webhooks/slack``)
redraws every Telegram card with the outcome and no keyboard
(``editMessageText``); a Telegram press redraws the Slack message
(``chat.update``) with the outcome and no buttons. Batches too: one card per
approver per platform, decided whole or call by call on either side.
"""

from __future__ import annotations

import json
from typing import Any

from tapgate.decisions.buttons import SLACK_BATCH_ACTION_IDS
from tests.channels.telegram.served import ALICE, ALICE_SLACK, BOB, Served
from tests.fakes.served import SLACK_SECRET, click, slack_card, until
from tests.fakes.slack import FakeSlack, SlackMessage
from tests.fakes.taps import slack_form, slack_headers
from tests.fakes.telegram import TelegramMessage


def slack(served: Served) -> FakeSlack:
    assert served.slack is not None
    return served.slack


async def slack_message(served: Served, needle: str) -> SlackMessage:
    """alice's Slack message containing ``needle`` (a request or batch id), once sent."""
    return await slack_card(slack(served), ALICE_SLACK, needle)


async def slack_click(served: Served, action_id: str, value: str, message: SlackMessage) -> None:
    """alice clicks ``action_id`` (``tapgate_approve``…) on ``message``, signed; 200 expected."""
    payload = click(action_id.removeprefix("tapgate_"), value, (ALICE_SLACK, ""), message.channel)
    payload["container"]["message_ts"] = message.ts
    body = slack_form(payload)
    headers = slack_headers(SLACK_SECRET, body, int(served.clock.now().timestamp()))
    async with served.client.post("/webhooks/slack", data=body, headers=headers) as response:
        assert response.status == 200, await response.text()


def buttons(message: SlackMessage) -> list[dict[str, Any]]:
    """The Slack message's buttons as it shows now."""
    return [
        element
        for block in message.blocks or []
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


def edits_of(served: Served, card: TelegramMessage) -> list[dict[str, Any]]:
    """The ``editMessageText`` calls made to ``card``."""
    return [
        r.args
        for r in served.telegram.requests_to("editMessageText")
        if str(r.args["chat_id"]) == card.chat_id and r.args["message_id"] == card.message_id
    ]


async def test_a_slack_click_redraws_every_telegram_card_without_buttons(both: Served) -> None:
    request_id = await both.ask()
    alices, bobs = await both.card(ALICE, request_id), await both.card(BOB, request_id)
    message = await slack_message(both, request_id)
    await slack_click(both, "tapgate_approve", request_id, message)
    request = await both.gate.get_request(request_id)
    assert (request.status, request.resolved_by) == ("approved", "alice")
    for card in (alices, bobs):
        await both.ticking(lambda c=card: not c.keyboard)  # type: ignore[misc]
        assert "Approved by alice" in card.shown
        last = edits_of(both, card)[-1]
        assert not (last.get("reply_markup") or {}).get("inline_keyboard")
    await until(lambda: not buttons(message))  # the clicked Slack message shows it too
    assert "Approved by alice" in json.dumps(message.blocks)


async def test_a_telegram_press_redraws_the_slack_message_with_chat_update(both: Served) -> None:
    request_id = await both.ask()
    message = await slack_message(both, request_id)
    assert buttons(message)
    bobs = await both.card(BOB, request_id)
    await both.press(BOB, bobs, "✅ Approve")
    request = await both.gate.get_request(request_id)
    assert (request.status, request.resolved_by) == ("approved", "bob")
    await both.ticking(
        lambda: any(u.ts == message.ts for u in slack(both).updates) and not buttons(message)
    )
    assert "Approved by bob" in json.dumps(message.blocks)
    [update] = [u for u in slack(both).updates if u.ts == message.ts]
    assert update.channel == message.channel
    alices = await both.card(ALICE, request_id)  # alice's Telegram card, likewise
    await both.ticking(lambda: not alices.keyboard)
    assert "Approved by bob" in alices.shown


async def test_a_batch_decided_on_slack_then_on_telegram_ends_the_same_on_both(
    both: Served,
) -> None:
    batch_id, ids = await both.ask_batch("deploy", "deploy")
    message = await slack_message(both, batch_id)
    bobs = await both.card(BOB, ids[0])
    await slack_click(both, "tapgate_approve", ids[0], message)  # call 1, on Slack
    assert (await both.gate.get_request(ids[0])).status == "approved"
    await both.ticking(lambda: "✅ 1" not in [b["text"] for r in bobs.keyboard for b in r])
    assert "Approved by alice" in bobs.shown
    assert bobs.keyboard  # call 2 is still open on Telegram

    await both.press(BOB, bobs, "❌ Deny")  # the one call left: "Deny all" reads "Deny"
    assert [(await both.gate.get_request(i)).status for i in ids] == ["approved", "denied"]
    await both.ticking(lambda: not bobs.keyboard and not buttons(message))
    shown = json.dumps(message.blocks)
    assert "Approved by alice" in shown and "Denied by bob" in shown


async def test_approve_all_on_slack_closes_the_telegram_batch_cards(both: Served) -> None:
    batch_id, ids = await both.ask_batch("deploy", "deploy")
    message = await slack_message(both, batch_id)
    alices, bobs = await both.card(ALICE, ids[0]), await both.card(BOB, ids[0])
    await slack_click(both, SLACK_BATCH_ACTION_IDS["approve_all"], batch_id, message)
    assert [(await both.gate.get_request(i)).status for i in ids] == ["approved", "approved"]
    for card in (alices, bobs):
        await both.ticking(lambda c=card: not c.keyboard)  # type: ignore[misc]
        assert card.shown.count("Approved by alice") == 2
