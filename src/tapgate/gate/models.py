"""The domain records: tool calls, approval requests, decisions, grants, events.

They are frozen, keyword-only, slotted dataclasses rather than pydantic models
because ``gate.check`` sits on every tool call of every agent: constructing a
dataclass costs a fraction of validating a model, and everything here is built
by tapgate itself from already-validated input (the HTTP layer and the config
loader validate with pydantic at the boundary).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "CONTACT_TOOL",
    "RISKS",
    "Action",
    "AuditEntry",
    "DecidedAtOnce",
    "Decision",
    "DecisionSource",
    "DecisionStatus",
    "Delivery",
    "EventKind",
    "GateEvent",
    "Grant",
    "GrantScope",
    "Request",
    "RequestStatus",
    "Risk",
    "Scope",
    "Ticket",
    "ToolCall",
    "Verdict",
    "args_digest",
    "canonical_json",
    "remembered",
]

Risk = Literal["read_only", "write", "destructive"]
"""How much harm a tool can do; decides the verdict when no rule matches."""

RISKS: tuple[Risk, ...] = ("read_only", "write", "destructive")

Action = Literal["allow", "ask", "deny"]
"""What a policy rule says about a call."""

Verdict = Literal["allow", "deny"]
"""What the agent finally gets: run the tool or not."""

RequestStatus = Literal["pending", "approved", "denied", "expired", "cancelled"]
"""The lifecycle of an approval request; everything but ``pending`` is final."""

DecisionStatus = Literal["allowed", "denied", "approved", "expired", "cancelled"]
"""``allowed`` / ``denied`` with no request (policy or grant), else the request's status."""

DecisionSource = Literal["policy", "grant", "approver", "timeout", "cancel"]
"""Who or what produced a decision."""

Scope = Literal["once", "session", "always"]
"""How far an approval reaches: this call, this agent session, or durably."""

GrantScope = Literal["session", "always"]


def remembered(scope: Scope | None, *, grantable: bool, session: str | None) -> Scope:
    """How far an approval asked with ``scope`` reaches: the scope of the grant it makes.

    ``once`` where no grant is made: a call that may not be remembered (not
    ``grantable``), or a session approval of a call without a session (nothing
    to key the grant on). The one rule both the grant (``gate.records``) and
    what agents are told of an approval (its ``scope`` on the wire) follow.
    """
    if scope is None or scope == "once" or not grantable:
        return "once"
    if scope == "session" and not session:
        return "once"
    return scope


EventKind = Literal["requested", "notified", "resolved", "expired", "cancelled"]

CONTACT_TOOL = "human_contact"
"""The tool name of a question for a human rather than a call to approve.

A request for ``human_contact`` (arguments ``{"message": ..., "subject"?: ...}``)
is rendered with a *Reply* button instead of Approve / Deny; the approver's
typed answer resolves it as ``approved`` with the answer as the decision's
``reason``. The HumanLayer-compatible API's ``human_as_tool`` contacts use it,
and the operator's policy routes it (approvers, timeout) like any other tool.
"""


def canonical_json(value: Any) -> str:
    """Serialise ``value`` so that equal arguments always give equal text.

    Sorting keys and fixing separators makes the digest independent of the order
    in which an agent framework happened to build its argument dict.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def args_digest(arguments: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical arguments: the identity of "the same call"."""
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One tool call an agent wants to make.

    ``risk`` is the risk the tool's author declared (a decorated tool); the
    operator's config overrides it when it names the tool.
    """

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    agent: str = "default"
    session: str | None = None
    risk: Risk | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """The answer an agent gets back.

    ``reason`` is written for the model as much as for people: an agent
    framework can hand a denial reason back to the LLM so it can change course.
    """

    verdict: Verdict
    status: DecisionStatus
    source: DecisionSource
    decided_by: str
    reason: str
    rule: str | None = None
    request_id: str | None = None
    arguments: Mapping[str, Any] | None = None
    """The arguments to run the tool with when an approver edited them (``edited``), else ``None``.

    An edited approval covers these arguments only: an agent that cannot run
    the edited call must not run the original one either.
    """
    edited: bool = False
    scope: Scope | None = None
    """How far an approval reaches: ``once`` (this call), the ``session`` or ``always``.

    Set for an approver's approval (the scope of the grant it made, else
    ``once``) and for a call a grant allowed (that grant's scope); ``None``
    for every other decision.
    """
    kind: Literal["decision"] = "decision"

    @property
    def allowed(self) -> bool:
        """True when the agent may run the tool."""
        return self.verdict == "allow"


@dataclass(frozen=True, kw_only=True, slots=True)
class Request:
    """A durable approval request: one "ask" waiting for a human."""

    id: str
    agent: str
    session: str | None
    tool: str
    arguments: Mapping[str, Any]
    args_digest: str
    fingerprint: str
    risk: Risk
    rule: str
    reason: str
    approvers: tuple[str, ...]
    status: RequestStatus
    created_at: datetime
    expires_at: datetime
    on_timeout: Verdict = "deny"
    resolved_at: datetime | None = None
    resolved_by: str | None = None
    resolution_reason: str | None = None
    scope: Scope | None = None
    grantable: bool = True
    batch_id: str | None = None
    consumed_at: datetime | None = None
    decided_seq: int | None = None
    quorum: int = 1
    """Distinct approvals needed to approve (one deny always denies)."""
    owner: str | None = None
    """The agent's owner when self-approval is off: their approvals are refused."""
    approvals: tuple[str, ...] = ()
    """Who approved so far, in order (the rows of ``store.approvals``, as last counted)."""
    remind_every: float = 0.0
    remind_at: datetime | None = None
    escalate_at: datetime | None = None
    escalate_to: tuple[str, ...] = ()
    """The approvers escalation adds (already expanded, minus those asked from the start)."""
    escalated_at: datetime | None = None
    edited_arguments: Mapping[str, Any] | None = None
    """The arguments an approver approved instead of ``arguments`` (an edit, ``core.edits``).

    ``arguments`` stay the agent's proposal; ``args_digest`` is then the edited
    call's digest, the one call the approval covers (a re-issue must match it).
    """

    @property
    def is_pending(self) -> bool:
        """True until the request reaches a terminal status."""
        return self.status == "pending"

    @property
    def remembered(self) -> Scope | None:
        """An approval's reach (:func:`remembered`); ``None`` unless approved."""
        if self.status != "approved":
            return None
        return remembered(self.scope, grantable=self.grantable, session=self.session)

    def decision(self) -> Decision | None:
        """The agent's decision for a terminal request, ``None`` while pending."""
        if self.status == "pending":
            return None
        if self.status == "approved":
            verdict: Verdict = "allow"
            source: DecisionSource = "approver"
            default_reason = f"approved by {self.resolved_by}"
        elif self.status == "denied":
            verdict, source = "deny", "approver"
            default_reason = f"denied by {self.resolved_by}"
        elif self.status == "expired":
            verdict, source = self.on_timeout, "timeout"
            default_reason = (
                f"no approver answered before the request expired; on_timeout={verdict}"
            )
        else:
            verdict, source = "deny", "cancel"
            default_reason = f"cancelled by {self.resolved_by}"
        return Decision(
            verdict=verdict,
            status=self.status,
            source=source,
            decided_by=self.resolved_by or source,
            reason=self.resolution_reason or default_reason,
            rule=self.rule,
            request_id=self.id,
            arguments=self.edited_arguments if self.status == "approved" else None,
            edited=self.status == "approved" and self.edited_arguments is not None,
            scope=self.remembered,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Ticket:
    """What ``Gate.submit`` returns: a decision now, or a request to follow up."""

    decision: Decision | None
    request: Request | None = None
    reused: bool = False
    consumed: str | None = None
    """The approved request an identical re-issue consumed (its decision is ``decision``)."""

    @property
    def request_id(self) -> str | None:
        """The pending request's id, if the call needs a human."""
        return self.request.id if self.request is not None else None


@dataclass(frozen=True, kw_only=True, slots=True)
class Grant:
    """A remembered approval: turns future "ask" verdicts into "allow".

    Keyed by agent, tool and argument fingerprint; ``session`` is set for
    session grants and ``None`` for durable ("always") grants.
    """

    id: str
    scope: GrantScope
    agent: str
    session: str | None
    tool: str
    fingerprint: str
    created_at: datetime
    created_by: str
    expires_at: datetime | None = None
    request_id: str | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    uses_left: int | None = None
    """Calls it may still allow (``always_uses``); ``None``: any number until it expires."""

    def active(self, now: datetime) -> bool:
        """Not revoked, not past its expiry, not used up."""
        if self.revoked_at is not None or self.uses_left == 0:
            return False
        return self.expires_at is None or self.expires_at > now


@dataclass(frozen=True, kw_only=True, slots=True)
class Delivery:
    """One message to send: a request to one approver on one channel."""

    approver: str
    channel: str
    address: str


@dataclass(frozen=True, kw_only=True, slots=True)
class GateEvent:
    """Something that happened to a request, published on the event bus."""

    kind: EventKind
    request: Request
    at: datetime
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class DecidedAtOnce:
    """A call decided without a request (by policy or a grant), published on the event bus.

    Such a decision has no request row and no :class:`GateEvent`; this record
    lets metrics (and anything else) count every decision in one place.
    """

    call: ToolCall
    decision: Decision
    at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditEntry:
    """One line of the append-only audit log."""

    id: int
    at: datetime
    event: str
    request_id: str | None
    actor: str
    detail: Mapping[str, Any]
