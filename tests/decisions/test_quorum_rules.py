"""Quorum as a rule (tapgate.decisions.quorum through taps.tap): counted once, decided by the Nth.

"deploy" needs two of the on-call approvers (alice, bob, carol). The end-to-end
version through signed Slack and LINE taps is test_quorum.py; here each rule
is checked on the outcome, the request as stored and the audit lines.
"""

from __future__ import annotations

from tapgate.decisions.quorum import Progress, approve
from tapgate.decisions.taps import tap as decide
from tapgate.decisions.texts import progress
from tapgate.gate import Gate
from tapgate.gate.clock import ManualClock
from tests.decisions.rule_kit import ask, audit, refusals, tap


async def test_two_approvals_decide_and_the_first_reports_its_progress(gate: Gate) -> None:
    request = await ask(gate, "deploy")
    assert request.quorum == 2 and request.approvers == ("alice", "bob", "carol")
    first = await decide(gate, tap("alice", "approve", request))
    assert first.kind == "partial" and not first.applied
    assert (
        first.message
        == f"Approval counted, 1 of 2: alice approved - deploy (request {request.id[:8]})."
    )
    assert first.request is not None and first.request.approvals == ("alice",)
    stored = await gate.get_request(request.id)
    assert stored.status == "pending" and stored.approvals == ("alice",)
    assert progress(stored) == "1 of 2: alice approved"
    second = await decide(gate, tap("bob", "approve", request))
    assert second.kind == "applied" and second.request is not None
    assert second.message == f"Approved - deploy (request {request.id[:8]})"
    decided = await gate.get_request(request.id)
    assert (decided.status, decided.resolved_by) == ("approved", "bob")
    assert decided.resolution_reason == "approved by alice and bob (quorum 2)"
    assert await audit(gate, request.id) == [
        ("requested", "ci"),
        ("approval", "alice"),
        ("approved", "bob"),
    ]
    [counted] = [e for e in await gate.audit_log(request_id=request.id) if e.event == "approval"]
    assert counted.detail["approvals"] == ["alice"] and counted.detail["quorum"] == 2


async def test_the_same_approver_is_counted_once(gate: Gate) -> None:
    request = await ask(gate, "deploy")
    assert (await decide(gate, tap("alice", "approve", request))).kind == "partial"
    again = await decide(gate, tap("alice", "approve", request, channel="line"))  # another surface
    assert again.kind == "counted"
    assert again.message == "Your approval was already counted, 1 of 2: alice approved - deploy."
    stored = await gate.get_request(request.id)
    assert stored.status == "pending" and stored.approvals == ("alice",)
    [refused] = await refusals(gate, request.id)
    assert (
        refused.actor == "alice"
        and refused.detail["why"] == "already approved by them: counted once"
    )
    assert refused.detail["channel"] == "line"


async def test_a_redelivered_approval_is_neither_counted_nor_audited_twice(gate: Gate) -> None:
    request = await ask(gate, "deploy")
    assert (await decide(gate, tap("alice", "approve", request), event="ev-1")).kind == "partial"
    redelivered = await decide(gate, tap("alice", "approve", request), event="ev-1")
    assert (redelivered.kind, redelivered.message) == ("duplicate", "")
    assert await audit(gate, request.id) == [("requested", "ci"), ("approval", "alice")]


async def test_one_deny_decides_at_once_whatever_was_counted(gate: Gate) -> None:
    request = await ask(gate, "deploy")
    assert (await decide(gate, tap("alice", "approve", request))).kind == "partial"
    denied = await decide(gate, tap("carol", "deny", request), reason="not today")
    assert denied.kind == "applied" and denied.request is not None
    assert denied.message == f"Denied - deploy (request {request.id[:8]}): not today"
    stored = await gate.get_request(request.id)
    assert (stored.status, stored.resolved_by, stored.resolution_reason) == (
        "denied",
        "carol",
        "not today",
    )
    late = await decide(gate, tap("bob", "approve", request))
    assert late.kind == "already"
    assert late.message == "Already denied by carol at 00:00 UTC - deploy."
    assert (await gate.get_request(request.id)).status == "denied"
    [refused] = await refusals(gate, request.id)
    assert (refused.actor, refused.detail["why"]) == ("bob", "already denied by carol")


async def test_a_deny_with_no_approval_yet_decides_too(gate: Gate) -> None:
    request = await ask(gate, "deploy")
    denied = await decide(gate, tap("bob", "deny", request))
    assert denied.applied and (await gate.get_request(request.id)).status == "denied"


async def test_an_approval_from_outside_the_quorum_counts_for_nothing(gate: Gate) -> None:
    request = await ask(gate, "deploy")
    refused = await decide(gate, tap("dave", "approve", request))
    assert refused.kind == "not_approver"
    stored = await gate.get_request(request.id)
    assert stored.approvals == () and await gate.store.approvals.of(request.id) == []
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"]) == ("dave", "not an approver")
    # alice and bob still make the quorum on their own: dave was never counted
    assert (await decide(gate, tap("alice", "approve", request))).kind == "partial"
    assert (await decide(gate, tap("bob", "approve", request))).applied


async def test_an_approval_after_the_deadline_is_refused_and_not_counted(
    gate: Gate, clock: ManualClock
) -> None:
    request = await ask(gate, "deploy")
    assert (await decide(gate, tap("alice", "approve", request))).kind == "partial"
    clock.advance(601)  # past the 600 s timeout; no sweep has run
    late = await decide(gate, tap("bob", "approve", request))
    assert late.kind == "expired"
    assert late.message == f"This request expired - deploy (request {request.id[:8]})."
    stored = await gate.get_request(request.id)
    assert stored.status == "expired" and stored.approvals == ("alice",)
    [refused] = await refusals(gate, request.id)
    assert (refused.actor, refused.detail["why"]) == ("bob", "expired")


async def test_approve_returns_progress_or_the_decided_request(gate: Gate) -> None:
    """The module's own contract: a :class:`Progress` short of the quorum, else the request."""
    request = await ask(gate, "deploy")
    first = await approve(gate, request.id, by="alice")
    assert isinstance(first, Progress) and first.kind == "partial"
    assert first.request.approvals == ("alice",)
    repeat = await approve(gate, request.id, by="alice")
    assert isinstance(repeat, Progress) and repeat.kind == "counted"
    decided = await approve(gate, request.id, by="carol")
    assert not isinstance(decided, Progress)
    assert decided.status == "approved" and decided.approvals == ("alice", "carol")
    decision = decided.decision()
    assert decision is not None and decision.allowed and decision.source == "approver"
