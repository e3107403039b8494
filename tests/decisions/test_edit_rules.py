"""An edited call is judged again (tapgate.decisions.edits) and approved once, as edited.

"scale" asks alice for ``env=staging``, bob for ``qa`` and both for ``eu``
(quorum 2); ``prod`` is denied and ``dev`` allowed. alice edits a staging
call: what the policy says of the edited call decides whether her approval
stands. test_edits.py covers the form and the reading of typed fields.
"""

from __future__ import annotations

from typing import Any

from tapgate.decisions.edits import approve_edit, prepare
from tapgate.decisions.texts import edit_denied
from tapgate.gate import Gate, ToolCall
from tapgate.gate.models import Request, args_digest
from tapgate.policy import Policy, PolicySpec
from tests.decisions.rule_kit import DIRECTORY, ask, refusals, rule, tap

ARGS: dict[str, Any] = {"env": "staging", "replicas": 2}


async def scale(gate: Gate) -> Request:
    return await ask(gate, "scale", **ARGS)


async def test_an_edit_still_asking_its_editor_is_approved_once_with_the_edited_arguments(
    gate: Gate,
) -> None:
    request = await scale(gate)
    edited = {"env": "staging", "replicas": 3}  # the policy would still ask alice
    outcome = await approve_edit(gate, tap("alice", "approve", request), edited, event="ev-1")
    assert outcome.applied and outcome.request is not None
    assert outcome.message == f"Approved - scale (request {request.id[:8]})"
    stored = await gate.get_request(request.id)
    assert stored.edited_arguments == edited and stored.arguments == ARGS
    assert (stored.scope, stored.resolved_by) == ("once", "alice")
    assert stored.resolution_reason == "approved by alice with edited arguments (replicas)"
    decision = stored.decision()
    assert decision is not None and decision.allowed and decision.edited
    assert decision.arguments == edited
    [line] = [e for e in await gate.audit_log(request_id=request.id) if e.event == "approved"]
    assert line.actor == "alice" and line.detail["edit"]["changed"] == ["replicas"]
    assert line.detail["edit"]["proposed"]["digest"] == args_digest(ARGS)
    assert line.detail["edit"]["edited"]["digest"] == args_digest(edited)
    assert await gate.grants() == []  # an edit approves this call once, nothing remembered
    redelivered = await approve_edit(gate, tap("alice", "approve", request), edited, event="ev-1")
    assert redelivered.kind == "duplicate"
    # the approval is bound to the edited call: the agent's own call asks again
    original = await gate.submit(ToolCall(tool="scale", arguments=ARGS, agent="ci"))
    assert original.request is not None and original.request.id != request.id
    reissued = await gate.submit(ToolCall(tool="scale", arguments=edited, agent="ci"))
    assert reissued.consumed == request.id
    assert reissued.decision is not None and reissued.decision.edited
    once_more = await gate.submit(ToolCall(tool="scale", arguments=edited, agent="ci"))
    assert once_more.request is not None  # consumed: one execution per approval


async def test_an_edit_into_what_the_policy_allows_is_approved(gate: Gate) -> None:
    request = await scale(gate)
    edited = {"env": "dev", "replicas": 2}
    outcome = await approve_edit(gate, tap("alice", "approve", request), edited)
    assert outcome.applied and outcome.request is not None
    assert outcome.request.edited_arguments == edited


async def test_an_edit_the_policy_denies_is_refused_with_its_reason(gate: Gate) -> None:
    request = await scale(gate)
    outcome = await approve_edit(gate, tap("alice", "approve", request), {**ARGS, "env": "prod"})
    assert outcome.kind == "edit_refused"
    assert outcome.message == edit_denied("no prod scaling")
    assert outcome.message == "The policy does not allow the edited call: no prod scaling"
    assert (await gate.get_request(request.id)).is_pending
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"]) == ("alice", outcome.message)
    assert line.detail["edit"]["edited"]["arguments"]["env"] == "prod"


async def test_an_edit_that_would_go_to_other_approvers_is_refused(gate: Gate) -> None:
    request = await scale(gate)
    outcome = await approve_edit(gate, tap("alice", "approve", request), {**ARGS, "env": "qa"})
    assert (outcome.kind, outcome.message) == (
        "edit_refused",
        edit_denied("the edited call goes to other approvers (rule policy.rules[8])"),
    )
    assert (await gate.get_request(request.id)).is_pending


async def test_an_edit_that_would_need_a_quorum_is_refused(gate: Gate) -> None:
    request = await scale(gate)
    outcome = await approve_edit(gate, tap("alice", "approve", request), {**ARGS, "env": "eu"})
    assert (outcome.kind, outcome.message) == (
        "edit_refused",
        edit_denied("the edited call needs 2 approvals"),
    )


async def test_an_edit_that_changes_nothing_is_a_plain_approval(gate: Gate) -> None:
    request = await scale(gate)
    outcome = await approve_edit(gate, tap("alice", "approve", request), dict(ARGS))
    assert outcome.applied
    stored = await gate.get_request(request.id)
    assert stored.edited_arguments is None and stored.resolution_reason is None
    decision = stored.decision()
    assert decision is not None and not decision.edited


async def test_prepare_judges_before_anything_is_decided(gate: Gate) -> None:
    request = await scale(gate)
    fields = {"env": "arg0", "replicas": "arg1"}  # the form's ids, in key order
    ok = await prepare(gate, tap("alice", "approve", request), {fields["env"]: "dev"})
    assert ok.arguments == {"env": "dev", "replicas": 2} and ok.errors == {}
    refused = await prepare(gate, tap("alice", "approve", request), {fields["env"]: "prod"})
    assert refused.arguments is None and refused.errors == {"": edit_denied("no prod scaling")}
    assert (await gate.get_request(request.id)).is_pending
    assert [e.detail["why"] for e in await refusals(gate, request.id)] == [
        edit_denied("no prod scaling")
    ]


async def test_the_edit_is_judged_again_by_the_policy_in_force_when_it_is_approved(
    gate: Gate,
) -> None:
    """A form prepared under one policy and submitted after a restart with another."""
    request = await scale(gate)
    edited = {"env": "dev", "replicas": 2}
    assert (await prepare(gate, tap("alice", "approve", request), {"arg0": "dev"})).arguments
    frozen = rule(1, "scale", action="deny", args={"env": "dev"}, reason="dev is frozen")
    stricter = Policy(PolicySpec(rules=(rule(0, "scale", approvers=("alice",)), frozen)))
    async with Gate(
        store=gate.store, policy=stricter, directory=DIRECTORY, clock=gate.clock
    ) as after:
        outcome = await approve_edit(after, tap("alice", "approve", request), edited)
    assert (outcome.kind, outcome.message) == ("edit_refused", edit_denied("dev is frozen"))
    assert (await gate.get_request(request.id)).is_pending


async def test_a_stranger_is_told_only_that_they_are_not_an_approver(gate: Gate) -> None:
    request = await scale(gate)
    outcome = await approve_edit(gate, tap("dave", "approve", request), {**ARGS, "env": "prod"})
    assert outcome.kind == "not_approver"  # not what the policy thinks of the edit
    [line] = await refusals(gate, request.id)
    assert (line.actor, line.detail["why"]) == ("dave", "not an approver")
