"""Converting between domain records and table rows (JSON columns, '' for no session)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, cast

from tapgate.gate.models import (
    AuditEntry,
    Decision,
    DecisionSource,
    DecisionStatus,
    Grant,
    GrantScope,
    Request,
    RequestStatus,
    Risk,
    Scope,
    Verdict,
    canonical_json,
)

__all__ = [
    "audit_from_row",
    "decision_from_json",
    "decision_to_json",
    "grant_from_row",
    "grant_to_row",
    "request_from_row",
    "request_to_row",
]


def request_to_row(request: Request) -> dict[str, Any]:
    """Column values for a new request row."""
    return {
        "id": request.id,
        "agent": request.agent,
        "session": request.session or "",
        "tool": request.tool,
        "arguments": canonical_json(request.arguments),
        "args_digest": request.args_digest,
        "fingerprint": request.fingerprint,
        "risk": request.risk,
        "rule": request.rule,
        "reason": request.reason,
        "approvers": json.dumps(list(request.approvers)),
        "status": request.status,
        "on_timeout": request.on_timeout,
        "grantable": request.grantable,
        "created_at": request.created_at,
        "expires_at": request.expires_at,
        "resolved_at": request.resolved_at,
        "resolved_by": request.resolved_by,
        "resolution_reason": request.resolution_reason,
        "resolution_detail": None,
        "scope": request.scope,
        "reminded_at": None,
        "batch_id": request.batch_id,
        "consumed_at": request.consumed_at,
        "decided_seq": request.decided_seq,
        "quorum": request.quorum,
        "owner": request.owner,
        "approvals": json.dumps(list(request.approvals)) if request.approvals else None,
        "remind_every": math.ceil(request.remind_every),
        "remind_at": request.remind_at,
        "escalate_at": request.escalate_at,
        "escalate_to": json.dumps(list(request.escalate_to)) if request.escalate_to else None,
        "escalated_at": request.escalated_at,
        "edited_arguments": (
            None if request.edited_arguments is None else canonical_json(request.edited_arguments)
        ),
    }


def request_from_row(row: Mapping[Any, Any]) -> Request:
    """A :class:`Request` from a ``requests`` row."""
    return Request(
        id=row["id"],
        agent=row["agent"],
        session=row["session"] or None,
        tool=row["tool"],
        arguments=json.loads(row["arguments"]),
        args_digest=row["args_digest"],
        fingerprint=row["fingerprint"],
        risk=cast(Risk, row["risk"]),
        rule=row["rule"],
        reason=row["reason"],
        approvers=tuple(json.loads(row["approvers"])),
        status=cast(RequestStatus, row["status"]),
        on_timeout=cast(Verdict, row["on_timeout"]),
        grantable=bool(row["grantable"]),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        resolved_at=row["resolved_at"],
        resolved_by=row["resolved_by"],
        resolution_reason=row["resolution_reason"],
        scope=cast("Scope | None", row["scope"]),
        batch_id=row["batch_id"],
        consumed_at=row["consumed_at"],
        decided_seq=row["decided_seq"],
        quorum=row["quorum"],
        owner=row["owner"],
        approvals=tuple(json.loads(row["approvals"])) if row["approvals"] else (),
        remind_every=float(row["remind_every"]),
        remind_at=row["remind_at"],
        escalate_at=row["escalate_at"],
        escalate_to=tuple(json.loads(row["escalate_to"])) if row["escalate_to"] else (),
        escalated_at=row["escalated_at"],
        edited_arguments=(
            json.loads(row["edited_arguments"]) if row["edited_arguments"] is not None else None
        ),
    )


def grant_to_row(grant: Grant) -> dict[str, Any]:
    """Column values for a new grant row."""
    return {
        "id": grant.id,
        "scope": grant.scope,
        "agent": grant.agent,
        "session": grant.session or "",
        "tool": grant.tool,
        "fingerprint": grant.fingerprint,
        "created_at": grant.created_at,
        "created_by": grant.created_by,
        "expires_at": grant.expires_at,
        "request_id": grant.request_id,
        "revoked_at": grant.revoked_at,
        "revoked_by": grant.revoked_by,
        "uses_left": grant.uses_left,
    }


def grant_from_row(row: Mapping[Any, Any]) -> Grant:
    """A :class:`Grant` from a ``grants`` row."""
    return Grant(
        id=row["id"],
        scope=cast(GrantScope, row["scope"]),
        agent=row["agent"],
        session=row["session"] or None,
        tool=row["tool"],
        fingerprint=row["fingerprint"],
        created_at=row["created_at"],
        created_by=row["created_by"],
        expires_at=row["expires_at"],
        request_id=row["request_id"],
        revoked_at=row["revoked_at"],
        revoked_by=row["revoked_by"],
        uses_left=row["uses_left"],
    )


def audit_from_row(row: Mapping[Any, Any]) -> AuditEntry:
    """An :class:`AuditEntry` from an ``audit`` row."""
    return AuditEntry(
        id=row["id"],
        at=row["at"],
        event=row["event"],
        request_id=row["request_id"],
        actor=row["actor"],
        detail=json.loads(row["detail"]),
    )


def decision_to_json(decision: Decision) -> dict[str, Any]:
    """A decision made at once, as stored (its request id, if any, is kept apart)."""
    return {
        "verdict": decision.verdict,
        "status": decision.status,
        "source": decision.source,
        "decided_by": decision.decided_by,
        "reason": decision.reason,
        "rule": decision.rule,
        **(
            {"arguments": dict(decision.arguments), "edited": True}
            if decision.edited and decision.arguments is not None
            else {}
        ),
        **({"scope": decision.scope} if decision.scope is not None else {}),
    }


def decision_from_json(saved: Mapping[str, Any]) -> Decision:
    """The inverse of :func:`decision_to_json`."""
    return Decision(
        verdict=cast(Verdict, saved["verdict"]),
        status=cast(DecisionStatus, saved["status"]),
        source=cast(DecisionSource, saved["source"]),
        decided_by=saved["decided_by"],
        reason=saved["reason"],
        rule=saved["rule"],
        request_id=saved.get("request_id"),
        arguments=saved.get("arguments"),
        edited=saved.get("edited") is True,
        scope=cast("Scope | None", saved.get("scope")),
    )
