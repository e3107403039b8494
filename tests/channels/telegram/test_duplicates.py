"""A send whose answer was lost: Telegram may show two cards; both work and both end redrawn.

The fake accepts the ``sendMessage`` and then stalls its answer past the
client's timeout (the classic ambiguous failure). Telegram has no
idempotency key and a bot cannot read its chat, so tapgate retries and the
approver sees two cards: a press on either decides once, the card whose id
tapgate learnt is redrawn by the dispatcher, the other when it is pressed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tapgate.gate.clock import ManualClock
from tests.channels.telegram.conftest import App
from tests.channels.telegram.served import ALICE, Served, serving
from tests.fakes._faults import Fault
from tests.fakes.served import until
from tests.fakes.telegram import FakeTelegram, TelegramMessage

RULES: list[dict[str, Any]] = [{"tool": "mine", "action": "ask", "approvers": ["alice"]}]


def stall_first_send(telegram: FakeTelegram) -> None:
    telegram.script("sendMessage", Fault.timeout(2, deliver=True))


@pytest.fixture
async def stalled(db_url: str, clock: ManualClock, aiohttp_client: App) -> AsyncIterator[Served]:
    async for s in serving(
        db_url, clock, aiohttp_client, rules=RULES, timeout=1, before=stall_first_send
    ):
        yield s


async def two_cards(
    served: Served, caplog: pytest.LogCaptureFixture
) -> tuple[str, TelegramMessage, TelegramMessage]:
    with caplog.at_level(logging.WARNING, logger="tapgate.channels.telegram"):
        request_id = await served.ask("mine")
        await until(lambda: len(served.telegram.in_chat(ALICE)) == 2)
    lost, known = served.telegram.in_chat(ALICE)  # the first send's answer never came back
    assert lost.keyboard == known.keyboard and lost.keyboard  # the same buttons: either decides
    assert "may have been delivered" in caplog.text and "alice" in caplog.text
    return request_id, lost, known


async def test_a_press_on_the_card_tapgate_never_learnt_decides_and_both_are_redrawn(
    stalled: Served, caplog: pytest.LogCaptureFixture
) -> None:
    request_id, lost, known = await two_cards(stalled, caplog)
    await stalled.press(ALICE, lost, "✅ Approve")
    request = await stalled.gate.get_request(request_id)
    assert (request.status, request.resolved_by) == ("approved", "alice")
    for card in (lost, known):
        await until(lambda c=card: not c.keyboard)  # type: ignore[misc]
        assert "Approved by alice" in card.shown
    audit = await stalled.gate.store.audit_log(request_id=request_id)
    assert [e.event for e in audit if e.event == "approved"] == ["approved"]


async def test_a_duplicate_pressed_after_a_decision_elsewhere_is_redrawn_and_decides_nothing(
    stalled: Served, caplog: pytest.LogCaptureFixture
) -> None:
    request_id, lost, known = await two_cards(stalled, caplog)
    await stalled.gate.resolve(request_id, "deny", by="alice", reason="not today")
    await until(lambda: not known.keyboard)  # the dispatcher redraws the card it knows
    assert lost.keyboard  # it cannot know the other one...
    approve = lost.data("✅ Approve")
    await stalled.press(ALICE, lost, "✅ Approve")  # ...until it is pressed
    assert (await stalled.gate.get_request(request_id)).status == "denied"
    _, told = stalled.telegram.answers[-1]
    assert told is not None and "Already denied by alice" in told
    await until(lambda: not lost.keyboard)
    assert "Denied by alice" in lost.shown and "Reason: not today" in lost.shown
    edits = len(stalled.telegram.requests_to("editMessageText"))
    await stalled.deliver(await stalled.telegram.press(ALICE, lost, approve))  # pressed again
    assert len(stalled.telegram.requests_to("editMessageText")) == edits  # redrawn once
