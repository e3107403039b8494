"""Reminders, escalation and quorum reaching Telegram, driven by the manual clock.

The heartbeat sends reminders and escalations (one beat per ``beat()``);
the clock moves only when the test says so. A reminder is a new message in
the approver's chat (Telegram shows it as unread, an edit would not be);
an escalation is a card to the approver escalated to, whose press decides.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tapgate.gate.clock import ManualClock
from tapgate.server.app import HEARTBEAT
from tests.channels.telegram.conftest import App
from tests.channels.telegram.served import ALICE, BOB, CAROL, Served, serving

RULES: list[dict[str, Any]] = [
    {"tool": "migrate", "action": "ask", "approvers": ["alice"], "remind_every": 120},
    {
        "tool": "release",
        "action": "ask",
        "approvers": ["alice"],
        "timeout": 3600,
        "escalate_after": 300,
        "escalate_to": ["bob"],
    },
    {"tool": "quorum", "action": "ask", "approvers": ["alice", "bob", "carol"], "quorum": 2},
]


@pytest.fixture
async def timed(db_url: str, clock: ManualClock, aiohttp_client: App) -> AsyncIterator[Served]:
    async for s in serving(db_url, clock, aiohttp_client, rules=RULES):
        yield s


def mentions(served: Served, user: str, request_id: str) -> int:
    """How many of the bot's messages in ``user``'s chat name ``request_id``."""
    return sum(request_id[:8] in m.versions[0] for m in served.telegram.in_chat(user))


async def test_a_reminder_reaches_the_approver_as_a_new_message(timed: Served) -> None:
    request_id = await timed.ask("migrate")
    await timed.card(ALICE, request_id)
    assert mentions(timed, ALICE, request_id) == 1
    timed.clock.advance(121)
    await timed.app[HEARTBEAT].beat()
    await timed.ticking(lambda: mentions(timed, ALICE, request_id) >= 2)
    assert (await timed.gate.get_request(request_id)).status == "pending"


async def test_escalation_reaches_telegram_and_the_escalated_press_decides(timed: Served) -> None:
    request_id = await timed.ask("release")
    await timed.card(ALICE, request_id)
    assert mentions(timed, BOB, request_id) == 0  # not bob's yet
    timed.clock.advance(301)
    await timed.app[HEARTBEAT].beat()
    bobs = await timed.card(BOB, request_id)
    assert "Escalated" in bobs.shown
    await timed.press(BOB, bobs, "✅ Approve")
    request = await timed.gate.get_request(request_id)
    assert (request.status, request.resolved_by) == ("approved", "bob")
    alices = await timed.card(ALICE, request_id)
    await timed.ticking(lambda: not alices.keyboard)
    assert "Approved by bob" in alices.shown


async def test_a_quorum_of_two_takes_two_approvers_two_presses(timed: Served) -> None:
    request_id = await timed.ask("quorum")
    cards = {user: await timed.card(user, request_id) for user in (ALICE, BOB, CAROL)}
    await timed.press(ALICE, cards[ALICE], "✅ Approve")
    assert (await timed.gate.get_request(request_id)).status == "pending"
    _, told = timed.telegram.answers[-1]
    assert told is not None and "1 of 2" in told
    await timed.press(CAROL, cards[CAROL], "✅ Approve")
    request = await timed.gate.get_request(request_id)
    assert request.status == "approved" and set(request.approvals) == {"alice", "carol"}
    for card in cards.values():
        await timed.ticking(lambda c=card: not c.keyboard)  # type: ignore[misc]
        assert "Approved" in card.shown
