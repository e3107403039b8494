"""A deny's reason awaited as text (tapgate.decisions.typed_reasons): four ways to end the wait.

LINE has no dialogs: "Deny…" asks for the reason and the approver's next text
message is it. Here :class:`Reasons` is driven directly, as LINE's webhook
drives it, with alice's and bob's LINE ids (``LA``, ``LB``) and the window of
rule_kit.WINDOW (5 minutes); the heartbeat's duty is :meth:`Reasons.lapse_due`.
"""

from __future__ import annotations

import pytest

from tapgate.decisions.buttons import deny_reason_postback_data, postback_data
from tapgate.decisions.questions import TypedAnswer, answer_typed
from tapgate.decisions.taps import ANSWER_MAX, Tap
from tapgate.decisions.taps import tap as decide
from tapgate.decisions.texts import NOT_APPROVER, reason_too_long
from tapgate.decisions.typed_reasons import Reasons, asks_for_text
from tapgate.gate import Gate
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Request
from tests.decisions.rule_kit import WINDOW, ask, refusals, tap


@pytest.fixture
def reasons(gate: Gate) -> Reasons:
    return Reasons(gate, channel="line", window=WINDOW)


def deny(who: str, request: Request) -> Tap:
    """``who``'s "Deny…" on LINE, which asks for the reason."""
    return tap(who, "deny", request, channel="line")


async def denial(gate: Gate, request: Request) -> tuple[str, str | None, str | None]:
    stored = await gate.get_request(request.id)
    return stored.status, stored.resolved_by, stored.resolution_reason


async def waiting(gate: Gate, approver: str) -> str | None:
    """The state of ``approver``'s pending reason, ``None`` when there is none."""
    pending = await gate.store.reasons.of(approver)
    return None if pending is None else pending.state


async def test_the_next_text_within_the_window_is_the_reason(
    gate: Gate, reasons: Reasons, clock: ManualClock
) -> None:
    request = await ask(gate, "restart")
    asked = await reasons.ask(deny("alice", request), event="tap-1")
    assert asked == (
        f"Type the reason (or 'skip') to deny restart (request {request.id[:8]}) within "
        "5 minutes; after that, or if you tap another button, it is denied without a reason."
    )
    assert (await gate.get_request(request.id)).is_pending  # others may still decide meanwhile
    clock.advance(WINDOW - 1)
    said = await reasons.typed(user_id="LA", text="  flaky tests  ", event="text-1")
    assert said == f"Denied - restart (request {request.id[:8]}): flaky tests"
    assert await denial(gate, request) == ("denied", "alice", "flaky tests")
    [line] = [e for e in await gate.audit_log(request_id=request.id) if e.event == "denied"]
    assert line.actor == "alice" and line.detail["reason"] == "flaky tests"
    assert await waiting(gate, "alice") is None
    # the same text redelivered, and the next ordinary chat: nothing decided, nothing said
    assert await reasons.typed(user_id="LA", text="  flaky tests  ", event="text-1") is None
    assert await reasons.typed(user_id="LA", text="thanks", event="text-2") is None


async def test_skip_denies_without_a_reason(gate: Gate, reasons: Reasons) -> None:
    request = await ask(gate, "restart")
    await reasons.ask(deny("alice", request), event="tap-2")
    said = await reasons.typed(user_id="LA", text="SKIP", event="text-3")
    assert said == f"Denied - restart (request {request.id[:8]})"
    assert await denial(gate, request) == ("denied", "alice", None)


async def test_a_text_too_long_is_refused_and_the_window_stays_open(
    gate: Gate, reasons: Reasons
) -> None:
    request = await ask(gate, "restart")
    await reasons.ask(deny("alice", request), event="tap-3")
    said = await reasons.typed(user_id="LA", text="x" * (ANSWER_MAX + 1), event="text-4")
    assert said == reason_too_long(ANSWER_MAX)
    assert (await gate.get_request(request.id)).is_pending and await waiting(
        gate, "alice"
    ) == "waiting"
    assert await reasons.typed(user_id="LA", text="shorter", event="text-5") is not None
    assert await denial(gate, request) == ("denied", "alice", "shorter")


async def test_a_tap_elsewhere_ends_it_without_a_reason(gate: Gate, reasons: Reasons) -> None:
    request, other = await ask(gate, "restart", n=1), await ask(gate, "restart", n=2)
    await reasons.ask(deny("alice", request), event="tap-4")
    ended = await reasons.interrupt(user_id="LA", event="tap-5")
    assert ended == f"Denied - restart (request {request.id[:8]})"
    assert await denial(gate, request) == ("denied", "alice", None)
    assert await waiting(gate, "alice") is None
    assert await reasons.typed(user_id="LA", text="too late", event="text-6") is None  # chat now
    assert await denial(gate, request) == ("denied", "alice", None)
    assert (await gate.get_request(other.id)).is_pending  # the tap elsewhere is its own business


async def test_deny_on_another_request_ends_the_first_without_a_reason(
    gate: Gate, reasons: Reasons
) -> None:
    first, second = await ask(gate, "restart", n=1), await ask(gate, "restart", n=2)
    await reasons.ask(deny("alice", first), event="tap-6")
    asked = await reasons.ask(deny("alice", second), event="tap-7")
    assert asked is not None
    told, hint = asked.split("\n")
    assert told == f"Denied - restart (request {first.id[:8]})"
    assert hint.startswith(f"Type the reason (or 'skip') to deny restart (request {second.id[:8]})")
    assert await denial(gate, first) == ("denied", "alice", None)
    assert await reasons.typed(user_id="LA", text="second's reason", event="text-7") is not None
    assert await denial(gate, second) == ("denied", "alice", "second's reason")


async def test_the_window_lapsing_denies_without_a_reason(
    gate: Gate, reasons: Reasons, clock: ManualClock
) -> None:
    request = await ask(gate, "restart")
    await reasons.ask(deny("alice", request), event="tap-8")
    clock.advance(WINDOW - 1)
    assert await reasons.lapse_due() == 0  # not yet
    clock.advance(1)
    assert await reasons.lapse_due() == 1
    assert await denial(gate, request) == ("denied", "alice", None)
    assert await reasons.lapse_due() == 0  # ended once
    assert await reasons.typed(user_id="LA", text="my reason", event="text-8") is None
    assert [e.event for e in await gate.audit_log(request_id=request.id)].count("denied") == 1


async def test_a_text_after_the_window_is_not_the_reason_even_before_the_heartbeat(
    gate: Gate, reasons: Reasons, clock: ManualClock
) -> None:
    request = await ask(gate, "restart")
    await reasons.ask(deny("alice", request), event="tap-9")
    clock.advance(WINDOW)
    said = await reasons.typed(user_id="LA", text="late reason", event="text-9")
    assert said == f"Denied - restart (request {request.id[:8]})"  # denied, not with the text
    assert await denial(gate, request) == ("denied", "alice", None)


async def test_the_window_ends_with_the_request_at_the_latest(
    gate: Gate, clock: ManualClock
) -> None:
    request = await ask(gate, "restart")  # 600 s to live
    long_window = Reasons(gate, channel="line", window=3600)
    clock.advance(300)
    asked = await long_window.ask(deny("alice", request), event="tap-10")
    assert asked is not None and "within 5 minutes" in asked
    pending = await gate.store.reasons.of("alice")
    assert pending is not None and pending.deadline == request.expires_at


async def test_a_redelivered_event_ends_nothing(gate: Gate, reasons: Reasons) -> None:
    earlier, request = await ask(gate, "restart", n=1), await ask(gate, "restart", n=2)
    # an approval applied before the Deny… was tapped; LINE redelivers its event later
    assert (
        await decide(gate, tap("alice", "approve", earlier, channel="line"), event="old")
    ).applied
    await reasons.ask(deny("alice", request), event="tap-11")
    assert await reasons.interrupt(user_id="LA", event="old") is None
    assert (
        await waiting(gate, "alice") == "waiting"
        and (await gate.get_request(request.id)).is_pending
    )
    said = await reasons.typed(user_id="LA", text="still mine", event="text-10")
    assert said == f"Denied - restart (request {request.id[:8]}): still mine"


async def test_a_decision_by_another_approver_ends_the_wait(gate: Gate, reasons: Reasons) -> None:
    request = await ask(gate, "restart")
    await reasons.ask(deny("alice", request), event="tap-12")
    assert (await decide(gate, tap("bob", "approve", request))).applied
    said = await reasons.typed(user_id="LA", text="no!", event="text-11")
    assert said == "Already approved by bob at 00:00 UTC - restart."
    assert await denial(gate, request) == ("approved", "bob", None)
    assert await waiting(gate, "alice") is None
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"], line.detail["reason"]) == (
        "alice",
        "already approved by bob",
        "no!",
    )


async def test_a_strangers_deny_is_refused_and_waits_for_nothing(
    gate: Gate, reasons: Reasons
) -> None:
    request = await ask(gate, "restart")
    assert await reasons.ask(deny("dave", request), event="tap-13") == (NOT_APPROVER)
    assert await reasons.ask(deny("dave", request), event="tap-13") is None
    assert await waiting(gate, "dave") is None
    assert await reasons.typed(user_id="LD", text="deny it", event="text-12") is None
    assert (await gate.get_request(request.id)).is_pending
    [line] = await refusals(gate, request.id)  # audited once: the redelivery said nothing
    assert (line.actor, line.detail["why"]) == ("dave", "not an approver")


def test_deny_and_reply_buttons_ask_for_text_and_others_do_not() -> None:
    """The one reading of "Deny…" and Reply every chat channel shares (asks_for_text)."""
    deny_data = deny_reason_postback_data("r" * 32)
    asked = asks_for_text(channel="line", user_id="LA", data=deny_data)
    assert asked == Tap(channel="line", user_id="LA", action="deny", request_id="r" * 32)
    reply_data = postback_data("reply", "q" * 32)
    asked = asks_for_text(channel="telegram", user_id="7", data=reply_data)
    assert asked == Tap(channel="telegram", user_id="7", action="reply", request_id="q" * 32)
    for other in (postback_data("deny", "r" * 32), "garbage", None):
        assert asks_for_text(channel="line", user_id="LA", data=other) is None


async def test_a_typed_answer_refused_before_the_gate_is_told_once(gate: Gate) -> None:
    """answer_typed: nothing typed, too long, no such question; a redelivery says nothing."""
    empty = await answer_typed(
        gate, channel="line", user_id="LA", reference="3fA9xK2b", text="", event="t-1"
    )
    assert empty == TypedAnswer(reply='Type your answer after "answer 3fA9xK2b:".')
    again = await answer_typed(
        gate, channel="line", user_id="LA", reference="3fA9xK2b", text="", event="t-1"
    )
    assert again == TypedAnswer(reply=None)  # the same event redelivered
    long = await answer_typed(
        gate, channel="line", user_id="LA", reference="3fA9xK2b", text="x" * 2001, event="t-2"
    )
    assert long.reply is not None and long.reply.startswith("That answer is longer than 2000")
    missing = await answer_typed(
        gate, channel="line", user_id="LA", reference="3fA9xK2b", text="yes", event="t-3"
    )
    assert missing.outcome is None and missing.reply is not None and "3fA9xK2b" in missing.reply
