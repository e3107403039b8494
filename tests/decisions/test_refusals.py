"""Refused taps (tapgate.decisions.refusals and texts): the sentence told, and the audit line.

Every refusal names the tapper (or ``channel:user_id`` for a stranger) and
why; the request stays as it was. "restart" has two approvers, alice and bob;
dave is an approver of other things only.
"""

from __future__ import annotations

import dataclasses

from tapgate.decisions.taps import check, refuse
from tapgate.decisions.taps import tap as decide
from tapgate.decisions.texts import NOT_APPROVER, NOT_FOUND, NOT_QUESTION
from tapgate.gate import Gate
from tapgate.gate.clock import ManualClock
from tests.decisions.rule_kit import ask, audit, refusals, tap


async def test_an_approver_of_other_things_is_refused_and_audited(gate: Gate) -> None:
    request = await ask(gate, "restart")
    outcome = await decide(gate, tap("dave", "approve", request))
    assert (outcome.kind, outcome.message, outcome.approver) == (
        "not_approver",
        NOT_APPROVER,
        "dave",
    )
    assert (await gate.get_request(request.id)).is_pending
    [line] = await refusals(gate, request.id)
    assert line.actor == "dave"
    assert {k: line.detail[k] for k in ("why", "wanted", "channel", "user_id")} == {
        "why": "not an approver",
        "wanted": "approved",
        "channel": "slack",
        "user_id": "UD",
    }


async def test_a_stranger_is_audited_by_channel_and_user_id(gate: Gate) -> None:
    request = await ask(gate, "restart")
    outcome = await decide(gate, tap("X", "deny", request, channel="line"))
    assert (outcome.kind, outcome.approver) == ("not_approver", None)
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["wanted"], line.detail["why"]) == (
        "line:LX",
        "denied",
        "not an approver",
    )


async def test_a_second_tap_is_told_who_decided_and_when(gate: Gate, clock: ManualClock) -> None:
    request = await ask(gate, "restart")
    clock.advance(65)
    assert (await decide(gate, tap("alice", "approve", request))).applied
    clock.advance(60)
    late = await decide(gate, tap("bob", "deny", request))
    assert late.kind == "already"
    assert late.message == "Already approved by alice at 00:01 UTC - restart."
    assert late.request is not None and late.request.resolved_by == "alice"
    stored = await gate.get_request(request.id)
    assert (stored.status, stored.resolved_by) == ("approved", "alice")
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"], line.detail["wanted"]) == (
        "bob",
        "already approved by alice",
        "denied",
    )


async def test_a_tap_after_the_deadline_is_refused_before_any_sweep(
    gate: Gate, clock: ManualClock
) -> None:
    request = await ask(gate, "restart")
    clock.advance(600)  # exactly at expires_at: no longer open
    assert (await gate.get_request(request.id)).status == "pending"  # nothing swept it
    checked = await check(gate, tap("alice", "approve", request))
    assert checked.kind == "expired"
    outcome = await decide(gate, tap("alice", "approve", request))
    assert outcome.kind == "expired" and not outcome.applied
    assert outcome.message == f"This request expired - restart (request {request.id[:8]})."
    assert outcome.request is not None and outcome.request.status == "expired"
    stored = await gate.get_request(request.id)
    assert stored.status == "expired" and stored.resolved_by != "alice"
    lines = await audit(gate, request.id)
    assert ("refused", "alice") in lines and ("approved", "alice") not in lines
    [line] = await refusals(gate, request.id)
    assert line.detail["why"] == "expired"
    again = await decide(gate, tap("bob", "deny", request))  # the tap expired it: still expired
    assert again.kind == "expired"


async def test_a_tap_a_moment_before_the_deadline_still_decides(
    gate: Gate, clock: ManualClock
) -> None:
    request = await ask(gate, "restart")
    clock.advance(599.9)
    assert (await decide(gate, tap("alice", "approve", request))).applied


async def test_a_tap_on_a_request_that_does_not_exist(gate: Gate) -> None:
    outcome = await decide(gate, tap("alice", "approve", "no-such-request"))
    assert (outcome.kind, outcome.message, outcome.request) == ("not_found", NOT_FOUND, None)
    checked = await check(gate, tap("alice", "deny", "no-such-request"))
    assert (checked.kind, checked.message) == ("not_found", NOT_FOUND)


async def test_a_redelivered_event_does_nothing_and_says_nothing(gate: Gate) -> None:
    request = await ask(gate, "restart")
    assert (await decide(gate, tap("alice", "approve", request), event="ev-1")).applied
    # the same event id again, even dressed as another answer: nothing done, nothing said
    again = await decide(gate, tap("alice", "deny", request), event="ev-1")
    assert (again.kind, again.message) == ("duplicate", "")
    assert await audit(gate, request.id) == [("requested", "ci"), ("approved", "alice")]


async def test_a_redelivered_refusal_is_audited_once(gate: Gate) -> None:
    request = await ask(gate, "restart")
    assert (
        await decide(gate, tap("dave", "approve", request), event="ev-2")
    ).kind == "not_approver"
    assert (await decide(gate, tap("dave", "approve", request), event="ev-2")).kind == "duplicate"
    assert len(await refusals(gate, request.id)) == 1


async def test_event_ids_are_per_channel(gate: Gate) -> None:
    first, second = await ask(gate, "restart", n=1), await ask(gate, "restart", n=2)
    assert (await decide(gate, tap("alice", "approve", first), event="ev-3")).applied
    on_line = await decide(gate, tap("bob", "approve", second, channel="line"), event="ev-3")
    assert on_line.applied  # LINE's ev-3 is not Slack's


async def test_a_surface_refusal_is_audited_with_its_reason_and_once_per_event(
    gate: Gate,
) -> None:
    request = await ask(gate, "restart")
    elsewhere = dataclasses.replace(tap("alice", "approve", request), team="T-OTHER")
    outcome = await refuse(gate, elsewhere, why="another workspace", event="ev-4")
    assert (outcome.kind, outcome.message) == ("not_approver", NOT_APPROVER)
    assert (await refuse(gate, elsewhere, why="another workspace", event="ev-4")).kind == (
        "duplicate"
    )
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"], line.detail["team"]) == (
        "alice",
        "another workspace",
        "T-OTHER",
    )
    assert (await gate.get_request(request.id)).is_pending


async def test_reply_on_a_tool_call_is_refused_and_audited(gate: Gate) -> None:
    request = await ask(gate, "restart")
    outcome = await decide(gate, tap("alice", "reply", request), reason="yes please")
    assert (outcome.kind, outcome.message) == ("not_question", NOT_QUESTION)
    assert (await gate.get_request(request.id)).is_pending
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"]) == ("alice", "not a question")


async def test_check_before_a_dialog_audits_a_stranger_and_lets_an_approver_through(
    gate: Gate,
) -> None:
    request = await ask(gate, "restart")
    ready = await check(gate, tap("bob", "deny", request))
    assert ready.kind == "ready" and ready.request is not None and ready.request.id == request.id
    assert await refusals(gate, request.id) == []  # a check that lets through audits nothing
    refused = await check(gate, tap("dave", "deny", request))
    assert (refused.kind, refused.message) == ("not_approver", NOT_APPROVER)
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"], line.detail["wanted"]) == (
        "dave",
        "not an approver",
        "denied",
    )


async def test_a_tap_on_a_missing_request_is_audited(gate: Gate) -> None:
    assert (await decide(gate, tap("dave", "approve", "no-such-request"))).kind == "not_found"
    forged = "x" * 300  # longer than any request id the audit's column holds
    assert (await decide(gate, tap("dave", "approve", forged))).kind == "not_found"
    lines = [e for e in await gate.audit_log() if e.event == "refused"]
    assert [(e.actor, e.request_id) for e in lines] == [("dave", "no-such-request"), ("dave", None)]
    assert lines[0].detail["why"] == "no such request"
    assert lines[1].detail["request_id"] == forged
