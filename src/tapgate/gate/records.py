"""Building the records a decision produces: ids, requests, grants, decisions.

Pure functions of a call, a policy verdict and the time, kept apart from the
gate so the gate reads as the story of a call (policy, grant, request, wait,
resolve) and these rules (what a grant covers, what a request carries) can be
read, and tested, on their own.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache, partial

from tapgate.gate.directory import Directory
from tapgate.gate.models import (
    Decision,
    Delivery,
    Grant,
    Request,
    Scope,
    ToolCall,
    Verdict,
    args_digest,
    remembered,
)
from tapgate.policy.engine import Policy, PolicyVerdict
from tapgate.store.grants import GrantKey

__all__ = [
    "Asking",
    "grant_decision",
    "grant_for",
    "grant_maker",
    "new_id",
    "new_request",
    "policy_decision",
]


def new_id() -> str:
    """A 128-bit random, URL-safe id: unguessable, so an id alone grants nothing.

    Never starts with ``-``, so it can be passed to a command line as is.
    """
    while True:
        value = secrets.token_urlsafe(16)
        if not value.startswith("-"):
            return value


@dataclass(frozen=True, kw_only=True, slots=True)
class Asking:
    """A call policy sends to a human, planned but not stored: what ``Store`` needs to ask."""

    call: ToolCall
    verdict: PolicyVerdict
    request: Request
    deliveries: Sequence[Delivery]
    key: GrantKey | None


def plan_call(
    call: ToolCall,
    policy: Policy,
    directory: Directory,
    *,
    now: datetime,
    question: bool = False,
) -> Decision | Asking:
    """Policy's answer for ``call``: a decision now, or the request a human must decide.

    Nothing is stored: the gate (or a batch) asks the store with the result.
    """
    verdict = policy.evaluate(call)
    if verdict.action != "ask":
        return policy_decision(verdict)
    if question:
        # An answer is for one question: a standing grant would answer every
        # later identical question with nobody asked ("contact_not_routed").
        verdict = dataclasses.replace(verdict, grantable=False)
    fingerprint = policy.fingerprint(call)
    key = None
    if verdict.grantable:
        key = GrantKey(
            agent=call.agent, session=call.session, tool=call.tool, fingerprint=fingerprint
        )
    request = new_request(
        call,
        verdict,
        fingerprint=fingerprint,
        approvers=(approvers := directory.expand(verdict.approvers)),
        on_timeout=policy.spec.on_timeout,
        now=now,
        escalate_to=_escalation(verdict, directory, approvers),
    )
    deliveries = directory.deliveries(request.approvers)
    return Asking(call=call, verdict=verdict, request=request, deliveries=deliveries, key=key)


def _escalation(
    verdict: PolicyVerdict, directory: Directory, approvers: tuple[str, ...]
) -> tuple[str, ...]:
    """The approvers escalation adds to ``approvers``; none when the rule does not escalate.

    ``Directory.expand(())`` means everyone (a rule naming no approvers asks
    them all), so an empty ``escalate_to`` must not be expanded: a request
    whose rule has no escalation would carry every approver as its
    escalation, wrong data waiting for anything that reads it.
    """
    if verdict.escalate_after is None or not verdict.escalate_to:
        return ()
    return tuple(a for a in directory.expand(verdict.escalate_to) if a not in approvers)


def new_request(
    call: ToolCall,
    verdict: PolicyVerdict,
    *,
    fingerprint: str,
    approvers: tuple[str, ...],
    on_timeout: Verdict,
    now: datetime,
    escalate_to: tuple[str, ...] = (),
) -> Request:
    """The pending request for ``call``, as policy asked for it (approvers already expanded).

    ``escalate_to`` are the expanded escalation approvers not asked from the start.
    """
    return Request(
        id=new_id(),
        agent=call.agent,
        session=call.session,
        tool=call.tool,
        arguments=dict(call.arguments),
        args_digest=args_digest(call.arguments),
        fingerprint=fingerprint,
        risk=verdict.risk,
        rule=verdict.rule,
        reason=verdict.reason,
        approvers=approvers,
        status="pending",
        created_at=now,
        expires_at=now + timedelta(seconds=verdict.timeout),
        on_timeout=on_timeout,
        # A grant would let the next identical call skip the second approver.
        grantable=verdict.grantable and verdict.quorum <= 1,
        quorum=verdict.quorum,
        owner=verdict.owner,
        remind_every=verdict.remind_every,
        remind_at=now + timedelta(seconds=verdict.remind_every) if verdict.remind_every else None,
        escalate_at=(
            now + timedelta(seconds=verdict.escalate_after)
            if verdict.escalate_after is not None and escalate_to
            else None
        ),
        escalate_to=escalate_to,
    )


def grant_maker(
    verdict: str,
    *,
    by: str,
    scope: Scope,
    now: datetime,
    ttl: float | None = None,
    uses: int | None = None,
) -> Callable[[Request], Grant | None] | None:
    """What builds the grant an approval makes from the decided request (``None``: no grant).

    Shared by a single tap and "Allow all for session", so each call of a
    batch is granted its own fingerprint exactly as a single tap grants it.
    """
    if verdict != "approve" or scope == "once":
        return None
    return partial(grant_for, by=by, scope=scope, ttl=ttl, uses=uses, now=now)


def grant_for(
    request: Request,
    *,
    by: str,
    scope: Scope,
    ttl: float | None,
    now: datetime,
    uses: int | None = None,
) -> Grant | None:
    """The grant an approval with ``scope`` creates, or ``None`` (once, ungrantable, no session).

    A grant covers the request's own fingerprint: never more than the approver
    saw. ``uses`` limits an "always" grant to that many later calls.
    """
    grant_scope = remembered(scope, grantable=request.grantable, session=request.session)
    if grant_scope == "once":
        return None  # not grantable, or a session grant with no session to key it on
    return Grant(
        id=new_id(),
        scope=grant_scope,
        agent=request.agent,
        session=request.session if grant_scope == "session" else None,
        tool=request.tool,
        fingerprint=request.fingerprint,
        created_at=now,
        created_by=by,
        expires_at=now + timedelta(seconds=ttl) if ttl is not None else None,
        request_id=request.id,
        uses_left=uses if grant_scope == "always" else None,
    )


@lru_cache(maxsize=4096)
def policy_decision(verdict: PolicyVerdict) -> Decision:
    """Policy allowed or denied at once: no request, the rule decided.

    Both records are frozen and the engine shares its verdicts, so each
    verdict's decision is built once (most calls are allowed by policy).
    """
    allowed = verdict.action == "allow"
    return Decision(
        verdict="allow" if allowed else "deny",
        status="allowed" if allowed else "denied",
        source="policy",
        decided_by=verdict.rule,
        reason=verdict.reason,
        rule=verdict.rule,
    )


def grant_decision(grant: Grant, rule: str) -> Decision:
    """A standing grant turned an ask into an allow."""
    return Decision(
        verdict="allow",
        status="allowed",
        source="grant",
        decided_by=f"grant:{grant.id}",
        reason=f"allowed by a {grant.scope} grant from {grant.created_by}",
        rule=rule,
        scope=grant.scope,
    )
