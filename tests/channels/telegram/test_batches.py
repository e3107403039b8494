"""A batch on Telegram: one card per approver, per-call presses and Approve all / Deny all.

Each press goes through the real server (by long poll, and by webhook) and
every approver's card is redrawn from the stored outcome: decided calls lose
their buttons and show who decided them; a fully decided batch loses its keyboard.
"""

from __future__ import annotations

from tests.channels.telegram.served import ALICE, BOB, Served
from tests.fakes.served import until
from tests.fakes.telegram import TelegramMessage


def labels(card: TelegramMessage) -> list[str]:
    return [str(b["text"]) for row in card.keyboard for b in row]


async def statuses(served: Served, ids: list[str]) -> list[str]:
    return [(await served.gate.get_request(i)).status for i in ids]


async def test_a_polled_per_call_press_then_deny_all_redraws_every_card(served: Served) -> None:
    _, ids = await served.ask_batch("deploy", "deploy", "deploy")
    alices = await served.card(ALICE, ids[0])
    bobs = await served.card(BOB, ids[0])
    assert len(served.telegram.in_chat(ALICE)) == 1  # the batch is one card, not three
    assert labels(alices)[:6] == ["✅ 1", "❌ 1", "✅ 2", "❌ 2", "✅ 3", "❌ 3"]
    assert {"✅ Approve all", "❌ Deny all"} <= set(labels(alices))

    await served.press(ALICE, alices, "✅ 2")
    assert await statuses(served, ids) == ["pending", "approved", "pending"]
    for card in (alices, bobs):  # redrawn from the stored outcome: call 2 has no buttons
        await until(lambda c=card: "✅ 2" not in labels(c))  # type: ignore[misc]
        assert "Approved by alice" in card.shown
        assert "✅ 1" in labels(card) and "✅ 3" in labels(card)

    await served.press(BOB, bobs, "❌ Deny all")
    assert await statuses(served, ids) == ["denied", "approved", "denied"]
    for card in (alices, bobs):
        await until(lambda c=card: not c.keyboard)  # type: ignore[misc]
        assert card.shown.count("Denied by bob") == 2 and "Approved by alice" in card.shown
    toasts = [text for _, text in served.telegram.answers]
    assert len(toasts) == 2 and all(toasts)


async def test_approve_all_by_webhook_decides_every_call_once(hooked: Served) -> None:
    _, ids = await hooked.ask_batch("deploy", "deploy")
    alices = await hooked.card(ALICE, ids[0])
    bobs = await hooked.card(BOB, ids[0])
    update = await hooked.press(ALICE, alices, "✅ Approve all")
    assert await hooked.webhook(update) == 200  # Telegram delivers it again: acts once
    assert await statuses(hooked, ids) == ["approved", "approved"]
    for request_id in ids:
        audit = await hooked.gate.store.audit_log(request_id=request_id)
        assert [e.event for e in audit if e.event == "approved"] == ["approved"]
    assert len(hooked.telegram.answers) == 1
    for card in (alices, bobs):
        await until(lambda c=card: not c.keyboard)  # type: ignore[misc]
        assert card.shown.count("Approved by alice") == 2


async def test_a_per_call_press_on_a_decided_call_changes_nothing_and_says_so(
    hooked: Served,
) -> None:
    _, ids = await hooked.ask_batch("deploy", "deploy")
    alices = await hooked.card(ALICE, ids[0])
    bobs = await hooked.card(BOB, ids[0])
    stale = bobs.data("❌ 1")  # bob's card still shows call 1 open
    await hooked.press(ALICE, alices, "✅ 1")
    await hooked.deliver(await hooked.telegram.press(BOB, bobs, stale))
    assert await statuses(hooked, ids) == ["approved", "pending"]
    _, told = hooked.telegram.answers[-1]
    assert told is not None and "Already approved by alice" in told


async def test_a_per_call_press_never_redraws_the_batch_card_as_that_one_call(
    served: Served,
) -> None:
    """A per-call button names one request; the pressed card is still the whole batch.

    The redraw of pressed cards the server never learnt (a duplicate send)
    must leave batch cards to the batch's own update pass, or the batch card
    briefly, or for good if that edit lands last, becomes one call's card.
    """
    _, ids = await served.ask_batch("deploy", "deploy", "deploy")
    alices = await served.card(ALICE, ids[0])
    await served.press(ALICE, alices, "✅ 2")
    await until(lambda: "✅ 2" not in labels(alices))
    await served.settle()
    assert len(alices.versions) >= 2
    assert all(version.count("deploy") == 3 for version in alices.versions), alices.versions
