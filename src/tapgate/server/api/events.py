"""The data of one server-sent event: what happened to which call, and for results, how.

An agent reading ``/v1/events`` should not need a second request to know
what an event is about (the design's ``ApprovalRequestEvent`` /
``ApprovalResultEvent``): every event carries the call (tool, arguments,
risk, agent, session, batch) and a result carries its outcome, who decided
and why (an edited approval: ``edited`` and the ``edited_arguments``).
The arguments are masked exactly as in the approvers' messages
(:func:`tapgate.policy.masking.mask_arguments`): the stream may be logged by
the agent's framework, and it is read with an agent token.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from tapgate.gate.models import (
    Decision,
    EventKind,
    GateEvent,
    Request,
    RequestStatus,
    Risk,
    Scope,
)
from tapgate.policy.masking import mask_arguments

__all__ = ["EventOut", "Outcome", "event_out", "outcome_of"]

Outcome = Literal[
    "approved", "approved_session", "approved_always", "denied", "expired", "cancelled"
]
_APPROVED: dict[Scope, Outcome] = {
    "once": "approved",
    "session": "approved_session",
    "always": "approved_always",
}


class EventOut(BaseModel):
    """The ``data`` of one server-sent event about one of the agent's requests."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: EventKind
    request_id: str
    status: RequestStatus
    decision: Literal["allow", "deny", "pending"]
    tool: str
    arguments: dict[str, JsonValue]
    risk: Risk
    agent: str
    session: str | None
    batch_id: str | None
    at: datetime
    outcome: Outcome | None = None
    decided_by: str | None = None
    reason: str | None = None
    channel: str | None = None
    approver: str | None = None
    edited: bool = False
    """An approver edited the call before approving it (a ``resolved`` event)."""
    edited_arguments: dict[str, JsonValue] | None = None
    """The edited arguments, masked like ``arguments``: run the call with the unmasked
    ones from ``GET /v1/tool-calls/{id}``."""
    scope: Scope | None = None
    """An approval's reach (a ``resolved`` event): ``once``, ``session`` or ``always``,
    as the tool call's ``scope``; null for any other event."""


def outcome_of(request: Request) -> Outcome | None:
    """How a decided request ended, with the scope of an approval; ``None`` while pending."""
    if request.status == "pending":
        return None
    if request.status == "approved":
        # what the approval reaches, not what was asked: no grant made, no session/always
        return _APPROVED[request.remembered or "once"]
    return request.status


def event_out(event: GateEvent) -> EventOut:
    """A gate event as the agent sees it; ``notified`` also names channel and approver."""
    request = event.request
    decision = request.decision()
    channel, approver = event.detail.get("channel"), event.detail.get("approver")
    masked: Any = mask_arguments(request.arguments)
    return EventOut(
        kind=event.kind,
        request_id=request.id,
        status=request.status,
        decision=decision.verdict if decision is not None else "pending",
        tool=request.tool,
        arguments=masked,
        risk=request.risk,
        agent=request.agent,
        session=request.session,
        batch_id=request.batch_id,
        at=event.at,
        outcome=outcome_of(request),
        decided_by=decision.decided_by if decision is not None else None,
        reason=decision.reason if decision is not None else None,
        channel=channel if isinstance(channel, str) else None,
        approver=approver if isinstance(approver, str) else None,
        scope=decision.scope if decision is not None else None,
        **_edited(decision),
    )


def _edited(decision: Decision | None) -> dict[str, Any]:
    if decision is None or not decision.edited or decision.arguments is None:
        return {}
    return {"edited": True, "edited_arguments": mask_arguments(decision.arguments)}
