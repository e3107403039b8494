"""An approval's scope as agents are told it: the reach of the grant it made, never more.

What an approver asked for (``Request.scope``) and what the approval reaches
differ where no grant can be made: a call that may not be remembered, a
session approval of a call without a session. Every surface (the tool-call
object, the ``resolved`` event, the ACP proxy's choice of the agent's
``allow_always``) reads the reach, so it is checked here against the grant
itself.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

import pytest

from tapgate.gate.models import Grant, Scope, remembered
from tapgate.gate.records import grant_decision, grant_for
from tapgate.store.rows import decision_from_json, decision_to_json
from tests.factories import make_request

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize("scope", get_args(Scope))
@pytest.mark.parametrize("grantable", [True, False])
@pytest.mark.parametrize("session", [None, "chat-1"])
def test_the_told_scope_is_the_scope_of_the_grant_the_approval_makes(
    scope: Scope, grantable: bool, session: str | None
) -> None:
    request = make_request(
        NOW, status="approved", scope=scope, grantable=grantable, session=session
    )
    grant = grant_for(request, by="alice", scope=scope, ttl=None, now=NOW)
    told = request.remembered
    assert told == (grant.scope if grant is not None else "once")
    decision = request.decision()
    assert decision is not None and decision.scope == told


def test_an_approval_that_cannot_be_remembered_is_told_once() -> None:
    assert remembered("always", grantable=False, session="chat-1") == "once"
    assert remembered("session", grantable=True, session=None) == "once"
    assert remembered("session", grantable=True, session="chat-1") == "session"
    assert remembered("always", grantable=True, session=None) == "always"
    assert remembered(None, grantable=True, session="chat-1") == "once"


@pytest.mark.parametrize("status", ["pending", "denied", "expired", "cancelled"])
def test_only_an_approval_has_a_scope(status: str) -> None:
    request = make_request(NOW, status=status, scope="always", session="chat-1")
    assert request.remembered is None
    decision = request.decision()
    assert decision is None or decision.scope is None


def test_a_call_a_grant_allowed_carries_the_grants_scope_through_the_store() -> None:
    grant = Grant(
        id="g1",
        scope="session",
        agent="agent-1",
        session="chat-1",
        tool="deploy",
        fingerprint="fp",
        created_at=NOW,
        created_by="alice",
    )
    decision = grant_decision(grant, "policy.rules[0]")
    assert (decision.source, decision.scope) == ("grant", "session")
    # a batch keeps the decisions it answered at once as JSON: the scope survives
    assert decision_from_json(decision_to_json(decision)) == decision
    denied = make_request(NOW, status="denied", resolved_by="bob").decision()
    assert denied is not None
    stored = decision_to_json(denied)
    assert "scope" not in stored and decision_from_json(stored).scope is None
