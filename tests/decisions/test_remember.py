"""Remembering from a tap (tapgate.decisions.remember through taps.tap): session and always grants.

A grant covers the request's own fingerprint, for its session ("Allow for
session") or for ``always_ttl`` ("Always allow"), and only where the policy
lets an approver remember: "rotate_keys" allows once and session, "purge"
once only, "tag" keeps an "always" for two days. The end-to-end version
through the chat is test_always.py.
"""

from __future__ import annotations

from datetime import timedelta

from tapgate.decisions.remember import offer_for, reach_for
from tapgate.decisions.taps import tap as decide
from tapgate.decisions.taps import tap_batch
from tapgate.decisions.texts import NOT_REMEMBERED
from tapgate.gate import Gate, ToolCall
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Request, Ticket
from tapgate.policy.rules import DEFAULT_ALWAYS_TTL
from tests.decisions.rule_kit import DAY, POLICY, ask, batch_tap, refusals, tap


async def again(gate: Gate, request: Request, *, session: str | None = None) -> Ticket:
    """The same call once more, after the agent ran the first (its approval consumed)."""
    await gate.consume(request.id)
    call = ToolCall(tool=request.tool, arguments=request.arguments, agent="ci", session=session)
    return await gate.submit(call)


def granted(ticket: Ticket) -> bool:
    return ticket.decision is not None and ticket.decision.source == "grant"


async def test_allow_for_session_grants_the_call_in_its_session_only(gate: Gate) -> None:
    request = await ask(gate, "restart", session="s-1")
    outcome = await decide(gate, tap("alice", "approve_session", request))
    assert outcome.applied and outcome.request is not None and outcome.request.scope == "session"
    assert outcome.message == f"Approved for this session - restart (request {request.id[:8]})"
    [grant] = await gate.grants()
    assert (grant.scope, grant.session, grant.created_by, grant.request_id) == (
        "session",
        "s-1",
        "alice",
        request.id,
    )
    assert (grant.tool, grant.fingerprint, grant.expires_at) == (
        "restart",
        request.fingerprint,
        None,
    )
    assert granted(await again(gate, request, session="s-1"))
    assert not granted(await again(gate, request, session="s-2"))  # another session asks


async def test_always_grants_the_call_for_the_rules_lifetime(
    gate: Gate, clock: ManualClock
) -> None:
    request = await ask(gate, "tag", session="s-1")
    assert offer_for(POLICY, request).always_ttl == 2 * DAY
    outcome = await decide(gate, tap("alice", "approve_always", request))
    assert outcome.applied
    assert outcome.message == f"Approved always - tag (request {request.id[:8]})"
    [grant] = await gate.grants()
    assert (grant.scope, grant.session) == ("always", None)
    assert grant.expires_at == clock.now() + timedelta(days=2)
    assert granted(await again(gate, request, session="s-other"))  # any session
    clock.advance(2 * DAY)
    assert await gate.grants() == []
    assert not granted(await again(gate, request, session="s-1"))  # the grant ended: asks again


async def test_always_without_a_rule_lifetime_takes_the_default(
    gate: Gate, clock: ManualClock
) -> None:
    request = await ask(gate, "restart")
    assert (await decide(gate, tap("bob", "approve_always", request))).applied
    [grant] = await gate.grants()
    assert grant.expires_at == clock.now() + timedelta(seconds=DEFAULT_ALWAYS_TTL)


async def test_always_is_refused_where_the_policy_keeps_it_to_once_and_session(gate: Gate) -> None:
    request = await ask(gate, "rotate_keys", session="s-1")
    offer = offer_for(POLICY, request)
    assert offer.session and not offer.always  # the card offers no "Always" button
    outcome = await decide(gate, tap("alice", "approve_always", request))  # a stale or forged one
    assert (outcome.kind, outcome.message, outcome.approver) == (
        "not_remembered",
        NOT_REMEMBERED,
        "alice",
    )
    assert (await gate.get_request(request.id)).is_pending and await gate.grants() == []
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"], line.detail["wanted"]) == (
        "alice",
        "remembering not allowed",
        "approved",
    )
    session = await decide(gate, tap("alice", "approve_session", request))  # allowed
    assert session.applied and [g.scope for g in await gate.grants()] == ["session"]


async def test_session_is_refused_where_the_policy_keeps_it_to_once(gate: Gate) -> None:
    request = await ask(gate, "purge", session="s-1")
    assert not offer_for(POLICY, request).session
    refused = await decide(gate, tap("alice", "approve_session", request))
    assert refused.kind == "not_remembered" and (await gate.get_request(request.id)).is_pending
    once = await decide(gate, tap("alice", "approve", request))
    assert once.applied and once.request is not None and once.request.scope == "once"
    assert await gate.grants() == []
    assert not granted(await again(gate, request, session="s-1"))


async def test_a_session_tap_on_a_call_without_a_session_grants_nothing(gate: Gate) -> None:
    """reach_for: such a tap "stays what it always was: an approval that counts once"."""
    request = await ask(gate, "purge")  # remember: once, and no session either
    assert not reach_for(POLICY, request, "session").refused
    outcome = await decide(gate, tap("alice", "approve_session", request))
    assert outcome.applied and await gate.grants() == []
    assert not granted(await again(gate, request))


async def test_a_quorum_call_is_never_remembered(gate: Gate) -> None:
    request = await ask(gate, "deploy", session="s-1")
    assert not request.grantable and not offer_for(POLICY, request).always
    assert (await decide(gate, tap("alice", "approve_always", request))).kind == "not_remembered"
    assert (await decide(gate, tap("alice", "approve_session", request))).kind == "partial"
    assert (await decide(gate, tap("bob", "approve_session", request))).applied
    assert await gate.grants() == []


async def test_the_grant_covers_the_fingerprint_not_other_arguments(gate: Gate) -> None:
    request = await ask(gate, "restart", session="s-1", n=1)
    assert (await decide(gate, tap("alice", "approve_session", request))).applied
    other = await gate.submit(
        ToolCall(tool="restart", arguments={"n": 2}, agent="ci", session="s-1")
    )
    assert other.request is not None  # the default fingerprint is every argument


async def test_allow_all_for_session_remembers_only_what_the_policy_lets_be_remembered(
    gate: Gate,
) -> None:
    """A call whose rule allows remembering it once only is approved once, with no grant."""
    calls = [
        ToolCall(tool="restart", arguments={"n": 1}, agent="ci", session="s-1"),
        ToolCall(tool="purge", arguments={"n": 2}, agent="ci", session="s-1"),
    ]
    ticket = await gate.submit_many(calls)
    purge = ticket.tickets[1].request
    assert purge is not None and not offer_for(POLICY, purge).session
    outcome = await tap_batch(gate, batch_tap("alice", "approve_all_session", ticket.id))
    assert outcome.kind == "applied"
    assert [g.tool for g in await gate.grants()] == ["restart"]
    assert (await gate.get_request(purge.id)).status == "approved"
