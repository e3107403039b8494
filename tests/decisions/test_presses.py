"""A decision's button pressed in a chat (decisions.presses): read once, decided once.

The chat channels hand the buttons that decide to :func:`press` with the
button's data as it arrived; what it decides, and what a button no card
sends is told, must not depend on the channel.
"""

from __future__ import annotations

from tapgate.decisions.buttons import (
    batch_postback_data,
    postback_data,
    revoke_postback_data,
)
from tapgate.decisions.presses import press
from tapgate.decisions.texts import NO_LONGER_VALID
from tapgate.gate import Gate, ToolCall
from tests.decisions.rule_kit import ask


async def test_a_request_button_decides_that_request_as_the_tapper_asked(gate: Gate) -> None:
    request = await ask(gate, "restart")
    data = postback_data("deny", request.id)
    reasons: list[str] = []

    def reason(action: object) -> str:
        reasons.append(str(action))
        return "not now"

    pressed = await press(
        gate, channel="line", user_id="LB", data=data, event="ev-1", reason=reason
    )
    assert (pressed.action, pressed.target, pressed.outcome.kind) == ("deny", request.id, "applied")
    assert pressed.said == pressed.outcome.message and pressed.said
    decided = await gate.get_request(request.id)
    assert (decided.status, decided.resolved_by, decided.resolution_reason) == (
        "denied",
        "bob",
        "not now",
    )
    assert reasons == ["deny"]  # asked once, for the action pressed


async def test_a_redelivered_press_decides_nothing_and_says_nothing(gate: Gate) -> None:
    request = await ask(gate, "restart")
    data = postback_data("approve", request.id)
    first = await press(gate, channel="line", user_id="LA", data=data, event="ev-1")
    again = await press(gate, channel="line", user_id="LA", data=data, event="ev-1")
    assert first.outcome.applied
    assert (again.action, again.outcome.kind, again.said) == ("approve", "duplicate", None)


async def test_a_refused_press_is_told_why(gate: Gate) -> None:
    request = await ask(gate, "restart")
    data = postback_data("approve", request.id)
    pressed = await press(gate, channel="line", user_id="LC", data=data, event="ev-1")
    assert pressed.outcome.kind == "not_approver" and pressed.said == pressed.outcome.message
    assert (await gate.get_request(request.id)).is_pending


async def test_a_batch_button_decides_the_batch(gate: Gate) -> None:
    calls = [ToolCall(tool="restart", arguments={"n": i}, agent="ci") for i in range(2)]
    ticket = await gate.submit_many(calls)
    data = batch_postback_data("deny_all", ticket.id)
    pressed = await press(
        gate, channel="line", user_id="LA", data=data, event="ev-1", reason=lambda _: "batch no"
    )
    assert (pressed.action, pressed.target, pressed.outcome.kind) == (
        "deny_all",
        ticket.id,
        "applied",
    )
    for t in ticket.tickets:
        assert t.request is not None
        decided = await gate.get_request(t.request.id)
        assert (decided.status, decided.resolution_reason) == ("denied", "batch no")


async def test_a_button_no_card_sends_is_refused_once(gate: Gate) -> None:
    for data in ("v=2&a=approve&r=x", revoke_postback_data("g1"), None, "&&&"):
        event = f"ev-{data}"
        pressed = await press(gate, channel="line", user_id="LA", data=data, event=event)
        assert (pressed.action, pressed.target) == (None, "")
        assert (pressed.outcome.kind, pressed.said) == ("unknown_button", NO_LONGER_VALID)
        again = await press(gate, channel="line", user_id="LA", data=data, event=event)
        assert (again.outcome.kind, again.said) == ("duplicate", None)
