"""Separation of duties: the agent's owner may not approve its calls where the rule says so.

carol owns the agent "ci". "billing" (alice, carol) and "payroll" (on call,
quorum 2) say ``self_approval: false``; "deploy" (on call, quorum 2) keeps the
default, so carol's approval counts there. The end-to-end version through a
signed LINE tap is test_quorum.py.
"""

from __future__ import annotations

from tapgate.decisions.buttons import TapAction
from tapgate.decisions.edits import approve_edit, edit_form, prepare
from tapgate.decisions.taps import tap as decide
from tapgate.decisions.texts import SELF_APPROVAL
from tapgate.gate import Gate
from tests.decisions.rule_kit import ask, refusals, tap


async def test_the_owner_approving_their_agents_call_is_refused_and_audited(gate: Gate) -> None:
    request = await ask(gate, "billing")
    assert request.owner == "carol" and "carol" in request.approvers
    for channel in ("slack", "line"):
        outcome = await decide(gate, tap("carol", "approve", request, channel=channel))
        assert (outcome.kind, outcome.message, outcome.approver) == (
            "self_approval",
            SELF_APPROVAL,
            "carol",
        )
        assert not outcome.applied
    assert (await gate.get_request(request.id)).is_pending
    lines = await refusals(gate, request.id)
    assert [(e.actor, e.detail["why"], e.detail["channel"]) for e in lines] == [
        ("carol", "self-approval: the agent's owner", "slack"),
        ("carol", "self-approval: the agent's owner", "line"),
    ]
    other = await decide(gate, tap("alice", "approve", request))
    assert other.applied and other.request is not None and other.request.resolved_by == "alice"


async def test_the_owner_may_still_deny(gate: Gate) -> None:
    request = await ask(gate, "billing")
    outcome = await decide(gate, tap("carol", "deny", request), reason="not mine to run")
    assert outcome.applied
    stored = await gate.get_request(request.id)
    assert (stored.status, stored.resolved_by) == ("denied", "carol")


async def test_the_owner_cannot_remember_either(gate: Gate) -> None:
    request = await ask(gate, "billing", session="s-1")
    actions: tuple[TapAction, ...] = ("approve_session", "approve_always")
    for action in actions:
        outcome = await decide(gate, tap("carol", action, request))
        assert outcome.kind == "self_approval", action
    assert await gate.grants() == [] and (await gate.get_request(request.id)).is_pending


async def test_the_owner_is_not_counted_towards_a_quorum(gate: Gate) -> None:
    request = await ask(gate, "payroll")
    assert (request.quorum, request.owner) == (2, "carol")
    assert (await decide(gate, tap("carol", "approve", request))).kind == "self_approval"
    assert (await decide(gate, tap("alice", "approve", request))).kind == "partial"
    again = await decide(gate, tap("carol", "approve", request))  # not the second of two
    assert again.kind == "self_approval"
    stored = await gate.get_request(request.id)
    assert stored.is_pending and stored.approvals == ("alice",)
    assert await gate.store.approvals.of(request.id) == ["alice"]
    decided = await decide(gate, tap("bob", "approve", request))
    assert decided.applied and decided.request is not None
    assert decided.request.resolution_reason == "approved by alice and bob (quorum 2)"


async def test_only_where_the_rule_forbids_it(gate: Gate) -> None:
    deploy = await ask(gate, "deploy")  # self_approval left to the default (allowed)
    assert deploy.owner is None
    assert (await decide(gate, tap("carol", "approve", deploy))).kind == "partial"


async def test_only_for_the_agent_they_own(gate: Gate) -> None:
    request = await ask(gate, "billing", agent="nightly")  # nobody owns "nightly"
    assert request.owner is None
    assert (await decide(gate, tap("carol", "approve", request))).applied


async def test_the_owners_edit_is_refused_as_self_approval(gate: Gate) -> None:
    request = await ask(gate, "billing", n=1)
    edited = await approve_edit(gate, tap("carol", "approve", request), {"n": 2})
    assert (edited.kind, edited.message) == ("self_approval", SELF_APPROVAL)
    assert (await gate.get_request(request.id)).is_pending


async def test_the_owner_is_stopped_before_typing_an_edit(gate: Gate) -> None:
    request = await ask(gate, "billing", n=1)
    texts = {f.id: "2" for f in edit_form(request)}
    checked = await prepare(gate, tap("carol", "approve", request), texts)
    assert checked.arguments is None and checked.outcome.kind == "self_approval"
    assert (await gate.get_request(request.id)).is_pending
