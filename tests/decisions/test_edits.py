"""Edit, then approve, in core: the form, reading an edit, the policy's second look, the binding.

The surfaces (Slack's modal, later the web inbox) only translate; what an edit
may change, what the policy says about it and what the approval covers is
decided here, on a real store (SQLite and PostgreSQL).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tapgate.decisions.edits import (
    FIELD_MAX,
    FIELDS_MAX,
    WHOLE,
    approve_edit,
    edit_form,
    not_editable,
    prepare,
    read_edit,
)
from tapgate.decisions.taps import Tap
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, Request, ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.limits import EDIT_MAX_BYTES
from tapgate.policy.masking import MASK
from tapgate.policy.rules import PolicySpec, Rule
from tapgate.store import Store
from tests.factories import make_request

SPEC = PolicySpec(
    rules=(
        Rule(tool="deploy", action="ask", approvers=("oncall",), source="policy.rules[0]"),
        Rule(
            tool="deploy",
            action="deny",
            args={"env": "prod"},
            reason="no prod",
            source="policy.rules[1]",
        ),
        Rule(tool="deploy", action="allow", args={"env": "dev"}, source="policy.rules[2]"),
    ),
    default_timeout=600,
)
DIRECTORY = Directory(
    [
        Approver(name="alice", addresses=(("slack", "UA"),), groups=("oncall",)),
        Approver(name="carol", addresses=(("slack", "UC"),)),
    ],
    channels=("slack",),
)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
ARGS: dict[str, Any] = {
    "env": "staging",
    "replicas": 2,
    "flags": {"canary": True},
    "password": "hunter2-secret",
    "note": "rm\u202e fdsa",
}


def request_of(**overrides: Any) -> Request:
    return make_request(NOW, arguments=overrides.pop("arguments", ARGS), **overrides)


def texts(request: Request, **typed: str | None) -> dict[str, str | None]:
    """The form's texts by field id: as prefilled, with ``typed`` (by argument name) changed."""
    return {f.id: typed.get(f.key, f.text) for f in edit_form(request)}


# -- the form and reading an edit -------------------------------------------------------


def test_the_form_masks_secrets_and_reveals_invisible_characters() -> None:
    fields = {f.key: f for f in edit_form(request_of())}
    assert fields["password"].text == MASK and fields["password"].masked
    assert fields["replicas"].text == "2" and fields["replicas"].json
    assert fields["flags"].text == '{\n  "canary": true\n}'
    assert fields["note"].text == "rm⟨U+202E⟩ fdsa" and not fields["note"].masked
    assert [f.id for f in edit_form(request_of())] == [f"arg{i}" for i in range(5)]


def test_fields_left_as_shown_keep_their_values_secrets_included() -> None:
    request = request_of()
    edited, errors = read_edit(request, texts(request))
    assert errors == {} and edited == ARGS


def test_an_edit_keeps_the_arguments_and_their_types() -> None:
    request = request_of()
    edited, errors = read_edit(
        request, texts(request, env="dev", replicas="3", flags='{"canary": false}', note="")
    )
    assert errors == {}
    assert edited == {**ARGS, "env": "dev", "replicas": 3, "flags": {"canary": False}, "note": ""}
    assert read_edit(request, texts(request, password="new-secret-value"))[0]["password"] == (
        "new-secret-value"
    )


@pytest.mark.parametrize(
    ("key", "typed", "problem"),
    [
        ("replicas", "three", "Not valid JSON."),
        ("replicas", "NaN", "Not valid JSON."),
        ("replicas", '"3"', "same type"),
        ("flags", "[1]", "same type"),
        ("flags", None, "Not valid JSON."),
        ("password", f"x{MASK}", "hides a secret"),
    ],
)
def test_an_edit_that_breaks_a_field_is_refused_per_field(
    key: str, typed: str | None, problem: str
) -> None:
    request = request_of()
    field = next(f for f in edit_form(request) if f.key == key)
    _, errors = read_edit(request, texts(request, **{key: typed}))
    assert list(errors) == [field.id] and problem in errors[field.id]


def test_an_edit_larger_than_the_limit_is_refused() -> None:
    request = request_of(arguments={f"a{i}": "x" for i in range(FIELDS_MAX)})
    big = "y" * (EDIT_MAX_BYTES // FIELDS_MAX + 1)
    _, errors = read_edit(request, {f.id: big for f in edit_form(request)})
    assert "KiB" in errors[WHOLE]


def test_what_cannot_be_edited_says_why() -> None:
    assert not_editable(request_of()) is None
    question = request_of(tool=CONTACT_TOOL, arguments={"message": "hi?"})
    assert "question" in (not_editable(question) or "")
    assert "several approvals" in (not_editable(request_of(quorum=2)) or "")
    assert "no arguments" in (not_editable(request_of(arguments={})) or "")
    many = {f"a{i}": 1 for i in range(FIELDS_MAX + 1)}
    assert "too many" in (not_editable(request_of(arguments=many)) or "")
    assert "too long" in (not_editable(request_of(arguments={"a": "x" * (FIELD_MAX + 1)})) or "")


# -- the policy's second look, and the decision ----------------------------------------


@pytest.fixture
async def gate(store: Store, clock: ManualClock) -> AsyncIterator[Gate]:
    async with Gate(store=store, policy=Policy(SPEC), directory=DIRECTORY, clock=clock) as g:
        yield g


async def ask(gate: Gate, arguments: dict[str, Any] | None = None) -> Request:
    ticket = await gate.submit(ToolCall(tool="deploy", arguments=arguments or ARGS, agent="ci"))
    assert ticket.request is not None
    return ticket.request


def alice(request: Request) -> Tap:
    return Tap(channel="slack", user_id="UA", action="approve", request_id=request.id)


async def test_an_edit_the_policy_denies_is_refused_and_decides_nothing(gate: Gate) -> None:
    request = await ask(gate)
    checked = await prepare(gate, alice(request), texts(request, env="prod"))
    assert checked.arguments is None and "no prod" in checked.errors[WHOLE]
    outcome = await approve_edit(gate, alice(request), {**ARGS, "env": "prod"}, event="e1")
    assert outcome.kind == "edit_refused" and "no prod" in outcome.message
    assert (await gate.get_request(request.id)).is_pending
    again = await approve_edit(gate, alice(request), {**ARGS, "env": "prod"}, event="e1")
    assert again.kind == "duplicate"  # the refused event is remembered: said once
    refused = [e for e in await gate.store.audit_log(request_id=request.id) if e.event == "refused"]
    assert len(refused) == 2 and all(
        e.detail["edit"]["edited"]["arguments"]["env"] == "prod" for e in refused
    )
    assert "hunter2-secret" not in str([e.detail for e in refused])


async def test_an_edit_that_only_asks_or_allows_is_approved_once(gate: Gate) -> None:
    request = await ask(gate)
    edited = {**ARGS, "env": "dev"}  # the policy asks alice's group for dev too
    outcome = await approve_edit(gate, alice(request), edited, event="e2")
    assert outcome.applied and outcome.request is not None
    assert outcome.request.edited_arguments == edited and outcome.request.scope == "once"
    decision = outcome.request.decision()
    assert decision is not None and decision.edited and decision.arguments == edited
    assert (await approve_edit(gate, alice(request), edited, event="e2")).kind == "duplicate"
    late = await approve_edit(gate, alice(request), {**ARGS, "env": "qa"}, event="e3")
    assert late.kind == "already"


async def test_a_stranger_or_another_shape_cannot_approve_an_edit(gate: Gate) -> None:
    request = await ask(gate)
    carol = dataclasses.replace(alice(request), user_id="UC")
    assert (await prepare(gate, carol, texts(request, env="dev"))).outcome.kind == "not_approver"
    assert (await approve_edit(gate, carol, {**ARGS, "env": "dev"})).kind == "not_approver"
    extra = await approve_edit(gate, alice(request), {**ARGS, "more": 1})
    assert extra.kind == "edit_refused" and "same arguments" in extra.message
    retyped = await approve_edit(gate, alice(request), {**ARGS, "replicas": "2"})
    assert retyped.kind == "edit_refused" and "type" in retyped.message
    assert (await gate.get_request(request.id)).is_pending


async def test_the_approval_covers_the_edited_call_only(gate: Gate) -> None:
    request = await ask(gate)
    edited = {**ARGS, "env": "qa"}
    assert (await approve_edit(gate, alice(request), edited)).applied
    original = await gate.submit(ToolCall(tool="deploy", arguments=ARGS, agent="ci"))
    assert original.request is not None and original.request.id != request.id  # asked anew
    reissued = await gate.submit(ToolCall(tool="deploy", arguments=edited, agent="ci"))
    assert reissued.decision is not None and reissued.consumed == request.id
    assert reissued.decision.edited and reissued.decision.arguments == edited
    once_more = await gate.submit(ToolCall(tool="deploy", arguments=edited, agent="ci"))
    assert once_more.request is not None  # consumed: one execution per approval
