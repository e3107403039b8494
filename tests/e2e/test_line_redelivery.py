"""A LINE redelivery is a no-op, whatever its event carries, while a "Deny…" awaits its reason.

LINE sends an event again, with the same ``webhookEventId``, when it thinks
the first delivery was lost. The first delivery may have decided nothing of
its own, and by the time the copy arrives the approver may have tapped
"Deny…" elsewhere: the copy must neither end that pending reason (a button or
an ``answer <ref>: …`` first ends what is pending), nor answer again (a
command), nor ask again (the "Deny…" itself).

End to end through the real server, signed webhook bodies, the fake LINE API
and a real SQLite file; each copy carries a fresh reply token, so a second
answer would reach LINE and be seen.
"""

from __future__ import annotations

import uuid
from typing import Any

from tapgate.gate.models import CONTACT_TOOL, Request, ToolCall
from tests.e2e import test_line_reasons as reasons
from tests.e2e.test_line_reasons import Served, asked, button, denied, deny_tap, text

db_url, fake_line, served = reasons.db_url, reasons.fake_line, reasons.served  # the fixtures


def again(event: dict[str, Any]) -> dict[str, Any]:
    """LINE's redelivery of ``event``: same id, marked, with a reply token of its own."""
    return {**event, "replyToken": uuid.uuid4().hex, "deliveryContext": {"isRedelivery": True}}


async def question(served: Served) -> Request:
    call = ToolCall(tool=CONTACT_TOOL, arguments={"message": "EU or US?"}, agent="ci")
    ticket = await served.gate.submit(call, question=True)
    assert ticket.request is not None
    return ticket.request


async def awaiting_reason(served: Served) -> Request:
    """A request whose "Deny…" alice tapped: it waits for her text."""
    request = await served.ask("migrate")
    tap = deny_tap(request)
    assert await served.post(tap) == 200
    assert served.told(tap) == [asked(request, "migrate")]
    return request


async def still_awaits(served: Served, request: Request) -> None:
    """The request is pending, and alice's next text is still its reason."""
    assert (await served.status(request))[0] == "pending"
    reason = text("not during the freeze")
    assert await served.post(reason) == 200
    assert served.told(reason) == [denied(request, "not during the freeze", "migrate")]
    assert await served.status(request) == ("denied", "alice", "not during the freeze")


async def test_a_redelivered_button_leaves_a_pending_deny_awaiting_its_reason(
    served: Served,
) -> None:
    decided = await served.ask()
    tap = button("approve", decided)
    assert await served.post(tap) == 200
    pending = await awaiting_reason(served)
    copy = again(tap)
    assert await served.post(copy) == 200
    assert served.told(copy) == []
    await still_awaits(served, pending)


async def test_a_redelivered_refused_button_leaves_a_pending_deny_awaiting_its_reason(
    served: Served,
) -> None:
    decided = await served.ask()
    await served.gate.resolve(decided.id, "deny", by="bob")
    tap = button("approve", decided)  # refused: already denied, and that decided nothing
    assert await served.post(tap) == 200
    pending = await awaiting_reason(served)
    copy = again(tap)
    assert await served.post(copy) == 200
    assert served.told(copy) == []
    await still_awaits(served, pending)


async def test_a_redelivered_answer_leaves_a_pending_deny_awaiting_its_reason(
    served: Served,
) -> None:
    asked_question = await question(served)
    answer = text(f"answer {asked_question.id[:8]}: EU")
    assert await served.post(answer) == 200
    assert (await served.status(asked_question))[0] == "approved"
    pending = await awaiting_reason(served)
    copy = again(answer)
    assert await served.post(copy) == 200
    assert served.told(copy) == []
    await still_awaits(served, pending)


async def test_a_redelivered_command_is_answered_once(served: Served) -> None:
    pending = await awaiting_reason(served)
    command = text("help")
    assert await served.post(command) == 200
    assert len(served.told(command)) == 1
    copy = again(command)
    assert await served.post(copy) == 200
    assert served.told(copy) == []
    await still_awaits(served, pending)


async def test_a_redelivered_deny_tap_neither_asks_again_nor_moves_the_window(
    served: Served,
) -> None:
    request = await served.ask("migrate")
    tap = deny_tap(request)
    assert await served.post(tap) == 200
    row = await served.gate.store.reasons.of("alice")
    assert row is not None
    served.clock.advance(60)
    copy = again(tap)
    assert await served.post(copy) == 200
    assert served.told(copy) == []
    assert await served.gate.store.reasons.of("alice") == row  # same row, same deadline
    await still_awaits(served, request)
