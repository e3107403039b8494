"""Discord presses through the real server: verified, recorded, decided once, answered in time.

The agent asks over HTTP; the real dispatcher sends each approver's card to
the fake Discord API (and LINE); presses are signed with an Ed25519 key the
test generates, exactly as Discord signs them, and posted to
``/webhooks/discord``. What a press means is ``decisions.taps``; these tests
check the whole path, with the answer Discord would show.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from tapgate.decisions.buttons import (
    batch_postback_data,
    deny_reason_postback_data,
    postback_data,
)
from tapgate.gate.batching import read_batch
from tapgate.server.app import HEARTBEAT
from tapgate.server.keys import INBOX
from tests.channels.discord.served import (
    ALICE_D,
    AUTH,
    BOB_D,
    STRANGER_D,
    DiscordServed,
    served_fixture,
)
from tests.fakes.served import BOB, until
from tests.fakes.taps import line_event

RULES: list[dict[str, Any]] = [
    {"tool": "deploy", "action": "ask", "approvers": ["oncall"]},
    {"tool": "release", "action": "ask", "approvers": ["oncall"], "quorum": 2},
    {
        "tool": "migrate",
        "action": "ask",
        "approvers": ["alice"],
        "timeout": 3600,
        "escalate_after": 300,
        "escalate_to": ["carol"],
    },
    {
        "tool": "rotate",
        "action": "ask",
        "approvers": ["carol"],
        "escalate_after": 300,
        "escalate_to": ["alice"],
        "timeout": 3600,
    },
]


served = served_fixture(RULES)


def line_postback(data: str, user: str) -> dict[str, Any]:
    return line_event("postback", user, postback={"data": data})


async def audit_events(served: DiscordServed, request_id: str) -> list[str]:
    lines = await served.gate.store.audit_log(request_id=request_id)
    return [line.event for line in lines if line.event in ("approved", "denied", "refused")]


def fields_text(answer: dict[str, Any]) -> str:
    return json.dumps(answer, ensure_ascii=False)


async def test_ping_is_answered_and_forged_or_stale_interactions_are_401(
    served: DiscordServed,
) -> None:
    status, answer = await served.interact(served.signer.ping())
    assert (status, answer) == (200, {"type": 1})
    body = json.dumps(served.signer.ping()).encode()
    for headers in (
        served.signer.probe(body),  # Discord's routine probe: a wrong signature
        {"Content-Type": "application/json"},  # no signature at all
        served.signer.headers(body, timestamp=1_000_000_000),  # genuine, but from 2001
    ):
        async with served.client.post("/webhooks/discord", data=body, headers=headers) as r:
            assert r.status == 401
    # Signed, but not an interaction: a 400, never a 500.
    junk = b'{"type": "1"}'
    async with served.client.post(
        "/webhooks/discord", data=junk, headers=served.signer.headers(junk)
    ) as r:
        assert r.status == 400


async def test_a_press_decides_and_the_card_is_redrawn_from_the_stored_outcome(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(ALICE_D, request_id)
    assert postback_data("approve", request_id) in card.custom_ids
    other = await served.card(BOB_D, request_id)
    press = served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
    status, answer = await served.interact(press)
    assert status == 200 and answer["type"] == 7  # UPDATE_MESSAGE, inside the 3 s window
    assert answer["data"]["components"] == []
    assert "Approved by alice" in fields_text(answer)
    decided = await served.status(request_id)
    assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
    # bob's card is edited through the REST API by the outbox, from the same outcome.
    await until(lambda: len(other.versions) == 2)
    assert "Approved by alice" in other.text and other.body["components"] == []
    assert await audit_events(served, request_id) == ["approved"]


async def test_a_non_approver_is_refused_ephemerally_audited_and_nothing_changes(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(ALICE_D, request_id)
    for custom_id in (postback_data("approve", request_id), postback_data("deny", request_id)):
        press = served.signer.press(custom_id, STRANGER_D, message=card, guild=True)
        status, answer = await served.interact(press)
        assert status == 200 and answer["type"] == 4 and answer["data"]["flags"] == 64
        assert "not an approver" in answer["data"]["content"]
    assert (await served.status(request_id))["status"] == "pending"
    assert len(card.versions) == 1
    assert await audit_events(served, request_id) == ["refused", "refused"]


async def test_the_same_interaction_twice_decides_once(served: DiscordServed) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(ALICE_D, request_id)
    press = served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
    first = await served.interact(press)
    second = await served.interact(press)  # the same signed bytes, the same interaction id
    assert first[1]["type"] == 7 and second == (200, {"type": 6})
    assert await audit_events(served, request_id) == ["approved"]


async def test_deny_asks_for_a_reason_in_a_modal_and_its_submission_denies(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(BOB_D, request_id)
    press = served.signer.press(postback_data("deny", request_id), BOB_D, message=card)
    status, modal = await served.interact(press)
    assert status == 200 and modal["type"] == 9
    assert modal["data"]["custom_id"] == deny_reason_postback_data(request_id)
    assert (await served.status(request_id))["status"] == "pending"  # a modal decides nothing
    submitted = served.signer.submit(
        modal["data"]["custom_id"], BOB_D, {"reason": "not on a Friday @everyone"}, message=card
    )
    status, answer = await served.interact(submitted)
    assert status == 200 and answer["type"] == 7
    text = fields_text(answer)
    assert "Denied by bob" in text and "not on a Friday" in text
    assert "@everyone" not in text  # agent and approver text never pings
    decided = await served.status(request_id)
    assert (decided["status"], decided["reason"]) == ("denied", "not on a Friday @everyone")


async def test_a_forged_modal_submission_is_authorised_again(served: DiscordServed) -> None:
    request_id = await served.ask("deploy")
    forged = served.signer.submit(
        deny_reason_postback_data(request_id), STRANGER_D, {"reason": "x"}
    )
    _, answer = await served.interact(forged)
    assert answer["type"] == 4 and "not an approver" in answer["data"]["content"]
    assert (await served.status(request_id))["status"] == "pending"


async def test_a_late_press_is_told_ephemerally_and_decides_nothing(served: DiscordServed) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(ALICE_D, request_id)
    await served.interact(
        served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
    )
    late = served.signer.press(postback_data("deny", request_id), BOB_D, message=card)
    _, answer = await served.interact(late)  # Deny… on a decided request: no modal
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    assert "already approved" in answer["data"]["content"].lower()
    late = served.signer.press(postback_data("approve", request_id), BOB_D, message=card)
    _, answer = await served.interact(late)
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    # One decision; the late press is audited as refused, as on every channel.
    assert await audit_events(served, request_id) == ["approved", "refused"]


async def test_fifty_concurrent_presses_on_discord_and_line_decide_exactly_once(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(ALICE_D, request_id)
    discord_presses = [
        served.interact(
            served.signer.press(
                postback_data("approve", request_id),
                ALICE_D if n % 2 else BOB_D,
                message=card,
            )
        )
        for n in range(25)
    ]
    line_taps = [
        served.post(line_postback(postback_data("deny", request_id), BOB[1])) for _ in range(25)
    ]
    results = await asyncio.gather(*discord_presses, *line_taps)
    await served.receiver.settled()
    assert all(r[0] == 200 if isinstance(r, tuple) else r == 200 for r in results)
    events = await audit_events(served, request_id)
    assert len([e for e in events if e in ("approved", "denied")]) == 1, events
    redrawn = [r[1] for r in results[:25] if isinstance(r, tuple) and r[1]["type"] == 7]
    assert len(redrawn) <= 1  # only the press that decided redraws; the others are told


async def test_a_line_tap_redraws_the_discord_cards(served: DiscordServed) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(ALICE_D, request_id)
    assert await served.post(line_postback(postback_data("approve", request_id), BOB[1])) == 200
    await until(lambda: len(card.versions) == 2)
    assert "Approved by bob" in card.text and card.body["components"] == []


async def test_a_quorum_press_redraws_the_progress_then_the_other_channel_completes_it(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("release")
    card = await served.card(ALICE_D, request_id)
    press = served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
    _, answer = await served.interact(press)
    assert answer["type"] == 7 and "1 of 2" in fields_text(answer)
    assert answer["data"]["components"]  # still open: the buttons stay
    again = served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
    _, told = await served.interact(again)
    assert told["type"] == 4 and "already counted" in told["data"]["content"]
    assert await served.post(line_postback(postback_data("approve", request_id), BOB[1])) == 200
    assert (await served.status(request_id))["status"] == "approved"
    await until(lambda: "Approved by" in card.text)


async def test_allow_for_session_grants_the_next_matching_call(served: DiscordServed) -> None:
    body = {"tool": "deploy", "arguments": {"env": "prod"}, "session": "s-1"}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        request_id = (await response.json())["id"]
    card = await served.card(ALICE_D, request_id)
    session_button = postback_data("approve_session", request_id)
    assert session_button in card.custom_ids
    _, answer = await served.interact(served.signer.press(session_button, ALICE_D, message=card))
    assert answer["type"] == 7 and "for this session" in fields_text(answer)
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        again = await response.json()
    assert again["status"] == "allowed"  # the grant answered; nobody was asked


async def test_a_batch_card_decides_per_call_and_all_at_once(served: DiscordServed) -> None:
    calls = [{"tool": "deploy", "arguments": {"n": n}} for n in range(3)]
    async with served.client.post(
        "/v1/tool-call-batches", json={"calls": calls, "session": "s1"}, headers=AUTH
    ) as response:
        batch = await response.json()
        assert response.status == 201, batch
    batch_id = batch["batch_id"] if "batch_id" in batch else batch["id"]
    card = await served.card(ALICE_D, batch_id)
    first = next(c for c in card.custom_ids if c.startswith("v=1&a=approve&r="))
    _, answer = await served.interact(served.signer.press(first, ALICE_D, message=card))
    assert answer["type"] == 7
    redrawn = fields_text(answer)
    assert "Approved by alice" in redrawn and "2 open" in redrawn
    approve_all = batch_postback_data("approve_all", batch_id)
    _, answer = await served.interact(served.signer.press(approve_all, ALICE_D, message=card))
    assert answer["type"] == 7 and answer["data"]["components"] == []
    state = await read_batch(served.gate, batch_id)
    assert {r.status for r in state.requests.values()} == {"approved"}


async def test_escalation_reaches_a_discord_approver_whose_press_decides(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("rotate")
    await until(lambda: any(p.to == "U" + "c3" * 16 for p in served.line.pushes))
    assert served.discord.cards_to(ALICE_D) == []
    served.clock.advance(301)
    await served.app[HEARTBEAT].beat()
    card = await served.card(ALICE_D, request_id)
    assert "Escalated" in card.text
    _, answer = await served.interact(
        served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
    )
    assert answer["type"] == 7
    assert (await served.status(request_id))["decided_by"] == "alice"


async def test_a_user_who_cannot_be_messaged_is_a_visible_permanent_failure(
    served: DiscordServed, caplog: pytest.LogCaptureFixture
) -> None:
    served.discord.unreachable[ALICE_D] = 50278
    with caplog.at_level(logging.ERROR, logger="tapgate.delivery.dispatcher"):
        request_id = await served.ask("deploy")
        await served.card(BOB_D, request_id)
        await until(lambda: "giving up on discord message to alice" in caplog.text)
    assert "50278" in caplog.text and "share a server with the bot" in caplog.text
    creates = [r for r in served.discord.requests_to("create") if r.path.endswith("/messages")]
    assert len(creates) == 2  # one refused for alice (never retried), one card for bob


async def test_a_slow_decision_is_deferred_and_a_refusal_follows_up(
    served: DiscordServed,
) -> None:
    served.receiver.budget = 0.05
    served.app[INBOX].apply_delay = 0.3  # the decision takes longer than the budget
    request_id = await served.ask("deploy")
    card = await served.card(ALICE_D, request_id)
    press = served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
    assert await served.interact(press) == (200, {"type": 6})  # acknowledged in time
    await served.receiver.settled()
    assert (await served.status(request_id))["status"] == "approved"
    await until(lambda: "Approved by alice" in card.text)  # the outbox edits it
    late = served.signer.press(postback_data("approve", request_id), BOB_D, message=card)
    assert await served.interact(late) == (200, {"type": 6})
    await served.receiver.settled()
    assert len(served.discord.follow_ups) == 1
    token, told = served.discord.follow_ups[0]
    assert token == late["token"] and told["flags"] == 64


async def test_a_submission_that_decides_nothing_leaves_no_stored_row(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy")
    empty = served.signer.submit(postback_data("reply", request_id), ALICE_D, {"answer": "  "})
    _, answer = await served.interact(empty)
    assert answer["type"] == 4 and "Type an answer" in answer["data"]["content"]
    unknown = served.signer.submit(postback_data("approve", request_id), ALICE_D, {"x": "y"})
    _, answer = await served.interact(unknown)  # no modal of ours has this id
    assert answer["type"] == 4 and "no longer valid" in answer["data"]["content"]
    assert await served.app[INBOX].pending() == 0
    assert (await served.status(request_id))["status"] == "pending"
