"""A batch card's own buttons (decisions.batch_taps): every open call, each on its own terms.

"restart" is alice's and bob's, "billing" alice's and carol's (carol owns the
agent), "purge" alice's alone. Each call of a batch is checked against its own
approvers; the sentence says what happened to every call.
"""

from __future__ import annotations

from tapgate.decisions.taps import check_batch_tap, tap_batch
from tapgate.decisions.taps import tap as decide
from tapgate.decisions.texts import BATCH_NOT_FOUND, NOT_APPROVER_BATCH
from tapgate.gate import Gate, ToolCall
from tapgate.gate.batching import BatchTicket
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Request
from tests.decisions.rule_kit import audit, batch_tap, refusals, tap


async def batch(gate: Gate, *tools: str, session: str | None = None) -> tuple[str, list[Request]]:
    """One batch of ``tools`` (each its own arguments); its id and its requests, in order."""
    calls = [
        ToolCall(tool=t, arguments={"n": i}, agent="ci", session=session)
        for i, t in enumerate(tools)
    ]
    ticket: BatchTicket = await gate.submit_many(calls)
    requests = [t.request for t in ticket.tickets]
    assert all(r is not None for r in requests)
    return ticket.id, [r for r in requests if r is not None]


async def statuses(gate: Gate, requests: list[Request]) -> list[tuple[str, str | None]]:
    return [((r := await gate.get_request(q.id)).status, r.resolved_by) for q in requests]


async def test_approve_all_decides_each_call_against_its_own_approvers(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "restart", "billing", "purge")
    outcome = await tap_batch(gate, batch_tap("bob", "approve_all", batch_id), event="ev-1")
    assert outcome.kind == "applied" and outcome.approver == "bob"
    assert outcome.message == f"Batch {batch_id[:8]}: 1 approved, 2 are not yours to decide."
    assert await statuses(gate, calls) == [
        ("approved", "bob"),
        ("pending", None),
        ("pending", None),
    ]
    assert [r.status for r in outcome.requests] == ["approved", "pending", "pending"]
    for refused_call in calls[1:]:
        [line] = await refusals(gate, refused_call.id)
        assert (line.actor, line.detail["why"], line.detail["batch"]) == (
            "bob",
            "not an approver",
            batch_id,
        )
    assert ("approved", "bob") in await audit(gate, calls[0].id)
    again = await tap_batch(gate, batch_tap("bob", "approve_all", batch_id), event="ev-1")
    assert (again.kind, again.message) == ("duplicate", "")
    assert [len(await refusals(gate, c.id)) for c in calls[1:]] == [1, 1]  # audited once


async def test_approve_all_leaves_calls_decided_before_as_they_were(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "restart", "restart", "restart")
    assert (await decide(gate, tap("alice", "approve", calls[0]))).applied
    assert (await decide(gate, tap("bob", "deny", calls[1]))).applied
    outcome = await tap_batch(gate, batch_tap("alice", "approve_all", batch_id))
    assert outcome.kind == "applied"
    assert outcome.message == (
        f"Batch {batch_id[:8]}: 1 approved, 1 was already approved by alice, "
        "1 was already denied by bob."
    )
    assert await statuses(gate, calls) == [
        ("approved", "alice"),
        ("denied", "bob"),
        ("approved", "alice"),
    ]
    assert await refusals(gate, calls[1].id) == []  # a decided call is not tapped again


async def test_approve_all_when_everything_was_decided_decides_nothing(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "restart", "restart")
    for call in calls:
        assert (await decide(gate, tap("bob", "deny", call))).applied
    outcome = await tap_batch(gate, batch_tap("alice", "approve_all", batch_id))
    assert outcome.kind == "already"
    assert (
        outcome.message == f"Batch {batch_id[:8]}: nothing decided; 2 were already denied by bob."
    )


async def test_approve_all_after_the_deadline_expires_the_calls_instead(
    gate: Gate, clock: ManualClock
) -> None:
    batch_id, calls = await batch(gate, "restart", "restart")
    clock.advance(600)  # no sweep has run
    checked = await check_batch_tap(gate, batch_tap("alice", "approve_all", batch_id))
    assert checked.kind == "already"
    outcome = await tap_batch(gate, batch_tap("alice", "approve_all", batch_id))
    assert outcome.kind == "already"
    assert outcome.message == f"Batch {batch_id[:8]}: nothing decided; 2 have expired."
    assert [s for s, _ in await statuses(gate, calls)] == ["expired", "expired"]


async def test_a_strangers_approve_all_changes_nothing_and_is_audited_per_call(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "restart", "purge")
    checked = await check_batch_tap(gate, batch_tap("dave", "approve_all", batch_id))
    assert (checked.kind, checked.message) == ("not_approver", NOT_APPROVER_BATCH)
    outcome = await tap_batch(gate, batch_tap("dave", "approve_all", batch_id))
    assert (outcome.kind, outcome.message) == ("not_approver", NOT_APPROVER_BATCH)
    assert [s for s, _ in await statuses(gate, calls)] == ["pending", "pending"]
    for call in calls:  # once by the check, once by the tap
        assert [line.actor for line in await refusals(gate, call.id)] == ["dave", "dave"]


async def test_check_names_the_open_calls_the_tapper_decides(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "restart", "purge", "restart")
    assert (await decide(gate, tap("alice", "approve", calls[2]))).applied
    checked = await check_batch_tap(gate, batch_tap("bob", "deny_all", batch_id))
    assert checked.kind == "ready" and [r.id for r in checked.requests] == [calls[0].id]


async def test_deny_all_denies_every_open_call_with_the_reason(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "restart", "purge")
    outcome = await tap_batch(gate, batch_tap("alice", "deny_all", batch_id), reason="wrong repo")
    assert outcome.message == f"Batch {batch_id[:8]}: 2 denied."
    for call in calls:
        stored = await gate.get_request(call.id)
        assert (stored.status, stored.resolved_by, stored.resolution_reason) == (
            "denied",
            "alice",
            "wrong repo",
        )


async def test_allow_all_for_session_grants_each_call_its_own_fingerprint(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "restart", "restart", session="s-1")
    outcome = await tap_batch(gate, batch_tap("bob", "approve_all_session", batch_id))
    assert outcome.message == f"Batch {batch_id[:8]}: 2 approved for this session."
    assert [(await gate.get_request(c.id)).scope for c in calls] == ["session", "session"]
    grants = await gate.grants()
    assert sorted((g.scope, g.session, g.fingerprint) for g in grants) == sorted(
        ("session", "s-1", c.fingerprint) for c in calls
    )
    same = await gate.submit(
        ToolCall(tool="restart", arguments={"n": 1}, agent="ci", session="s-1")
    )
    assert same.decision is not None and same.decision.source == "grant"
    other = await gate.submit(
        ToolCall(tool="restart", arguments={"n": 7}, agent="ci", session="s-1")
    )
    assert other.request is not None  # another call: its own ask


async def test_an_unknown_batch(gate: Gate) -> None:
    outcome = await tap_batch(gate, batch_tap("alice", "approve_all", "no-such-batch"))
    assert (outcome.kind, outcome.message) == ("not_found", BATCH_NOT_FOUND)
    checked = await check_batch_tap(gate, batch_tap("alice", "approve_all", "no-such-batch"))
    assert (checked.kind, checked.message) == ("not_found", BATCH_NOT_FOUND)


# -- findings: the sentence of an "Approve all" whose approvals the store refuses -------------


async def test_an_owners_approve_all_is_told_why_not(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "billing")
    outcome = await tap_batch(gate, batch_tap("carol", "approve_all", batch_id))
    assert (await gate.get_request(calls[0].id)).is_pending  # refused: that part holds
    [line] = await refusals(gate, calls[0].id)
    assert line.detail["why"] == "self-approval: the agent's owner"
    assert outcome.kind == "self_approval"
    assert "your own agent's: another approver must" in outcome.message


async def test_approve_all_on_a_quorum_call_is_told_what_happened(gate: Gate) -> None:
    batch_id, calls = await batch(gate, "deploy")
    outcome = await tap_batch(gate, batch_tap("alice", "approve_all", batch_id))
    stored = await gate.get_request(calls[0].id)
    assert stored.is_pending
    [line] = await refusals(gate, calls[0].id)
    assert line.detail["why"] == "needs 2 approvals"
    assert outcome.kind == "one_by_one"
    assert "needs several approvals: approve on its own card" in outcome.message
